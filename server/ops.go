package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/spec"
)

// Metric label values for requests that name no served op or no valid
// implementation: labels come only from this bounded set, never from the URL.
const (
	unknownOpLabel   = "unknown"
	invalidImplLabel = "invalid"
)

// call is a parsed op request: which op, on which implementation, and
// whether ref runs next to it.
type call struct {
	op      *opInfo
	impl    catalog.Impl
	compare bool
}

// labels returns the bounded op and impl metric labels of c, which may be
// partly parsed when the request was rejected.
func (c call) labels() (op, impl string) {
	op, impl = unknownOpLabel, invalidImplLabel
	if c.op != nil {
		op = c.op.entry.Name()
	}
	if c.impl != "" {
		impl = string(c.impl)
		if c.compare {
			impl = "ref+" + impl
		}
	}
	return op, impl
}

// handleList serves GET /v1/ops: one body encoded at New and shared by
// every request, so a slow reader holds no copy and reserves nothing; it is
// written under the rate deadline like every answer.
func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	s.writeAnswer(w, r, http.StatusOK, jsonContent, s.listBody)
}

// handleOp serves POST /v1/ops/{name}. Checks run cheapest first; the body
// is read (within MaxBodyBytesInFlight) before the request takes one of the
// MaxConcurrent slots, so a slow sender never holds a slot.
func (s *Server) handleOp(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	c, perr := s.parseCall(r)
	defer func() {
		op, impl := c.labels()
		s.metrics.observe(op, impl, sw.code(), time.Since(start))
	}()
	s.recoverPanics(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if perr != nil {
			s.writeError(w, r, perr)
			return
		}
		s.serveCall(w, r, c, start)
	})).ServeHTTP(sw, r)
}

// parseCall resolves the op and the query; it returns what it parsed even
// on error, for the metric labels.
func (s *Server) parseCall(r *http.Request) (call, *apiError) {
	var c call
	name := mux.Vars(r)["name"]
	c.op = s.byName[name]
	if c.op == nil {
		return c, &apiError{status: http.StatusNotFound,
			message: fmt.Sprintf("unknown op %q; GET /v1/ops lists the ops", name)}
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return c, badRequest("", "malformed query string: %v", err)
	}
	if aerr := checkQueryKeys(q); aerr != nil {
		return c, aerr
	}
	impl := s.cfg.Impl
	if v, ok := q["impl"]; ok {
		if impl, err = catalog.ParseImpl(v[0]); err != nil {
			return c, badRequest("impl", "impl: %v", err)
		}
	}
	c.impl = impl
	if v, ok := q["compare"]; ok {
		if c.compare, err = strconv.ParseBool(v[0]); err != nil {
			return c, badRequest("compare", "compare = %q: want 1 or 0 (true or false)", v[0])
		}
	}
	return c, s.checkCallable(c)
}

// checkQueryKeys rejects unknown and repeated query parameters rather than
// ignoring them: a misspelt ?imp=ref must not silently run the default.
func checkQueryKeys(q url.Values) *apiError {
	for _, k := range slices.Sorted(maps.Keys(q)) { // sorted: the same request, the same first complaint
		if k != "impl" && k != "compare" {
			return badRequest(k, "unknown query parameter %q: want impl or compare", k)
		}
		if n := len(q[k]); n > 1 {
			return badRequest(k, "query parameter %q given %d times: want it at most once", k, n)
		}
	}
	return nil
}

// checkCallable rejects an implementation the op lacks in this build with
// the catalog's reason, and a comparison of ref against itself.
func (s *Server) checkCallable(c call) *apiError {
	if reason := c.op.unavailable[c.impl]; reason != nil {
		return badRequest("impl", "impl = %s: %v; kvtwin never falls back to another implementation", c.impl, reason)
	}
	if c.compare && c.impl == catalog.Ref {
		return badRequest("impl", "compare=1 compares ref against another implementation, and impl is ref: add ?impl=fast or ?impl=cuda")
	}
	return nil
}

