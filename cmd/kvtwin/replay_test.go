package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/replay"
)

const replaySample = "../../replay/testdata/mooncake_conversation_500.jsonl"

// TestReplayJSONIsTheLibraryReport runs `kvtwin replay --json` on the
// committed sample and expects the report replay.Run gives.
func TestReplayJSONIsTheLibraryReport(t *testing.T) {
	code, out, stderr := runCLI(t, "replay", "--trace", replaySample, "--capacity-tokens", "65536",
		"--mode", "blocks", "--impl", "ref", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got replayOutput
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	reqs, err := replay.ReadFile(replaySample, replay.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	want, err := replay.Run(reqs, replay.Config{Mode: replay.ModeBlocks, CapacityTokens: 65536, NewTree: ref.NewRadixTree})
	if err != nil {
		t.Fatal(err)
	}
	if got.Trace != replaySample || got.Impl != "ref" {
		t.Errorf("trace %q impl %q", got.Trace, got.Impl)
	}
	if diff := cmp.Diff(want.Deterministic(), got.Report.Deterministic()); diff != "" {
		t.Errorf("CLI report differs from replay.Run (-run +cli):\n%s", diff)
	}
}

func TestReplayPrintsATableByDefault(t *testing.T) {
	// The sample's first 40 lines keep the token expansion small.
	sample, err := os.ReadFile(replaySample)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(sample), "\n")
	short := filepath.Join(t.TempDir(), "short.jsonl")
	if err := os.WriteFile(short, []byte(strings.Join(lines[:40], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI(t, "replay", "--trace", short, "--capacity-tokens", "0", "--page-size", "128", "--impl", "ref")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"ref / tokens / 128", "unlimited", "requests  ", " 40\n", "token hit rate", "%", "match latency p50 / p99"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestReplayRejectsBadInvocations(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [1]}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no trace", []string{"--capacity-tokens", "0"}, `"trace" not set`},
		{"no capacity", []string{"--trace", replaySample}, `"capacity-tokens" not set`},
		{"unknown impl", []string{"--trace", replaySample, "--capacity-tokens", "0", "--impl", "gpu"}, `--impl: unknown implementation "gpu": want ref, fast or cuda`},
		{"cuda impl", []string{"--trace", replaySample, "--capacity-tokens", "0", "--impl", "cuda"}, "--impl cuda: radix tree (radix.script): implementation unavailable: cuda: it has no CUDA twin"},
		{"unknown mode", []string{"--trace", replaySample, "--capacity-tokens", "0", "--mode", "pages"}, "mode = pages"},
		{"paged blocks", []string{"--trace", replaySample, "--capacity-tokens", "0", "--mode", "blocks", "--page-size", "64"}, "page_size = 64"},
		{"tiny capacity", []string{"--trace", replaySample, "--capacity-tokens", "10"}, "capacity_tokens = 10"},
		{"bad line", []string{"--trace", bad, "--capacity-tokens", "0"}, "bad.jsonl: line 1: len(hash_ids) = 1"},
		{"missing file", []string{"--trace", "absent.jsonl", "--capacity-tokens", "0"}, "absent.jsonl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, append([]string{"replay"}, tc.args...)...)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.want)
			}
		})
	}
}
