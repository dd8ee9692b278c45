package ref

import (
	"math"
	"math/big"
	"testing"
)

// TestCheckedAddAndMulAreExactOrSayTheyOverflow compares CheckedAdd and
// CheckedMul with big-integer arithmetic on every pair of edges: ok is true
// exactly when the true result fits int64, and then the result is it.
func TestCheckedAddAndMulAreExactOrSayTheyOverflow(t *testing.T) {
	// The operands where int64 arithmetic wraps: the signs' edges, the
	// square root of the range, and the ends.
	edges := []int64{
		math.MinInt64, math.MinInt64 + 1, -1 << 32, -3037000500, -3037000499, -2, -1, 0, 1, 2,
		3037000499, 3037000500, 1 << 32, 1 << 61, math.MaxInt64 - 1, math.MaxInt64,
	}
	fits := func(x *big.Int) bool { return x.IsInt64() }
	for _, a := range edges {
		for _, b := range edges {
			ba, bb := big.NewInt(a), big.NewInt(b)
			sum := new(big.Int).Add(ba, bb)
			if s, ok := CheckedAdd(a, b); ok != fits(sum) || ok && s != sum.Int64() {
				t.Errorf("CheckedAdd(%d, %d) = %d, %t; true sum %s", a, b, s, ok, sum)
			}
			prod := new(big.Int).Mul(ba, bb)
			if p, ok := CheckedMul(a, b); ok != fits(prod) || ok && p != prod.Int64() {
				t.Errorf("CheckedMul(%d, %d) = %d, %t; true product %s", a, b, p, ok, prod)
			}
		}
	}
}

// TestCeilDivRoundsUpWithoutOverflow: ceil(a/b) at the ends of the range,
// where (a+b−1)/b wraps negative.
func TestCeilDivRoundsUpWithoutOverflow(t *testing.T) {
	for _, c := range []struct{ a, b, want int64 }{
		{0, 1, 0}, {0, math.MaxInt64, 0}, {1, 1, 1}, {7, 2, 4}, {8, 2, 4},
		{3, math.MaxInt64, 1}, {math.MaxInt64, 1, math.MaxInt64}, {math.MaxInt64, 2, 1 << 62},
		{math.MaxInt64, math.MaxInt64, 1}, {math.MaxInt64 - 1, math.MaxInt64, 1}, {1 << 62, 1 << 61, 2},
	} {
		if got := CeilDiv(c.a, c.b); got != c.want {
			t.Errorf("CeilDiv(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// TestCeilDivRefusesOperandsOutsideItsDomain: a zero divisor or a negative
// dividend is a caller's bug (numbers are bounded before they get here),
// and CeilDiv says so rather than answering something.
func TestCeilDivRefusesOperandsOutsideItsDomain(t *testing.T) {
	for _, c := range [][2]int64{{1, 0}, {1, -1}, {-1, 1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("CeilDiv(%d, %d) did not panic", c[0], c[1])
				}
			}()
			CeilDiv(c[0], c[1])
		}()
	}
}
