package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/debug"
	"time"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/internal/jsonscan"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// intake is a request body read and held against the body budget:
// reserved is what it took (the capacities it grew through), which
// Server.releaseBody returns once the body is no longer referenced.
type intake struct {
	body     []byte
	reserved int64
}

// readGated reads the whole body before the request may take a compute
// slot (a slow sender holds a connection, never a slot), under three
// bounds: MaxBodyBytes (413), the bytes of all bodies being held at once
// (MaxBodyBytesInFlight, 503), and the minimum transfer rate (408: after
// TransferGrace the body must keep arriving at MinTransferRate on
// average). Then it passes the JSON gate for a body decoded as schema
// describes: one iterative pass that refuses invalid JSON, nesting deeper
// than MaxJSONDepth and a member given twice, so nothing recursive sees an
// unchecked body. The caller must call s.releaseBody(in) when done.
func (s *Server) readGated(w http.ResponseWriter, r *http.Request, schema *jsonscan.Schema) (intake, *apiError) {
	in, aerr := s.readBody(w, r)
	if aerr != nil {
		return in, aerr
	}
	if aerr := gate(in.body, s.cfg.MaxJSONDepth, schema); aerr != nil {
		s.releaseBody(in)
		return intake{}, aerr
	}
	return in, nil
}

// releaseBody returns in's reservation to the body budget.
func (s *Server) releaseBody(in intake) {
	if in.reserved > 0 {
		s.bodies.Release(in.reserved)
	}
}

// bodyBuf is an empty buffer of capacity at least n for a body: a
// recycled one (recycleBody) when the pool has one of at most 2n, else a
// new one. A long body's fresh buffer costs more in page faults than
// reading it.
func (s *Server) bodyBuf(n int64) []byte {
	if p, ok := s.bodyBufs.Get().(*[]byte); ok {
		if c := int64(cap(*p)); c >= n && c <= 2*n {
			return (*p)[:0]
		}
	}
	return make([]byte, 0, n)
}

// recycleBody hands a body's buffer to the next request. Only a route
// whose decoded input holds no slice of the body may call it, once the
// body is no longer read; bodies under bodyChunk are left to the
// allocator.
func (s *Server) recycleBody(in intake) {
	if cap(in.body) >= bodyChunk {
		b := in.body[:0]
		s.bodyBufs.Put(&b)
	}
}

// bodyChunk is the first buffer of a body without a declared length.
const bodyChunk = 64 << 10

// readBody reads at most MaxBodyBytes at no less than the minimum rate,
// reserving what it holds from the body budget before it allocates it. A
// declared Content-Length over the limit is refused before a byte is read.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) (intake, *apiError) {
	return s.readBodyFeeding(w, r, nil)
}

