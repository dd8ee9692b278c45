package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"

	"github.com/gorilla/mux"
	"github.com/tidwall/gjson"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/internal/jsonscan"
	"github.com/kvtwin/kvtwin/internal/u32le"
	"github.com/kvtwin/kvtwin/prefix"
	"github.com/kvtwin/kvtwin/spec"
)

// This file serves the prefix-index pools of package prefix under
// /v1/prefix (docs/api.md, "Prefix-index pools").

// prefixRoutes adds the pool routes to r; route registers one method on a
// path and answers the others with 405.
func (s *Server) prefixRoutes(r *mux.Router) {
	multi := func(path string, methods map[string]http.HandlerFunc, allow string) {
		for m, h := range methods {
			r.Handle(path, s.drainGate(h)).Methods(m)
		}
		r.Handle(path, s.allowOnly(allow))
	}
	post := func(path string, h http.HandlerFunc) {
		multi(path, map[string]http.HandlerFunc{http.MethodPost: h}, http.MethodPost)
	}
	multi("/v1/prefix", map[string]http.HandlerFunc{http.MethodGet: s.handlePoolList}, http.MethodGet)
	post("/v1/prefix:score", prefixPost(s, http.StatusOK, s.score))
	multi("/v1/prefix/{pool}", map[string]http.HandlerFunc{
		http.MethodGet:    s.handlePoolGet,
		http.MethodPost:   s.poolsAvailable(prefixPost(s, http.StatusCreated, s.createPool)),
		http.MethodDelete: s.handlePoolDelete,
	}, "GET, POST, DELETE")
	post("/v1/prefix/{pool}/insert", prefixPost(s, http.StatusOK, s.insert))
	post("/v1/prefix/{pool}/match", prefixPost(s, http.StatusOK, s.match))
	post("/v1/prefix/{pool}/lock", prefixPost(s, http.StatusOK, s.lock))
	post("/v1/prefix/{pool}/unlock", prefixPost(s, http.StatusOK, s.unlock))
	post("/v1/prefix/{pool}/evict", prefixPost(s, http.StatusOK, s.evict))
}

// poolsAvailable answers 400, before reading the body, when the configured
// implementation has no prefix-pool tree (cuda: catalog.RadixTree): the
// pools never fall back to another tree. Only a create needs the gate:
// without pools every other route answers as for an unknown pool.
func (s *Server) poolsAvailable(h http.HandlerFunc) http.HandlerFunc {
	if s.poolsUnavailable == nil {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, badRequest("impl", "impl = %s: prefix pools: %v; kvtwin never falls back to another implementation",
			s.cfg.Impl, s.poolsUnavailable))
	}
}

// PoolStats is a pool's stats with its name: GET /v1/prefix/{pool}, the 201
// of a create, and each element of GET /v1/prefix.
type PoolStats struct {
	// Pool is the pool's name.
	Pool string `json:"pool"`
	prefix.Stats
}

// PoolList is the GET /v1/prefix body, pools in name order.
type PoolList struct {
	// Pools are every pool's stats.
	Pools []PoolStats `json:"pools"`
}

// The request bodies. Pointers tell a missing field from a zero one;
// unknown fields are refused by catalog.DecodeStrict.
type (
	createBody struct {
		PageSize       *int             `json:"page_size"`
		CapacityTokens *int             `json:"capacity_tokens"`
		Eagle          bool             `json:"eagle"`
		Policy         spec.EvictPolicy `json:"policy"`
	}
	insertBody struct {
		Tokens   []int64 `json:"tokens"`
		Extra    *string `json:"extra"`
		Salt     *string `json:"salt"`
		Priority int     `json:"priority"`
	}
	matchBody struct {
		Tokens []int64 `json:"tokens"`
		Extra  *string `json:"extra"`
		Salt   *string `json:"salt"`
		Lock   bool    `json:"lock"`
	}
	scoreBody struct {
		Tokens []int64  `json:"tokens"`
		Extra  *string  `json:"extra"`
		Salt   *string  `json:"salt"`
		Pools  []string `json:"pools"`
		Exact  bool     `json:"exact"`
		// Group and Tier select the event-fed pools scored (docs/events.md).
		Group int64  `json:"group"`
		Tier  string `json:"tier"`
		// pre holds page hashes of Tokens computed while the body
		// arrived (tokenStream), for Registry.ScoreHashed; le, when set
		// instead of Tokens, is the binary body whose ids those hashers
		// read where they lie, for Registry.ScoreLE32.
		pre []*prefix.PageHasher
		le  []byte
	}
	nodeBody struct {
		Node *spec.NodeID `json:"node"`
	}
	evictBody struct {
		NumTokens *int `json:"num_tokens"`
	}
)

