package equiv_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestSamplingPackRejectsNonFiniteAlike is the differential for NaN and ±Inf
// (docs/spec/transfer.md §8 ErrNonFinite). These cannot go through the Spec's Invalid
// generator: the suite and the golden fixtures JSON-encode every input, and
// JSON has no NaN or Inf, so they are reachable only from Go and are drawn
// here on typed values. Both twins must name the same field, with the value
// as a string so the error object still encodes.
func TestSamplingPackRejectsNonFiniteAlike(t *testing.T) {
	valid := equiv.SamplingPack().Valid
	rapid.Check(t, func(t *rapid.T) {
		in := valid.Draw(t, "in")
		in.Requests = append(in.Requests, spec.SamplingRequest{Temperature: 1, TopP: 1, TopK: -1})
		i := rapid.IntRange(0, len(in.Requests)-1).Draw(t, "bad_request")
		x := rapid.SampledFrom([]float64{math.NaN(), math.Inf(1), math.Inf(-1)}).Draw(t, "non_finite")
		r := &in.Requests[i]
		name := rapid.SampledFrom([]string{"temperature", "top_p", "min_p"}).Draw(t, "field")
		switch name {
		case "temperature":
			r.Temperature = x
		case "top_p":
			r.TopP = x
		default:
			r.MinP = x
		}
		rout, rerr := ref.SamplingPack(spec.DefaultLimits(), in)
		fout, ferr := fast.SamplingPack(spec.DefaultLimits(), in)
		ie, ok := spec.AsInputError(rerr)
		if want := fmt.Sprintf("requests[%d].%s", i, name); !ok || !errors.Is(rerr, spec.ErrNonFinite) || ie.Field != want {
			t.Fatalf("ref: %v, want non_finite on %s", rerr, want)
		}
		if rb, fb := catalog.Canonical(rout, rerr), catalog.Canonical(fout, ferr); !bytes.Equal(rb, fb) {
			t.Fatalf("canonical errors differ:\nref  %s\nfast %s", rb, fb)
		}
	})
}

type samplingLib struct {
	name   string
	filter func(spec.SamplingPackOutput, []int64) (spec.SamplingPackOutput, error)
	merge  func(a, b spec.SamplingPackOutput) (spec.SamplingPackOutput, error)
}

func samplingLibs() []samplingLib {
	return []samplingLib{{"ref", ref.FilterSampling, ref.MergeSampling}, {"fast", fast.FilterSampling, fast.MergeSampling}}
}

// drawBatch packs a generated valid input with ref and, one time in ten,
// breaks its shape so the batch checks run too.
func drawBatch(t *rapid.T, label string, det bool) spec.SamplingPackOutput {
	in := equiv.SamplingPack().Valid.Draw(t, label)
	in.Deterministic = det
	b, err := ref.SamplingPack(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatalf("ref rejected a valid %s: %v", label, err)
	}
	switch rapid.IntRange(0, 19).Draw(t, label+"_shape") {
	case 0:
		b.F = append(b.F, 1)
	case 1:
		b.Seeds = append(b.Seeds, 1)
	}
	return b
}

// drawKeep draws filter indices in [0, bs), in any order with repeats, and
// one time in ten plants one negative or too-large index.
func drawKeep(t *rapid.T, bs int) []int64 {
	keep := []int64{}
	if bs > 0 {
		keep = rapid.SliceOfN(rapid.Int64Range(0, int64(bs)-1), 0, bs+2).Draw(t, "keep")
	}
	if rapid.IntRange(0, 9).Draw(t, "bad_keep") == 0 {
		bad := rapid.OneOf(rapid.Int64Range(math.MinInt64, -1), rapid.Int64Range(int64(bs), math.MaxInt64)).Draw(t, "bad_index")
		keep = slices.Insert(keep, rapid.IntRange(0, len(keep)).Draw(t, "bad_at"), bad)
	}
	return keep
}