// readBodyFeeding is readBody calling feed, when not nil, with the body
// read so far after each read that adds to it: work that depends only on
// the bytes already here (a binary prompt's page hashes) then overlaps the
// rest of the transfer instead of following it. feed runs on the reading
// goroutine, holding no compute slot, so it must cost no more than a
// bounded amount per byte it is given.
func (s *Server) readBodyFeeding(w http.ResponseWriter, r *http.Request, feed func([]byte)) (intake, *apiError) {
	limit := s.cfg.MaxBodyBytes
	tooLarge := &apiError{status: http.StatusRequestEntityTooLarge,
		message: fmt.Sprintf("request body exceeds MaxBodyBytes (%d bytes)", limit)}
	if r.ContentLength > limit {
		return intake{}, tooLarge
	}
	rd := &rateReader{r: http.MaxBytesReader(w, r.Body, limit), rc: http.NewResponseController(w),
		start: time.Now(), grace: s.cfg.TransferGrace, rate: s.cfg.MinTransferRate}
	var in intake
	// The declared length (bounded just above) is read into one exact
	// buffer; a body without one starts at bodyChunk and doubles, so its
	// copies add up to less than its size. Each growth is reserved first.
	want := int64(bodyChunk)
	if r.ContentLength > 0 {
		want = r.ContentLength + 1 // one spare byte notices a body longer than declared
	}
	for {
		if len(in.body) == cap(in.body) {
			grow := min(max(want, int64(len(in.body))), limit+1-int64(len(in.body)))
			if !s.bodies.TryAcquire(grow) {
				s.releaseBody(in)
				return intake{}, s.bodyBudgetError()
			}
			in.reserved += grow
			buf := s.bodyBuf(int64(len(in.body)) + grow)
			if extra := int64(cap(buf)) - (int64(len(in.body)) + grow); extra > 0 {
				if s.bodies.TryAcquire(extra) { // a recycled buffer counts whole
					in.reserved += extra
				} else {
					buf = make([]byte, 0, int64(len(in.body))+grow)
				}
			}
			in.body = append(buf, in.body...)
		}
		n, err := rd.Read(in.body[len(in.body):cap(in.body)])
		in.body = in.body[:len(in.body)+n]
		if feed != nil && n > 0 {
			feed(in.body)
		}
		if err == io.EOF {
			// Lift the rate deadline: net/http's background read of the
			// idle connection would take it for a hang-up and cancel the
			// request's context mid-op.
			_ = rd.rc.SetReadDeadline(time.Time{})
			return in, nil
		}
		if err != nil {
			s.releaseBody(in)
			return intake{}, s.readError(w, err, tooLarge, int64(len(in.body)))
		}
	}
}

// readError maps a failed body read to its answer.
func (s *Server) readError(w http.ResponseWriter, err error, tooLarge *apiError, got int64) *apiError {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return tooLarge
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close")
		return &apiError{status: http.StatusRequestTimeout, message: fmt.Sprintf(
			"request body too slow: %d bytes arrived, below MinTransferRate (%d bytes/s after a %s grace); the connection is closed",
			got, s.cfg.MinTransferRate, s.cfg.TransferGrace)}
	}
	return badRequest("", "reading the request body: %v", err)
}

// bodyBudgetError is the 503 for a body that does not fit the bytes every
// body being held may take together.
func (s *Server) bodyBudgetError() *apiError {
	return &apiError{status: http.StatusServiceUnavailable, message: fmt.Sprintf(
		"the server is holding MaxBodyBytesInFlight (%d bytes) of request bodies; retry later", s.cfg.MaxBodyBytesInFlight)}
}

// gate refuses a body that is not one JSON object, nests deeper than
// maxDepth, or names a member twice in an object that schema (the type
// the body decodes into) decodes member by member (so no decoder behind
// it makes a last-wins choice), with the canonical bad_json error object
// an op's own decoder would return, naming $, what was found and the
// bound.
func gate(body []byte, maxDepth int, schema *jsonscan.Schema) *apiError {
	return gateVerdict(body, maxDepth, jsonscan.CheckSchema(body, maxDepth, schema))
}

// gateSyntax is gate without the member-name rule, for preflight, which
// judges a chat request as the engine behind it parses it.
func gateSyntax(body []byte, maxDepth int) *apiError {
	return gateVerdict(body, maxDepth, jsonscan.Check(body, maxDepth))
}

// gateVerdict is the answer for g, the gate's verdict on body.
func gateVerdict(body []byte, maxDepth int, g jsonscan.Gate) *apiError {
	kind := ""
	if g.OK() { // a valid document: a value starts after the whitespace
		kind = ref.JSONKind(bytes.TrimLeft(body, " \t\n\r"))
	}
	var err error
	switch {
	case g.Depth > 0:
		err = spec.Reject(catalog.ErrBadJSON, "$", fmt.Sprintf("nesting depth %d at offset %d", g.Depth, g.Offset),
			fmt.Sprintf("at most %d nested arrays and objects (MaxJSONDepth)", maxDepth))
	case g.Reason == jsonscan.ReasonDuplicate:
		err = spec.Reject(catalog.ErrBadJSON, "$", fmt.Sprintf("member %.64q given twice (the second at offset %d)", g.Member, g.Offset),
			"each member at most once in an object")
	case !g.OK():
		err = spec.Reject(catalog.ErrBadJSON, "$", fmt.Sprintf("not valid JSON (%s at offset %d)", g.Reason, g.Offset), "a JSON object")
	case kind != "object":
		err = spec.Reject(catalog.ErrBadJSON, "$", kind, "a JSON object")
	default:
		return nil
	}
	return inputError(err, catalog.Canonical(struct{}{}, err))
}

