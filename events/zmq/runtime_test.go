package zmq

import (
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// Sources at run time (docs/spec/kv-events.md §2.10 A11): the subscriber's
// AddSource and RemoveSource on real sockets, against the Go and the Python
// publisher, over a recording reference index whose script, run through
// kvev.apply, must give the live index's state.

// runtimeConfig gives the tests' indexes 8 engines and each source a share of 4,
// so two sources fit and a third does not.
var runtimeConfig = spec.KVEvConfig{MaxEngines: 8, MaxEnginesPerStream: 4}

// runtimeEnv is a subscriber over a recording reference index built over
// sources with runtimeConfig.
type runtimeEnv struct {
	t       *testing.T
	streams []spec.KVEvStream // the index's build list
	ix      *recIndex
	sub     *Subscriber
	runner  subRun
}

// newRuntimeEnv builds the env over sources; Run is not started.
func newRuntimeEnv(t *testing.T, sources []Source) *runtimeEnv {
	t.Helper()
	streams := Streams(sources)
	inner, err := ref.NewKVEvIndex(runtimeConfig, streams)
	if err != nil {
		t.Fatal(err)
	}
	e := &runtimeEnv{t: t, streams: streams, ix: &recIndex{KVEvIndex: inner}}
	if e.sub, err = New(e.ix, sources, testOptions(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.stop)
	return e
}

// run starts Run.
func (e *runtimeEnv) run() { e.runner.start(e.sub) }

// stop ends Run and waits for it.
func (e *runtimeEnv) stop() { e.runner.stop(e.t) }

// waitFor polls cond until it holds or 15 s pass.
func (e *runtimeEnv) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s; sources %+v; calls: %s", what, e.sub.Status(), e.ix.ops())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// settle waits until the named stream has applied every seq below next.
func (e *runtimeEnv) settle(name string, next uint64) {
	e.t.Helper()
	e.waitFor(name+" to apply up to "+seqString(next), func() bool {
		st, ok := streamOf(e.ix.State(), name)
		return ok && st.Known && st.Next == next && !st.Replaying && st.Held == 0
	})
}

// status is the named source's status; it fails the test when the
// subscriber has no such source.
func (e *runtimeEnv) status(name string) SourceStatus {
	e.t.Helper()
	for _, s := range e.sub.Status() {
		if s.Name == name {
			return s
		}
	}
	e.t.Fatalf("no source %s in %+v", name, e.sub.Status())
	return SourceStatus{}
}

// checkRecorded: the live index equals kvev.apply run on the script of
// every call the subscriber made, the adds and removals included.
func (e *runtimeEnv) checkRecorded() {
	e.t.Helper()
	out, err := ref.KVEvApply(spec.DefaultLimits(), spec.KVEvApplyInput{Config: runtimeConfig, Streams: e.streams, Steps: e.ix.script()})
	if err != nil {
		e.t.Fatal(err)
	}
	if diff := cmp.Diff(out.State, e.ix.State()); diff != "" {
		e.t.Errorf("the live index differs from kvev.apply on its recorded script (-script +live):\n%s", diff)
	}
}

// streamOf is the named stream's state in st, and whether st has it.
func streamOf(st spec.KVEvState, name string) (spec.KVEvStreamState, bool) {
	i := slices.IndexFunc(st.Streams, func(s spec.KVEvStreamState) bool { return s.Name == name })
	if i < 0 {
		return spec.KVEvStreamState{}, false
	}
	return st.Streams[i], true
}

// enginesOf is the JSON of the engines the named stream feeds, pages and
// all: what must not change when another source comes or goes.
func enginesOf(t *testing.T, st spec.KVEvState, stream string) string {
	t.Helper()
	var mine []spec.KVEvEngineState
	for _, en := range st.Engines {
		if en.Stream == stream {
			mine = append(mine, en)
		}
	}
	b, err := json.Marshal(mine)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// storeOn stores a chain of n blocks on rank, block k under k-1, whose
// tokens start at base so that two sources' chains differ.
func storeOn(rank int64, base uint32, n int) pubCmd {
	evs := make([]pubEvent, n)
	for k := range n {
		var parent *pubHash
		if k > 0 {
			p := hu(uint64(base)<<8 + uint64(k-1))
			parent = &p
		}
		toks := []uint32{base + uint32(4*k), base + uint32(4*k+1), base + uint32(4*k+2), base + uint32(4*k+3)}
		evs[k] = stored([]pubHash{hu(uint64(base)<<8 + uint64(k))}, parent, toks, 4)
	}
	return pubCmd{Op: "emit", Events: evs, Rank: &rank}
}

// TestAnAddedSourceIsFedAndTheOtherSourcesKeepTheirConnectionAndEngines:
// a source added while Run runs connects and feeds the index, a second
// add of its name is refused, and the source that was there keeps its
// one connection and, byte for byte, its engines and pages.
func TestAnAddedSourceIsFedAndTheOtherSourcesKeepTheirConnectionAndEngines(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	forEachPublisher(t, func(t *testing.T, start func(testing.TB, pubConfig) publisher) {
		pa, pb := start(t, pubConfig{Topic: "kv@pod-a@llama"}), start(t, pubConfig{Topic: "kv@pod-b@llama"})
		defer pa.close()
		defer pb.close()
		a := Source{Name: "a", Endpoint: pa.pubEndpoint(), Replay: pa.replayEndpoint()}
		e := newRuntimeEnv(t, []Source{a})
		e.run()
		pa.do(awaitSub)
		pa.do(storeOn(0, 100, 3))
		pa.do(storeOn(1, 200, 2))
		e.settle("a", 2)
		before := enginesOf(t, e.ix.State(), "a")

		b := Source{Name: "b", Endpoint: pb.pubEndpoint(), Replay: pb.replayEndpoint()}
		if err := e.sub.AddSource(b); err != nil {
			t.Fatalf("AddSource(b): %v", err)
		}
		pb.do(awaitSub)
		pb.do(storeOn(0, 300, 2))
		e.settle("b", 1)
		if err := e.sub.AddSource(b); !errors.Is(err, ErrBadSource) {
			t.Errorf("a second AddSource(b): %v, want %v", err, ErrBadSource)
		}
		if got := enginesOf(t, e.ix.State(), "b"); got == "null" {
			t.Errorf("b feeds no engine after its store")
		}
		if got := enginesOf(t, e.ix.State(), "a"); got != before {
			t.Errorf("a's engines changed when b was added:\nbefore %s\nafter  %s", before, got)
		}
		if s := e.status("a"); s.Connects != 1 || s.Reconnects != 0 || s.Messages != 2 {
			t.Errorf("a's status %+v: want its one connection and its 2 messages", s)
		}
		if names := sourceNames(e.sub.Status()); !slices.Equal(names, []string{"a", "b"}) {
			t.Errorf("Status lists %v, want [a b]: New's sources, then the adds", names)
		}
		e.stop()
		e.checkRecorded()
	})
}

// TestARemovedSourceFreesItsShareAndBudgetAndReachesTheIndexNoMore: while
// the removed source's publisher keeps sending, RemoveSource ends its
// goroutines before its stream leaves the index, so no call for it
// follows the removal in the index's calls; its engines are gone, its
// engine share takes a new source, the bytes it held are released, a
// second removal is ErrUnknownSource, and the remaining source's engines
// are the same, byte for byte.
func TestARemovedSourceFreesItsShareAndBudgetAndReachesTheIndexNoMore(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	forEachPublisher(t, func(t *testing.T, start func(testing.TB, pubConfig) publisher) {
		pa, pb := start(t, pubConfig{Topic: "kv@pod-a@llama"}), start(t, pubConfig{Topic: "kv@pod-b@llama"})
		defer pa.close()
		defer pb.close()
		a := Source{Name: "a", Endpoint: pa.pubEndpoint(), Replay: pa.replayEndpoint()}
		b := Source{Name: "b", Endpoint: pb.pubEndpoint(), Replay: pb.replayEndpoint()}
		e := newRuntimeEnv(t, []Source{a, b})
		e.run()
		pa.do(awaitSub)
		pb.do(awaitSub)
		pa.do(storeOn(0, 100, 3))
		pb.do(storeOn(0, 300, 2))
		e.settle("a", 1)
		e.settle("b", 1)
		c := Source{Name: "c", Endpoint: "tcp://127.0.0.1:1"}
		if err := e.sub.AddSource(c); !errors.Is(err, spec.ErrTooLarge) {
			t.Fatalf("AddSource(c) with both shares taken: %v, want %v", err, spec.ErrTooLarge)
		}
		before := enginesOf(t, e.ix.State(), "a")

		// b keeps publishing while it is removed.
		var wg sync.WaitGroup
		stopB := make(chan struct{})
		wg.Go(func() {
			for k := 0; ; k++ {
				select {
				case <-stopB:
					return
				default:
				}
				pb.do(storeOn(int64(k%2), 400+uint32(k)*16, 1))
			}
		})
		e.waitFor("b's publisher to send while it runs", func() bool { return e.status("b").Messages > 3 })
		if err := e.sub.RemoveSource("b"); err != nil {
			t.Fatalf("RemoveSource(b): %v", err)
		}
		removedAt := len(e.ix.script())
		time.Sleep(100 * time.Millisecond) // b's publisher goes on sending into the void
		close(stopB)
		wg.Wait()
		pa.do(storeOn(1, 200, 1))
		e.settle("a", 2)

		script := e.ix.script()
		if last := script[removedAt-1]; last.Op != spec.KVStepRemoveStream || last.Stream != "b" {
			t.Fatalf("the call recorded last by RemoveSource's return is %+v, want b's removal", last)
		}
		for _, s := range script[removedAt:] {
			if s.Stream == "b" {
				t.Errorf("a %s of b reached the index after its removal", s.Op)
			}
		}
		st := e.ix.State()
		if _, ok := streamOf(st, "b"); ok {
			t.Errorf("the index still has stream b: %+v", st.Streams)
		}
		if got := enginesOf(t, st, "b"); got != "null" {
			t.Errorf("b's engines outlived it: %s", got)
		}
		if got := enginesOf(t, st, "a"); got == before {
			t.Errorf("a's engines did not take its last store")
		}
		if err := e.sub.RemoveSource("b"); !errors.Is(err, ErrUnknownSource) {
			t.Errorf("a second RemoveSource(b): %v, want %v", err, ErrUnknownSource)
		}
		if err := e.sub.AddSource(c); err != nil {
			t.Errorf("AddSource(c) into b's freed share: %v", err)
		}
		e.waitFor("the budget to hold nothing", func() bool { _, inUse := e.sub.Buffered(); return inUse == 0 })
		if s := e.status("a"); s.Connects != 1 || s.Reconnects != 0 {
			t.Errorf("a's status %+v: want its one connection", s)
		}
		e.stop()
		e.checkRecorded()
	})
}

// TestAKeptSourcesEnginesAreUntouchedByAnotherSourcesRemoval: byte for byte,
// a's engines and pages before and after b is removed, with nothing sent
// to a in between.
func TestAKeptSourcesEnginesAreUntouchedByAnotherSourcesRemoval(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	pa, pb := startGoPublisher(t, pubConfig{Topic: "kv@pod-a@llama"}), startGoPublisher(t, pubConfig{Topic: "kv@pod-b@llama"})
	defer pa.close()
	defer pb.close()
	e := newRuntimeEnv(t, []Source{{Name: "a", Endpoint: pa.pubEndpoint()}, {Name: "b", Endpoint: pb.pubEndpoint()}})
	e.run()
	pa.do(awaitSub)
	pb.do(awaitSub)
	pa.do(storeOn(0, 100, 4))
	pb.do(storeOn(0, 100, 4)) // the same blocks: only the engine (pod-b) differs
	e.settle("a", 1)
	e.settle("b", 1)
	before, stBefore := enginesOf(t, e.ix.State(), "a"), e.ix.State()
	if err := e.sub.RemoveSource("b"); err != nil {
		t.Fatal(err)
	}
	after := e.ix.State()
	if got := enginesOf(t, after, "a"); got != before {
		t.Errorf("a's engines changed when b was removed:\nbefore %s\nafter  %s", before, got)
	}
	sa, _ := streamOf(stBefore, "a")
	if sb, _ := streamOf(after, "a"); !cmp.Equal(sa, sb) {
		t.Errorf("a's stream changed when b was removed: %s", cmp.Diff(sa, sb))
	}
	e.stop()
}

// TestARefusedAddLeavesTheSubscriberUnchanged: an invalid source, a name
// taken, and an index with no room for one more share are each refused
// with their own error, and neither the index's streams nor the
// subscriber's sources change.
func TestARefusedAddLeavesTheSubscriberUnchanged(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	a := Source{Name: "a", Endpoint: "tcp://127.0.0.1:1"}
	e := newRuntimeEnv(t, []Source{a, {Name: "b", Endpoint: "tcp://127.0.0.1:2"}})
	e.run()
	digest := e.ix.State().Digest
	for _, c := range []struct {
		src   Source
		want  error
		field string
	}{
		{Source{Name: "c", Endpoint: "udp://127.0.0.1:3"}, ErrBadSource, "source[c].endpoint"},
		{Source{Name: "c d", Endpoint: "tcp://127.0.0.1:3"}, ErrBadSource, "source.name"},
		{Source{Name: "c", Endpoint: "tcp://127.0.0.1:3", Rank: -1}, ErrBadSource, "source[c].rank"},
		{Source{Name: "a", Endpoint: "tcp://127.0.0.1:3"}, ErrBadSource, "source.name"},
		{Source{Name: "c", Endpoint: "tcp://127.0.0.1:3"}, spec.ErrTooLarge, "config.max_engines"},
	} {
		err := e.sub.AddSource(c.src)
		ie, ok := spec.AsInputError(err)
		if !errors.Is(err, c.want) || !ok || ie.Field != c.field {
			t.Errorf("AddSource(%+v): %v, want %v at %s", c.src, err, c.want, c.field)
		}
	}
	if names := sourceNames(e.sub.Status()); !slices.Equal(names, []string{"a", "b"}) {
		t.Errorf("Status lists %v after the refusals, want [a b]", names)
	}
	if st := e.ix.State(); len(st.Streams) != 2 || st.Digest != digest {
		t.Errorf("the index changed: %+v", st.Streams)
	}
	e.stop()
}

// TestSourcesChangedBeforeAndDuringRunEndWithRun: a subscriber built with
// no source takes one before Run (started by Run), sources are added and
// removed while Status and Restart are called from other goroutines (for
// the race detector), every goroutine ends when Run does, and an add after
// Run returned is refused.
func TestSourcesChangedBeforeAndDuringRunEndWithRun(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	p := startGoPublisher(t, pubConfig{Topic: "kv@pod-a@llama"})
	defer p.close()
	e := newRuntimeEnv(t, nil)
	if err := e.sub.AddSource(Source{Name: "a", Endpoint: p.pubEndpoint()}); err != nil {
		t.Fatal(err)
	}
	if err := e.sub.RemoveSource("a"); err != nil {
		t.Fatalf("removing a source Run never started: %v", err)
	}
	if err := e.sub.AddSource(Source{Name: "a", Endpoint: p.pubEndpoint()}); err != nil {
		t.Fatal(err)
	}
	e.run()
	p.do(awaitSub)
	p.do(storeOn(0, 100, 1))
	e.settle("a", 1)

	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = e.sub.Status()
			_ = e.sub.Restart("b")
			_, _ = e.sub.Source("b")
		}
	})
	for range 10 {
		if err := e.sub.AddSource(Source{Name: "b", Endpoint: p.pubEndpoint(), Topic: "kv@"}); err != nil {
			t.Fatal(err)
		}
		if err := e.sub.RemoveSource("b"); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if err := e.sub.AddSource(Source{Name: "b", Endpoint: p.pubEndpoint()}); err != nil {
		t.Fatal(err)
	}
	e.stop()
	if err := e.sub.AddSource(Source{Name: "c", Endpoint: p.pubEndpoint()}); err == nil {
		t.Error("AddSource after Run returned was accepted")
	}
	if names := sourceNames(e.sub.Status()); !slices.Equal(names, []string{"a", "b"}) {
		t.Errorf("Status lists %v, want [a b]", names)
	}
}

// sourceNames is the names of ss, in order.
func sourceNames(ss []SourceStatus) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Name
	}
	return out
}
