package fast_test

import (
	"testing"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/spec"
)

// TestTransferFilterCPRankTakesTheNoMaskPath checks the fast path was actually
// taken: owned aliases the input (no copy) and the only allocation is the
// positions slice.
func TestTransferFilterCPRankTakesTheNoMaskPath(t *testing.T) {
	kv := make([]int64, 1024)
	for i := range kv {
		kv[i] = 5000 + int64(i)
	}
	in := spec.TransferFilterCPRankInput{KV: kv, ChunkPageStart: 2048, CPRank: 3, CPSize: 8}
	out, err := fast.TransferFilterCPRank(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Owned) != 128 || &out.Owned[0] != &kv[3*128] {
		t.Fatalf("owned does not alias kv[384:512] (len %d)", len(out.Owned))
	}
	allocs := testing.AllocsPerRun(100, func() { _, _ = fast.TransferFilterCPRank(spec.DefaultLimits(), in) })
	if allocs != 1 {
		t.Errorf("fast.FilterCPRank allocated %v times per call, want 1 (positions only)", allocs)
	}
}
