package spec

import (
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
)

// Without a ratio the bound is MaxOutputBytes; with one it is the larger of
// the floor and ratio × request bytes, never above MaxOutputBytes, and a
// product that overflows saturates rather than wrapping to a small bound.
func TestOutputBoundAppliesTheRatioAboveItsFloor(t *testing.T) {
	for _, tc := range []struct {
		lim  Limits
		want int64
	}{
		{Limits{MaxOutputBytes: 1000}, 1000},
		{Limits{MaxOutputBytes: 1000, MaxOutputRatio: 4, RatioFloorBytes: 100, InputBytes: 10}, 100},
		{Limits{MaxOutputBytes: 1000, MaxOutputRatio: 4, RatioFloorBytes: 100, InputBytes: 50}, 200},
		{Limits{MaxOutputBytes: 1000, MaxOutputRatio: 4, RatioFloorBytes: 100, InputBytes: 5000}, 1000},
		{Limits{MaxOutputBytes: 1000, MaxOutputRatio: math.MaxInt64, InputBytes: 3}, 1000},
	} {
		if got := tc.lim.OutputBound(); got != tc.want {
			t.Errorf("%+v: OutputBound = %d, want %d", tc.lim, got, tc.want)
		}
	}
}

// CheckOutput names the ratio bound when it, not MaxOutputBytes, refuses.
func TestCheckOutputRefusesPastTheRatioNamingIt(t *testing.T) {
	lim := Limits{MaxOutputBytes: 1 << 30, MaxOutputRatio: 64, RatioFloorBytes: 1 << 20, InputBytes: 200_000}
	err := lim.CheckOutput("prefix_slots", 100_000, 656)
	ie, ok := AsInputError(err)
	if !ok || !errors.Is(err, ErrTooLarge) || ie.Field != "prefix_slots" {
		t.Fatalf("CheckOutput = %v, want too_large on prefix_slots", err)
	}
	if want := "max(1048576, max_output_ratio 64 × 200000 request bytes) = 12800000"; !strings.Contains(ie.Bound, want) {
		t.Errorf("bound %q does not say %q", ie.Bound, want)
	}
	if err := lim.CheckOutput("prefix_slots", 1000, 656); err != nil {
		t.Errorf("an output under the ratio: %v", err)
	}
}

// Canceled and Poll report ErrCanceled only once Done is closed, and Poll
// looks only every PollEvery iterations.
func TestCanceledReportsAClosedDoneOnly(t *testing.T) {
	done := make(chan struct{})
	lim := Limits{Done: done}
	if lim.Canceled("x") != nil || lim.Poll(0, "x") != nil || (Limits{}).Canceled("x") != nil {
		t.Fatal("canceled before Done closed")
	}
	close(done)
	if err := lim.Canceled("x"); !errors.Is(err, ErrCanceled) {
		t.Errorf("Canceled after close = %v", err)
	}
	if lim.Poll(1, "x") != nil || !errors.Is(lim.Poll(PollEvery, "x"), ErrCanceled) {
		t.Error("Poll must look on multiples of PollEvery only")
	}
}

// TestAddAndMulOverflowsMatchBigIntegers compares AddOverflows and
// MulOverflows with big-integer arithmetic on every pair of non-negative
// edges (their domain): each reports overflow exactly when the true result
// does not fit int64.
func TestAddAndMulOverflowsMatchBigIntegers(t *testing.T) {
	edges := []int64{0, 1, 2, 3037000499, 3037000500, 1 << 32, 1 << 61, math.MaxInt64 - 1, math.MaxInt64}
	for _, a := range edges {
		for _, b := range edges {
			ba, bb := big.NewInt(a), big.NewInt(b)
			if got, want := AddOverflows(a, b), !new(big.Int).Add(ba, bb).IsInt64(); got != want {
				t.Errorf("AddOverflows(%d, %d) = %t, want %t", a, b, got, want)
			}
			if got, want := MulOverflows(a, b), !new(big.Int).Mul(ba, bb).IsInt64(); got != want {
				t.Errorf("MulOverflows(%d, %d) = %t, want %t", a, b, got, want)
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
