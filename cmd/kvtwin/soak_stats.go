package main

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// This file counts what `kvtwin soak` saw: per request class and per
// hostile kind, status buckets and a latency histogram of fixed size, so a
// run of any length holds the same memory.

// soakClass is the kind of traffic a request belongs to.
type soakClass int

const (
	classPreflight soakClass = iota // POST /v1/openai/preflight, well-behaved
	classOp                         // POST /v1/ops/{name} with the op's example
	classPrefix                     // prefix-pool insert, match and score
	classScore                      // scores of the event-fed index's pinned prompts, answers checked
	classHostile                    // hostile bodies: deep, huge numbers, truncated, unknown fields
	classSlow                       // slow writers and slow readers
	numClasses
)

func (c soakClass) String() string {
	switch c {
	case classPreflight:
		return "preflight"
	case classOp:
		return "op"
	case classPrefix:
		return "prefix"
	case classScore:
		return "score"
	case classHostile:
		return "hostile"
	}
	return "slow"
}

// wellBehaved reports whether the class is the ordinary load, whose transport
// errors and wrong answers fail the run.
func (c soakClass) wellBehaved() bool { return c < classHostile }

// slowFate is how a slow client's connection ended.
type slowFate int

const (
	fateNone      slowFate = iota // not a slow client, or the exchange completed
	fateCut                       // the server closed the connection first
	fateOpenAtEnd                 // still open when the run ended; we closed it
)

// soakOutcome is one finished request as the counters see it.
type soakOutcome struct {
	class   soakClass
	kind    hostileKind // hostileNone for well-behaved requests
	status  int         // 0: no response arrived
	latency time.Duration
	// transport is set when no response arrived for a reason other than the
	// run ending (refused, reset, timed out).
	transport bool
	fate      slowFate
	// unexpected: a well-behaved request answered neither its wanted status
	// nor 429, or a hostile body that must be refused was accepted (2xx).
	unexpected bool
	note       string // what to print when the outcome is notable
}

// statusCounts are the buckets of the report tables.
type statusCounts struct {
	Requests   int64 `json:"requests"`
	S2xx       int64 `json:"2xx"`
	S4xx       int64 `json:"4xx"` // 429 excluded
	S429       int64 `json:"429"`
	S5xx       int64 `json:"5xx"`
	Other      int64 `json:"other_status"` // 1xx and 3xx: nothing should answer them
	Transport  int64 `json:"transport_errors"`
	Cut        int64 `json:"cut_by_server,omitempty"`
	OpenAtEnd  int64 `json:"open_at_end,omitempty"`
	Unexpected int64 `json:"unexpected"`
}

func (s *statusCounts) add(o soakOutcome) {
	s.Requests++
	switch {
	case o.status == 0 && o.transport:
		s.Transport++
	case o.status == 0:
	case o.status == 429:
		s.S429++
	case o.status >= 500:
		s.S5xx++
	case o.status >= 400:
		s.S4xx++
	case o.status >= 200 && o.status < 300:
		s.S2xx++
	default:
		s.Other++
	}
	switch o.fate {
	case fateCut:
		s.Cut++
	case fateOpenAtEnd:
		s.OpenAtEnd++
	}
	if o.unexpected {
		s.Unexpected++
	}
}

func (s *statusCounts) merge(o statusCounts) {
	s.Requests += o.Requests
	s.S2xx += o.S2xx
	s.S4xx += o.S4xx
	s.S429 += o.S429
	s.S5xx += o.S5xx
	s.Other += o.Other
	s.Transport += o.Transport
	s.Cut += o.Cut
	s.OpenAtEnd += o.OpenAtEnd
	s.Unexpected += o.Unexpected
}

// histSteps buckets per doubling of the latency: 8 gives about 9% resolution.
const histSteps = 8

// histBuckets covers 1 µs to 2^40 µs (12 days): nothing is clamped in practice.
const histBuckets = histSteps * 40

// latencyHist is a log-scale histogram of latencies in microseconds.
type latencyHist [histBuckets]int64

func histIndex(d time.Duration) int {
	us := d.Microseconds()
	if us < 1 {
		return 0
	}
	return min(int(math.Log2(float64(us))*histSteps), histBuckets-1)
}

