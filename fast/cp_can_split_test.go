package fast_test

import (
	"testing"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/spec"
)

// TestCPCanSplitNoSplitAllocatesNothing checks the fast path was taken: a
// non-eligible forward is decided without reading (or copying) its
// metadata, and an eligible one allocates only its layout.
func TestCPCanSplitNoSplitAllocatesNothing(t *testing.T) {
	verify := spec.CPCanSplitInput{Mode: spec.ModeTargetVerify, CPEnabled: true, CPSize: 8, UsesCPSharedKV: true,
		BatchSize: 10, ExtendLens: make([]int, 10)}
	if n := testing.AllocsPerRun(100, func() { _, _ = fast.CPCanSplit(spec.DefaultLimits(), verify) }); n != 0 {
		t.Errorf("no-split allocated %v times, want 0", n)
	}
	extend := spec.CPCanSplitInput{Mode: spec.ModeExtend, CPEnabled: true, CPSize: 8, UsesCPSharedKV: true,
		BatchSize: 10, ExtendLens: make([]int, 10), PrefixLens: make([]int, 10), PageSize: 64}
	for i := range extend.ExtendLens {
		extend.ExtendLens[i] = 1000 + i
	}
	// The layout: its struct, L, S, V and 2·B rows of 2·cp sizes.
	if n := testing.AllocsPerRun(100, func() { _, _ = fast.CPCanSplit(spec.DefaultLimits(), extend) }); n > 4+2*10 {
		t.Errorf("split allocated %v times, want only the layout's 24", n)
	}
}
