package server

import (
	"bytes"
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
	"github.com/kvtwin/kvtwin/ref"
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

func (s *Server) handleList(w http.ResponseWriter, _ *http.Request) {
	writeBody(w, http.StatusOK, s.listBody)
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
// under OpTimeout; the slot is freed before the answer is written.
func (s *Server) serveCall(w http.ResponseWriter, r *http.Request, c call, start time.Time) {
	in, aerr := s.readGated(w, r)
	if aerr != nil {
		s.writeError(w, r, aerr)
		return
	}
	defer s.releaseBody(in)
	if !s.admit(w, r) {
		return
	}
	if c.compare {
		s.runCompare(w, r, c, in.body, start)
		return
	}
	s.runOne(w, r, c, in.body, start)
}

// admit takes an op slot, or answers 429 with Retry-After and reports
// false; the caller releases a taken slot with s.inflight.Add(-1).
func (s *Server) admit(w http.ResponseWriter, r *http.Request) bool {
	if s.acquire() {
		return true
	}
	w.Header().Set("Retry-After", "1")
	s.writeError(w, r, &apiError{status: http.StatusTooManyRequests,
		message: fmt.Sprintf("too many op requests in flight: MaxConcurrent is %d; retry later", s.cfg.MaxConcurrent)})
	return false
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
	ie, _ := ref.AsInputError(err)
	return &apiError{status: http.StatusBadRequest, message: ie.Error(), param: ie.Field, detail: canonical}
}

// runError maps an error from catalog.Entry.Run to its response.
func (s *Server) runError(c call, impl catalog.Impl, err error, canonical []byte) *apiError {
	if errors.Is(err, ref.ErrCanceled) {
		return s.deadlineError(fmt.Sprintf("%s on %s", c.op.entry.Name(), impl))
	}
	if errors.Is(err, catalog.ErrImplUnavailable) {
		return badRequest("impl", "impl = %s: %v; kvtwin never falls back to another implementation", impl, err)
	}
	if _, ok := ref.AsInputError(err); ok {
		return inputError(err, canonical)
	}
	return &apiError{status: http.StatusInternalServerError, detail: canonical,
		message: fmt.Sprintf("%s on %s failed: %v", c.op.entry.Name(), impl, err)}
}

// runOne answers the canonical output followed by a newline, byte for
// byte. It owns the compute slot admit took: runDeadline frees it.
func (s *Server) runOne(w http.ResponseWriter, r *http.Request, c call, body []byte, start time.Time) {
	res, ok := s.runDeadline(r, func(lim ref.Limits) opResult {
		out, err := c.op.entry.Run(c.impl, lim, body)
		return opResult{out: out, err: err}
	})
	if !ok {
		s.writeError(w, r, s.deadlineError(fmt.Sprintf("%s on %s", c.op.entry.Name(), c.impl)))
		return
	}
	out, err := res.out, res.err
	if err != nil {
		s.writeError(w, r, s.runError(c, c.impl, err, out))
		return
	}
	s.setWriteDeadline(w, len(out)+1)
	writeBody(w, http.StatusOK, append(out, '\n'))
	s.logSuccess(r, c, len(body), len(out)+1, start)
}

// compareBody is the ?compare=1 answer. Results holds the canonical result
// (output or error object) of ref and of the compared implementation, ref first.
type compareBody struct {
	Op      string          `json:"op"`
	Results json.RawMessage `json:"results"`
	Equal   bool            `json:"equal"`
}

// runCompare runs ref and c.impl on the same body. Rejection by either is a
// result, not a failure: the comparison itself succeeded, so it is a 200.
func (s *Server) runCompare(w http.ResponseWriter, r *http.Request, c call, body []byte, start time.Time) {
	e := c.op.entry
	var refOut, implOut []byte
	var refErr, implErr error
	_, ok := s.runDeadline(r, func(lim ref.Limits) opResult {
		refOut, refErr = e.Run(catalog.Ref, lim, body)
		implOut, implErr = e.Run(c.impl, lim, body)
		return opResult{}
	})
	if !ok {
		s.writeError(w, r, s.deadlineError(fmt.Sprintf("%s on ref and %s", e.Name(), c.impl)))
		return
	}
	for _, err := range []error{refErr, implErr} {
		if errors.Is(err, ref.ErrCanceled) {
			s.writeError(w, r, s.deadlineError(fmt.Sprintf("%s on ref and %s", e.Name(), c.impl)))
			return
		}
	}
	for _, side := range []struct {
		impl catalog.Impl
		err  error
	}{{catalog.Ref, refErr}, {c.impl, implErr}} {
		if errors.Is(side.err, catalog.ErrImplUnavailable) {
			s.writeError(w, r, s.runError(c, side.impl, side.err, nil))
			return
		}
	}
	results := fmt.Appendf(nil, `{"ref":%s,%q:%s}`, refOut, c.impl, implOut)
	equal := (refErr == nil) == (implErr == nil) && bytes.Equal(refOut, implOut)
	out, err := encode(compareBody{Op: e.Name(), Results: results, Equal: equal})
	if err != nil {
		s.writeError(w, r, &apiError{status: http.StatusInternalServerError,
			message: fmt.Sprintf("%s: a canonical result is not JSON: %v", e.Name(), err)})
		return
	}
	if !equal {
		s.log.LogAttrs(r.Context(), slog.LevelWarn, "implementations disagree",
			slog.String("op", e.Name()), slog.String("impl", string(c.impl)))
	}
	s.setWriteDeadline(w, len(out))
	writeBody(w, http.StatusOK, out)
	s.logSuccess(r, c, len(body), len(out), start)
}

func (s *Server) logSuccess(r *http.Request, c call, in, out int, start time.Time) {
	op, impl := c.labels()
	s.log.LogAttrs(r.Context(), slog.LevelDebug, "op served",
		slog.String("op", op), slog.String("impl", impl), slog.Int("bytes_in", in),
		slog.Int("bytes_out", out), slog.Duration("duration", time.Since(start)))
}
