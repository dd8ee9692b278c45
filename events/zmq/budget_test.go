package zmq

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kvtwin/kvtwin/events/pypub"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// Tests of the subscriber's byte budget (budget.go), its refusal log
// limiter (ratelog.go) and how both meet the index's results.

func TestByteBudgetWaitsForRoomThenRefuses(t *testing.T) {
	b := newByteBudget(100, 50*time.Millisecond)
	if err := b.reserve(context.Background(), 101); !isBudget(err) {
		t.Fatalf("a reservation past the capacity: %v", err)
	}
	if err := b.reserve(context.Background(), 100); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := b.reserve(context.Background(), 1); !isBudget(err) || time.Since(began) < 50*time.Millisecond {
		t.Fatalf("a full budget: %v after %v, want a budget error after the 50ms wait", err, time.Since(began))
	}
	// A waiter gets room as soon as it is released, in arrival order.
	got := make(chan error, 1)
	b.wait = 5 * time.Second
	go func() { got <- b.reserve(context.Background(), 60) }()
	time.Sleep(20 * time.Millisecond)
	b.release(60)
	if err := <-got; err != nil || b.inUse() != 100 {
		t.Fatalf("after a release: %v, %d in use", err, b.inUse())
	}
	// A closed socket ends the wait at once.
	ctx, cancel := context.WithCancel(context.Background())
	go func() { got <- b.reserve(ctx, 10) }()
	cancel()
	if err := <-got; !errors.Is(err, errLedgerClosed) {
		t.Fatalf("a canceled wait: %v", err)
	}
	// Releasing more than is held (never expected) frees only what is held.
	b.release(1 << 20)
	if b.inUse() != 0 {
		t.Fatalf("%d in use", b.inUse())
	}
}

func TestLedgerCloseReleasesWhatGoZeromqHeldAndRefusesLaterFrames(t *testing.T) {
	a := &account{b: newByteBudget(1000, time.Millisecond)}
	l := newLedger(a)
	for _, n := range []int64{100, 200, 300} {
		if err := l.reserve(context.Background(), n); err != nil {
			t.Fatal(err)
		}
	}
	l.take(300) // the subscriber received a message of 300 bytes
	if a.buffered.Load() != 600 || l.queued != 300 {
		t.Fatalf("buffered %d, queued %d", a.buffered.Load(), l.queued)
	}
	l.close()
	if a.buffered.Load() != 300 || a.b.inUse() != 300 {
		t.Fatalf("after close: buffered %d, budget %d: want the received 300 left", a.buffered.Load(), a.b.inUse())
	}
	if err := l.reserve(context.Background(), 1); !errors.Is(err, errLedgerClosed) {
		t.Fatalf("a frame after close: %v", err)
	}
	a.release(300)
	if err := a.reserve(context.Background(), 1001); !isBudget(err) || a.overflows.Load() != 1 {
		t.Fatalf("overflow: %v, %d", err, a.overflows.Load())
	}
}

func TestRateLimitLetsOneLinePerIntervalThrough(t *testing.T) {
	r := &rateLimit{interval: time.Second}
	t0 := time.Unix(1000, 0)
	if ok, held := r.allow(t0); !ok || held != 0 {
		t.Fatal("the first line is held back")
	}
	for i := range 5 {
		if ok, _ := r.allow(t0.Add(time.Duration(i) * 100 * time.Millisecond)); ok {
			t.Fatalf("line %d within the interval went through", i)
		}
	}
	if ok, held := r.allow(t0.Add(time.Second)); !ok || held != 5 {
		t.Fatalf("after the interval: %v, held back %d, want true and 5", ok, held)
	}
	if r.total() != 5 {
		t.Fatalf("total %d", r.total())
	}
}

// frameBytes is the bytes a live message of the publisher's takes in the
// budget: its three frames.
func frameBytes(s spec.KVEvStep) int64 {
	var n int64
	for _, f := range s.Frames {
		n += int64(len(f))
	}
	return n
}

// TestBudgetCountsHeldMessagesUntilTheReplayEnds: while a replay runs, the
// live messages the index holds are the source's buffered bytes, exactly;
// when the replay is abandoned (an operator's restart signal) they are
// released. (The drain after a failed replay releases them too:
// TestBudgetWithoutRoomCutsTheConnectionAndRecovers.)
func TestBudgetCountsHeldMessagesUntilTheReplayEnds(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	pypub.Require(t)
	p := startPyPublisher(t, pubConfig{Sentinel: "none"})
	defer p.close()
	o := testOptions(t)
	o.ReplayTimeout = time.Minute // the test ends the replay itself
	e := newEnv(t, sourceFor(p, ""), o)
	p.do(awaitSub)
	e.publish(p, storeCmd(0))
	e.publish(p, lose(storeCmd(1)))
	for k := 2; k <= 4; k++ {
		e.publish(p, storeCmd(k))
	}
	var want int64
	for _, s := range e.published[2:] {
		want += frameBytes(s) // the trigger 2, then 3 and 4, held
	}
	e.waitFor("three held messages in the budget", func() bool {
		return e.stream().Held == 3 && e.status().BufferedBytes == want
	})
	if budget, inUse := e.sub.Buffered(); inUse != want || budget != defaultMaxBufferedBytes {
		t.Errorf("Buffered() = %d, %d; want %d, %d", budget, inUse, defaultMaxBufferedBytes, want)
	}
	if err := e.sub.Restart(e.src.Name); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the budget to empty", func() bool { return e.stream().Held == 0 && e.status().BufferedBytes == 0 })
	if _, inUse := e.sub.Buffered(); inUse != 0 {
		t.Errorf("%d bytes in use after the restart", inUse)
	}
	e.stop()
	e.checkRecorded()
}