// TestSamplingFilterAndMergeTwinsAgree is the differential of the §8 library
// functions: ref and fast give byte-equal results or errors, Filter is
// indexing with the flags carried over, Merge is concatenation with
// is_all_greedy ANDed and need_* ORed, neither mutates its inputs, and
// neither result aliases them (scribbling over the sources afterwards
// changes nothing).
func TestSamplingFilterAndMergeTwinsAgree(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		det := rapid.Bool().Draw(t, "deterministic")
		a := drawBatch(t, "a", det)
		b := drawBatch(t, "b", det != (rapid.IntRange(0, 9).Draw(t, "mixed") == 0))
		keep := drawKeep(t, len(a.TopK))
		srcA, srcB := catalog.Canonical(a, nil), catalog.Canonical(b, nil)
		var filtered, merged [][]byte
		var fouts, mouts []spec.SamplingPackOutput
		for _, lib := range samplingLibs() {
			fo, ferr := lib.filter(a, keep)
			mo, merr := lib.merge(a, b)
			if !bytes.Equal(catalog.Canonical(a, nil), srcA) || !bytes.Equal(catalog.Canonical(b, nil), srcB) {
				t.Fatalf("%s mutated its input", lib.name)
			}
			if ferr == nil {
				if err := filterIsIndexing(a, keep, fo); err != nil {
					t.Fatalf("%s filter: %v", lib.name, err)
				}
			}
			if merr == nil {
				if err := mergeIsConcatenation(a, b, mo); err != nil {
					t.Fatalf("%s merge: %v", lib.name, err)
				}
			}
			filtered, merged = append(filtered, catalog.Canonical(fo, ferr)), append(merged, catalog.Canonical(mo, merr))
			fouts, mouts = append(fouts, fo), append(mouts, mo)
		}
		if !bytes.Equal(filtered[0], filtered[1]) {
			t.Fatalf("filter differs:\nref  %s\nfast %s", filtered[0], filtered[1])
		}
		if !bytes.Equal(merged[0], merged[1]) {
			t.Fatalf("merge differs:\nref  %s\nfast %s", merged[0], merged[1])
		}
		scribble(a)
		scribble(b)
		for i, lib := range samplingLibs() {
			if got := catalog.Canonical(fouts[i], nil); fouts[i].F != nil && !bytes.Equal(got, filtered[i]) {
				t.Fatalf("%s filter result aliases its source: was %s, now %s", lib.name, filtered[i], got)
			}
			if got := catalog.Canonical(mouts[i], nil); mouts[i].F != nil && !bytes.Equal(got, merged[i]) {
				t.Fatalf("%s merge result aliases its sources: was %s, now %s", lib.name, merged[i], got)
			}
		}
	})
}

func scribble(b spec.SamplingPackOutput) {
	for i := range b.F {
		b.F[i] = -3
	}
	for i := range b.TopK {
		b.TopK[i] = -3
	}
	for i := range b.Seeds {
		b.Seeds[i] = -3
	}
}

// row is request i of a packed batch, read through the views.
type row struct {
	t, p, m uint32
	k       int32
}

func rowOf(b spec.SamplingPackOutput, i int) row {
	return row{math.Float32bits(b.Temperatures()[i]), math.Float32bits(b.TopPs()[i]), math.Float32bits(b.MinPs()[i]), b.TopK[i]}
}

func flagsOf(b spec.SamplingPackOutput) [4]bool {
	return [4]bool{b.IsAllGreedy, b.NeedTopPSampling, b.NeedTopKSampling, b.NeedMinPSampling}
}

// filterIsIndexing is §8 filter: row j of the result is row keep[j] of a,
// bit for bit, seeds likewise, and the flags are a's, not recomputed.
func filterIsIndexing(a spec.SamplingPackOutput, keep []int64, out spec.SamplingPackOutput) error {
	if len(out.F) != 3*len(keep) || len(out.TopK) != len(keep) || (out.Seeds != nil) != (a.Seeds != nil) {
		return fmt.Errorf("shape: len(f)=%d len(top_k)=%d seeds nil=%v for %d kept", len(out.F), len(out.TopK), out.Seeds == nil, len(keep))
	}
	for j, k := range keep {
		if rowOf(out, j) != rowOf(a, int(k)) || (a.Seeds != nil && out.Seeds[j] != a.Seeds[k]) {
			return fmt.Errorf("row %d is not source row %d", j, k)
		}
	}
	if flagsOf(out) != flagsOf(a) {
		return fmt.Errorf("flags %v, want the source's %v", flagsOf(out), flagsOf(a))
	}
	return nil
}

// mergeIsConcatenation is §8 merge: a's rows then b's, seeds likewise,
// is_all_greedy ANDed and need_* ORed.
func mergeIsConcatenation(a, b, out spec.SamplingPackOutput) error {
	na, nb := len(a.TopK), len(b.TopK)
	if len(out.F) != 3*(na+nb) || len(out.TopK) != na+nb {
		return fmt.Errorf("shape: len(f)=%d len(top_k)=%d for %d+%d rows", len(out.F), len(out.TopK), na, nb)
	}
	for i := range na + nb {
		src, si := a, i
		if i >= na {
			src, si = b, i-na
		}
		if rowOf(out, i) != rowOf(src, si) {
			return fmt.Errorf("row %d is not its source row", i)
		}
	}
	if out.Seeds != nil && !slices.Equal(out.Seeds, append(slices.Clone(a.Seeds), b.Seeds...)) {
		return fmt.Errorf("seeds %v are not %v ++ %v", out.Seeds, a.Seeds, b.Seeds)
	}
	fa, fb := flagsOf(a), flagsOf(b)
	if want := [4]bool{fa[0] && fb[0], fa[1] || fb[1], fa[2] || fb[2], fa[3] || fb[3]}; flagsOf(out) != want {
		return fmt.Errorf("flags %v, want %v", flagsOf(out), want)
	}
	return nil
}
