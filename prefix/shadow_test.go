package prefix

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// shadowed is a registry of fast pools with reference shadows run until the
// test ends; trees receives each fast tree built, for a test to corrupt.
func shadowed(t *testing.T, queue int, interval time.Duration, wrap func(spec.RadixTree) spec.RadixTree) (*Registry, *Shadow, *[]spec.RadixTree) {
	return shadowedBytes(t, queue, 1<<30, interval, wrap)
}

// shadowedBytes is shadowed with a byte budget on the queue.
func shadowedBytes(t *testing.T, queue int, queueBytes int64, interval time.Duration, wrap func(spec.RadixTree) spec.RadixTree) (*Registry, *Shadow, *[]spec.RadixTree) {
	t.Helper()
	r, sh, trees := shadowedIdle(t, queue, queueBytes, interval, wrap)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); sh.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return r, sh, trees
}

// shadowedIdle is shadowedBytes with no consumer running: the queue only
// fills, so a test of its bounds does not race the shadow's goroutine.
func shadowedIdle(t *testing.T, queue int, queueBytes int64, interval time.Duration, wrap func(spec.RadixTree) spec.RadixTree) (*Registry, *Shadow, *[]spec.RadixTree) {
	t.Helper()
	var trees []spec.RadixTree
	newTree := func(cfg spec.TreeConfig) (spec.RadixTree, error) {
		tr, err := fast.NewRadixTree(cfg)
		if err == nil && wrap != nil {
			tr = wrap(tr)
		}
		trees = append(trees, tr)
		return tr, err
	}
	r, err := NewRegistry(newTree, Limits{MaxPools: 4, MaxPoolCapacity: 1 << 12, MaxRequestTokens: 1 << 12, MaxBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	sh, err := r.EnableShadow(ShadowConfig{NewTree: ref.NewRadixTree, Queue: queue, QueueBytes: queueBytes, ScoreRate: 1, DigestInterval: interval})
	if err != nil {
		t.Fatal(err)
	}
	return r, sh, &trees
}

// traffic is a little of everything a pool serves.
func traffic(t *testing.T, r *Registry, p *Pool) {
	t.Helper()
	a, b := seq(1, 64), append(seq(1, 32), seq(500, 532)...)
	for _, toks := range [][]int64{a, b} {
		if _, err := p.Insert(toks, spec.ExtraKey{}, 0); err != nil {
			t.Fatal(err)
		}
	}
	m, err := p.Match(a, spec.ExtraKey{}, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Unlock(m.LastNode); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Score(b, spec.ExtraKey{}, nil, true); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Score(a, spec.ExtraKey{}, nil, false); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Evict(16); err != nil {
		t.Fatal(err)
	}
}

func seq(from, to int64) []int64 {
	var s []int64
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

// settle waits until the shadow has applied everything logged.
func settle(t *testing.T, sh *Shadow, p *Pool) ShadowStatus {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); sh.Pending() > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the shadow did not catch up within 10 s")
		}
	}
	time.Sleep(5 * time.Millisecond) // the last op popped may still be applying
	return *p.ShadowStatus()
}

// TestShadowAgreesWithASoundPool: inserts, locking matches, unlocks,
// exact and hashed scores and evictions of a fast pool, replayed on its
// reference shadow, agree answer by answer and digest by digest.
func TestShadowAgreesWithASoundPool(t *testing.T) {
	r, sh, _ := shadowed(t, 1024, time.Nanosecond, nil)
	p, err := r.Create("p", Config{PageSize: 4, CapacityTokens: 256})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		traffic(t, r, p)
	}
	if s := settle(t, sh, p); s.State != ShadowAgree || s.Compared < 20 {
		t.Fatalf("shadow %+v, want agree after every operation and digest", s)
	}
	if got := p.Stats().ReservedBytes; got != 2*mustReserved(t, p.Config()) {
		t.Errorf("ReservedBytes %d, want twice the pool's own reservation (the shadow's)", got)
	}
}

func mustReserved(t *testing.T, c Config) int64 {
	n, ok := c.ReservedBytes()
	if !ok {
		t.Fatal("no reservation")
	}
	return n
}

