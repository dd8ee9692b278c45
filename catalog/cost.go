package catalog

import (
	"math"
	"math/bits"

	"github.com/kvtwin/kvtwin/spec"
)

// Cost states how much one run of an op may allocate, in terms of what the
// caller controls: the request's bytes and the configured spec.Limits. Every
// size an op derives from a number it was sent is checked against a limit
// before it sizes an allocation or a loop, so a run's memory (and with it
// its work) is linear in these two. The hostile-input harness
// (equiv/hostile_test.go) measures every op and twin against its Cost.
type Cost struct {
	// PerInputByte is the bytes allocated per request byte: decoding,
	// validation copies, plans proportional to the input's lists.
	PerInputByte int64
	// PerOutputByte is the bytes allocated per byte of the largest output
	// the limits admit (spec.Limits.OutputBound): the output, its canonical
	// encoding and scratch of the same order.
	PerOutputByte int64
	// Fixed is a constant allowance: tables, pools, small scratch.
	Fixed int64
}

// DefaultCost is the bound of an op that states none: 64 bytes per input
// byte, 8 per output byte, 4 MiB fixed.
func DefaultCost() Cost { return Cost{PerInputByte: 64, PerOutputByte: 8, Fixed: 4 << 20} }

// AllocBound is the most bytes a run on inBytes of input under lim may
// allocate, saturating at math.MaxInt64.
func (c Cost) AllocBound(inBytes int, lim spec.Limits) int64 {
	lim.InputBytes = int64(inBytes)
	sum := uint64(c.Fixed)
	for _, term := range [][2]int64{{c.PerInputByte, int64(inBytes)}, {c.PerOutputByte, lim.OutputBound()}} {
		hi, lo := bits.Mul64(uint64(term[0]), uint64(term[1]))
		var carry uint64
		sum, carry = bits.Add64(sum, lo, 0)
		if hi != 0 || carry != 0 || sum > math.MaxInt64 {
			return math.MaxInt64
		}
	}
	return int64(sum)
}

// Cost implements Entry.
func (o *Op[In, Out]) Cost() Cost {
	if o.Work == (Cost{}) {
		return DefaultCost()
	}
	return o.Work
}
