package ref

import (
	"fmt"
	"math"
	"strconv"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for sampling.pack and its Filter and Merge (docs/spec/transfer.md §8): per-field and batch checks.

// Sentinels of sampling.pack (docs/spec/transfer.md §8) and of its Filter and Merge.
var (
	// errKeepIndexOutOfRange: a Filter keep index is >= the batch size (docs/spec/transfer.md §8 filter).
	errKeepIndexOutOfRange = spec.NewSentinel("keep_index_out_of_range", "keep index must be < batch size")
	// errMixedDeterminism: Merge of a batch with seeds and one without
	// (docs/spec/transfer.md §8 merge [designed]; upstream would keep the left seeds
	// and leave them shorter than the other arrays).
	errMixedDeterminism = spec.NewSentinel("mixed_determinism", "cannot merge a deterministic batch with a non-deterministic one")
)

func checkTemperature(i int, t float64) error {
	if err := checkFinite(i, "temperature", t); err != nil {
		return err
	}
	if t < 0 {
		return spec.Reject(spec.ErrBadTemperature, requestField(i, "temperature"), t, ">= 0")
	}
	if t >= spec.Float32Overflow {
		return spec.Reject(spec.ErrNonFinite, requestField(i, "temperature"), t,
			fmt.Sprintf("< %v so that float32(temperature) is finite", float64(spec.Float32Overflow)))
	}
	return nil
}

// checkUnitInterval checks x in (0, 1], or [0, 1] when closed.
func checkUnitInterval(i int, name string, x float64, closed bool, s *spec.Sentinel) error {
	if err := checkFinite(i, name, x); err != nil {
		return err
	}
	if closed && (x < 0 || x > 1) {
		return spec.Reject(s, requestField(i, name), x, "in [0, 1]")
	}
	if !closed && (x <= 0 || x > 1) {
		return spec.Reject(s, requestField(i, name), x, "in (0, 1]")
	}
	return nil
}

// checkFinite rejects NaN and ±Inf. The value is reported as its string
// ("NaN", "+Inf", "-Inf") because JSON has no number for it and the error
// object must still encode.
func checkFinite(i int, name string, x float64) error {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return spec.Reject(spec.ErrNonFinite, requestField(i, name), strconv.FormatFloat(x, 'g', -1, 64), "finite")
	}
	return nil
}

// CheckSamplingBatch checks that b is a well-formed packed batch: len(F) is
// 3×len(TopK), and Seeds is nil or has len(TopK) entries. name prefixes the
// field paths ("batch", "a", "b"). Filter and Merge call it first.
func CheckSamplingBatch(name string, b spec.SamplingPackOutput) error {
	bs := len(b.TopK)
	if len(b.F) != 3*bs {
		return spec.Reject(spec.ErrLengthMismatch, name+".f", len(b.F), fmt.Sprintf("3 × len(top_k) = %d", 3*bs))
	}
	if b.Seeds != nil && len(b.Seeds) != bs {
		return spec.Reject(spec.ErrLengthMismatch, name+".seeds", len(b.Seeds), fmt.Sprintf("null or len(top_k) = %d", bs))
	}
	return nil
}

// CheckSamplingKeep checks Filter's keep indices against batch size bs, in
// order: each must be in [0, bs). Duplicates and any order are allowed, as
// with tensor indexing; negative indices are errors, not Python wrap-around.
func CheckSamplingKeep(keep []int64, bs int) error {
	for j, k := range keep {
		if k < 0 {
			return spec.Reject(spec.ErrNegative, spec.Idx("keep", j), k, ">= 0")
		}
		if k >= int64(bs) {
			return spec.Reject(errKeepIndexOutOfRange, spec.Idx("keep", j), k, fmt.Sprintf("< batch size (%d)", bs))
		}
	}
	return nil
}

// CheckSamplingMerge checks MergeSampling's preconditions in order: a is
// well-formed, b is well-formed, and both or neither carry seeds.
func CheckSamplingMerge(a, b spec.SamplingPackOutput) error {
	if err := CheckSamplingBatch("a", a); err != nil {
		return err
	}
	if err := CheckSamplingBatch("b", b); err != nil {
		return err
	}
	if (a.Seeds == nil) != (b.Seeds == nil) {
		return spec.Reject(errMixedDeterminism, "b.seeds", seedsState(b.Seeds), "same as a.seeds ("+seedsState(a.Seeds)+")")
	}
	return nil
}

func seedsState(s []int64) string {
	if s == nil {
		return "null"
	}
	return fmt.Sprintf("%d seeds", len(s))
}
