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

// skipUnimplemented skips while the twin behind impl is a placeholder.
func skipUnimplemented(t testing.TB, impl string) {
	t.Helper()
	tw, err := kvevTwinOf(impl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tw.index(tracegen.HeaderFor(tracegen.DefaultOptions()).Config, tracegen.HeaderFor(tracegen.DefaultOptions()).Streams); err != nil && strings.Contains(err.Error(), "not implemented") {
		t.Skipf("%s: %v", impl, err)
	}
}

// TestBenchEventsIngestsAnEmittedStream: `kvtwin bench events` on a stream
// `kvtwin replay --emit-events` wrote applies it cleanly (exit 0), counts
// the blocks the emitter reported and leaves the simulated cache's
// resident blocks, holes included when the free order is head-first.
func TestBenchEventsIngestsAnEmittedStream(t *testing.T) {
	trace := shortSample(t, 40)
	for _, impl := range []string{"ref", "fast"} {
		for _, args := range [][]string{
			{"--capacity-blocks", "400", "--id-tokens", "64", "--engines", "2", "--encoding", "mixed", "--score-every", "5"},
			{"--capacity-blocks", "300", "--id-tokens", "64", "--free-order", "head", "--hash", "bin", "--encoding", "map"},
		} {
			t.Run(impl+"/"+strings.Join(args, " "), func(t *testing.T) {
				skipUnimplemented(t, impl)
				file := filepath.Join(t.TempDir(), "events.jsonl")
				code, out, stderr := runCLI(t, append([]string{"replay", "--trace", trace, "--emit-events", file, "--json"}, args...)...)
				if code != 0 {
					t.Fatalf("emit: exit %d: %s", code, stderr)
				}
				var sum emitEventsOutput
				if err := json.Unmarshal([]byte(out), &sum); err != nil {
					t.Fatal(err)
				}
				code, out, stderr = runCLI(t, "bench", "events", file, "--impl", impl, "--runs", "1", "--json")
				if code != 0 {
					t.Fatalf("bench: exit %d: %s\n%s", code, stderr, out)
				}
				var res benchEventsResult
				if err := json.Unmarshal([]byte(out), &res); err != nil {
					t.Fatal(err)
				}
				if res.Batches != sum.Batches || res.BlocksStored != sum.BlocksStored || res.BlocksRemoved != sum.BlocksRemoved ||
					res.Scores != sum.ScoreSteps || res.StepErrors != 0 || res.Engines != sum.Options.Engines || res.BlocksPerSec <= 0 {
					t.Errorf("bench %+v\nemitter %+v", res, sum.Summary)
				}
				if sum.DuplicateStores == 0 && res.Pages-res.Holes != int(sum.ResidentBlocks) {
					t.Errorf("%d pages − %d holes, simulated cache holds %d blocks", res.Pages, res.Holes, sum.ResidentBlocks)
				}
				// Holes come from interior removals only: none with vLLM's
				// free order, some left at the end with head-first.
				if head := sum.Options.FreeOrder == tracegen.FreeHead; head != (res.Holes > 0) || head != (sum.InteriorRemovals > 0) {
					t.Errorf("free order %s: %d interior removals, %d holes at the end", sum.Options.FreeOrder, sum.InteriorRemovals, res.Holes)
				}
				code, out, _ = runCLI(t, "bench", "events", file, "--impl", impl, "--runs", "1", "--score-every", "0")
				if code != 0 || !strings.Contains(out, "blocks/s") || strings.Contains(out, "ns per score") {
					t.Errorf("table: exit %d\n%s", code, out)
				}
			})
		}
	}
}

func TestBenchEventsRejectsBadInvocations(t *testing.T) {
	dir := t.TempDir()
	notScript := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(notScript, []byte(`{"config":{},"streams":[{"name":"a"}]}`+"\n"+`{"op":"restart","stream":"a"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	unknown := filepath.Join(dir, "unknown.jsonl")
	if err := os.WriteFile(unknown, []byte(`{"config":{},"streams":[{"name":"a"}]}`+"\n"+`{"op":"live","stream":"b","frames":[]}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "accepts 1 arg(s), received 0"},
		{[]string{filepath.Join(dir, "missing.jsonl")}, "no such file"},
		{[]string{notScript}, `steps[0].op "restart"`},
		{[]string{unknown}, "steps[0].stream"},
		{[]string{notScript, "--impl", "cuda"}, `--impl "cuda": want fast or ref`},
		{[]string{notScript, "--runs", "0"}, "--runs 0"},
	} {
		code, _, stderr := runCLI(t, append([]string{"bench", "events"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// BenchmarkKVEvIngestMooncake ingests the event stream of the sample's
// first 100 requests (16-token blocks, 128 tokens per trace hash id, a
// 1,000-block pool, mixed encodings) into a fresh index per iteration:
// decode + cursor + apply.
func BenchmarkKVEvIngestMooncake(b *testing.B) {
	reqs, err := replay.ReadFile(replaySample, replay.DefaultLimits())
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	res, err := tracegen.Emit(&buf, reqs[:100], tracegen.Options{CapacityBlocks: 1000, IDTokens: 128, Encoding: tracegen.EncodingMixed})
	if err != nil {
		b.Fatal(err)
	}
	in, err := tracegen.Load(&buf)
	if err != nil {
		b.Fatal(err)
	}
	sc, err := prepareEvents(in)
	if err != nil {
		b.Fatal(err)
	}
	blocks := float64(res.Summary.BlocksStored + res.Summary.BlocksRemoved)
	for _, impl := range []string{"ref", "fast"} {
		b.Run("impl="+impl, func(b *testing.B) {
			skipUnimplemented(b, impl)
			tw, _ := kvevTwinOf(impl)
			b.SetBytes(sc.payload)
			b.ReportAllocs()
			for b.Loop() {
				ix, err := tw.index(sc.cfg, sc.streams)
				if err != nil {
					b.Fatal(err)
				}
				if st := ingest(ix, sc, 0, 0); st.StepErrors > 0 {
					b.Fatal(st.FirstError)
				}
			}
			sec := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(blocks/sec, "blocks/s")
			b.ReportMetric(sec*1e9/blocks, "ns/block")
		})
	}
}
