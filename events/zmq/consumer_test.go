package zmq

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kvtwin/kvtwin/equiv/mutants"
	"github.com/kvtwin/kvtwin/spec"
)

// This file is the ZeroMQ consumer's part of the class "a batch
// redelivered at the same sequence through every consumer" of issue 30
// (item 7): batches lost on the live socket come back through replay
// together with one that had already arrived live, and each must reach the
// index once, in the order docs/spec/kv-events.md §3.1–§3.2 gives. The bug
// zoo's component mutants of the consumer (equiv/mutants.Components) wrap
// the index the subscriber calls, to call it as a buggy consumer would, and
// must each fail the same check.

// consumerWrap is how a consumer mutant calls the index: nil is the
// subscriber itself.
type consumerWrap func(spec.KVEvIndex) spec.KVEvIndex

// redeliveryCalls are the index calls of the scenario below, derived by
// hand from §3.1 and §3.2: 0 and 1 are applied live; 2 and 3 are lost, so 4
// arrives past next = 2 (a gap: held, replay requested from 2); the replay
// answers 2, 3 and 4 again (the buffer holds every batch from the start
// asked for) and its end; then 5 is applied live.
const redeliveryCalls = "live:0h live:1h live:4h replay:2h replay:3h replay:4h replay:end live:5h "

// checkRedeliveredOnce runs the scenario on a subscriber whose index calls
// go through wrap, waiting at most patience for the stream to settle, and
// says what differs from an ideal consumer: the calls, the settled cursor,
// and the digest and scores of an index fed each published batch once.
func checkRedeliveredOnce(t *testing.T, wrap consumerWrap, patience time.Duration) error {
	p := startGoPublisher(t, pubConfig{Topic: "kv@pod-b@m", Layout: 3})
	defer p.close()
	e := newWrappedEnv(t, sourceFor(p, ""), testOptions(t), wrap)
	defer e.stop()
	p.do(awaitSub)
	settled := func(next uint64) error {
		deadline := time.Now().Add(patience)
		for {
			st := e.stream()
			if st.Known && st.Next == next && !st.Replaying && st.Held == 0 && !e.status().Replaying {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the stream did not settle at next=%d within %s: stream %+v; calls %q", next, patience, st, e.ix.ops())
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	e.publish(p, storeCmd(0))
	e.publish(p, storeCmd(1))
	e.publish(p, lose(storeCmd(2)))
	e.publish(p, lose(storeCmd(3)))
	e.publish(p, storeCmd(4))
	if err := settled(5); err != nil {
		return err
	}
	e.publish(p, storeCmd(5))
	if err := settled(6); err != nil {
		return err
	}
	e.stop()
	var errs []error
	if got := e.ix.ops(); got != redeliveryCalls {
		errs = append(errs, fmt.Errorf("index calls %q, want %q", got, redeliveryCalls))
	}
	qs := e.scoreQueries()
	want, wantScores := e.apply(e.published, e.streams, qs)
	got := e.ix.State()
	if got.Digest != want.Digest || len(staleEngines(got)) > 0 {
		errs = append(errs, fmt.Errorf("digest %s (stale engines %v), want %s: the index fed each published batch once", got.Digest, staleEngines(got), want.Digest))
	}
	if gs := e.liveScores(qs); !slices.EqualFunc(gs, wantScores, slices.Equal) {
		errs = append(errs, fmt.Errorf("scores %v, want %v", gs, wantScores))
	}
	return errors.Join(errs...)
}

// forward is an index that passes every call to the index it wraps; a
// mutant overrides the calls its bug touches.
type forward struct{ spec.KVEvIndex }

// liveTwice hands each live message to the index twice.
type liveTwice struct{ forward }

func (l liveTwice) Live(stream string, frames [][]byte) spec.KVEvStepResult {
	l.KVEvIndex.Live(stream, frames)
	return l.KVEvIndex.Live(stream, frames)
}

// replayAsLive hands replayed batches to the index as live messages: a
// reply [empty, topic, seq, payload] (the scenario's layout, §3.2) as the
// live [topic, seq, payload]; the end sentinel (an empty payload) goes on
// as a reply.
type replayAsLive struct{ forward }

func (r replayAsLive) Replay(stream string, frames [][]byte) spec.KVEvStepResult {
	if len(frames) != 4 || len(frames[0]) != 0 || len(frames[3]) == 0 {
		return r.KVEvIndex.Replay(stream, frames)
	}
	return r.KVEvIndex.Live(stream, frames[1:])
}

// replayRequestIgnored never sends the replay the index asks for.
type replayRequestIgnored struct{ forward }

func (r replayRequestIgnored) Live(stream string, frames [][]byte) spec.KVEvStepResult {
	res := r.KVEvIndex.Live(stream, frames)
	res.ReplayRequest = nil
	return res
}

// consumerMutants are the bug zoo's mutants of the ZeroMQ consumer (killed
// by TestZeroMQConsumerAppliesABatchRedeliveredByReplayOnce).
func consumerMutants() map[string]consumerWrap {
	return map[string]consumerWrap{
		// each live message reaches the index twice (a held message both
		// released and applied): the index takes the repeat for a
		// publisher restart (§3.1 step 2) and drops the engines
		"zmq-consumer-applies-live-twice": func(ix spec.KVEvIndex) spec.KVEvIndex { return liveTwice{forward{ix}} },
		// replayed batches are applied as live ones: the batch that came
		// both live and in the replay is applied twice, and the replay
		// moves the live watermark (§3.1: replayed batches never do)
		"zmq-consumer-replays-as-live": func(ix spec.KVEvIndex) spec.KVEvIndex { return replayAsLive{forward{ix}} },
		// the index's replay request is never sent: the gap is never
		// filled and the live batches after it stay held
		"zmq-consumer-ignores-replay-request": func(ix spec.KVEvIndex) spec.KVEvIndex { return replayRequestIgnored{forward{ix}} },
	}
}

// TestZeroMQConsumerAppliesABatchRedeliveredByReplayOnce: batches lost on
// the live socket are fetched by replay together with a batch that had
// already come live, and the subscriber hands each to the index once, in
// §3.1's order, so the index equals one fed every published batch once;
// every component mutant of the consumer fails the same check.
func TestZeroMQConsumerAppliesABatchRedeliveredByReplayOnce(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	if err := checkRedeliveredOnce(t, nil, 15*time.Second); err != nil {
		t.Error(err)
	}
	zoo := consumerMutants()
	for _, name := range slices.Sorted(maps.Keys(zoo)) {
		if err := checkRedeliveredOnce(t, zoo[name], time.Second); err == nil {
			t.Errorf("component mutant %s survived", name)
		} else {
			t.Logf("%s killed: %v", name, err)
		}
	}
	var registered []string
	for _, c := range mutants.Components() {
		if c.KilledBy == "TestZeroMQConsumerAppliesABatchRedeliveredByReplayOnce" {
			registered = append(registered, c.Name)
		}
	}
	slices.Sort(registered)
	if names := slices.Sorted(maps.Keys(zoo)); !slices.Equal(registered, names) {
		t.Errorf("equiv/mutants.Components lists %v as killed by this test; it runs %v", registered, names)
	}
}