// LockResult answers POST /v1/prefix/{pool}/lock.
type LockResult struct {
	// Node is the locked node.
	Node spec.NodeID `json:"node"`
	// NewlyProtectedTokens is the units this lock moved from evictable to protected.
	NewlyProtectedTokens int `json:"newly_protected_tokens"`
}

// UnlockResult answers POST /v1/prefix/{pool}/unlock.
type UnlockResult struct {
	// Node is the unlocked node.
	Node spec.NodeID `json:"node"`
	// NewlyEvictableTokens is the units this unlock made evictable again.
	NewlyEvictableTokens int `json:"newly_evictable_tokens"`
}

// ScoreResult answers POST /v1/prefix:score.
type ScoreResult struct {
	// Scores holds one entry per pool, in request order (name order for all pools).
	Scores []prefix.Score `json:"scores"`
	// Engines holds one entry per engine of the event-fed index with a
	// pool for the request's group and tier, sorted by (source, dp_rank);
	// absent when the server has no event sources (docs/events.md).
	Engines []spec.KVEvScore `json:"engines,omitzero"`
}

// DeleteResult answers DELETE /v1/prefix/{pool}.
type DeleteResult struct {
	// Pool is the deleted pool's name.
	Pool string `json:"pool"`
	// Deleted is always true.
	Deleted bool `json:"deleted"`
}

// missing rejects a body without a required field, as the op decoder would
// reject a malformed one.
func missing(field, want string) error {
	return spec.Reject(catalog.ErrBadJSON, field, "missing", want)
}

const tokensWant = "a list of token ids in [0, 4294967295]"

