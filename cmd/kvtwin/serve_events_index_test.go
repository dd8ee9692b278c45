package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kvtwin/kvtwin/spec"
)

// TestEventsFileIndexBoundsAreReadByTheirDocumentedNames: the index bounds
// of an --events-file are spelt as docs/events.md and the ops spell them
// (max_engines, max_engines_per_stream, …); a bound set on the command
// line wins over the file's. Before the yaml names were given, the
// documented `index: {max_engines: 256, …}` was refused as an unknown field.
func TestEventsFileIndexBoundsAreReadByTheirDocumentedNames(t *testing.T) {
	file := filepath.Join(t.TempDir(), "events.yaml")
	doc := "sources:\n  - {name: a, endpoint: \"tcp://127.0.0.1:5557\"}\n" +
		"index: {max_engines: 8, max_engines_per_stream: 2, max_tokens_per_engine: 100, max_held: 5}\n"
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	idx := spec.KVEvConfig{MaxHeld: 7}
	srcs, err := eventSources(nil, file, &idx)
	if err != nil {
		t.Fatal(err)
	}
	want := spec.KVEvConfig{MaxEngines: 8, MaxEnginesPerStream: 2, MaxTokensPerEngine: 100, MaxHeld: 7}
	if len(srcs) != 1 || idx != want {
		t.Fatalf("sources %+v, index %+v; want one source and %+v", srcs, idx, want)
	}
}
