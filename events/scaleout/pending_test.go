package scaleout

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kvtwin/kvtwin/fast"
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
	streams, _ := ReplicaStreams([]string{"a"})
	ix, err := fast.NewKVEvIndex(spec.KVEvConfig{}, streams)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReplica(slowIndex{ix}, ReplicaOptions{URL: ns.url, ID: "backlog", Sources: []string{"a"}, Logger: quietLogger(t),
		RetryMin: 10 * time.Millisecond, RetryMax: 200 * time.Millisecond, ReadIdle: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rr := &runningReplica{r: r, ix: ix, running: goRun(r.Run)}
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