// prefixPost is every POST route of the pools: read the body (no slot is
// held while a client sends it), then decode and run it holding a
// concurrency slot. A route whose body carries a token list (score, match,
// insert) first tries the one-pass decoders of prefix_body.go: a binary
// token list (TokensContentType), or a JSON body decodeTokensJSON takes.
// Every other body takes the full path: the JSON gate, the token count
// from a gjson walk (so an oversized list is never materialised), then a
// slot and catalog.DecodeStrict; the one-pass decoder gives the same
// values for the bodies it takes, and leaves every refusal to this path.
// status is the success status. The slot is held while the pool works and
// its answer is encoded and reserved, not while the answer is written.
func prefixPost[In any](s *Server, status int, run func(*http.Request, *In) (any, error)) http.HandlerFunc {
	var probe In
	tb, onePass := any(&probe).(tokenBody)
	schema := jsonscan.SchemaOf(reflect.TypeFor[In]())
	return func(w http.ResponseWriter, r *http.Request) {
		ts := s.streamTokens(r, tb)
		var feed func([]byte)
		if ts != nil {
			defer s.bodies.Release(ts.reserved)
			feed = ts.feed
		}
		got, aerr := s.readBodyFeeding(w, r, feed)
		if aerr != nil {
			s.writeError(w, r, aerr)
			return
		}
		defer s.releaseBody(got)
		defer s.recycleBody(got) // every decoder here copies what it keeps
		runFields := func(sl *slot, f *prefixFields) {
			s.runPrefix(w, r, status, sl, func() (any, error) {
				var in In
				any(&in).(tokenBody).fill(f)
				return run(r, &in)
			})
		}
		if isTokensBody(r) {
			if !onePass {
				s.writeError(w, r, &apiError{status: http.StatusUnsupportedMediaType,
					message: fmt.Sprintf("%s %s takes a JSON body; %s is for the routes that carry a token list", r.Method, r.URL.Path, TokensContentType)})
				return
			}
			f, aerr := checkTokensBinary(got.body, r.URL.Query(), tb.members(), s.cfg.Prefix.MaxRequestTokens)
			if aerr != nil {
				s.writeError(w, r, aerr)
				return
			}
			sl := s.admit(w, r)
			if sl == nil {
				return
			}
			if ts != nil && ts.fed == len(got.body)/4 {
				f.tokens, f.pre = ts.toks, ts.hashers
				if ts.lazy {
					f.le = got.body
				}
				f.seen |= mTokens
			} else {
				f.fillTokens(got.body, s.tokenBuf(tb))
			}
			defer s.recycleTokens(tb, f.tokens)
			runFields(sl, &f)
			return
		}
		if onePass {
			sl := s.admit(w, r)
			if sl == nil {
				return
			}
			buf := s.tokenBuf(tb)
			lim := tokenLimits{maxTokens: s.cfg.Prefix.MaxRequestTokens, maxDepth: s.cfg.MaxJSONDepth,
				splitBytes: splitTokenBytes}
			if _, ok := tb.(*scoreBody); ok && len(got.body) >= splitTokenBytes {
				lim.hash = s.pools.HashedPageSizes(nil, maxStreamHashers)
			}
			if f, ok := decodeTokensJSON(got.body, tb.members(), lim, buf); ok {
				defer s.recycleTokens(tb, f.tokens)
				runFields(sl, &f)
				return
			}
			s.recycleTokens(tb, buf)
			sl.release() // the full path below takes its slot after its checks
		}
		if aerr := gate(got.body, s.cfg.MaxJSONDepth, schema); aerr != nil {
			s.writeError(w, r, aerr)
			return
		}
		if aerr := s.checkTokenCount(got.body); aerr != nil {
			s.writeError(w, r, aerr)
			return
		}
		s.runPrefix(w, r, status, s.admit(w, r), func() (any, error) {
			in, err := catalog.DecodeStrict[In](got.body)
			if err != nil {
				return nil, err
			}
			return run(r, &in)
		})
	}
}

// runPrefix runs a pool request holding sl (nothing when sl is nil: the
// request was already answered) and answers it.
func (s *Server) runPrefix(w http.ResponseWriter, r *http.Request, status int, sl *slot, run func() (any, error)) {
	if sl == nil {
		return
	}
	defer sl.release()
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.OpTimeout)
	defer cancel()
	out, err := run()
	if err != nil {
		sl.release()
		s.writeError(w, r, s.prefixError(err))
		return
	}
	s.writeJSONInSlot(ctx, w, r, sl, status, out)
}

// checkTokenCount answers 413 when the body's "tokens" array is longer than
// Prefix.MaxRequestTokens, with the message of docs/spec/admission-serving.md S1.1.
func (s *Server) checkTokenCount(body []byte) *apiError {
	tokens := gjson.GetBytes(body, "tokens")
	if !tokens.IsArray() {
		return nil
	}
	n := int(tokens.Get("#").Int())
	if n <= s.cfg.Prefix.MaxRequestTokens {
		return nil
	}
	return tooManyTokens(n, s.cfg.Prefix.MaxRequestTokens)
}

// tooManyTokens is the S1 413: exactly this message, type
// PayloadTooLargeError, param null.
func tooManyTokens(n, limit int) *apiError {
	return &apiError{status: http.StatusRequestEntityTooLarge,
		message: fmt.Sprintf("The input (%d tokens) is longer than the model's context length (%d tokens).", n, limit)}
}

