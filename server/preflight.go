package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/tidwall/gjson"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/internal/jsonscan"
	"github.com/kvtwin/kvtwin/spec"
)

// preflightLabel is the metric op label of POST /v1/openai/preflight.
const preflightLabel = "openai.preflight"

// PreflightPath is the route of the OpenAI preflight endpoint (docs/api.md).
const PreflightPath = "/v1/openai/preflight"

// ErrBadPreflight is the sentinel of a preflight envelope that does not
// hold what the endpoint needs (the request object, the token counts).
var ErrBadPreflight = spec.NewSentinel("bad_preflight", "preflight envelope malformed")

// preflightTwins are one implementation's preflight twins from
// catalog.Preflight, or why it has none (err; only ref and fast implement
// the serving ops).
type preflightTwins struct {
	catalog.PreflightTwins
	err error
}

// preflightEnvelope is the decoded POST body.
type preflightEnvelope struct {
	endpoint string
	request  json.RawMessage // a view into the body
	n, c, t  int64
	truncate bool
	flags    spec.CompatFlags
	stream   bool
}

// preflightAnswer is the response the engine would have produced.
type preflightAnswer struct {
	status      int
	contentType string
	body        []byte
	soft        bool
}

// envelopeKeys are the envelope's members, in the order of preflightSpans.
var envelopeKeys = [...]string{"request", "prompt_tokens", "context_len", "max_total_tokens", "flags", "endpoint", "allow_auto_truncate"}

// preflightSpans is what one pass over the body records: where each
// envelope member's value lies (the last occurrence, as Python keeps), the
// first unknown member, and the request's top-level facts.
type preflightSpans struct {
	at                             [len(envelopeKeys)][2]int // [start, end); end == 0: absent
	unknown                        string
	hasMessages, hasPrompt, stream bool
}

// value is envelope member i as a gjson result (the members are small,
// except request, which is only ever read through its span).
func (sp *preflightSpans) value(body []byte, i int) gjson.Result {
	if sp.at[i][1] == 0 {
		return gjson.Result{}
	}
	return gjson.ParseBytes(body[sp.at[i][0]:sp.at[i][1]])
}

// scanEnvelope validates the whole body and records the envelope in one
// pass (internal/jsonscan; docs/decisions.md "Preflight in one pass"): the
// generic pre-check, the envelope walk and the request's top-level walk
// were three passes. The request's members are read, not validated twice:
// the scan validates them here and the op validates the request again by
// its own contract. A body that is not one JSON object gets the pre-check's
// exact error.
func scanEnvelope(body []byte, maxDepth int) (preflightSpans, *apiError) {
	var sp preflightSpans
	p := jsonscan.NewLimited(body, maxDepth)
	p.WS()
	ok := p.At('{') && p.Members(func(key []byte) bool {
		i := envelopeIndex(key)
		if i < 0 && sp.unknown == "" {
			sp.unknown = decodeKey(key)
		}
		start := p.Pos()
		ok := false
		if i == 0 {
			sp.hasMessages, sp.hasPrompt, sp.stream = false, false, false // the last request counts
		}
		if i == 0 && p.At('{') {
			ok = p.Members(func(key []byte) bool { return requestFact(p, key, &sp) })
		} else {
			ok = p.Value()
		}
		if i >= 0 {
			sp.at[i] = [2]int{start, p.Pos()}
		}
		return ok
	}) && p.End()
	if ok {
		return sp, nil
	}
	// The scan failed: the iterative gate says why (invalid JSON, not an
	// object, or nested past MaxJSONDepth), as every other route does.
	if aerr := gateSyntax(body, maxDepth); aerr != nil {
		return sp, aerr
	}
	err := spec.Reject(catalog.ErrBadJSON, "$", "not valid JSON", "a JSON object")
	return sp, inputError(err, catalog.Canonical(struct{}{}, err))
}

// envelopeIndex is key's index in envelopeKeys, or -1.
func envelopeIndex(key []byte) int {
	for i, want := range envelopeKeys {
		if jsonscan.KeyIs(key, want) {
			return i
		}
	}
	return -1
}

// decodeKey is a validated key literal, decoded.
func decodeKey(key []byte) string {
	var k string
	_ = json.Unmarshal(key, &k) // validated by the scan
	return k
}

// requestFact scans one top-level member of the request, noting whether
// it has messages or a prompt (the endpoint when none is given) and
// whether it streams (Python's json.loads keeps a repeated key's last value).
func requestFact(p *jsonscan.Scanner, key []byte, sp *preflightSpans) bool {
	switch {
	case jsonscan.KeyIs(key, "messages"):
		sp.hasMessages = true
	case jsonscan.KeyIs(key, "prompt"):
		sp.hasPrompt = true
	case jsonscan.KeyIs(key, "stream"):
		sp.stream = p.At('t') // a valid value starting with t is true
	}
	return p.Value()
}

