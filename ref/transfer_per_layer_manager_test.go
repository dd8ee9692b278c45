package ref_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// workedTrace is docs/spec/transfer.md §4.6: N=3, H=2, K=2, one context.
func workedTrace() spec.TransferPerLayerScriptInput {
	return spec.TransferPerLayerScriptInput{Steps: []spec.PerLayerStep{
		{Op: spec.PerLayerCreate, Layers: 3, Hooked: 2, Group: 2, ItemLen: 4, SrcPages: 4, DstPages: 4},
		{Op: spec.PerLayerRegister, Room: 7, Chunk: 0, Infos: 1, Owned: []int64{1, 2}, Dst: []int64{0, 3}},
		{Op: spec.PerLayerForwardBegin},
		{Op: spec.PerLayerLayerEnd, Layer: 0},
		{Op: spec.PerLayerLayerEnd, Layer: 1},
		{Op: spec.PerLayerForwardEnd},
		{Op: spec.PerLayerCompleteEvent, Event: 1},
		{Op: spec.PerLayerWorkerStep},
		{Op: spec.PerLayerFinish, Room: 7, Chunk: 0},
	}}
}

func TestWorkedTraceMatchesMonolithic(t *testing.T) {
	out, err := ref.TransferPerLayerScript(spec.DefaultLimits(), workedTrace())
	if err != nil {
		t.Fatal(err)
	}
	if e := out.Trace[3].Event; e != 0 {
		t.Errorf("layer 0 is not a boundary, recorded event %d", e)
	}
	if e := out.Trace[4].Event; e != 1 {
		t.Errorf("layer 1 closes the group: want event 1, got %d", e)
	}
	if w := out.Trace[7].Work; w == nil || w.Batch != 1 || len(w.Layers) != 2 {
		t.Errorf("worker step: want batch 1 over layers [0 1], got %+v", w)
	}
	if f := out.Trace[8].Finish; f == nil || !f.Handled || f.Status != 0 {
		t.Fatalf("finish: want handled status 0, got %+v", f)
	}
	kinds := []string{}
	for _, c := range out.Calls {
		kinds = append(kinds, c.Kind)
	}
	if got := kinds; len(got) != 3 || got[0] != spec.CallAsync || got[1] != spec.CallSync || got[2] != spec.CallWait {
		t.Errorf("engine calls: want async, sync (the missed layer 2), wait; got %v", got)
	}
	g := ref.GeometryOf(workedTrace().Steps[0])
	src, dst := g.Arenas()
	e := ref.NewMemEngine(src, dst, false)
	p := g.Plan("mono", []int64{1, 2}, []int64{0, 3})
	if st := ref.MonolithicSend(e, "mono", p.Blocks); st != 0 {
		t.Fatal(st)
	}
	if out.DstDigest != e.DstDigest() {
		t.Error("per-layer dst bytes differ from the monolithic send")
	}
}

func TestTransferPerLayerScriptRejects(t *testing.T) {
	create := spec.PerLayerStep{Op: spec.PerLayerCreate, Layers: 2, Hooked: 2, Group: 1, ItemLen: 2, SrcPages: 2, DstPages: 2}
	bad := func(mod func(*spec.PerLayerStep)) []spec.PerLayerStep {
		c := create
		mod(&c)
		return []spec.PerLayerStep{c}
	}
	for _, tc := range []struct {
		name  string
		steps []spec.PerLayerStep
		want  *spec.Sentinel
		field string
	}{
		{"empty", nil, spec.ErrScriptOrder, "steps[0].op"},
		{"no create first", []spec.PerLayerStep{{Op: spec.PerLayerWorkerStep}}, spec.ErrScriptOrder, "steps[0].op"},
		{"second create", []spec.PerLayerStep{create, create}, spec.ErrScriptOrder, "steps[1].op"},
		{"unknown op", []spec.PerLayerStep{create, {Op: "teleport"}}, spec.ErrBadEnum, "steps[1].op"},
		{"zero layers", bad(func(s *spec.PerLayerStep) { s.Layers = 0 }), spec.ErrBadNumLayers, "steps[0].layers"},
		{"K = 0", bad(func(s *spec.PerLayerStep) { s.Group = 0 }), spec.ErrBadGroupSize, "steps[0].group"},
		{"negative H", bad(func(s *spec.PerLayerStep) { s.Hooked = -1 }), spec.ErrLayerOutOfOrder, "steps[0].hooked"},
		{"zero item_len", bad(func(s *spec.PerLayerStep) { s.ItemLen = 0 }), spec.ErrZeroItemLen, "steps[0].item_len"},
		{"zero src pages", bad(func(s *spec.PerLayerStep) { s.SrcPages = 0 }), spec.ErrNegative, "steps[0].src_pages"},
		{"huge arena", bad(func(s *spec.PerLayerStep) { s.ItemLen = 1 << 40 }), spec.ErrTooLarge, "steps[0].src_pages"},
		{"overflowing arena", bad(func(s *spec.PerLayerStep) { s.ItemLen, s.SrcPages = 1<<40, 1<<40 }), spec.ErrOverflow, "steps[0].src_pages"},
		{"length mismatch", []spec.PerLayerStep{create, {Op: spec.PerLayerRegister, Owned: []int64{0}, Dst: []int64{}}}, spec.ErrLengthMismatch, "steps[1].dst"},
		{"owned past arena", []spec.PerLayerStep{create, {Op: spec.PerLayerRegister, Owned: []int64{2}, Dst: []int64{0}}}, spec.ErrPageOutOfArena, "steps[1].owned[0]"},
		{"dst duplicate", []spec.PerLayerStep{create, {Op: spec.PerLayerMonolithic, Owned: []int64{0, 1}, Dst: []int64{1, 1}}}, spec.ErrDuplicateDstPage, "steps[1].dst[1]"},
		{"bad fault", []spec.PerLayerStep{create, {Op: spec.PerLayerInject, Fault: "gremlin"}}, spec.ErrBadEnum, "steps[1].fault"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ref.TransferPerLayerScript(spec.DefaultLimits(), spec.TransferPerLayerScriptInput{Steps: tc.steps})
			ie, ok := spec.AsInputError(err)
			if !errors.Is(err, tc.want) || !ok || ie.Field != tc.field {
				t.Fatalf("want %s at %s, got %v", tc.want.Code(), tc.field, err)
			}
		})
	}
}

