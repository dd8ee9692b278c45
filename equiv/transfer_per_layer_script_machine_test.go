package equiv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// logRecorder is a slog.Handler that keeps every record's level and text.
type logRecorder struct {
	mu   sync.Mutex
	recs []logRec
}

type logRec struct {
	level slog.Level
	text  string
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	var b bytes.Buffer
	b.WriteString(rec.Message)
	rec.Attrs(func(a slog.Attr) bool { b.WriteString(" " + a.String()); return true })
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, logRec{rec.Level, b.String()})
	return nil
}
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *logRecorder) WithGroup(string) slog.Handler      { return r }

func (r *logRecorder) since(n int) []logRec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.recs[n:])
}

func (r *logRecorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.recs)
}

// perLayerChecker checks the ten invariants of docs/spec/transfer.md §4.8 on one run
// after every step, from the step, its result, the state before and the
// engine's new calls.
type perLayerChecker struct {
	run     *ref.PerLayerRun
	log     *logRecorder
	steps   []spec.PerLayerStep
	hooked  int
	sent    map[string]map[spec.Block]bool
	closed  map[string]bool        // finished, drained or failed: nothing more may be submitted
	eventOf map[string]map[int]int // session → layer → the event of its group
	evFail  map[int]bool
	owner   map[uint64]string // batch → session
	calls   int
	last    *spec.FinishResult
}

func newPerLayerChecker(run *ref.PerLayerRun, log *logRecorder, create spec.PerLayerStep) *perLayerChecker {
	return &perLayerChecker{run: run, log: log, steps: []spec.PerLayerStep{create}, hooked: create.Hooked,
		sent: map[string]map[spec.Block]bool{}, closed: map[string]bool{}, eventOf: map[string]map[int]int{},
		evFail: map[int]bool{}, owner: map[uint64]string{}}
}

func (c *perLayerChecker) noteQueue(st spec.PerLayerState) {
	for _, it := range st.Queue {
		if c.eventOf[it.Session] == nil {
			c.eventOf[it.Session] = map[int]int{}
		}
		for _, l := range it.Layers {
			c.eventOf[it.Session][l] = it.Event
		}
	}
	for _, r := range st.Rooms {
		for _, x := range r.Contexts {
			if x.Failed || x.Finished {
				c.closed[x.Session] = true
			}
		}
	}
}

// step runs s on the checker's run and checks the invariants; it returns
// the step's result.
func (c *perLayerChecker) step(s spec.PerLayerStep) (spec.PerLayerStepResult, error) {
	before := c.run.Manager.State()
	c.noteQueue(before)
	logs := c.log.len()
	res := c.run.Step(s, len(c.steps))
	return res, c.recheck(s, res, before, logs)
}

// checkCalls is §4.8.2 (no double send, nothing after failure/finish/drain)
// and §4.8.3 (an async submit of layer l only after l's group event completed).
func (c *perLayerChecker) checkCalls(fresh []spec.EngineCall) error {
	per := uint64(c.run.Geometry.SrcPages * c.run.Geometry.ItemLen)
	for _, call := range fresh {
		if call.Kind == spec.CallWait {
			continue
		}
		if call.Kind == spec.CallAsync && call.Batch != 0 {
			c.owner[call.Batch] = call.Session
		}
		if stepOf, ok := stepOf(call.Session); ok && c.steps[stepOf].Op == spec.PerLayerMonolithic {
			continue
		}
		if c.closed[call.Session] {
			return fmt.Errorf("§4.8.2: %s submitted after it failed, finished or drained", call.Session)
		}
		if call.Status != 0 {
			c.closed[call.Session] = true
		}
		if c.sent[call.Session] == nil {
			c.sent[call.Session] = map[spec.Block]bool{}
		}
		for _, b := range call.Blocks {
			if c.sent[call.Session][b] {
				return fmt.Errorf("§4.8.2: %s handed block %+v to the engine twice", call.Session, b)
			}
			c.sent[call.Session][b] = true
			if call.Kind != spec.CallAsync {
				continue
			}
			l := int(b.Src / per)
			ev := c.eventOf[call.Session][l]
			if ev == 0 || slices.Contains(c.run.Events.Pending(), ev) || c.evFail[ev] {
				return fmt.Errorf("§4.8.3: %s submitted layer %d before its event %d completed", call.Session, l, ev)
			}
		}
	}
	return nil
}

