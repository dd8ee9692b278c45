package replay

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// samplePath is the committed sample: the trace's first 500 lines.
const samplePath = "testdata/mooncake_conversation_500.jsonl"

// fullTraceName is the full trace, in shared/traces beside the module root
// (or beside one of its ancestors, as for a git worktree).
const fullTraceName = "shared/traces/mooncake_conversation_trace.jsonl"

// trees are the implementations the replay is checked on.
var trees = map[string]spec.NewRadixTreeFunc{"ref": ref.NewRadixTree, "fast": fast.NewRadixTree}

// readSample reads the committed sample.
func readSample(tb testing.TB) []Request {
	tb.Helper()
	reqs, err := ReadFile(samplePath, DefaultLimits())
	if err != nil {
		tb.Fatal(err)
	}
	return reqs
}

// fullTracePath finds the full trace in the parent of the module root or
// an ancestor of it; ok is false when it is absent.
func fullTracePath(tb testing.TB) (string, bool) {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for ; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		if filepath.Dir(dir) == dir {
			return "", false
		}
	}
	for dir = filepath.Dir(dir); ; dir = filepath.Dir(dir) {
		p := filepath.Join(dir, fullTraceName)
		if _, err := os.Stat(p); err == nil {
			return p, true
		} else if !errors.Is(err, fs.ErrNotExist) {
			tb.Fatal(err)
		}
		if filepath.Dir(dir) == dir {
			return "", false
		}
	}
}

// readFullOrSkip reads the full trace, or skips the test saying it is absent.
func readFullOrSkip(t *testing.T) []Request {
	t.Helper()
	p, ok := fullTracePath(t)
	if !ok {
		t.Skipf("full trace absent: no %s beside the module root or above it; this test needs it", fullTraceName)
	}
	reqs, err := ReadFile(p, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	return reqs
}
