package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"
)

// This file is the write path's memory budget (docs/api.md, "The write
// budget"): the bytes of answers held until a client has read them.
// An answer's bytes exist once its op has run and stay until its last Write
// returns, however slowly the client reads; without a bound, N slow readers
// of large answers hold N answers (issue 27, finding 3). So a large answer
// reserves its bytes from MaxResponseBytesInFlight while it still holds its
// compute slot, and only then frees the slot: at most MaxConcurrent answers
// are being computed and MaxConcurrent more wait for room outside the
// budget. Every answer is written under the rate deadline, which moves with
// each chunk, so a reader that stops or falls below MinTransferRate is cut
// and its reservation returns.

// SmallAnswerBytes is the largest answer written without a reservation
// from MaxResponseBytesInFlight: health checks, errors, the op listing and
// most op answers never wait for room and are never refused for it (a
// budget that could hold them up would lock out the very requests that show
// the server is alive). Unreserved answers hold at most MaxConnections ×
// SmallAnswerBytes (64 MiB at the defaults).
const SmallAnswerBytes = 64 << 10

// answerChunk is the most of an answer one Write hands the connection; the
// rate deadline is moved before each, so a reader is judged every 64 KiB.
const answerChunk = 64 << 10

// responseBudget is MaxResponseBytesInFlight: the bytes reserved by answers
// being written, and the answers waiting for room.
type responseBudget struct {
	size int64
	sem  *semaphore.Weighted // FIFO: a large waiter is not starved by smaller ones
	// reserved mirrors what sem has handed out, for /metrics.
	reserved atomic.Int64
	// waiting counts answers waiting for room, at most maxWaiting.
	waiting    atomic.Int64
	maxWaiting int64

	budget, reservedGauge, waitingGauge prometheus.Collector
	waits                               prometheus.Counter
	refused, cut                        *prometheus.CounterVec
}

// Reasons of kvtwin_response_budget_refused_total and
// kvtwin_response_writes_cut_total: a bounded label set.
const (
	refusedNoRoom   = "no_room"  // the budget was full and MaxConcurrent answers already waited
	refusedDeadline = "deadline" // no room came within OpTimeout, or the client left
	cutRate         = "rate"     // the reader fell below MinTransferRate after TransferGrace
	cutClient       = "client"   // the connection failed: the client went away
)

func newResponseBudget(size int64, maxWaiting int) *responseBudget {
	b := &responseBudget{size: size, sem: semaphore.NewWeighted(size), maxWaiting: int64(maxWaiting)}
	b.budget = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "kvtwin_response_budget_bytes",
		Help: "Bytes all answers being written may reserve together (MaxResponseBytesInFlight, --max-response-bytes-in-flight).",
	}, func() float64 { return float64(size) })
	b.reservedGauge = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "kvtwin_response_budget_reserved_bytes",
		Help: "Bytes reserved by answers being written now (answers over SmallAnswerBytes).",
	}, func() float64 { return float64(b.reserved.Load()) })
	b.waitingGauge = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "kvtwin_response_budget_waiting",
		Help: "Answers waiting for room in the response budget now (at most MaxConcurrent).",
	}, func() float64 { return float64(b.waiting.Load()) })
	b.waits = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kvtwin_response_budget_waits_total",
		Help: "Answers that found no room in the response budget and waited for it.",
	})
	b.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kvtwin_response_budget_refused_total",
		Help: "Answers refused with 503 for want of room in the response budget, by reason (no_room: MaxConcurrent answers already waited; deadline: no room within OpTimeout).",
	}, []string{"reason"})
	b.cut = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kvtwin_response_writes_cut_total",
		Help: "Answers whose write ended early, by reason (rate: the reader fell below MinTransferRate; client: the connection failed).",
	}, []string{"reason"})
	return b
}

// collectors are the budget's series, for the server's registry.
func (b *responseBudget) collectors() []prometheus.Collector {
	return []prometheus.Collector{b.budget, b.reservedGauge, b.waitingGauge, b.waits, b.refused, b.cut}
}

// grant is room reserved in the response budget; release returns it, once.
// The zero grant (a small answer's) reserves nothing.
type grant struct {
	b *responseBudget
	n int64
}

// release returns the grant's bytes to the budget; later calls do nothing.
func (g *grant) release() {
	if g == nil || g.n == 0 {
		return
	}
	g.b.reserved.Add(-g.n)
	g.b.sem.Release(g.n)
	g.n = 0
}

// slot is one of the MaxConcurrent compute slots, taken by admit. Whoever
// holds it releases it once; later calls do nothing, so a handler may defer
// a release as a backstop and still free the slot early.
type slot struct {
	inflight *atomic.Int64
	held     atomic.Bool
}

func newSlot(inflight *atomic.Int64) *slot {
	sl := &slot{inflight: inflight}
	sl.held.Store(true)
	return sl
}

// release frees the slot if it is still held; nil is a slot never taken.
func (sl *slot) release() {
	if sl != nil && sl.held.CompareAndSwap(true, false) {
		sl.inflight.Add(-1)
	}
}

// held is the memory an answer's parts keep alive while they are written:
// their capacities, which an encoder's grown buffer can make twice their
// lengths.
func held(parts [][]byte) int64 {
	var n int64
	for _, p := range parts {
		n += int64(cap(p))
	}
	return n
}

