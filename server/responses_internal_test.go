package server

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

// budgetServer is a server whose write budget is size bytes, with
// MaxConcurrent slots (and so as many answers waiting for room at most).
func budgetServer(t *testing.T, size int64, maxConcurrent int) *Server {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.MaxResponseBytesInFlight = size
	cfg.MaxConcurrent = maxConcurrent
	cfg.OpTimeout = 5 * time.Second
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// takeSlot takes a compute slot as admit does.
func takeSlot(t *testing.T, s *Server) *slot {
	t.Helper()
	if !s.acquire() {
		t.Fatal("no compute slot free")
	}
	return newSlot(&s.inflight)
}

// mustReserve reserves n bytes that must fit at once.
func mustReserve(t *testing.T, s *Server, n int64) *grant {
	t.Helper()
	g, aerr := s.reserve(context.Background(), n, takeSlot(t, s))
	if aerr != nil {
		t.Fatalf("reserve(%d): %v", n, aerr)
	}
	return g
}

// waitFor polls cond for up to five seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after 5s", what)
		}
	}
}

// counter is the value of the counter name (with label reason, unless
// empty) in s's registry, 0 when it has no such series yet.
func counter(t *testing.T, s *Server, name, reason string) float64 {
	t.Helper()
	mfs, err := s.metrics.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := m.GetLabel()
			if reason == "" || len(labels) == 1 && labels[0].GetValue() == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// A reservation frees the compute slot it was taken under on every path,
// and its bytes return to the budget when released, once, however often
// release is called.
func TestAReservationFreesItsSlotAndReturnsItsBytesOnce(t *testing.T) {
	s := budgetServer(t, 1<<20, 2)
	g := mustReserve(t, s, 300<<10)
	if got := s.inflight.Load(); got != 0 {
		t.Errorf("%d slots held after reserve, want 0", got)
	}
	if got := s.answers.reserved.Load(); got != 300<<10 {
		t.Errorf("reserved %d, want %d", got, 300<<10)
	}
	g.release()
	g.release()
	if got := s.answers.reserved.Load(); got != 0 {
		t.Errorf("reserved %d after release, want 0", got)
	}
	// The whole budget is there again: a second release returned nothing twice.
	mustReserve(t, s, 1<<20).release()
}

// Answers up to SmallAnswerBytes never wait and are never refused, however
// full the budget: health checks, errors and small op answers stay served.
func TestSmallAnswersNeverWaitForRoom(t *testing.T) {
	s := budgetServer(t, SmallAnswerBytes, 1)
	full := mustReserve(t, s, SmallAnswerBytes)
	defer full.release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a wait would fail at once
	g, aerr := s.reserve(ctx, SmallAnswerBytes, takeSlot(t, s))
	if aerr != nil || g.n != 0 {
		t.Fatalf("a %d-byte answer with the budget full: grant %d, %v; want no reservation and no error", SmallAnswerBytes, g.n, aerr)
	}
	if s.inflight.Load() != 0 {
		t.Error("the slot was not freed")
	}
}

// An answer that finds no room gives its compute slot back while it waits
// (another op may run), counts as waiting, and takes the room as soon as a
// write returns it.
func TestALargeAnswerWaitsForRoomWithoutItsSlotAndTakesItWhenFreed(t *testing.T) {
	s := budgetServer(t, 1<<20, 2)
	first := mustReserve(t, s, 768<<10)
	got := make(chan *grant)
	sl := takeSlot(t, s)
	go func() {
		g, aerr := s.reserve(context.Background(), 512<<10, sl)
		if aerr != nil {
			t.Errorf("the waiting answer was refused: %v", aerr)
		}
		got <- g
	}()
	waitFor(t, "the second answer to wait without its slot", func() bool {
		return s.answers.waiting.Load() == 1 && s.inflight.Load() == 0
	})
	select {
	case <-got:
		t.Fatal("the second answer got room the first still holds")
	case <-time.After(20 * time.Millisecond):
	}
	first.release()
	second := <-got
	if second.n != 512<<10 || s.answers.reserved.Load() != 512<<10 || s.answers.waiting.Load() != 0 {
		t.Errorf("after the first write ended: grant %d, reserved %d, waiting %d; want 524288, 524288, 0",
			second.n, s.answers.reserved.Load(), s.answers.waiting.Load())
	}
	second.release()
	if w := counter(t, s, "kvtwin_response_budget_waits_total", ""); w != 1 {
		t.Errorf("waits counted %v, want 1", w)
	}
}

// An answer that finds no room before its deadline gets a 503 naming the
// budget, its value and the deadline, and reserves nothing.
func TestALargeAnswerWithoutRoomByItsDeadlineIs503NamingTheBudget(t *testing.T) {
	s := budgetServer(t, 1<<20, 2)
	full := mustReserve(t, s, 1<<20)
	defer full.release()
	// The deadline runs from WithTimeout: measure from before it, or a
	// loaded machine's delay between the two reads as an early refusal.
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	g, aerr := s.reserve(ctx, 100<<10, takeSlot(t, s))
	if aerr == nil {
		g.release()
		t.Fatal("reserve succeeded with the budget full")
	}
	if took := time.Since(began); took < 30*time.Millisecond {
		t.Errorf("refused after %v, before the deadline", took)
	}
	if aerr.status != http.StatusServiceUnavailable || !strings.Contains(aerr.message, "MaxResponseBytesInFlight (1048576 bytes)") ||
		!strings.Contains(aerr.message, "OpTimeout (5s)") || !strings.Contains(aerr.message, "(102400 bytes)") {
		t.Errorf("refusal %d %q; want 503 naming MaxResponseBytesInFlight (1048576 bytes), OpTimeout and the answer's size", aerr.status, aerr.message)
	}
	if s.answers.reserved.Load() != 1<<20 || s.answers.waiting.Load() != 0 || s.inflight.Load() != 0 {
		t.Errorf("after the refusal: reserved %d, waiting %d, slots %d; want 1048576, 0, 0",
			s.answers.reserved.Load(), s.answers.waiting.Load(), s.inflight.Load())
	}
	if n := counter(t, s, "kvtwin_response_budget_refused_total", refusedDeadline); n != 1 {
		t.Errorf("refused{deadline} = %v, want 1", n)
	}
}

// At most MaxConcurrent answers wait for room (their memory is outside the
// budget); the next large one is refused at once, naming both bounds.
func TestOnlyMaxConcurrentAnswersWaitTheNextIsRefusedAtOnce(t *testing.T) {
	s := budgetServer(t, 1<<20, 1)
	full := mustReserve(t, s, 1<<20)
	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan struct{})
	sl := takeSlot(t, s)
	go func() {
		defer close(waited)
		if _, aerr := s.reserve(ctx, 100<<10, sl); aerr == nil {
			t.Error("the waiter got room the budget never had")
		}
	}()
	waitFor(t, "one answer to wait without its slot", func() bool {
		return s.answers.waiting.Load() == 1 && s.inflight.Load() == 0
	})
	began := time.Now()
	_, aerr := s.reserve(context.Background(), 100<<10, takeSlot(t, s))
	if aerr == nil || aerr.status != http.StatusServiceUnavailable || !strings.Contains(aerr.message, "MaxConcurrent (1) answers already wait") {
		t.Errorf("a second waiter: %v; want 503 naming MaxConcurrent", aerr)
	}
	if took := time.Since(began); took > time.Second {
		t.Errorf("the refusal took %v; it must not wait", took)
	}
	if n := counter(t, s, "kvtwin_response_budget_refused_total", refusedNoRoom); n != 1 {
		t.Errorf("refused{no_room} = %v, want 1", n)
	}
	cancel()
	<-waited
	full.release()
	if s.answers.reserved.Load() != 0 || s.answers.waiting.Load() != 0 || s.inflight.Load() != 0 {
		t.Errorf("afterwards: reserved %d, waiting %d, slots %d; want all 0", s.answers.reserved.Load(), s.answers.waiting.Load(), s.inflight.Load())
	}
}