// checkPure: a refused step, a deduplicated register (§4.8.8) and a
// refinish (§4.8.9) change nothing and call nothing.
func (c *perLayerChecker) checkPure(s spec.PerLayerStep, res spec.PerLayerStepResult, before, after spec.PerLayerState, fresh []spec.EngineCall) error {
	pure := res.Error != nil || s.Op == spec.PerLayerRefinish || s.Op == spec.PerLayerHas
	if s.Op == spec.PerLayerRegister && s.Infos == 1 {
		for _, r := range before.Rooms {
			for _, x := range r.Contexts {
				pure = pure || (r.Room == s.Room && x.Chunk == s.Chunk)
			}
		}
	}
	if !pure {
		return nil
	}
	if len(fresh) > 0 {
		return fmt.Errorf("§4.8.8/9: a step that must change nothing called the engine %d times", len(fresh))
	}
	if d := cmp.Diff(before, after); d != "" {
		return fmt.Errorf("§4.8.8/9: a step that must change nothing changed the state:\n%s", d)
	}
	return nil
}

// checkEnqueued is §4.8.1.
func (c *perLayerChecker) checkEnqueued(st spec.PerLayerState) error {
	for _, r := range st.Rooms {
		for _, x := range r.Contexts {
			if len(x.Enqueued) > 0 && (x.Enqueued[0] < 0 || x.Enqueued[len(x.Enqueued)-1] >= c.hooked) {
				return fmt.Errorf("§4.8.1: %s enqueued %v outside [0, H=%d)", x.Session, x.Enqueued, c.hooked)
			}
			if len(x.Enqueued) > x.Layers || x.Target != len(x.Enqueued) {
				return fmt.Errorf("§4.8.1: %s target %d, |enqueued| %d, N %d", x.Session, x.Target, len(x.Enqueued), x.Layers)
			}
		}
	}
	return nil
}

// checkFinish is §4.8.4, 5, 6 (the chunk), 9 and 10 for finish and refinish steps.
func (c *perLayerChecker) checkFinish(s spec.PerLayerStep, res spec.PerLayerStepResult, logs int) error {
	f := res.Finish
	recs := c.log.since(logs)
	if s.Op == spec.PerLayerRefinish {
		if f != nil && (c.last == nil || *f != *c.last) || len(recs) > 0 {
			return fmt.Errorf("§4.8.9: refinish returned %+v and logged %d records; the finish returned %+v", f, len(recs), c.last)
		}
		return nil
	}
	if s.Op != spec.PerLayerFinish || f == nil || !f.Handled {
		return nil
	}
	c.last = f
	c.closed[f.Session] = true
	if f.Chunk != s.Chunk {
		return fmt.Errorf("§4.8.6: finish of chunk %d finished chunk %d", s.Chunk, f.Chunk)
	}
	unwaited := c.run.Engine.Unwaited()
	for _, id := range unwaited {
		if c.owner[id] == f.Session {
			return fmt.Errorf("§4.8.5: finish returned with batch %d of %s never waited", id, f.Session)
		}
	}
	if f.Status != 0 {
		if n := countLevel(recs, slog.LevelWarn); n != 1 || len(recs) != n {
			return fmt.Errorf("§9: a failed finish logged %d WARNINGs in %d records", n, len(recs))
		}
		return nil
	}
	if err := c.checkMonolithic(f.Session); err != nil {
		return err
	}
	if n := countLevel(recs, slog.LevelInfo); n != 0 {
		return fmt.Errorf("§4.8.10: a successful finish logged %d records at INFO or above", n)
	}
	return nil
}

