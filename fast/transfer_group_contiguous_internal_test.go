package fast

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestParallelSegmentsGroupLikeOneSegment drives the multi-goroutine path
// of TransferGroupContiguous (used from parallelMinPairs pairs, far above what the
// equiv generators draw) on small inputs with every segment count, and
// requires the runs and the negative-id verdict of the one-segment path.
// Long runs make segments that hold no run start, and runs crossing
// segment boundaries.
func TestParallelSegmentsGroupLikeOneSegment(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 200).Draw(t, "n")
		src, dst := make([]int64, n), make([]int64, n)
		s, d := rapid.Int64Range(-2, 50).Draw(t, "s0"), rapid.Int64Range(-2, 50).Draw(t, "d0")
		for i := range n {
			if rapid.IntRange(0, 9).Draw(t, "break") == 0 {
				s += rapid.Int64Range(-3, 5).Draw(t, "sjump")
				d += rapid.Int64Range(-3, 5).Draw(t, "djump")
			}
			src[i], dst[i] = s, d
			s, d = s+1, d+1
		}
		want, wantOK := groupRuns(src, dst, 1)
		for segs := 2; segs <= min(maxSegments, n); segs++ {
			got, ok := groupRuns(src, dst, segs)
			if ok != wantOK || (ok && !slices.Equal(got, want)) {
				t.Fatalf("segs=%d: runs %v ok=%v, one segment gives %v ok=%v", segs, got, ok, want, wantOK)
			}
		}
	})
}

// TestSegmentsForUsesOneSegmentBelowTheThreshold keeps small inputs on the
// one-goroutine, one-allocation path.
func TestSegmentsForUsesOneSegmentBelowTheThreshold(t *testing.T) {
	if got := segmentsFor(parallelMinPairs - 1); got != 1 {
		t.Errorf("segmentsFor(%d) = %d, want 1", parallelMinPairs-1, got)
	}
	if got := segmentsFor(1 << 30); got < 1 || got > maxSegments {
		t.Errorf("segmentsFor(1<<30) = %d, want 1..%d", got, maxSegments)
	}
}
