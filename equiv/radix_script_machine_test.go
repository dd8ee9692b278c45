package equiv

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// radixMachine drives the reference tree (the generator's own) and the fast
// tree with one step sequence (docs/spec/radix-acks.md §1.9 P5).
type radixMachine struct {
	gen     *scriptGen
	fast    spec.RadixTree
	fastBuf []spec.Unit
}

// step draws the next step, runs it on both trees and compares results.
func (m *radixMachine) step(t *rapid.T) {
	s, rb := m.gen.step()
	if s.Op == spec.StepCreate {
		m.fast = newFastTree(t, s)
		return
	}
	var fb []byte
	fb, m.fastBuf = applyStep(m.fast, s, m.fastBuf)
	if diff := cmp.Diff(string(rb), string(fb)); diff != "" {
		t.Fatalf("step %d %+v: results differ (-ref +fast):\n%s", len(m.gen.steps)-1, s, diff)
	}
}

// peek compares the read-only PrefixLen of both trees and that it changed
// neither (checked by the following invariant comparison).
func (m *radixMachine) peek(t *rapid.T) {
	s := spec.RadixStep{Op: "prefix_len", Key: m.gen.key()}
	s.Extra, s.Salt = m.gen.namespace()
	rb, _ := applyStep(m.gen.tree, s, nil)
	fb, _ := applyStep(m.fast, s, nil)
	if string(rb) != string(fb) {
		t.Fatalf("PrefixLen(%v): ref %s, fast %s", s.Key, rb, fb)
	}
}

// wide runs an insert, match, PrefixLen or score whose key holds a unit above
// 2^32-1 on both trees through the Go API, as a caller holding wider ints
// would (a script is rejected whole before a tree sees such a key). An
// enabled Eagle tree must refuse it with ErrTokenRange (docs/spec/radix-acks.md
// §1.10, §2.1); a token tree keys by the units as given. Either way both
// trees must answer alike, and the state comparison that follows shows
// they changed alike (nothing, for a refusal).
func (m *radixMachine) wide(t *rapid.T) {
	s := spec.RadixStep{Op: rapid.SampledFrom([]string{spec.StepInsert, spec.StepMatch, "prefix_len", spec.StepScore}).Draw(t, "wide_op"), Key: m.gen.key()}
	s.Exact = s.Op == spec.StepScore && rapid.Bool().Draw(t, "wide_exact")
	s.Key = append(s.Key, 0)
	s.Key[rapid.IntRange(0, len(s.Key)-1).Draw(t, "wide_at")] = rapid.SampledFrom([]int64{1 << 32, math.MaxInt64, -1}).Draw(t, "wide_unit")
	rb, _ := applyStep(m.gen.tree, s, nil)
	fb, _ := applyStep(m.fast, s, nil)
	if string(rb) != string(fb) {
		t.Fatalf("%s(%v): ref %s, fast %s", s.Op, s.Key, rb, fb)
	}
	cfg := m.gen.tree.Config()
	if fc := m.fast.Config(); fc != cfg {
		t.Fatalf("the trees report configs %+v and %+v", cfg, fc)
	}
	if cfg.Eagle && !cfg.Disable && !strings.Contains(string(rb), `"code":"`+spec.ErrTokenRange.Code()+`"`) {
		t.Fatalf("%s(%v) on an Eagle tree: %s, want %s", s.Op, s.Key, rb, spec.ErrTokenRange.Code())
	}
}

// check compares the whole observable state and checks every invariant.
func (m *radixMachine) check(t *rapid.T) {
	rs, fs := m.gen.tree.State(), m.fast.State()
	if diff := cmp.Diff(rs, fs); diff != "" {
		t.Fatalf("after step %d the states differ (-ref +fast):\n%s", len(m.gen.steps)-1, diff)
	}
	if err := ref.CheckTreeState(fs); err != nil {
		t.Fatal(err)
	}
	if err := ref.CheckOwnerState(fs); err != nil {
		t.Fatal(err)
	}
	if tot := m.fast.TotalSize(); tot != fs.EvictableSize+fs.ProtectedSize || tot != m.gen.tree.TotalSize() {
		t.Fatalf("R-TOTAL: total %d, evictable %d + protected %d", tot, fs.EvictableSize, fs.ProtectedSize)
	}
	if c, ok := m.fast.(interface{ CheckInvariants() error }); ok {
		if err := c.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	}
}

func newFastTree(t *rapid.T, create spec.RadixStep) spec.RadixTree {
	tr, err := fast.NewRadixTree(stepConfig(create))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestRadixTwinsAgreeAfterEveryStep is the radix state machine (docs/spec/radix-acks.md
// §1.9 P2, P5; §4.3 O1–O3, §4.4 E1): random insert/match/lock/unlock/evict/
// plan_evict/peek sequences, and keys with a unit past 32 bits through the
// Go API (§1.10), with random namespaces, page sizes 1, 2, 4 and
// 64, Eagle on and off, CP owner metadata for 0–2 sizes; after every step
// ref and fast return the same canonical result, the same observable state
// (node ids, keys, slots, locks, stamps, sizes, copied units, owner
// metadata and planner counters), and every invariant holds — R-COMPACT
// and the stored metadata included, on the fast tree.
func TestRadixTwinsAgreeAfterEveryStep(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := RadixSteps(t, 0)
		g := &scriptGen{t: t, steps: in.Steps}
		g.reset(in.Steps[0])
		m := &radixMachine{gen: g, fast: newFastTree(t, in.Steps[0])}
		t.Repeat(map[string]func(*rapid.T){
			"step": m.step,
			"peek": m.peek,
			"wide": m.wide,
			"":     m.check,
		})
	})
}