// parseEnvelope reads the envelope from one validating pass, so the
// (large) request is never decoded here; only the small flags object is,
// strictly.
func parseEnvelope(body []byte, maxDepth int) (preflightEnvelope, *apiError, error) {
	var env preflightEnvelope
	sp, aerr := scanEnvelope(body, maxDepth)
	if aerr != nil {
		return env, aerr, nil
	}
	if sp.unknown != "" {
		return env, nil, spec.Reject(ErrBadPreflight, sp.unknown, "unknown field", "one of request, prompt_tokens, context_len, max_total_tokens, flags, endpoint, allow_auto_truncate")
	}
	if r := sp.at[0]; r[1] == 0 || body[r[0]] != '{' {
		return env, nil, spec.Reject(ErrBadPreflight, "request", kindName(sp.value(body, 0)), "an OpenAI chat or completions request object")
	}
	env.request = json.RawMessage(body[sp.at[0][0]:sp.at[0][1]])
	var err error
	for i, dst := range []*int64{&env.n, &env.c, &env.t} {
		if *dst, err = envelopeInt(envelopeKeys[i+1], sp.value(body, i+1)); err != nil {
			return env, nil, err
		}
	}
	if err := decodeFlags(sp.value(body, 4), &env.flags); err != nil {
		return env, nil, err
	}
	env.stream = sp.stream
	if env.endpoint, err = envelopeEndpoint(sp.value(body, 5), sp.hasMessages, sp.hasPrompt); err != nil {
		return env, nil, err
	}
	switch v := sp.value(body, 6); v.Type {
	case gjson.True:
		env.truncate = true
	case gjson.False, gjson.Null:
	default:
		return env, nil, spec.Reject(ErrBadPreflight, "allow_auto_truncate", v.Raw, "a boolean")
	}
	return env, nil, nil
}

func kindName(v gjson.Result) string {
	switch {
	case !v.Exists():
		return "missing"
	case v.IsArray():
		return "array"
	case v.Type == gjson.String:
		return "string"
	case v.Type == gjson.Number:
		return "number"
	}
	return v.Raw
}

// envelopeInt reads a required integer literal.
func envelopeInt(field string, v gjson.Result) (int64, error) {
	if v.Type != gjson.Number {
		return 0, spec.Reject(ErrBadPreflight, field, kindName(v), "an integer")
	}
	n, err := strconv.ParseInt(v.Raw, 10, 64)
	if err != nil {
		return 0, spec.Reject(ErrBadPreflight, field, v.Raw, "an integer in int64")
	}
	return n, nil
}