// An answer larger than the whole budget is not refused forever: it waits
// for the whole budget and takes all of it, so it is written alone.
func TestAnAnswerLargerThanTheBudgetTakesAllOfIt(t *testing.T) {
	s := budgetServer(t, 1<<20, 1)
	part := mustReserve(t, s, 100<<10)
	got := make(chan *grant)
	sl := takeSlot(t, s)
	go func() {
		g, aerr := s.reserve(context.Background(), 3<<20, sl)
		if aerr != nil {
			t.Errorf("an answer over the budget was refused: %v", aerr)
		}
		got <- g
	}()
	waitFor(t, "the large answer to wait", func() bool { return s.answers.waiting.Load() == 1 })
	part.release()
	g := <-got
	if g.n != 1<<20 || s.answers.reserved.Load() != 1<<20 {
		t.Errorf("grant %d, reserved %d; want the whole budget, 1048576", g.n, s.answers.reserved.Load())
	}
	g.release()
}

func TestNewRejectsAWriteBudgetBelowSmallAnswerBytes(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.MaxResponseBytesInFlight = SmallAnswerBytes - 1
	_, err := New(cfg)
	if err == nil || !strings.HasPrefix(err.Error(), "MaxResponseBytesInFlight = 65535: want >= SmallAnswerBytes (65536)") {
		t.Errorf("New = %v; want an error naming MaxResponseBytesInFlight, 65535 and the bound 65536", err)
	}
	cfg.MaxResponseBytesInFlight = SmallAnswerBytes
	if _, err := New(cfg); err != nil {
		t.Errorf("a budget of exactly SmallAnswerBytes: %v", err)
	}
}