// prefixError maps a pool error to its response: 404 for an unknown pool,
// 409 for a conflict with the current state (the name is taken, the
// registry or the pool is full, the memory budget is spent), 413 for a
// request over the token limit, 400 for any other bad input, each with the
// canonical error object in detail except the 413, whose body is exactly
// S1's. Anything else is a 500.
//
// A create refused by the memory budget (prefix.ErrBudget) is 409, as
// MaxPools exhaustion is: both are a sound request that the registry's
// current contents refuse, and deleting a pool makes the same request
// succeed. 507 Insufficient Storage would read as a server failure, which
// clients and proxies retry and alert on, and it is WebDAV's status for
// storage, not for a configured limit the client can plan around (the
// error's bound names the largest capacity that still fits).
func (s *Server) prefixError(err error) *apiError {
	if ae, ok := err.(*apiError); ok {
		return ae // already an answer (a match whose lock needs write)
	}
	ie, ok := spec.AsInputError(err)
	if !ok {
		return &apiError{status: http.StatusInternalServerError, message: "prefix pool failed: " + err.Error()}
	}
	if errors.Is(err, prefix.ErrRequestTooLong) {
		n, _ := ie.Value.(int)
		return tooManyTokens(n, s.cfg.Prefix.MaxRequestTokens)
	}
	e := inputError(err, catalog.Canonical(struct{}{}, err))
	switch {
	case errors.Is(err, prefix.ErrUnknownPool):
		e.status = http.StatusNotFound
	case errors.Is(err, prefix.ErrPoolExists), errors.Is(err, prefix.ErrTooManyPools), errors.Is(err, prefix.ErrBudget),
		errors.Is(err, prefix.ErrPoolFull):
		e.status = http.StatusConflict
	}
	return e
}

// writeJSONInSlot answers status with v encoded, through the write
// budget: sl is the compute slot the request holds (nil for a route that
// takes none), freed once the answer's room is reserved, and ctx bounds the
// wait for room.
func (s *Server) writeJSONInSlot(ctx context.Context, w http.ResponseWriter, r *http.Request, sl *slot, status int, v any) {
	b, err := encode(v)
	if err != nil {
		sl.release()
		s.writeError(w, r, &apiError{status: http.StatusInternalServerError, message: "response does not encode: " + err.Error()})
		return
	}
	if s.answer(ctx, w, r, sl, status, jsonContent, b) {
		s.log.LogAttrs(r.Context(), slog.LevelDebug, "prefix request served",
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", status))
	}
}

// writeJSON answers a route that holds no compute slot (listings, stats, a
// delete's result) with v encoded, waiting for room in the write budget
// within OpTimeout from now.
func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	ctx, cancel := s.answerContext(r)
	defer cancel()
	s.writeJSONInSlot(ctx, w, r, nil, status, v)
}

// pool resolves the {pool} path variable.
func (s *Server) pool(r *http.Request) (string, *prefix.Pool, error) {
	name := mux.Vars(r)["pool"]
	p, err := s.pools.Get(name)
	return name, p, err
}

func (s *Server) handlePoolList(w http.ResponseWriter, r *http.Request) {
	list := PoolList{Pools: []PoolStats{}}
	for _, n := range s.pools.List() {
		list.Pools = append(list.Pools, PoolStats{Pool: n.Name, Stats: n.Pool.Stats()})
	}
	s.writeJSON(w, r, http.StatusOK, list)
}

func (s *Server) handlePoolGet(w http.ResponseWriter, r *http.Request) {
	name, p, err := s.pool(r)
	if err != nil {
		s.writeError(w, r, s.prefixError(err))
		return
	}
	s.writeJSON(w, r, http.StatusOK, PoolStats{Pool: name, Stats: p.Stats()})
}

func (s *Server) handlePoolDelete(w http.ResponseWriter, r *http.Request) {
	name := mux.Vars(r)["pool"]
	if err := s.pools.Delete(name); err != nil {
		s.writeError(w, r, s.prefixError(err))
		return
	}
	s.writeJSON(w, r, http.StatusOK, DeleteResult{Pool: name, Deleted: true})
}

