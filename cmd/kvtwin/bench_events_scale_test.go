package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchEventsScaleRestoresTheSameIndexOnBothTwins: `kvtwin bench
// events-scale` indexes exactly the whole requests asked for, its snapshot
// costs A12's 112 bytes for a 16-token block with one hash plus the fixed
// parts, and the index restored from it (in memory and from a file) has
// the original's digest and takes the tail.
func TestBenchEventsScaleRestoresTheSameIndexOnBothTwins(t *testing.T) {
	for _, impl := range []string{"fast", "ref"} {
		for _, file := range []bool{false, true} {
			args := []string{"bench", "events-scale", "--impl", impl, "--blocks", "4100", "--per-request", "64", "--engines", "3", "--tail", "200", "--json"}
			if file {
				args = append(args, "--snapshot-file", filepath.Join(t.TempDir(), "snap"))
			}
			code, out, errOut := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("%v: exit %d: %s", args, code, errOut)
			}
			var r scaleResult
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("%v: %v\n%s", args, err, out)
			}
			// 4100 blocks are 64 requests of 64 (4096); the tail 3 (192).
			if r.Blocks != 4096 || r.Batches != 64 || r.TailBlocks != 192 || !r.RestoredDigestOK {
				t.Errorf("%v: blocks %d batches %d tail %d digest ok %v", args, r.Blocks, r.Batches, r.TailBlocks, r.RestoredDigestOK)
			}
			// A12: 124 fixed bytes, three streams of 184 bytes and 5 bytes of
			// name ("pod-N") each, three engines of 105 bytes, 5 of source,
			// 5 of stream name and one pool of 32 bytes (group, tier "GPU"
			// as 8+3, page size) each, 112 bytes a page.
			want := int64(124 + 3*(184+5) + 3*(105+5+5+8+8+3+8+8) + 4096*112)
			if r.SnapshotBytes != want {
				t.Errorf("%v: snapshot %d bytes, want %d", args, r.SnapshotBytes, want)
			}
			if r.HeapBytesPerBlock <= 0 || r.PeakRSSBytes <= 0 {
				t.Errorf("%v: heap %.1f bytes a block, peak RSS %d", args, r.HeapBytesPerBlock, r.PeakRSSBytes)
			}
		}
	}
}

// TestBenchEventsScaleRefusesSizesPastTheIndexBounds: every flag that sizes
// the run is checked before anything is built, naming the flag and bound.
func TestBenchEventsScaleRefusesSizesPastTheIndexBounds(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--engines", "0"}, "--engines 0: want 1 to 65536"},
		{[]string{"--block-size", "5000"}, "--block-size 5000: want 1 to 4096"},
		{[]string{"--blocks", "10"}, "--blocks 10: want 64 (one request)"},
		{[]string{"--blocks", "300000000", "--block-size", "16"}, "past max_tokens_per_engine's cap 4294967296: add engines"},
		{[]string{"--impl", "cuda"}, "--impl \"cuda\""},
	} {
		code, _, errOut := runCLI(t, append([]string{"bench", "events-scale"}, c.args...)...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want it to contain %q", c.args, code, errOut, c.want)
		}
	}
}
