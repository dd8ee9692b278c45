package fast_test

import (
	"errors"
	"testing"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestCPSplitRejectsAGranuleWhoseSegmentsOverflowLikeRef is the
// hostile-input harness's finding on cp.split: with cp=4 and a granule of
// 2^61 the 8 segments' compute rows wrapped to 0, the layout passed the row
// bound, and the fast twin sliced its output by the granule (a panic) while
// ref looped over it. Both must reject it the same way, as too large.
func TestCPSplitRejectsAGranuleWhoseSegmentsOverflowLikeRef(t *testing.T) {
	for _, g := range []int{1 << 61, 1<<63 - 1} {
		in := spec.CPSplitInput{Layout: spec.LayoutSpec{CP: 4, Lens: []int{3}, Granule: g}, X: rows(2, 3), Pad: []byte{'P', 'P'}, Prefix: []int64{0}}
		if err := sameAsRef(t, hostileName(in.Layout), ref.CPSplit, fast.CPSplit, spec.DefaultLimits(), in); !errors.Is(err, spec.ErrTooLarge) {
			t.Errorf("granule %d: ref answered %v, want too_large", g, err)
		}
	}
}
