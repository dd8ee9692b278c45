package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/events/tracegen"
	"github.com/kvtwin/kvtwin/replay"
)

// shortSample writes the committed sample's first n lines to a temporary trace.
func shortSample(t *testing.T, n int) string {
	t.Helper()
	b, err := os.ReadFile(replaySample)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	p := filepath.Join(t.TempDir(), "short.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines[:n], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// emitCLI runs `kvtwin replay --emit-events` into a temporary file and
// returns the file's bytes and the --json summary.
func emitCLI(t *testing.T, trace string, args ...string) ([]byte, emitEventsOutput) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "events.jsonl")
	code, out, stderr := runCLI(t, append([]string{"replay", "--trace", trace, "--emit-events", file, "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum emitEventsOutput
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(b)) != sum.FileBytes {
		t.Errorf("summary %d file bytes, file %d", sum.FileBytes, len(b))
	}
	return b, sum
}

// TestReplayEmitEventsIsDeterministic: the same flags give the same bytes,
// the library's bytes for the same options.
func TestReplayEmitEventsIsDeterministic(t *testing.T) {
	trace := shortSample(t, 30)
	args := []string{"--capacity-blocks", "2500", "--engines", "2", "--encoding", "mixed", "--hash", "signed", "--score-every", "6"}
	a, sum := emitCLI(t, trace, args...)
	b, _ := emitCLI(t, trace, args...)
	if !bytes.Equal(a, b) {
		t.Fatal("two runs with the same flags wrote different files")
	}
	reqs, err := replay.ReadFile(trace, replay.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	var lib bytes.Buffer
	if _, err := tracegen.Emit(&lib, reqs, tracegen.Options{CapacityBlocks: 2500, Engines: 2, Encoding: "mixed", Hash: "signed", ScoreEvery: 6}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, lib.Bytes()) {
		t.Error("the CLI's file differs from tracegen.Emit's")
	}
	if sum.Requests != 30 || sum.Batches == 0 || sum.BlocksRemoved == 0 || sum.ScoreSteps != 5 || sum.Options.Engines != 2 {
		t.Errorf("summary %+v", sum.Summary)
	}
	if c, _ := emitCLI(t, trace, "--capacity-blocks", "2500", "--engines", "2", "--encoding", "map", "--hash", "signed", "--score-every", "6"); bytes.Equal(a, c) {
		t.Error("--encoding map wrote the mixed file")
	}
}

// TestReplayEmitEventsFlags: --capacity-tokens sets the block capacity,
// --requests cuts the trace, '-' writes the stream to stdout and the
// table to stderr, and the radix replay's required flags stay required.
func TestReplayEmitEventsFlags(t *testing.T) {
	trace := shortSample(t, 20)
	_, sum := emitCLI(t, trace, "--capacity-tokens", "32000", "--requests", "12", "--block-size", "32")
	if sum.Options.CapacityBlocks != 1000 || sum.Requests != 12 || sum.Options.BlockSize != 32 {
		t.Errorf("summary %+v", sum.Summary)
	}
	code, out, stderr := runCLI(t, "replay", "--trace", trace, "--emit-events", "-", "--requests", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.HasPrefix(out, `{"config":`) || !strings.Contains(stderr, "BlockStored events / blocks") {
		t.Errorf("stdout %.80q, stderr %q", out, stderr)
	}
	in, err := tracegen.Load(strings.NewReader(out))
	if err != nil || len(in.Steps) == 0 {
		t.Fatalf("stdout does not load: %v", err)
	}
	code, out, _ = runCLI(t, "replay", "--trace", trace, "--emit-events", filepath.Join(t.TempDir(), "e.jsonl"), "--capacity-blocks", "3000", "--free-order", "head")
	if code != 0 || !strings.Contains(out, "interior)") || !strings.Contains(out, "3000 blocks (48000 tokens) per engine") {
		t.Errorf("exit %d, table:\n%s", code, out)
	}
}

func TestReplayEmitEventsRejectsBadFlags(t *testing.T) {
	trace := shortSample(t, 5)
	out := filepath.Join(t.TempDir(), "e.jsonl")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--emit-events", out}, `"trace" not set`},
		{[]string{"--trace", trace, "--emit-events", out, "--encoding", "json"}, `encoding "json": want array, map or mixed`},
		{[]string{"--trace", trace, "--emit-events", out, "--hash", "hex"}, `hash "hex": want int, bin or signed`},
		{[]string{"--trace", trace, "--emit-events", out, "--engines", "0"}, `must be >= 1`},
		{[]string{"--trace", trace, "--emit-events", out, "--capacity-tokens", "8"}, `less than one 16-token block`},
		{[]string{"--trace", trace, "--emit-events", out, "--free-order", "lru"}, `free order "lru"`},
		{[]string{"--trace", trace, "--emit-events", filepath.Join(t.TempDir(), "no", "such", "dir")}, `no such file or directory`},
		{[]string{"--trace", trace}, `"capacity-tokens" not set`},
	} {
		code, _, stderr := runCLI(t, append([]string{"replay"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}
