package prefix_test

import (
	"errors"
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/prefix"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// trees are the tree constructors every pool test runs on.
func trees() map[string]spec.NewRadixTreeFunc {
	return map[string]spec.NewRadixTreeFunc{"fast": fast.NewRadixTree, "ref": ref.NewRadixTree}
}

// eachTree runs f as a subtest per tree constructor, in name order.
func eachTree(t *testing.T, f func(t *testing.T, newTree spec.NewRadixTreeFunc)) {
	ts := trees()
	for _, name := range slices.Sorted(mapsKeys(ts)) {
		t.Run(name, func(t *testing.T) { f(t, ts[name]) })
	}
}

func mapsKeys(m map[string]spec.NewRadixTreeFunc) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// treeRecorder wraps a tree constructor and keeps the last tree built, so a
// test can look at a pool's tree state.
type treeRecorder struct {
	newTree spec.NewRadixTreeFunc
	last    spec.RadixTree
}

func (r *treeRecorder) build(cfg spec.TreeConfig) (spec.RadixTree, error) {
	t, err := r.newTree(cfg)
	r.last = t
	return t, err
}

// newPool builds a pool with generous limits and returns its tree too.
func newPool(t *testing.T, newTree spec.NewRadixTreeFunc, cfg prefix.Config) (*prefix.Pool, spec.RadixTree) {
	t.Helper()
	rec := &treeRecorder{newTree: newTree}
	p, err := prefix.NewPool(rec.build, cfg, 1<<20, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return p, rec.last
}

// wantReject asserts err is an *spec.InputError of sentinel s on field.
func wantReject(t *testing.T, err error, s *spec.Sentinel, field string) {
	t.Helper()
	ie, ok := spec.AsInputError(err)
	if !ok || !errors.Is(err, s) || ie.Field != field {
		t.Fatalf("error %v, want %s on %s", err, s.Code(), field)
	}
}

func seq(from, n int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = from + int64(i)
	}
	return out
}

func slots(xs ...int64) []spec.SlotIdx { return xs }

var noExtra spec.ExtraKey

func mustInsert(t *testing.T, p *prefix.Pool, tokens []int64) prefix.InsertResult {
	t.Helper()
	r, err := p.Insert(tokens, noExtra, 0)
	if err != nil {
		t.Fatalf("insert %v: %v", tokens, err)
	}
	return r
}

// fataler is what checkConsistent needs of *testing.T and *rapid.T.
type fataler interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// checkConsistent checks the pool against its tree: the mirrored node
// count, used slots equal to cached units, every cached slot distinct and
// in [0, capacity), and the tree's own invariants.
func checkConsistent(t fataler, p *prefix.Pool, tree spec.RadixTree) {
	t.Helper()
	st := tree.State()
	if err := ref.CheckTreeState(st); err != nil {
		t.Fatal(err)
	}
	s := p.Stats()
	if s.Nodes != len(st.Nodes)-1 {
		t.Fatalf("stats say %d nodes, the tree has %d", s.Nodes, len(st.Nodes)-1)
	}
	if s.UsedTokens != tree.TotalSize() || s.UsedTokens+s.FreeTokens != s.CapacityTokens ||
		s.EvictableTokens+s.ProtectedTokens != s.UsedTokens {
		t.Fatalf("stats %+v disagree with tree total %d", s, tree.TotalSize())
	}
	seen := map[spec.SlotIdx]bool{}
	for _, n := range st.Nodes {
		for _, v := range n.Value {
			if v < 0 || int(v) >= s.CapacityTokens || seen[v] {
				t.Fatalf("slot %d out of range or held twice", v)
			}
			seen[v] = true
		}
	}
}