// decodeFlags decodes the flags object strictly (unknown flags are errors).
func decodeFlags(v gjson.Result, into *spec.CompatFlags) error {
	if !v.Exists() || v.Type == gjson.Null {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(v.Raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil || !v.IsObject() {
		return spec.Reject(ErrBadPreflight, "flags", v.Raw, fmt.Sprintf("an object of the S2.1 flags (%v)", err))
	}
	return nil
}

// envelopeEndpoint is the given endpoint, else chat when the request has
// messages and completions when it has a prompt.
func envelopeEndpoint(v gjson.Result, hasMessages, hasPrompt bool) (string, error) {
	if v.Exists() {
		if v.Type != gjson.String {
			return "", spec.Reject(ErrBadPreflight, "endpoint", v.Raw, `"chat" or "completions"`)
		}
		return v.Str, nil
	}
	if hasMessages {
		return spec.EndpointChat, nil
	}
	if hasPrompt {
		return spec.EndpointCompletions, nil
	}
	return "", spec.Reject(ErrBadPreflight, "request", "neither messages nor prompt", `a chat request (messages) or a completions request (prompt), or an explicit "endpoint"`)
}

// preflight runs what the engine runs before the first token: request
// validation and normalization (400, always non-streaming), the input-length
// bounds (413: non-streaming, or the in-stream chunk for a stream without
// --stream-first-chunk-preflight), then the normalized request (200).
func preflight(tw catalog.PreflightTwins, lim spec.Limits, env preflightEnvelope) (preflightAnswer, error) {
	n := env.n
	norm, err := tw.Normalize(lim, spec.ServingChatNormalizeInput{Endpoint: env.endpoint, Request: env.request,
		PromptTokens: &n, ContextLen: env.c, Flags: env.flags})
	if err != nil {
		return preflightAnswer{}, err
	}
	if norm.Status != http.StatusOK {
		return errorAnswer(tw, lim, spec.SurfaceOpenAI, norm.Status, spec.BadRequest, norm.Message)
	}
	verdict, err := tw.InputLength(lim, spec.ServingValidateInputLengthInput{PromptTokens: env.n, ContextLen: env.c, MaxTotalTokens: env.t, AllowAutoTruncate: env.truncate})
	if err != nil {
		return preflightAnswer{}, err
	}
	if !verdict.Accepted {
		surface := spec.SurfaceOpenAI
		if env.stream && !env.flags.StreamFirstChunkPreflight {
			surface = spec.SurfaceOpenAIStream
		}
		return errorAnswer(tw, lim, surface, verdict.Status, verdict.ErrType, verdict.Message)
	}
	return preflightAnswer{status: http.StatusOK, contentType: spec.ContentJSON, body: norm.Request, soft: norm.SoftMaxTokens}, nil
}

func errorAnswer(tw catalog.PreflightTwins, lim spec.Limits, surface string, status int, errType, msg string) (preflightAnswer, error) {
	b, err := tw.ErrorBody(lim, spec.ServingErrorBodyInput{Surface: surface, Status: status, ErrType: errType, Message: msg})
	if err != nil {
		return preflightAnswer{}, err
	}
	return preflightAnswer{status: b.Status, contentType: b.ContentType, body: []byte(b.Body)}, nil
}

// handlePreflight serves POST /v1/openai/preflight (docs/api.md).
func (s *Server) handlePreflight(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	impl := s.cfg.Impl
	defer func() { s.metrics.observe(preflightLabel, string(impl), sw.code(), time.Since(start)) }()
	s.recoverPanics(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var aerr *apiError
		if impl, aerr = s.preflightImpl(r, impl); aerr != nil {
			s.writeError(w, r, aerr)
			return
		}
		s.servePreflight(w, r, impl)
	})).ServeHTTP(sw, r)
}

// preflightImpl reads the optional ?impl= (ref or fast).
func (s *Server) preflightImpl(r *http.Request, impl catalog.Impl) (catalog.Impl, *apiError) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return impl, badRequest("", "malformed query string: %v", err)
	}
	for k, v := range q {
		if k != "impl" || len(v) != 1 {
			return impl, badRequest(k, "query parameter %q: want at most one impl", k)
		}
		if impl, err = catalog.ParseImpl(v[0]); err != nil {
			return impl, badRequest("impl", "impl: %v", err)
		}
	}
	if err := s.preflight[impl].err; err != nil {
		return impl, badRequest("impl", "impl = %s: %v; kvtwin never falls back to another implementation", impl, err)
	}
	return impl, nil
}

func (s *Server) servePreflight(w http.ResponseWriter, r *http.Request, impl catalog.Impl) {
	in, aerr := s.readBody(w, r)
	if aerr != nil {
		s.writeError(w, r, aerr)
		return
	}
	defer s.releaseBody(in)
	sl := s.admit(w, r)
	if sl == nil {
		return
	}
	defer sl.release()
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.OpTimeout)
	defer cancel()
	ans, aerr := s.preflightInSlot(in.body, impl)
	if aerr != nil {
		sl.release()
		s.writeError(w, r, aerr)
		return
	}
	// The slot goes back once the answer's room is reserved.
	g, aerr := s.reserve(ctx, held([][]byte{ans.body}), sl)
	if aerr != nil {
		s.writeBusy(w, r, aerr)
		return
	}
	defer g.release()
	if ans.soft {
		w.Header().Set("X-Kvtwin-Max-Tokens", "soft")
	}
	s.writeAnswer(w, r, ans.status, ans.contentType, ans.body)
}

// preflightInSlot answers a preflight body on impl while the caller holds
// a compute slot. The body's scanner is depth-limited by MaxJSONDepth: it
// recurses once per level.
func (s *Server) preflightInSlot(body []byte, impl catalog.Impl) (preflightAnswer, *apiError) {
	var ans preflightAnswer
	env, aerr, err := parseEnvelope(body, s.cfg.MaxJSONDepth)
	if aerr != nil {
		return ans, aerr
	}
	if err == nil {
		ans, err = preflight(s.preflight[impl].PreflightTwins, s.cfg.Limits, env)
	}
	if err != nil {
		if _, ok := spec.AsInputError(err); !ok {
			err = spec.Reject(ErrBadPreflight, "$", err.Error(), "a valid preflight")
		}
		return ans, inputError(err, catalog.Canonical(struct{}{}, err))
	}
	return ans, nil
}