func (s *Server) createPool(r *http.Request, in *createBody) (any, error) {
	name := mux.Vars(r)["pool"]
	if err := prefix.CheckName(name); err != nil {
		return nil, err
	}
	if in.PageSize == nil {
		return nil, missing("page_size", "an integer >= 1")
	}
	if in.CapacityTokens == nil {
		return nil, missing("capacity_tokens", "an integer >= page_size")
	}
	p, err := s.pools.Create(name, prefix.Config{PageSize: *in.PageSize, CapacityTokens: *in.CapacityTokens, Eagle: in.Eagle, Policy: in.Policy})
	if err != nil {
		return nil, err
	}
	return PoolStats{Pool: name, Stats: p.Stats()}, nil
}

func (s *Server) insert(r *http.Request, in *insertBody) (any, error) {
	_, p, err := s.pool(r)
	if err != nil {
		return nil, err
	}
	if in.Tokens == nil {
		return nil, missing("tokens", tokensWant)
	}
	return p.Insert(in.Tokens, spec.ExtraKeyOf(in.Extra, in.Salt), in.Priority)
}

func (s *Server) match(r *http.Request, in *matchBody) (any, error) {
	if in.Lock {
		if e := s.requireScope(r, matchLockScope, `POST /v1/prefix/{pool}/match with "lock": true`); e != nil {
			return nil, e
		}
	}
	_, p, err := s.pool(r)
	if err != nil {
		return nil, err
	}
	if in.Tokens == nil {
		return nil, missing("tokens", tokensWant)
	}
	return p.Match(in.Tokens, spec.ExtraKeyOf(in.Extra, in.Salt), in.Lock)
}

func (s *Server) lock(r *http.Request, in *nodeBody) (any, error) {
	_, p, err := s.pool(r)
	if err != nil {
		return nil, err
	}
	if in.Node == nil {
		return nil, missing("node", "a node id from insert or match")
	}
	n, err := p.Lock(*in.Node)
	return LockResult{Node: *in.Node, NewlyProtectedTokens: n}, err
}

func (s *Server) unlock(r *http.Request, in *nodeBody) (any, error) {
	_, p, err := s.pool(r)
	if err != nil {
		return nil, err
	}
	if in.Node == nil {
		return nil, missing("node", "a node id from insert or match")
	}
	n, err := p.Unlock(*in.Node)
	return UnlockResult{Node: *in.Node, NewlyEvictableTokens: n}, err
}

func (s *Server) evict(r *http.Request, in *evictBody) (any, error) {
	_, p, err := s.pool(r)
	if err != nil {
		return nil, err
	}
	if in.NumTokens == nil {
		return nil, missing("num_tokens", "an integer >= 0")
	}
	return p.Evict(*in.NumTokens)
}

func (s *Server) score(_ *http.Request, in *scoreBody) (any, error) {
	if in.le != nil && s.events == nil {
		scores, ok, err := s.pools.ScoreLE32(in.le, spec.ExtraKeyOf(in.Extra, in.Salt), in.Pools, in.pre)
		if ok {
			if err != nil {
				return nil, err
			}
			return ScoreResult{Scores: scores}, nil
		}
	}
	if in.le != nil && in.Tokens == nil {
		// The pools changed since the body arrived: read the ids after all.
		in.Tokens = make([]int64, len(in.le)/4)
		u32le.Widen(in.Tokens, in.le)
	}
	if in.Tokens == nil {
		return nil, missing("tokens", tokensWant)
	}
	scores, err := s.pools.ScoreHashed(in.Tokens, spec.ExtraKeyOf(in.Extra, in.Salt), in.Pools, in.Exact, in.pre)
	if err != nil {
		return nil, err
	}
	engines, err := s.scoreEngines(in)
	if err != nil {
		return nil, err
	}
	return ScoreResult{Scores: scores, Engines: engines}, nil
}