func countLevel(recs []logRec, min slog.Level) int {
	n := 0
	for _, r := range recs {
		if r.level >= min {
			n++
		}
	}
	return n
}

// checkMonolithic is §4.8.4 for one context that finished 0: the blocks it
// handed over are exactly the monolithic send's, and every byte they
// address in the destination holds what a monolithic send writes there —
// except ranges another session (a context or a monolithic step of the
// script) also wrote, whose final bytes depend on the order the two
// contexts' copies completed. TestPerLayerSendEqualsMonolithicArena checks
// the whole arena where a single chunk is the only writer.
func (c *perLayerChecker) checkMonolithic(session string) error {
	k, _ := stepOf(session)
	reg := c.steps[k]
	plan := c.run.Geometry.Plan(session, reg.Owned, reg.Dst)
	var want []spec.Block
	for _, bl := range plan.Blocks {
		want = append(want, bl...)
	}
	got := []spec.Block{}
	for b := range c.sent[session] {
		got = append(got, b)
	}
	if !sameMultiset(want, got) {
		return fmt.Errorf("§4.8.4: %s finished 0 having sent %v; the monolithic send is %v", session, got, want)
	}
	src, _ := c.run.Geometry.Arenas()
	dst := c.run.Engine.Dst()
	for _, b := range want {
		if c.sharedDst(session, b) {
			continue
		}
		if !bytes.Equal(dst[b.Dst:b.Dst+b.Len], src[b.Src:b.Src+b.Len]) {
			return fmt.Errorf("§4.8.4: %s finished 0 but dst[%d:+%d] is not what the monolithic send writes", session, b.Dst, b.Len)
		}
	}
	return nil
}

// sharedDst reports whether another session handed the engine a block
// overlapping b's destination range.
func (c *perLayerChecker) sharedDst(session string, b spec.Block) bool {
	for _, call := range c.run.Engine.Calls() {
		if call.Session == session {
			continue
		}
		for _, o := range call.Blocks {
			if o.Dst < b.Dst+b.Len && b.Dst < o.Dst+o.Len {
				return true
			}
		}
	}
	return false
}

// checkRooms is §4.8.6 (HasRoom ⇔ a non-empty deque) and §4.8.7 (after a
// drop the room is gone and all its batches were waited).
func (c *perLayerChecker) checkRooms(s spec.PerLayerStep, before, after spec.PerLayerState) error {
	listed := map[uint64]bool{}
	for _, r := range after.Rooms {
		listed[r.Room] = len(r.Contexts) > 0
		if len(r.Contexts) == 0 {
			return fmt.Errorf("§4.8.6: room %d listed with an empty deque", r.Room)
		}
	}
	for room := uint64(0); room <= 4; room++ {
		if c.run.Manager.HasRoom(room) != listed[room] {
			return fmt.Errorf("§4.8.6: HasRoom(%d) = %t, the deque says %t", room, !listed[room], listed[room])
		}
	}
	if s.Op != spec.PerLayerDrop {
		return nil
	}
	if listed[s.Room] {
		return fmt.Errorf("§4.8.7: room %d still has contexts after the drop", s.Room)
	}
	dropped := map[string]bool{}
	for _, r := range before.Rooms {
		if r.Room == s.Room {
			for _, x := range r.Contexts {
				dropped[x.Session] = true
				c.closed[x.Session] = true
			}
		}
	}
	for _, id := range c.run.Engine.Unwaited() {
		if dropped[c.owner[id]] {
			return fmt.Errorf("§4.8.7: batch %d of dropped %s was never waited", id, c.owner[id])
		}
	}
	return nil
}

