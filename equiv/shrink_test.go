package equiv_test

import (
	"encoding/json"
	"testing"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/spec"
)

// TestShrinkReturnsAMinimalCounterexample drives Shrink (what `kvtwin audit`
// uses outside go test) with a twin that ignores chunk_page_start, and
// expects rapid's shrunk input: a one-page chunk at position 1.
func TestShrinkReturnsAMinimalCounterexample(t *testing.T) {
	broken := func(lim spec.Limits, in spec.TransferFilterCPRankInput) (spec.TransferFilterCPRankOutput, error) {
		in.ChunkPageStart = 0
		return fast.TransferFilterCPRank(lim, in)
	}
	f := equiv.TransferFilterCPRank().Shrink("broken", broken, equiv.Valid)
	if f == nil {
		t.Fatal("Shrink found no counterexample for a twin that ignores chunk_page_start")
	}
	var in spec.TransferFilterCPRankInput
	if err := json.Unmarshal(f.Input, &in); err != nil {
		t.Fatal(err)
	}
	if len(in.KV) != 1 || in.ChunkPageStart != 1 {
		t.Errorf("shrunk input is not minimal: %s", f.Input)
	}
	if f.Diff == "" {
		t.Errorf("failure carries no diff: %v", f)
	}
}