// serveCall reads and gates the body, then takes a compute slot and runs c
// under OpTimeout; the answer's room in the write budget is reserved
// before the slot is freed, and the slot is freed before the answer is
// written.
func (s *Server) serveCall(w http.ResponseWriter, r *http.Request, c call, start time.Time) {
	in, aerr := s.readGated(w, r, c.op.schema)
	if aerr != nil {
		s.writeError(w, r, aerr)
		return
	}
	defer s.releaseBody(in)
	sl := s.admit(w, r)
	if sl == nil {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.OpTimeout)
	defer cancel() // once answered, the op (if still running) is told to stop
	if c.compare {
		s.runCompare(ctx, w, r, c, sl, in.body, start)
		return
	}
	s.runOne(ctx, w, r, c, sl, in.body, start)
}

// admit takes an op slot, or answers 429 with Retry-After and returns nil;
// the holder of a taken slot releases it (reserve does, before an answer
// is written).
func (s *Server) admit(w http.ResponseWriter, r *http.Request) *slot {
	if s.acquire() {
		return newSlot(&s.inflight)
	}
	w.Header().Set("Retry-After", "1")
	s.writeError(w, r, &apiError{status: http.StatusTooManyRequests,
		message: fmt.Sprintf("too many op requests in flight: MaxConcurrent is %d; retry later", s.cfg.MaxConcurrent)})
	return nil
}

// acquire takes one of the MaxConcurrent op slots without waiting: a full
// server answers 429 at once rather than queueing work it cannot bound.
func (s *Server) acquire() bool {
	if s.inflight.Add(1) > int64(s.cfg.MaxConcurrent) {
		s.inflight.Add(-1)
		return false
	}
	return true
}

// inputError is the 400 for an input an op (or the pre-check) rejected:
// param is the field, and detail the canonical error object, unchanged.
func inputError(err error, canonical []byte) *apiError {
	ie, _ := spec.AsInputError(err)
	return &apiError{status: http.StatusBadRequest, message: ie.Error(), param: ie.Field, detail: canonical}
}

// runError maps an error from catalog.Entry.Run to its response.
func (s *Server) runError(c call, impl catalog.Impl, err error, canonical []byte) *apiError {
	if errors.Is(err, spec.ErrCanceled) {
		return s.deadlineError(fmt.Sprintf("%s on %s", c.op.entry.Name(), impl))
	}
	if errors.Is(err, catalog.ErrImplUnavailable) {
		return badRequest("impl", "impl = %s: %v; kvtwin never falls back to another implementation", impl, err)
	}
	if _, ok := spec.AsInputError(err); ok {
		return inputError(err, canonical)
	}
	return &apiError{status: http.StatusInternalServerError, detail: canonical,
		message: fmt.Sprintf("%s on %s failed: %v", c.op.entry.Name(), impl, err)}
}

// newline ends every op answer.
var newline = []byte{'\n'}

// jsonContent is the Content-Type of every JSON answer.
const jsonContent = "application/json"

// runOne answers the canonical output followed by a newline, byte for
// byte, written as two parts so the output is never copied. It owns sl,
// the compute slot admit took: runDeadline hands it back with the output,
// and answer frees it once the output's room is reserved.
func (s *Server) runOne(ctx context.Context, w http.ResponseWriter, r *http.Request, c call, sl *slot, body []byte, start time.Time) {
	res, ok := s.runDeadline(ctx, sl, func(lim spec.Limits) opResult {
		out, err := c.op.entry.Run(c.impl, lim, body)
		return opResult{out: out, err: err}
	})
	if !ok {
		s.writeError(w, r, s.deadlineError(fmt.Sprintf("%s on %s", c.op.entry.Name(), c.impl)))
		return
	}
	defer sl.release()
	out, err := res.out, res.err
	if err != nil {
		sl.release()
		s.writeError(w, r, s.runError(c, c.impl, err, out))
		// A rejection, or a 500 carrying an error object, is an answer too;
		// a deadline or a missing implementation is not an answer of the op.
		if !errors.Is(err, spec.ErrCanceled) && !errors.Is(err, catalog.ErrImplUnavailable) {
			s.verify.offer(r, c.op.entry, c.impl, body, out, true)
		}
		return
	}
	if s.answer(ctx, w, r, sl, http.StatusOK, jsonContent, out, newline) {
		s.logSuccess(r, c, len(body), len(out)+1, start)
		s.verify.offer(r, c.op.entry, c.impl, body, out, false)
	}
}

