package equiv_test

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// loadMachine drives a reference and a fast loader (with every descriptor
// either has begun) and a reference and a fast counter with one call
// sequence, call by call rather than op by op: descriptors of several ops
// stay open at once and are used in any order.
type loadMachine struct {
	pools          spec.LoadPools
	refLd, fastLd  spec.Loader
	refDs, fastDs  []spec.LoadDescriptor
	refC, fastC    spec.LayerDoneCounter
	nextOp         uint64
	lastH, lastDev []spec.SlotIdx
}

// same fails unless both twins returned byte-equal canonical results.
func same(t *rapid.T, what string, r, f any, rerr, ferr error) {
	if rb, fb := catalog.Canonical(r, rerr), catalog.Canonical(f, ferr); string(rb) != string(fb) {
		t.Fatalf("%s: ref %s, fast %s", what, rb, fb)
	}
}

func (m *loadMachine) begin(t *rapid.T) {
	ps := rapid.SampledFrom([]int{1, 2}).Draw(t, "ps")
	var host, dev []spec.SlotIdx
	if m.lastH != nil && rapid.IntRange(0, 3).Draw(t, "repeat") == 0 {
		host, dev = m.lastH, m.lastDev
	} else {
		n := rapid.IntRange(0, 5).Draw(t, "pages")
		for range n {
			hp := rapid.Int64Range(0, m.pools.HostSlots/int64(ps)-1).Draw(t, "hp")
			dp := rapid.Int64Range(0, m.pools.DevSlots/int64(ps)-1).Draw(t, "dp")
			for j := range int64(ps) {
				host, dev = append(host, hp*int64(ps)+j), append(dev, dp*int64(ps)+j)
			}
		}
	}
	b := spec.LoadBackend{Unavailable: rapid.IntRange(0, 3).Draw(t, "unavailable") == 0,
		Policy: rapid.SampledFrom([]spec.LoadPolicy{"", spec.LoadAllowFallback}).Draw(t, "policy")}
	m.nextOp++
	rd, rerr := m.refLd.BeginLoad(m.nextOp, host, dev, ps, b)
	fd, ferr := m.fastLd.BeginLoad(m.nextOp, host, dev, ps, b)
	same(t, "BeginLoad", descView(rd), descView(fd), rerr, ferr)
	if rerr == nil {
		m.refDs, m.fastDs = append(m.refDs, rd), append(m.fastDs, fd)
		m.lastH, m.lastDev = host, dev
	}
}

// descView is a descriptor's observable state (nil for none).
func descView(d spec.LoadDescriptor) any {
	if d == nil {
		return nil
	}
	return []any{d.OpID(), d.Serial(), d.Runs(), d.Builds(), d.Fallback(), d.NextLayer()}
}

// pick draws one of the begun descriptors (the same on both twins).
func (m *loadMachine) pick(t *rapid.T) (spec.LoadDescriptor, spec.LoadDescriptor, bool) {
	if len(m.refDs) == 0 {
		return nil, nil, false
	}
	i := rapid.IntRange(0, len(m.refDs)-1).Draw(t, "desc")
	return m.refDs[i], m.fastDs[i], true
}

func (m *loadMachine) submit(t *rapid.T) {
	rd, fd, ok := m.pick(t)
	if !ok {
		t.Skip("no descriptor")
	}
	op, l := rd.OpID(), rd.NextLayer()
	if rapid.IntRange(0, 4).Draw(t, "odd") == 0 {
		op = rapid.Uint64Range(1, m.nextOp+1).Draw(t, "op")
		l = rapid.IntRange(-1, m.pools.Layers).Draw(t, "layer")
	}
	same(t, "SubmitLayer", nil, nil, rd.SubmitLayer(op, l), fd.SubmitLayer(op, l))
}

func (m *loadMachine) end(t *rapid.T) {
	rd, fd, ok := m.pick(t)
	if !ok {
		t.Skip("no descriptor")
	}
	if rapid.IntRange(0, 3).Draw(t, "cancel") == 0 {
		same(t, "Cancel", nil, nil, rd.Cancel(), fd.Cancel())
		return
	}
	same(t, "EndLoad", nil, nil, rd.EndLoad(), fd.EndLoad())
}