// perLayerMachine drives a reference run (the generator's own, checked) and
// a fast run (checked) with one step sequence.
type perLayerMachine struct {
	gen            *perLayerGen
	refChk, fstChk *perLayerChecker
}

func newPerLayerMachine(t *rapid.T) *perLayerMachine {
	create := perLayerDrawCreate(t)
	refLog, fastLog := &logRecorder{}, &logRecorder{}
	g := newPerLayerGen(t, create, slog.New(refLog))
	fr, err := ref.NewPerLayerRun(create, fast.NewPerLayerManager, slog.New(fastLog))
	if err != nil {
		t.Fatal(err)
	}
	return &perLayerMachine{gen: g, refChk: newPerLayerChecker(g.run, refLog, create), fstChk: newPerLayerChecker(fr, fastLog, create)}
}

// step draws one step; the generator's reference run took it, the ref
// checker replays the check on that result, the fast run takes it too.
func (m *perLayerMachine) step(t *rapid.T) {
	from := len(m.gen.steps)
	refBefore := m.gen.run.Manager.State()
	m.refChk.noteQueue(refBefore)
	logs := m.refChk.log.len()
	m.gen.step()
	for i := from; i < len(m.gen.steps); i++ {
		s, rr := m.gen.steps[i], m.gen.results[i]
		if err := m.refChk.recheck(s, rr, refBefore, logs); err != nil {
			t.Fatalf("ref: %v", err)
		}
		fr, err := m.fstChk.step(s)
		if err != nil {
			t.Fatalf("fast: %v", err)
		}
		rb, _ := json.Marshal(rr)
		fb, _ := json.Marshal(fr)
		if d := cmp.Diff(string(rb), string(fb)); d != "" {
			t.Fatalf("step %d %+v: results differ (-ref +fast):\n%s", i, s, d)
		}
	}
}

// recheck runs the invariants on a step the generator already ran.
func (c *perLayerChecker) recheck(s spec.PerLayerStep, res spec.PerLayerStepResult, before spec.PerLayerState, logs int) error {
	i := len(c.steps)
	c.steps = append(c.steps, s)
	after := c.run.Manager.State()
	all := c.run.Engine.Calls()
	fresh := all[c.calls:]
	c.calls = len(all)
	if s.Op == spec.PerLayerCompleteEvent && s.Fail && res.Error == nil {
		c.evFail[s.Event] = true
	}
	if err := c.checkCalls(fresh); err != nil {
		return fmt.Errorf("step %d (%s): %w", i, s.Op, err)
	}
	c.noteQueue(after)
	for _, err := range []error{
		c.checkPure(s, res, before, after, fresh),
		c.checkEnqueued(after),
		c.checkFinish(s, res, logs),
		c.checkRooms(s, before, after),
	} {
		if err != nil {
			return fmt.Errorf("step %d (%s): %w", i, s.Op, err)
		}
	}
	return nil
}

// check compares the whole observable state: manager state, engine log,
// in-flight batches and destination bytes.
func (m *perLayerMachine) check(t *rapid.T) {
	r, f := m.gen.run, m.fstChk.run
	if d := cmp.Diff(r.Manager.State(), f.Manager.State()); d != "" {
		t.Fatalf("after step %d the states differ (-ref +fast):\n%s", len(m.gen.steps)-1, d)
	}
	if d := cmp.Diff(r.Engine.Calls(), f.Engine.Calls()); d != "" {
		t.Fatalf("after step %d the engine logs differ (-ref +fast):\n%s", len(m.gen.steps)-1, d)
	}
	if r.Engine.DstDigest() != f.Engine.DstDigest() || !slices.Equal(r.Engine.Unwaited(), f.Engine.Unwaited()) {
		t.Fatalf("after step %d the destination arenas or in-flight batches differ", len(m.gen.steps)-1)
	}
}

