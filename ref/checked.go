package ref

import "math"

// This file holds the checked integer helpers every twin uses where a size
// is formed from numbers a caller sent: the naive forms (a+b, a*b,
// (a+b−1)/b) wrap silently in Go, and a wrapped size passes an upper bound
// it should fail. One copy here, so the twins cannot disagree on where the
// arithmetic stops being exact. AddOverflows and MulOverflows (limits.go)
// answer the same questions for non-negative operands.

// CheckedAdd returns a+b and whether it is exact: false when the sum
// overflows int64 (the returned sum is then meaningless).
func CheckedAdd(a, b int64) (int64, bool) {
	s := a + b
	// Overflow only when both operands have the sign the sum lacks.
	return s, (a >= 0) != (b >= 0) || (s >= 0) == (a >= 0)
}

// CheckedMul returns a*b and whether it is exact: false when the product
// overflows int64 (the returned product is then meaningless).
func CheckedMul(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	p := a * b
	// −1 × MinInt64 wraps to MinInt64, and MinInt64/−1 wraps back, so the
	// division test below cannot see it.
	if (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		return p, false
	}
	return p, p/b == a
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
