package scaleout

import (
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kvtwin/kvtwin/spec"
)

// slowIndex takes 20 ms over every live message, so a backlog lasts.
type slowIndex struct{ spec.KVEvIndex }

func (s slowIndex) Live(stream string, frames [][]byte) spec.KVEvStepResult {
	time.Sleep(20 * time.Millisecond)
	return s.KVEvIndex.Live(stream, frames)
}

// TestReplicaReportsItsBacklogAsPending: a replica started on a stream that
// already holds 40 messages reports them pending behind the head (what
// serve's /readyz waits on) while it applies them, and 0 once caught up.
func TestReplicaReportsItsBacklogAsPending(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	ns := startNATS(t)
	defer ns.stop()
	nc, js := ns.connect(t)
	defer nc.Close()
	createStream(t, js, StreamOptions{})
	g := newGen(5, 4, new(int64), 50)
	var msgs []relayed
	for i := range uint64(40) {
		msgs = append(msgs, relayed{token: "a", seq: i, payload: g.batch(2)})
	}
	publishAll(t, js, msgs)
	rr := startReplicaWith(t, ns.url, "backlog", []string{"a"}, func(ix spec.KVEvIndex) spec.KVEvIndex { return slowIndex{ix} },
		func(o *ReplicaOptions) { o.Logger = quietLogger(t) })
	r := rr.r
	defer rr.cancel()
	var most uint64
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		st := r.Status()
		if st.Phase == PhaseConsuming {
			most = max(most, st.Pending)
		}
		if st.AppliedSeq == 40 && st.Pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not caught up within 10 s: %+v", st)
		}
	}
	if most < 20 {
		t.Errorf("at most %d pending seen while 40 messages were applied at 20 ms each, want the backlog", most)
	}
	rr.stop(t)
}

// heldIndex holds its first live message until released, saying when it
// has it.
type heldIndex struct {
	spec.KVEvIndex
	holding chan struct{}
	release chan struct{}
	once    *sync.Once
}

func (h heldIndex) Live(stream string, frames [][]byte) spec.KVEvStepResult {
	h.once.Do(func() { close(h.holding); <-h.release })
	return h.KVEvIndex.Live(stream, frames)
}

// TestStatusDoesNotWaitForAnApplyInProgress: while the index takes its
// time over a message, Status (and /readyz, which reads it) still answers
// at once, with the source as of the last message applied.
func TestStatusDoesNotWaitForAnApplyInProgress(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	ns := startNATS(t)
	defer ns.stop()
	nc, js := ns.connect(t)
	defer nc.Close()
	createStream(t, js, StreamOptions{})
	g := newGen(6, 4, new(int64), 50)
	publishAll(t, js, []relayed{{token: "a", seq: 0, payload: g.batch(2)}})
	h := heldIndex{nil, make(chan struct{}), make(chan struct{}), new(sync.Once)}
	rr := startReplicaWith(t, ns.url, "held", []string{"a"}, func(ix spec.KVEvIndex) spec.KVEvIndex { h.KVEvIndex = ix; return h },
		func(o *ReplicaOptions) { o.Logger = quietLogger(t) })
	r := rr.r
	defer rr.cancel()
	var once sync.Once
	release := func() { once.Do(func() { close(h.release) }) }
	defer release() // before cancel: a held Live would keep Run from returning
	select {
	case <-h.holding:
	case <-time.After(10 * time.Second):
		t.Fatal("the message never reached the index")
	}
	got := make(chan ReplicaStatus, 1)
	go func() { got <- r.Status() }()
	select {
	case st := <-got:
		if len(st.Sources) != 1 || st.Sources[0].SeqKnown {
			t.Errorf("sources %+v, want the source as before its first message", st.Sources)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Status waited for the apply in progress")
	}
	release()
	waitApplied(t, rr, 1, 10*time.Second)
	rr.stop(t)
}