// TestPerLayerTwinsAgreeAfterEveryStep is the per-layer state machine of
// docs/spec/transfer.md §4.8: registrations of 1–3 rooms (duplicates, several
// chunks per room, 0 or 2 non-dummy infos), forwards whose hooks fire in
// order with stray and out-of-range layers, events and batches completing
// in any order and sometimes failing, deterministic worker steps, injected
// submit/wait/sync faults, finishes early and late, refinishes, drops and
// monolithic sends. After every step ref and fast return the same result,
// state, engine log and destination bytes, and both satisfy the ten
// invariants (checked by perLayerChecker on each run).
func TestPerLayerTwinsAgreeAfterEveryStep(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newPerLayerMachine(t)
		t.Repeat(map[string]func(*rapid.T){
			"step": m.step,
			"":     m.check,
		})
	})
}

// TestPerLayerSendEqualsMonolithicArena is §4.8.4 on the whole arena: one
// chunk, hooks fired in order over any number of forwards, events and
// batches completed in a random interleaving, then Finish. When it returns
// 0 the destination arena equals, byte for byte, a monolithic send on a
// clone of the initial arenas; when it returns −1 (an injected fault)
// every submitted batch was waited.
func TestPerLayerSendEqualsMonolithicArena(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		create := perLayerDrawCreate(t)
		for _, newM := range []spec.NewPerLayerManagerFunc{ref.NewPerLayerManager, fast.NewPerLayerManager} {
			run, err := ref.NewPerLayerRun(create, newM, nil)
			if err != nil {
				t.Fatal(err)
			}
			g := &perLayerGen{t: t, run: run, steps: []spec.PerLayerStep{create}}
			owned, dst := g.pages("chunk")
			g.apply(spec.PerLayerStep{Op: spec.PerLayerRegister, Room: 1, Infos: 1, Owned: owned, Dst: dst})
			if rapid.Bool().Draw(t, "fault") {
				g.apply(spec.PerLayerStep{Op: spec.PerLayerInject, Fault: rapid.SampledFrom([]spec.EngineFault{spec.FaultSubmit, spec.FaultWait, spec.FaultSync}).Draw(t, "which")})
			}
			for _, s := range perLayerForward(create.Hooked, 0, 0) {
				g.apply(s)
			}
			for range rapid.IntRange(0, 30).Draw(t, "interleave") {
				switch rapid.IntRange(0, 2).Draw(t, "op") {
				case 0:
					if p := run.Events.Pending(); len(p) > 0 {
						g.apply(spec.PerLayerStep{Op: spec.PerLayerCompleteEvent, Event: rapid.SampledFrom(p).Draw(t, "ev")})
					}
				case 1:
					g.apply(spec.PerLayerStep{Op: spec.PerLayerWorkerStep})
				case 2:
					if f := run.Engine.InFlight(); len(f) > 0 {
						g.apply(spec.PerLayerStep{Op: spec.PerLayerEngineComplete, Batch: rapid.SampledFrom(f).Draw(t, "b")})
					}
				}
			}
			for _, e := range run.Events.Pending() {
				g.apply(spec.PerLayerStep{Op: spec.PerLayerCompleteEvent, Event: e})
			}
			for {
				if w, err := run.Manager.WorkerStep(); err != nil || w.Idle {
					break
				}
			}
			res := run.Step(spec.PerLayerStep{Op: spec.PerLayerFinish, Room: 1}, 1)
			if len(run.Engine.Unwaited()) != 0 {
				t.Fatalf("finish returned with batches %v never waited", run.Engine.Unwaited())
			}
			if res.Finish.Status != 0 {
				continue
			}
			src, mono := run.Geometry.Arenas()
			e := ref.NewMemEngine(src, mono, false)
			plan := run.Geometry.Plan("mono", owned, dst)
			if ref.MonolithicSend(e, "mono", plan.Blocks) != 0 || e.DstDigest() != run.Engine.DstDigest() {
				t.Fatalf("finish returned 0 but the arena differs from the monolithic send")
			}
		}
	})
}