// runCompare runs ref and c.impl on the same body. Rejection by either is a
// result, not a failure: the comparison itself succeeded, so it is a 200.
// The slot is handled as in runOne.
func (s *Server) runCompare(ctx context.Context, w http.ResponseWriter, r *http.Request, c call, sl *slot, body []byte, start time.Time) {
	e := c.op.entry
	var refOut, implOut []byte
	var refErr, implErr error
	_, ok := s.runDeadline(ctx, sl, func(lim spec.Limits) opResult {
		refOut, refErr = e.Run(catalog.Ref, lim, body)
		implOut, implErr = e.Run(c.impl, lim, body)
		return opResult{}
	})
	if !ok {
		s.writeError(w, r, s.deadlineError(fmt.Sprintf("%s on ref and %s", e.Name(), c.impl)))
		return
	}
	defer sl.release()
	equal := (refErr == nil) == (implErr == nil) && bytes.Equal(refOut, implOut)
	var parts [][]byte
	aerr := s.compareFailed(c, refErr, implErr)
	if aerr == nil {
		parts, aerr = compareAnswer(e.Name(), c.impl, refOut, implOut, equal)
	}
	if aerr != nil {
		sl.release()
		s.writeError(w, r, aerr)
		return
	}
	if !equal {
		s.log.LogAttrs(r.Context(), slog.LevelWarn, "implementations disagree",
			slog.String("op", e.Name()), slog.String("impl", string(c.impl)))
	}
	if s.answer(ctx, w, r, sl, http.StatusOK, jsonContent, parts...) {
		s.logSuccess(r, c, len(body), lengthOf(parts), start)
	}
}

// compareFailed is the answer of a comparison that did not happen: a side
// canceled at the deadline, or an implementation missing.
func (s *Server) compareFailed(c call, refErr, implErr error) *apiError {
	for _, err := range []error{refErr, implErr} {
		if errors.Is(err, spec.ErrCanceled) {
			return s.deadlineError(fmt.Sprintf("%s on ref and %s", c.op.entry.Name(), c.impl))
		}
	}
	for _, side := range []struct {
		impl catalog.Impl
		err  error
	}{{catalog.Ref, refErr}, {c.impl, implErr}} {
		if errors.Is(side.err, catalog.ErrImplUnavailable) {
			return s.runError(c, side.impl, side.err, nil)
		}
	}
	return nil
}

// compareAnswer is the ?compare=1 answer, {"op":…,"results":{"ref":…,
// "<impl>":…},"equal":…} and a newline, as parts that embed both canonical
// results (output or error object) uncopied: a large output is held once,
// where encoding it inside a struct held it four times. A result that is
// not JSON is a 500, as the encoder's refusal was.
func compareAnswer(op string, impl catalog.Impl, refOut, implOut []byte, equal bool) ([][]byte, *apiError) {
	for _, out := range [][]byte{refOut, implOut} {
		if !json.Valid(out) {
			return nil, &apiError{status: http.StatusInternalServerError,
				message: fmt.Sprintf("%s: a canonical result is not JSON", op)}
		}
	}
	name, _ := json.Marshal(op) // a string always encodes
	head := fmt.Appendf(nil, `{"op":%s,"results":{"ref":`, name)
	mid := fmt.Appendf(nil, `,%q:`, impl)
	tail := fmt.Appendf(nil, `},"equal":%t}`+"\n", equal)
	return [][]byte{head, refOut, mid, implOut, tail}, nil
}

func (s *Server) logSuccess(r *http.Request, c call, in, out int, start time.Time) {
	op, impl := c.labels()
	s.log.LogAttrs(r.Context(), slog.LevelDebug, "op served",
		slog.String("op", op), slog.String("impl", impl), slog.Int("bytes_in", in),
		slog.Int("bytes_out", out), slog.Duration("duration", time.Since(start)))
}