func (m *loadMachine) counter(t *rapid.T) {
	s := spec.CounterStep{
		Op:    rapid.SampledFrom([]string{spec.CounterUpdateProducer, spec.CounterComplete, spec.CounterComplete, spec.CounterSetConsumer, spec.CounterReady, spec.CounterReset}).Draw(t, "counter_op"),
		Slot:  rapid.IntRange(-1, 3).Draw(t, "slot"),
		Layer: rapid.IntRange(-1, m.pools.Layers).Draw(t, "layer"),
	}
	if st := m.refC.State(); s.Op == spec.CounterComplete && st.Producer >= 0 && rapid.Bool().Draw(t, "in_order") {
		s.Slot, s.Layer = st.Producer, st.Done[st.Producer]
	}
	rr, fr := counterCall(m.refC, s), counterCall(m.fastC, s)
	same(t, s.Op, rr, fr, nil, nil)
}

// counterCall runs one counter step and returns its canonical result.
func counterCall(c spec.LayerDoneCounter, s spec.CounterStep) string {
	var v any
	var err error
	switch s.Op {
	case spec.CounterUpdateProducer:
		v, err = c.UpdateProducer()
	case spec.CounterComplete:
		err = c.Complete(s.Slot, s.Layer)
	case spec.CounterSetConsumer:
		err = c.SetConsumer(s.Slot)
	case spec.CounterReady:
		v, err = c.Ready(s.Layer)
	default:
		c.Reset()
	}
	return string(catalog.Canonical(v, err))
}

// check compares the whole observable state of both twins and the
// invariants after every call: arenas and fallback logs equal, every
// descriptor's state equal, a prepared descriptor built once (D2), and
// the counters' states equal.
func (m *loadMachine) check(t *rapid.T) {
	ra, fa := m.refLd.Arena(), m.fastLd.Arena()
	for _, bufs := range [][2][][]byte{{ra.DevKV, fa.DevKV}, {ra.DevIndex, fa.DevIndex}, {ra.HostKV, fa.HostKV}, {ra.HostIndex, fa.HostIndex}} {
		for i := range bufs[0] {
			if !bytes.Equal(bufs[0][i], bufs[1][i]) {
				t.Fatalf("arena buffer %d differs: ref %x, fast %x", i, bufs[0][i], bufs[1][i])
			}
		}
	}
	if diff := cmp.Diff(m.refLd.Fallbacks(), m.fastLd.Fallbacks()); diff != "" {
		t.Fatalf("fallback logs differ (-ref +fast):\n%s", diff)
	}
	for i := range m.refDs {
		if diff := cmp.Diff(descView(m.refDs[i]), descView(m.fastDs[i])); diff != "" {
			t.Fatalf("descriptor %d differs (-ref +fast):\n%s", i, diff)
		}
		if d := m.fastDs[i]; !d.Fallback() && d.Builds() != 1 {
			t.Fatalf("D2: prepared descriptor %d built %d times", i, d.Builds())
		}
	}
	if r, f := m.refC.State(), m.fastC.State(); r != f {
		t.Fatalf("counters differ: ref %+v, fast %+v", r, f)
	}
}

// TestLoadTwinsAgreeAfterEveryCall is the §5.2/§5.3 state machine: random
// interleavings of BeginLoad, SubmitLayer, EndLoad and Cancel over several
// open descriptors, and counter calls; after every call the twins return
// the same canonical result and hold the same observable state.
func TestLoadTwinsAgreeAfterEveryCall(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := spec.LoadPools{Layers: rapid.IntRange(1, 3).Draw(t, "layers"), HostSlots: 8, DevSlots: 8, KVBytes: 1, IndexBytes: 1, IndexLayers: []int{0}}
		m := &loadMachine{pools: p}
		var err error
		if m.refLd, err = ref.NewLoader(spec.DefaultLimits(), p); err != nil {
			t.Fatal(err)
		}
		if m.fastLd, err = fast.NewLoader(spec.DefaultLimits(), p); err != nil {
			t.Fatal(err)
		}
		m.refC, _ = ref.NewLayerDoneCounter(p.Layers)
		m.fastC, _ = fast.NewLayerDoneCounter(p.Layers)
		t.Repeat(map[string]func(*rapid.T){
			"begin":   m.begin,
			"submit":  m.submit,
			"end":     m.end,
			"counter": m.counter,
			"":        m.check,
		})
	})
}
