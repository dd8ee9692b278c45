package remote

import (
	"fmt"
	"sync"
	"unicode/utf8"
)

// breaker makes an op unavailable after `bound` failures in a row without
// a usable answer, so a hung adapter costs at most bound timeouts per op
// instead of one per remaining case (docs/adapters.md "The breaker"). A
// failure is an event: every call that one exec process failure fails
// (the call that timed out and the calls in flight beside it) counts
// once, so one bad input among parallel calls does not open the breaker
// by itself. Any usable answer — an output, an error object,
// not_implemented — closes the run of failures. An open breaker stays
// open for the Impl's life. Safe for concurrent use.
type breaker struct {
	bound int
	mu    sync.Mutex
	ops   map[string]*opHealth
}

// opHealth is one op's run of failures.
type opHealth struct {
	inARow    int
	lastEvent uint64
	last      string // the last failure, for the reason
	open      bool
}

func newBreaker(bound int) *breaker { return &breaker{bound: bound, ops: map[string]*opHealth{}} }

// refuse is the error a call of op gets without being sent when op's
// breaker is open, else nil.
func (b *breaker) refuse(op string) error {
	if reason, ok := b.unavailable(op); ok {
		return &TransportError{Op: op, Kind: KindUnavailable, Reason: "not sent: " + reason}
	}
	return nil
}

// unavailable reports whether op's breaker is open, and why.
func (b *breaker) unavailable(op string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.ops[op]
	if h == nil || !h.open {
		return "", false
	}
	return fmt.Sprintf("%d failures in a row without a usable answer (the last: %s)", h.inARow, h.last), true
}

// record counts the outcome of one call of op: err nil or not a
// *TransportError is a usable answer; a transport error counts once per
// event (the failure that caused it).
func (b *breaker) record(op string, event uint64, err error) {
	kind := KindOf(err)
	if kind == KindUnavailable {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.ops[op]
	if h == nil {
		h = &opHealth{}
		b.ops[op] = h
	}
	if h.open {
		return
	}
	if kind == "" {
		h.inARow, h.lastEvent = 0, 0
		return
	}
	if h.inARow > 0 && event == h.lastEvent {
		return
	}
	h.inARow++
	h.lastEvent = event
	h.last = truncate(err.Error(), 300)
	h.open = h.inARow >= b.bound
}

// truncate cuts s to at most n bytes at a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