// lengthOf is the bytes an answer's parts send.
func lengthOf(parts [][]byte) int {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	return n
}

// reserve takes room for an answer holding n bytes, then frees sl (nil: the
// route holds no compute slot) on every path, so the slot is never held
// while the answer is written or while it waits. An answer of at most
// SmallAnswerBytes takes no room and never waits. A larger one takes n bytes
// (all of the budget when n exceeds it, so one answer larger than the
// budget is written alone rather than refused forever); without room it
// waits until ctx ends (OpTimeout from admission, or the client leaving),
// at most MaxConcurrent answers at once, and is otherwise refused with a
// 503 naming the budget. The caller must release the grant.
func (s *Server) reserve(ctx context.Context, n int64, sl *slot) (*grant, *apiError) {
	defer sl.release()
	b := s.answers
	if n <= SmallAnswerBytes {
		return &grant{}, nil
	}
	want := min(n, b.size)
	if b.sem.TryAcquire(want) {
		b.reserved.Add(want)
		return &grant{b: b, n: want}, nil
	}
	if b.waiting.Add(1) > b.maxWaiting {
		b.waiting.Add(-1)
		b.refused.WithLabelValues(refusedNoRoom).Inc()
		return nil, s.budgetError(n, fmt.Sprintf("and MaxConcurrent (%d) answers already wait for room", b.maxWaiting))
	}
	defer b.waiting.Add(-1)
	b.waits.Inc()
	sl.release() // a waiting answer holds its memory, never a compute slot
	if err := b.sem.Acquire(ctx, want); err != nil {
		b.refused.WithLabelValues(refusedDeadline).Inc()
		return nil, s.budgetError(n, fmt.Sprintf("and no room came within OpTimeout (%s)", s.cfg.OpTimeout))
	}
	b.reserved.Add(want)
	return &grant{b: b, n: want}, nil
}

// budgetError is the 503 of an answer refused for want of room.
func (s *Server) budgetError(n int64, why string) *apiError {
	return &apiError{status: http.StatusServiceUnavailable, message: fmt.Sprintf(
		"the server is writing MaxResponseBytesInFlight (%d bytes) of answers to slow readers %s; this answer (%d bytes) was dropped; retry later",
		s.answers.size, why, n)}
}

// writeBusy answers a 503 that a retry may not meet: Retry-After says when
// to try again.
func (s *Server) writeBusy(w http.ResponseWriter, r *http.Request, e *apiError) {
	w.Header().Set("Retry-After", "1")
	s.writeError(w, r, e)
}

// answerContext bounds a wait for room by OpTimeout from now and by the
// client: the routes that hold no compute slot start their clock here.
func (s *Server) answerContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), s.cfg.OpTimeout)
}

// answer reserves room for parts (freeing sl, see reserve), writes them
// with status under the rate deadline, and returns the room however the
// write ends. It reports whether every byte was handed to the connection;
// a refusal has been answered with 503.
func (s *Server) answer(ctx context.Context, w http.ResponseWriter, r *http.Request, sl *slot, status int, contentType string, parts ...[]byte) bool {
	g, aerr := s.reserve(ctx, held(parts), sl)
	if aerr != nil {
		s.writeBusy(w, r, aerr)
		return false
	}
	defer g.release()
	return s.writeAnswer(w, r, status, contentType, parts...)
}

// writeAnswer writes an answer whose memory is already accounted for (a
// reservation, or a body shared by every request such as GET /v1/ops) in
// chunks, moving the connection's write deadline before each to where a
// reader at exactly MinTransferRate would be after TransferGrace: a reader
// that stops, or reads slower on average, is cut off within a chunk of
// falling behind instead of holding the answer until the whole answer's
// deadline. It reports whether every byte was handed to the connection.
func (s *Server) writeAnswer(w http.ResponseWriter, r *http.Request, status int, contentType string, parts ...[]byte) bool {
	total := lengthOf(parts)
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(total))
	h.Set("X-Content-Type-Options", "nosniff")
	rc := http.NewResponseController(w)
	start := time.Now()
	_ = rc.SetWriteDeadline(start.Add(s.cfg.TransferGrace + transferTime(int64(min(total, answerChunk)), s.cfg.MinTransferRate)))
	w.WriteHeader(status)
	var sent int64
	for _, p := range parts {
		for len(p) > 0 {
			k := min(len(p), answerChunk)
			_ = rc.SetWriteDeadline(start.Add(s.cfg.TransferGrace + transferTime(sent+int64(k), s.cfg.MinTransferRate)))
			n, err := w.Write(p[:k])
			sent += int64(n)
			if err != nil {
				s.writeCut(r, err, sent, total)
				return false
			}
			p = p[k:]
		}
	}
	return true
}

// writeCut counts and logs (at DEBUG: a flood of slow readers must not
// flood the log) an answer whose write ended early.
func (s *Server) writeCut(r *http.Request, err error, sent int64, total int) {
	reason := cutClient
	if errors.Is(err, os.ErrDeadlineExceeded) {
		reason = cutRate
	}
	s.answers.cut.WithLabelValues(reason).Inc()
	s.log.LogAttrs(r.Context(), slog.LevelDebug, "answer cut short",
		slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("reason", reason),
		slog.Int64("sent", sent), slog.Int("bytes", total), slog.String("err", err.Error()))
}
