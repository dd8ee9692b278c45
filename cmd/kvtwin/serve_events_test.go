package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/spec"
)

// TestEventsFileIndexTakesTheDocumentedKeys: --events-file's index mapping
// uses the keys docs/events.md shows (the index's JSON names, max_engines
// ... max_held_bytes), a flag set on the command line wins, and an unknown
// key is refused (a misspelt bound is never ignored).
func TestEventsFileIndexTakesTheDocumentedKeys(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	good := write("good.yaml", `sources:
  - {name: engine-a, endpoint: "tcp://10.0.0.7:5557", replay: "tcp://10.0.0.7:5558"}
index: {max_engines: 3, max_tokens_per_engine: 4096, max_held: 7, max_held_bytes: 1048576, max_events: 100, max_decode_ratio: 8}
`)
	idx := spec.KVEvConfig{MaxHeld: 9}
	srcs, err := eventSources(nil, good, &idx)
	if err != nil {
		t.Fatal(err)
	}
	want := spec.KVEvConfig{MaxEngines: 3, MaxTokensPerEngine: 4096, MaxHeld: 9, MaxHeldBytes: 1 << 20, MaxEvents: 100, MaxDecodeRatio: 8}
	if idx != want || len(srcs) != 1 || srcs[0].Replay != "tcp://10.0.0.7:5558" {
		t.Fatalf("index %+v, sources %+v; want %+v", idx, srcs, want)
	}
	bad := write("bad.yaml", "sources: []\nindex: {max_event: 3}\n")
	if _, err := eventSources(nil, bad, &spec.KVEvConfig{}); err == nil || !strings.Contains(err.Error(), "max_event") {
		t.Fatalf("an unknown index key: %v", err)
	}
}
