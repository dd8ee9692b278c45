package spec

import (
	"fmt"
	"math"
	"math/bits"
)

// DefaultMaxOutputBytes is the output size bound of DefaultLimits (1 GiB).
const DefaultMaxOutputBytes int64 = 1 << 30

// Limits bounds what an op may allocate for its output and how long it may
// run. Ops whose output size is derived from input numbers (not from input
// list lengths) check it with CheckOutput before allocating, so a small
// request can never ask for a huge allocation; long loops poll Canceled.
type Limits struct {
	// MaxOutputBytes bounds the bytes of any one output buffer or list.
	MaxOutputBytes int64
	// MaxOutputRatio, when > 0, also bounds an output to this many times
	// InputBytes (but never below RatioFloorBytes): a 200 KB request may not
	// ask for 65 MB of rows however far below MaxOutputBytes that is. The
	// server sets it; 0 (DefaultLimits) leaves only MaxOutputBytes.
	MaxOutputRatio int64
	// RatioFloorBytes is the output every request may have whatever its size,
	// when MaxOutputRatio is set.
	RatioFloorBytes int64
	// InputBytes is the size of the request being run; catalog.Entry.Run sets it.
	InputBytes int64
	// Done, when non-nil, is closed when the run's deadline passes or its
	// caller goes away; Canceled reports it. nil means never.
	Done <-chan struct{}
}

// DefaultLimits returns the limits the CLI, fixtures and benchmarks use
// unless configured: 1 GiB outputs, no ratio bound, no deadline.
func DefaultLimits() Limits { return Limits{MaxOutputBytes: DefaultMaxOutputBytes} }

// OutputBound is the largest output CheckOutput admits for this run:
// MaxOutputBytes, lowered to max(RatioFloorBytes, MaxOutputRatio×InputBytes)
// when a ratio is set.
func (lim Limits) OutputBound() int64 {
	bound := lim.MaxOutputBytes
	if lim.MaxOutputRatio <= 0 {
		return bound
	}
	in := max(lim.InputBytes, 0)
	ratio := lim.RatioFloorBytes
	if hi, lo := bits.Mul64(uint64(in), uint64(lim.MaxOutputRatio)); hi == 0 && lo <= math.MaxInt64 {
		ratio = max(ratio, int64(lo))
	} else {
		ratio = math.MaxInt64
	}
	return min(bound, ratio)
}

// CheckOutput rejects an output of count elements of elemBytes each when it
// would overflow int64 or exceed OutputBound. field names the input that
// determined count.
func (lim Limits) CheckOutput(field string, count, elemBytes int64) error {
	hi, lo := bits.Mul64(uint64(count), uint64(elemBytes))
	if count < 0 || elemBytes < 0 || hi != 0 || lo > math.MaxInt64 {
		return Reject(ErrOverflow, field, count, fmt.Sprintf("count*%d bytes <= %d", elemBytes, int64(math.MaxInt64)))
	}
	if int64(lo) > lim.MaxOutputBytes {
		return Reject(ErrTooLarge, field, count, fmt.Sprintf("count*%d bytes <= max_output_bytes (%d)", elemBytes, lim.MaxOutputBytes))
	}
	if b := lim.OutputBound(); int64(lo) > b {
		return Reject(ErrTooLarge, field, count, fmt.Sprintf("count*%d bytes <= max(%d, max_output_ratio %d × %d request bytes) = %d",
			elemBytes, lim.RatioFloorBytes, lim.MaxOutputRatio, lim.InputBytes, b))
	}
	return nil
}

// Canceled returns an error wrapping ErrCanceled once lim.Done is closed,
// and nil before. It does not block, so loops call it every few thousand
// iterations; field names where the run stopped.
func (lim Limits) Canceled(field string) error {
	if lim.Done == nil {
		return nil
	}
	select {
	case <-lim.Done:
		return Reject(ErrCanceled, field, "canceled", "the run finishing before its deadline")
	default:
		return nil
	}
}

// PollEvery is how many iterations a loop runs between Canceled checks:
// a check costs a few nanoseconds, a row copy far more.
const PollEvery = 1 << 12

// poll is Canceled on every PollEvery-th iteration i of a long loop, nil
// on the others.
func (lim Limits) Poll(i int, field string) error {
	if lim.Done == nil || i%PollEvery != 0 {
		return nil
	}
	return lim.Canceled(field)
}

// Idx formats an indexed field path such as "kv[3]".
func Idx(field string, i int) string { return fmt.Sprintf("%s[%d]", field, i) }

// AddOverflows reports whether a+b overflows int64 (both non-negative).
func AddOverflows(a, b int64) bool { return a > math.MaxInt64-b }

// MulOverflows reports whether a*b overflows int64 (both non-negative).
func MulOverflows(a, b int64) bool {
	if a == 0 || b == 0 {
		return false
	}
	return a > math.MaxInt64/b
}

// CeilDiv returns ceil(a/b) for a >= 0 and b >= 1 without forming a+b−1,
// which overflows when a or b is near math.MaxInt64 (a granule or page size
// of 2^63−1 made (l+g−1)/g negative). The result is at most a, so it never
// overflows. It panics on b < 1, a caller's bug: every input number is
// checked against its bound before it reaches here.
func CeilDiv(a, b int64) int64 {
	if b < 1 || a < 0 {
		panic("ref.CeilDiv: want a >= 0 and b >= 1")
	}
	q := a / b
	if a%b != 0 {
		q++
	}
	return q
}