// histUpper is the upper edge of bucket i, which quantile reports: a
// percentile is never understated.
func histUpper(i int) time.Duration {
	return time.Duration(math.Exp2(float64(i+1)/histSteps) * float64(time.Microsecond))
}

func (h *latencyHist) add(d time.Duration) { h[histIndex(d)]++ }

func (h *latencyHist) merge(o *latencyHist) {
	for i, n := range o {
		h[i] += n
	}
}

// quantile is the upper edge of the bucket holding the q-th latency, 0 when empty.
func (h *latencyHist) quantile(q float64) time.Duration {
	var total int64
	for _, n := range h {
		total += n
	}
	if total == 0 {
		return 0
	}
	target := int64(math.Ceil(q * float64(total)))
	var seen int64
	for i, n := range h {
		seen += n
		if seen >= max(target, 1) {
			return histUpper(i)
		}
	}
	return histUpper(histBuckets - 1)
}

// classStats is one class's counters; its own mutex keeps the workers of
// different classes from contending.
type classStats struct {
	mu     sync.Mutex
	counts statusCounts
	hist   latencyHist
}

// maxNotes bounds the notable outcomes kept for the report.
const maxNotes = 10

// soakStats is every counter of a run; safe for concurrent use.
type soakStats struct {
	total   atomic.Int64
	classes [numClasses]classStats
	kindsMu sync.Mutex
	kinds   [numHostileKinds]statusCounts
	notesMu sync.Mutex
	notes   []string
	dropped int
}

func (s *soakStats) record(o soakOutcome) {
	s.total.Add(1)
	c := &s.classes[o.class]
	c.mu.Lock()
	c.counts.add(o)
	if o.status != 0 {
		c.hist.add(o.latency)
	}
	c.mu.Unlock()
	if o.kind != hostileNone {
		s.kindsMu.Lock()
		s.kinds[o.kind].add(o)
		s.kindsMu.Unlock()
	}
	if notable(o) {
		s.note(fmt.Sprintf("%s: %s", label(o), o.note))
	}
}

// notable outcomes are the ones a failure message should point at, and a
// slow client's transport error (there are few, and each is a surprise: the
// server refused or reset the connection before the first byte).
func notable(o soakOutcome) bool {
	return o.status >= 500 || o.unexpected || (o.transport && (o.class.wellBehaved() || o.class == classSlow))
}

// label is the class, and the hostile kind if any: "op", "hostile deep".
func label(o soakOutcome) string {
	if o.kind == hostileNone {
		return o.class.String()
	}
	return o.class.String() + " " + o.kind.String()
}

func (s *soakStats) note(msg string) {
	s.notesMu.Lock()
	defer s.notesMu.Unlock()
	if len(s.notes) < maxNotes {
		s.notes = append(s.notes, msg)
		return
	}
	s.dropped++
}

// snapshot copies one class's counters and latency quantiles.
func (s *soakStats) snapshot(c soakClass) (statusCounts, time.Duration, time.Duration) {
	cs := &s.classes[c]
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.counts, cs.hist.quantile(0.50), cs.hist.quantile(0.99)
}

// totals sums every class, with the latency quantiles of all of them.
func (s *soakStats) totals() (statusCounts, time.Duration, time.Duration) {
	var t statusCounts
	var h latencyHist
	for c := range numClasses {
		cs := &s.classes[c]
		cs.mu.Lock()
		t.merge(cs.counts)
		h.merge(&cs.hist)
		cs.mu.Unlock()
	}
	return t, h.quantile(0.50), h.quantile(0.99)
}

// wellBehavedTotals sums the well-behaved classes.
func (s *soakStats) wellBehavedTotals() statusCounts {
	var t statusCounts
	for c := range classHostile {
		counts, _, _ := s.snapshot(c)
		t.merge(counts)
	}
	return t
}

func (s *soakStats) kindCounts(k hostileKind) statusCounts {
	s.kindsMu.Lock()
	defer s.kindsMu.Unlock()
	return s.kinds[k]
}

func (s *soakStats) notesCopy() ([]string, int) {
	s.notesMu.Lock()
	defer s.notesMu.Unlock()
	return append([]string(nil), s.notes...), s.dropped
}