// TestRefusedStepsChangeNothing: every runtime refusal leaves the manager
// deep-equal to before (the quality bar's "never half-update").
func TestRefusedStepsChangeNothing(t *testing.T) {
	run, err := ref.NewPerLayerRun(spec.PerLayerStep{Op: spec.PerLayerCreate, Layers: 2, Hooked: 2, Group: 2, ItemLen: 1, SrcPages: 2, DstPages: 2}, ref.NewPerLayerManager, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := run.Manager
	if ok, err := m.Register(1, 0, 1, func() *spec.LayerPlan { return run.Geometry.Plan("s", []int64{0}, []int64{1}) }); !ok || err != nil {
		t.Fatal(ok, err)
	}
	_ = m.ForwardBegin()
	_, _ = m.OnLayerEnd(1)
	before := m.State()
	refusals := []func() error{
		func() error { _, err := m.Register(1, 2, 1, nil); return err },
		func() error { return m.ForwardBegin() },
		func() error { _, err := m.OnLayerEnd(2); return err },
		func() error { _, err := m.WorkerStep(); return err },
		func() error { _, err := m.Finish(1, 4); return err },
	}
	for i, f := range refusals {
		if f() == nil {
			t.Fatalf("refusal %d was accepted", i)
		}
		if a, b := mustJSON(t, before), mustJSON(t, m.State()); a != b {
			t.Fatalf("refusal %d changed the state:\n%s\n%s", i, a, b)
		}
	}
}

// recorder is a slog.Handler that keeps every record.
type recorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec)
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

func (r *recorder) atLeast(l slog.Level) []slog.Record {
	var out []slog.Record
	for _, rec := range r.recs {
		if rec.Level >= l {
			out = append(out, rec)
		}
	}
	return out
}

// TestLoggingContract is docs/spec/transfer.md §9 on the reference manager: a
// successful finish logs only DEBUG, a failed one exactly one WARNING
// naming the timeout, a repeated finish nothing.
func TestLoggingContract(t *testing.T) {
	rec := &recorder{}
	create := spec.PerLayerStep{Op: spec.PerLayerCreate, Layers: 2, Hooked: 1, Group: 1, ItemLen: 1, SrcPages: 1, DstPages: 2}
	run, _ := ref.NewPerLayerRun(create, ref.NewPerLayerManager, slog.New(rec))
	m := run.Manager
	plan := func() *spec.LayerPlan { return run.Geometry.Plan("s", []int64{0}, []int64{1}) }
	m.Register(1, 0, 1, plan)
	m.Register(2, 0, 1, plan)
	m.ForwardBegin()
	m.OnLayerEnd(0)
	m.ForwardEnd()
	if f, _ := m.Finish(1, 0); f.Status != -1 || f.Reason != "finish TIMEOUT processed=0/1" {
		t.Fatalf("want a timeout, got %+v", f)
	}
	warn := rec.atLeast(slog.LevelWarn)
	if len(warn) != 1 || !bytes.Contains([]byte(attrs(warn[0])), []byte("finish TIMEOUT processed=0/1")) {
		t.Fatalf("want one WARNING with the timeout text, got %d", len(warn))
	}
	n := len(rec.recs)
	m.Refinish()
	if len(rec.recs) != n {
		t.Error("a repeated finish logged again")
	}
	run.Events.Complete(1, false)
	m.WorkerStep()
	m.WorkerStep()
	if f, _ := m.Finish(2, 0); f.Status != 0 {
		t.Fatalf("room 2: want 0, got %+v", f)
	}
	if len(rec.atLeast(slog.LevelInfo)) != 1 {
		t.Error("the successful finish logged at INFO or above")
	}
	if len(rec.recs) <= n {
		t.Error("the successful finish logged no DEBUG record")
	}
}

func attrs(r slog.Record) string {
	var b bytes.Buffer
	r.Attrs(func(a slog.Attr) bool { b.WriteString(a.String() + " "); return true })
	return b.String()
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