// TestShadowFlagsACorruptedTreeWithinOneDigestInterval: a key written into
// the fast tree behind the pool's back (a test fault: corruption no answer
// shows yet) is flagged by the first digest after it, on the pool's next
// operation once the interval has passed; the pool keeps serving.
func TestShadowFlagsACorruptedTreeWithinOneDigestInterval(t *testing.T) {
	const interval = 50 * time.Millisecond
	r, sh, trees := shadowed(t, 1024, interval, nil)
	p, err := r.Create("p", Config{PageSize: 4, CapacityTokens: 256})
	if err != nil {
		t.Fatal(err)
	}
	traffic(t, r, p)
	in, err := p.Insert(seq(1, 64), spec.ExtraKey{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if s := settle(t, sh, p); s.State != ShadowAgree {
		t.Fatalf("before the fault: %+v", s)
	}
	// A lock taken behind the pool's back: no id is minted and no answer
	// of the next insert changes, but the tree's state does.
	if _, err := (*trees)[0].IncLockRef(in.LastNode); err != nil {
		t.Fatal(err)
	}
	time.Sleep(interval)
	if _, err := p.Insert(seq(1, 8), spec.ExtraKey{}, 0); err != nil { // an answer the fault does not change
		t.Fatal(err)
	}
	s := settle(t, sh, p)
	if s.State != ShadowDiverged || !strings.HasPrefix(s.Detail, "digest:") {
		t.Fatalf("after the fault and one interval: %+v, want diverged at a digest", s)
	}
	if p.Stats().Shadow.State != ShadowDiverged {
		t.Error("Stats does not report the divergence")
	}
}

// liar is a fast tree whose PrefixLen answers one page more than it holds.
type liar struct{ spec.RadixTree }

func (l liar) PrefixLen(k spec.RadixKey) (int, error) {
	n, err := l.RadixTree.PrefixLen(k)
	return n + l.Config().PageSize, err
}

// TestShadowFlagsAWrongScore: a score the shadow answers differently is
// flagged at once, naming the operation and both answers.
func TestShadowFlagsAWrongScore(t *testing.T) {
	r, sh, _ := shadowed(t, 1024, time.Hour, func(tr spec.RadixTree) spec.RadixTree { return liar{tr} })
	p, err := r.Create("p", Config{PageSize: 4, CapacityTokens: 256})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Insert(seq(1, 9), spec.ExtraKey{}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.PrefixLen(seq(1, 9), spec.ExtraKey{}); err != nil {
		t.Fatal(err)
	}
	if s := settle(t, sh, p); s.State != ShadowDiverged || !strings.Contains(s.Detail, `score: the pool answered {"Result":12`) {
		t.Fatalf("%+v, want diverged at the score", s)
	}
}

// TestShadowIsLostWhenItsQueueOverflows: a mutation that finds the queue
// full cannot be skipped, so the shadow says it is lost rather than
// report divergences that are not there.
// No consumer runs, so the second insert is the one that finds it full.
func TestShadowIsLostWhenItsQueueOverflows(t *testing.T) {
	r, sh, _ := shadowedIdle(t, 1, 1<<30, time.Hour, nil)
	p, err := r.Create("p", Config{PageSize: 4, CapacityTokens: 4096})
	if err != nil {
		t.Fatal(err)
	}
	for i := range int64(2) {
		if _, err := p.Insert(seq(i*8, i*8+8), spec.ExtraKey{}, 0); err != nil {
			t.Fatal(err)
		}
		if want := ShadowAgree; i == 0 && p.ShadowStatus().State != want {
			t.Fatalf("after one insert into a queue of one: %+v, want %s", p.ShadowStatus(), want)
		}
	}
	if n := sh.Pending(); n != 1 {
		t.Errorf("%d operations wait, want the first insert alone", n)
	}
	if s := p.ShadowStatus(); s.State != ShadowLost || s.Detail != "the shadow queue (1 operations) was full at a insert" {
		t.Fatalf("%+v, want lost", s)
	}
}

// TestShadowIsLostWhenItsQueueBytesRunOut: the queue also bounds the bytes
// its operations hold (each keeps a copy of its tokens), so one large
// insert past the budget loses the shadow however few operations wait.
func TestShadowIsLostWhenItsQueueBytesRunOut(t *testing.T) {
	r, _, _ := shadowedBytes(t, 1<<10, 4096, time.Hour, nil)
	p, err := r.Create("p", Config{PageSize: 4, CapacityTokens: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Insert(seq(0, 1024), spec.ExtraKey{}, 0); err != nil { // 8 KiB of tokens
		t.Fatal(err)
	}
	if s := p.ShadowStatus(); s.State != ShadowLost || !strings.Contains(s.Detail, "queue's 4096 bytes were spent at a insert") {
		t.Fatalf("%+v, want lost at the insert", s)
	}
}

// TestShadowQueueNamesTheBoundThatRefusedEvenOnceDrained: the refusal
// names its bound when it happens; a consumer that drains the queue right
// after (the shadow's goroutine does, concurrently) cannot turn a full
// queue of operations into a spent byte budget in the status.
func TestShadowQueueNamesTheBoundThatRefusedEvenOnceDrained(t *testing.T) {
	q := NewShadowQueue[int](1, 100)
	if err := q.Offer(1, 10, "insert"); err != nil {
		t.Fatalf("first offer: %v", err)
	}
	err := q.Offer(2, 10, "insert")
	if _, ok := q.Next(context.Background()); !ok {
		t.Fatal("Next found nothing")
	}
	if err == nil || err.Error() != "the shadow queue (1 operations) was full at a insert" {
		t.Fatalf("second offer: %v, want the operations bound", err)
	}
	err = q.Offer(3, 101, "match")
	if err == nil || err.Error() != "the shadow queue's 100 bytes were spent at a match" {
		t.Fatalf("oversized offer: %v, want the byte bound", err)
	}
	if err := q.Offer(4, 100, "match"); err != nil {
		t.Fatalf("an offer of exactly the budget, queue empty: %v", err)
	}
}