// rateReader reads a request body no slower than rate bytes per second on
// average once grace has passed: before each Read the connection's read
// deadline is moved to where a sender at exactly that rate would be.
type rateReader struct {
	r     io.Reader
	rc    *http.ResponseController
	start time.Time
	grace time.Duration
	rate  int64
	n     int64
}

// Read implements io.Reader.
func (rr *rateReader) Read(p []byte) (int, error) {
	_ = rr.rc.SetReadDeadline(rr.start.Add(rr.grace + transferTime(rr.n, rr.rate)))
	n, err := rr.r.Read(p)
	rr.n += int64(n)
	return n, err
}

// transferTime is how long n bytes take at rate bytes per second, saturating.
func transferTime(n, rate int64) time.Duration {
	secs := n / rate
	if secs > int64(time.Duration(1<<62)/time.Second) {
		return 1 << 62
	}
	return time.Duration(secs)*time.Second + time.Duration(n%rate)*time.Second/time.Duration(rate)
}

// opResult is what an op run under a deadline returned.
type opResult struct {
	out   []byte
	err   error
	panic *opPanic
}

// runDeadline runs f in a goroutine of its own under ctx (OpTimeout from
// admission, and the client), passing it limits whose Done is ctx's. The
// goroutine owns sl, the compute slot the caller took. When f returns in
// time its result and the slot pass to the caller (ok is true), who frees
// the slot once the answer's room is reserved (Server.answer), so the
// answer's bytes are counted before the slot lets another op run. When ctx
// ends first ok is false, and the goroutine frees the slot when f returns:
// ops poll Limits.Canceled in their long loops, so that is soon after.
// The caller must cancel ctx once it has answered.
func (s *Server) runDeadline(ctx context.Context, sl *slot, f func(spec.Limits) opResult) (res opResult, ok bool) {
	lim := s.cfg.Limits
	lim.Done = ctx.Done()
	done := make(chan opResult) // unbuffered: a completed send hands the slot over
	go func() {
		res := runRecovered(f, lim)
		select {
		case done <- res:
		case <-ctx.Done(): // the caller has answered 503 and gone
			sl.release()
		}
	}()
	select {
	case res = <-done:
		if res.panic != nil {
			sl.release()
			panic(res.panic) // recoverPanics answers 500 and logs the op's stack
		}
		return res, true
	case <-ctx.Done():
		return opResult{}, false
	}
}

// runRecovered is f(lim), with a panic caught as the result, carrying the
// stack of the goroutine that panicked.
func runRecovered(f func(spec.Limits) opResult, lim spec.Limits) (res opResult) {
	defer func() {
		if p := recover(); p != nil {
			res = opResult{panic: &opPanic{value: p, stack: debug.Stack()}}
		}
	}()
	return f(lim)
}

// opPanic carries a panic out of the goroutine an op ran in, with that
// goroutine's stack, to the handler's recoverPanics.
type opPanic struct {
	value any
	stack []byte
}

// String is what the log shows as the panic.
func (p *opPanic) String() string { return fmt.Sprint(p.value) }

// deadlineError is the 503 of a request whose op outlived OpTimeout or
// whose client left.
func (s *Server) deadlineError(what string) *apiError {
	return &apiError{status: http.StatusServiceUnavailable, message: fmt.Sprintf(
		"%s did not finish within OpTimeout (%s); it was canceled, and its slot is freed as it stops", what, s.cfg.OpTimeout)}
}
