package ref

import (
	"fmt"
	"math"
	"math/bits"
)

// DefaultMaxOutputBytes is the output size bound of DefaultLimits (1 GiB).
const DefaultMaxOutputBytes int64 = 1 << 30

// Limits bounds what an op may allocate for its output. Ops whose output size
// is derived from input numbers (not from input list lengths) check it before
// allocating, so a small request can never ask for a huge allocation.
type Limits struct {
	// MaxOutputBytes bounds the bytes of any one output buffer or list.
	MaxOutputBytes int64
}

// DefaultLimits returns the limits the server and CLI use unless configured.
func DefaultLimits() Limits { return Limits{MaxOutputBytes: DefaultMaxOutputBytes} }

// CheckOutput rejects an output of count elements of elemBytes each when it
// would overflow int64 or exceed lim.MaxOutputBytes. field names the input
// that determined count.
func (lim Limits) CheckOutput(field string, count, elemBytes int64) error {
	hi, lo := bits.Mul64(uint64(count), uint64(elemBytes))
	if count < 0 || elemBytes < 0 || hi != 0 || lo > math.MaxInt64 {
		return Reject(ErrOverflow, field, count, fmt.Sprintf("count*%d bytes <= %d", elemBytes, int64(math.MaxInt64)))
	}
	if int64(lo) > lim.MaxOutputBytes {
		return Reject(ErrTooLarge, field, count, fmt.Sprintf("count*%d bytes <= max_output_bytes (%d)", elemBytes, lim.MaxOutputBytes))
	}
	return nil
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

// CheckNonNegative rejects the first negative element of xs with ErrNegative,
// naming it as field[i].
func CheckNonNegative(field string, xs []int64) error {
	for i, x := range xs {
		if x < 0 {
			return Reject(ErrNegative, Idx(field, i), x, ">= 0")
		}
	}
	return nil
}