// TestBudgetWithoutRoomCutsTheConnectionAndRecovers: a replay that never
// ends holds live messages until they fill a 2 KiB budget; the next frame
// waits BufferWait, then its connection is closed (counted), the source
// reconnects, and once the replay has failed everything is released: the
// subscriber is never stuck, serves the source again and leaks nothing.
func TestBudgetWithoutRoomCutsTheConnectionAndRecovers(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	p := startGoPublisher(t, pubConfig{Sentinel: "none"})
	defer p.close()
	o := testOptions(t)
	o.MaxMessageBytes, o.MaxBufferedBytes = 2<<10, 2<<10
	o.BufferWait = 100 * time.Millisecond
	o.ReplayTimeout = time.Second
	e := newEnv(t, sourceFor(p, ""), o)
	p.do(awaitSub)
	e.publish(p, storeCmd(0))
	e.publish(p, lose(storeCmd(1)))
	for k := 2; k < 40; k++ {
		e.publish(p, storeCmd(k))
	}
	e.waitFor("a connection cut by the budget", func() bool { return e.status().BufferOverflows > 0 })
	if b := e.status().BufferedBytes; b > o.MaxBufferedBytes {
		t.Errorf("%d bytes buffered, budget %d", b, o.MaxBufferedBytes)
	}
	e.waitFor("the replay to fail and the budget to empty", func() bool {
		st, s := e.stream(), e.status()
		return !st.Replaying && st.Held == 0 && s.BufferedBytes == 0 && s.Reconnects > 0
	})
	// The source is served again: a later batch is applied.
	e.publish(p, storeCmd(40))
	e.waitFor("seq 40 applied", func() bool { return e.stream().Next == 41 })
	e.stop()
	if _, inUse := e.sub.Buffered(); inUse != 0 {
		t.Errorf("%d bytes in use after Run returned", inUse)
	}
	// Whether the messages the cut lost come back through the replay or
	// leave the engine stale depends on timing; either way the index is
	// what kvev.apply makes of the calls the subscriber made.
	e.checkRecorded()
}

// countingHandler counts log records by message and keeps the last one's
// attributes.
type countingHandler struct {
	mu    sync.Mutex
	count map[string]int
	attrs map[string]map[string]string
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *countingHandler) WithGroup(string) slog.Handler            { return h }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.count[r.Message]++
	a := map[string]string{}
	r.Attrs(func(at slog.Attr) bool { a[at.Key] = at.Value.String(); return true })
	h.attrs[r.Message] = a
	return nil
}

func (h *countingHandler) get(msg string) (int, map[string]string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.count[msg], h.attrs[msg]
}

// TestRefusalsAreLoggedOncePerIntervalPerSource: 30 batches refused whole
// (undecodable, and one past max_events) cost one log line per interval,
// the rest counted; an engine the index will not create is logged naming
// the engine.
func TestRefusalsAreLoggedOncePerIntervalPerSource(t *testing.T) {
	defer goleak.VerifyNone(t, goleakOpts...)
	p := startGoPublisher(t, pubConfig{})
	defer p.close()
	h := &countingHandler{count: map[string]int{}, attrs: map[string]map[string]string{}}
	o := testOptions(t)
	o.Logger = slog.New(h)
	o.LogInterval = time.Hour
	src := sourceFor(p, "")
	inner, err := ref.NewKVEvIndex(spec.KVEvConfig{MaxEngines: 1, MaxEvents: 2}, Streams([]Source{src}))
	if err != nil {
		t.Fatal(err)
	}
	sub, err := New(inner, []Source{src}, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sub.Run(ctx) }()
	p.do(awaitSub)
	p.do(storeCmd(0)) // engine src-a/0
	// Rank 1 would be a second engine past max_engines 1.
	p.do(pubCmd{Op: "emit", Events: []pubEvent{cleared()}, Rank: new(int64(1))})
	deadline := time.Now().Add(15 * time.Second)
	for n, _ := h.get("index refused a batch"); n < 1; n, _ = h.get("index refused a batch") {
		if time.Now().After(deadline) {
			t.Fatalf("no refusal logged: %+v", sub.Status()[0])
		}
		time.Sleep(2 * time.Millisecond)
	}
	n, attrs := h.get("index refused a batch")
	if n != 1 || attrs["engine"] != "src-a/1" || attrs["code"] != spec.ErrEngineBudget.Code() {
		t.Fatalf("%d lines, last %v: want one naming engine src-a/1", n, attrs)
	}
	bad, _ := hex.DecodeString("93cb41da305498100000" + "93" + strings.Repeat("91a178", 3) + "00")
	for range 28 {
		p.do(pubCmd{Op: "emit", Payload: []byte{0xc1}})
	}
	p.do(pubCmd{Op: "emit", Payload: bad}) // 3 events past max_events 2
	for sub.Status()[0].RefusedBatches < 30 {
		if time.Now().After(deadline) {
			t.Fatalf("refusals: %+v", sub.Status()[0])
		}
		time.Sleep(2 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st := sub.Status()[0]
	if n, _ := h.get("index refused a batch"); n != 1 || st.LogSuppressed != 29 || st.OversizedMessages != 1 {
		t.Errorf("%d log lines, %d suppressed, %d oversized; want 1, 29, 1", n, st.LogSuppressed, st.OversizedMessages)
	}
	if !bytes.Contains([]byte(st.LastError), []byte("max_events")) {
		t.Errorf("last error %q", st.LastError)
	}
}
