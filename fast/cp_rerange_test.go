package fast_test

import (
	"errors"
	"testing"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestCPRerangeRejectsAGranuleWhoseRoundUpOverflowsLikeRef is the
// hostile-input harness's finding on cp.rerange: with a granule of 2^61 the
// fast twin panicked (slice bounds) and with 2^63−1 it looped for ever,
// because the shared layout builder's (L+g−1)/g and 2·cp·u·g wrapped and
// let a layout of absurd segment sizes through. Both twins must now reject
// it the same way, as too large (docs/spec/cp-layout.md §1.5).
func TestCPRerangeRejectsAGranuleWhoseRoundUpOverflowsLikeRef(t *testing.T) {
	for _, sp := range []spec.LayoutSpec{
		{CP: 2, Lens: []int{3, 9}, Granule: 1 << 61},
		{CP: 2, Lens: []int{3, 9}, Granule: 1<<63 - 1},
		{CP: 2, Lens: []int{1<<63 - 1, 9}, Granule: 2},
		{CP: 2, Lens: []int{3, 1<<63 - 1}, Granule: 2},
	} {
		in := spec.CPRerangeInput{Layout: sp, G: rows(2, 24), M: 12}
		if err := sameAsRef(t, hostileName(sp), ref.CPRerange, fast.CPRerange, spec.DefaultLimits(), in); !errors.Is(err, spec.ErrTooLarge) {
			t.Errorf("%+v: ref answered %v, want too_large", sp, err)
		}
	}
}
