package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"

	"github.com/kvtwin/kvtwin/internal/hostile"
)

// This file builds the soak's request mix. Everything that can be built
// once is built at start-up, so the workers spend their time on the
// server rather than on JSON.

// hostileKind is one kind of hostile client.
type hostileKind int

const (
	hostileNone      hostileKind = iota
	hostileSlowWrite             // trickles a body at a few bytes per second
	hostileSlowRead              // reads a large response at about 1 KiB/s
	hostileDeep                  // MBs of '[' then ']'
	hostileHuge                  // a number of an example replaced by an extreme
	hostileTruncated             // an example cut short
	hostileUnknown               // an example with an unknown member
	numHostileKinds
)

func (k hostileKind) String() string {
	switch k {
	case hostileSlowWrite:
		return "slow-write"
	case hostileSlowRead:
		return "slow-read"
	case hostileDeep:
		return "deep"
	case hostileHuge:
		return "huge"
	case hostileTruncated:
		return "truncated"
	case hostileUnknown:
		return "unknown"
	}
	return "none"
}

// slow reports whether the kind is a long-lived slow client rather than one body.
func (k hostileKind) slow() bool { return k == hostileSlowWrite || k == hostileSlowRead }

// mustReject reports whether a 2xx answer to this kind is wrong. A huge
// number may be a valid value (-1 for top_k, 2^63-1 for a pointer), so
// only its 5xx and crashes count against the server.
func (k hostileKind) mustReject() bool {
	return k == hostileDeep || k == hostileTruncated || k == hostileUnknown
}

// hostileSet is the enabled hostile kinds, a bit per kind.
type hostileSet uint

func (s hostileSet) has(k hostileKind) bool { return s&(1<<k) != 0 }

// kinds lists the enabled kinds of which slow selects.
func (s hostileSet) kinds(slow bool) []hostileKind {
	var ks []hostileKind
	for k := hostileNone + 1; k < numHostileKinds; k++ {
		if s.has(k) && k.slow() == slow {
			ks = append(ks, k)
		}
	}
	return ks
}

// allHostile is the --hostile default.
const allHostile = "slow-write,slow-read,deep,huge,truncated,unknown"

// parseHostileSet reads a comma-separated --hostile list; "none" is empty.
func parseHostileSet(list string) (hostileSet, error) {
	var s hostileSet
	if strings.TrimSpace(list) == "none" {
		return 0, nil
	}
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		k := hostileNone
		for c := hostileNone + 1; c < numHostileKinds; c++ {
			if c.String() == name {
				k = c
			}
		}
		if k == hostileNone {
			return 0, fmt.Errorf("--hostile: unknown kind %q: want some of %s, or none", name, allHostile)
		}
		s |= 1 << k
	}
	return s, nil
}

// soakRequest is one request a worker sends.
type soakRequest struct {
	class  soakClass
	kind   hostileKind
	method string
	path   string
	body   []byte
	want   int // the status a well-behaved request expects
	// check, when set, judges the body of an answer with status want:
	// "" when it is sane, else what is wrong (soak_score.go).
	check func(body []byte) string
}

// soakOp is one served op and its example input.
type soakOp struct {
	name    string
	example []byte
}

// preflightBody is a pre-built preflight envelope and the status it gets.
type preflightBody struct {
	body []byte
	want int
}

// prefixPool is the name and creation body of one pool the soak uses.
type prefixPool struct {
	name string
	body string
}

// Sizes of the prefix mix: prompts of 100 to 8,000 tokens, a fraction of
// them sharing a prefix with one of a few "system prompts", token ids from a
// realistic vocabulary.
const (
	minPromptTokens = 100
	maxPromptTokens = 8000
	sharedPrefixes  = 16
	vocabSize       = 151_000
	// poolCapacity is small enough that the pools fill in the first
	// seconds and then evict, so a long run reaches a steady state.
	poolCapacity = 1 << 18
)

// soakPools are the pools the soak creates: a spread of page sizes, and
// one EAGLE (bigram) pool.
func soakPools() []prefixPool {
	body := func(page int, eagle bool) string {
		return fmt.Sprintf(`{"page_size":%d,"capacity_tokens":%d,"eagle":%t}`, page, poolCapacity, eagle)
	}
	return []prefixPool{
		{"soak-p1", body(1, false)}, {"soak-p16", body(16, false)},
		{"soak-p64", body(64, false)}, {"soak-eagle", body(16, true)},
	}
}

// soakLoad is the request mix of one run; read-only once built.
type soakLoad struct {
	ops             []soakOp
	preflight       []preflightBody
	bases           [][]int64
	pools           []prefixPool
	bodyKinds       []hostileKind
	hostileFraction float64
	deepBare        []byte     // '[' × n then ']' × n
	deepWrapped     []byte     // the same inside {"tokens": ...}
	pinned          *pinnedSet // the event-fed index's pinned prompts; nil without --events
}

// newSoakLoad lists the ops, creates the pools and builds the bodies.
func newSoakLoad(ctx context.Context, client *http.Client, base string, cfg soakConfig) (*soakLoad, error) {
	rng := rand.New(rand.NewPCG(cfg.seed, 0))
	ops, err := fetchOps(ctx, client, base)
	if err != nil {
		return nil, err
	}
	l := &soakLoad{ops: ops, pools: soakPools(), bodyKinds: cfg.hostile.kinds(false), hostileFraction: cfg.hostileFraction}
	for _, p := range l.pools {
		if err := createSoakPool(ctx, client, base, p); err != nil {
			return nil, err
		}
	}
	l.preflight = preflightBodies(rng, 64)
	for range sharedPrefixes {
		l.bases = append(l.bases, randomTokens(rng, nil, maxPromptTokens))
	}
	if cfg.hostile.has(hostileDeep) {
		l.deepBare = deepBody(cfg.deepBytes, false)
		l.deepWrapped = deepBody(cfg.deepBytes, true)
	}
	return l, nil
}

// fetchOps reads GET /v1/ops: every op's name and example.
func fetchOps(ctx context.Context, client *http.Client, base string) ([]soakOp, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/ops", nil)
	if err != nil {
		return nil, fmt.Errorf("soak: GET /v1/ops: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("soak: GET /v1/ops: %w", err)
	}
	defer resp.Body.Close()
	var list []struct {
		Name    string          `json:"name"`
		Example json.RawMessage `json:"example"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("soak: GET /v1/ops: status %d: %v", resp.StatusCode, err)
	}
	ops := make([]soakOp, 0, len(list))
	for _, o := range list {
		ops = append(ops, soakOp{name: o.Name, example: bytes.TrimSpace(o.Example)})
	}
	if len(ops) == 0 {
		return nil, fmt.Errorf("soak: GET /v1/ops lists no ops")
	}
	return ops, nil
}

// createSoakPool creates one pool and requires its 201.
func createSoakPool(ctx context.Context, client *http.Client, base string, p prefixPool) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/prefix/"+p.name, strings.NewReader(p.body))
	if err != nil {
		return fmt.Errorf("soak: create pool %s: %w", p.name, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("soak: create pool %s: %w", p.name, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("soak: create pool %s: status %d: %s", p.name, resp.StatusCode, b)
	}
	return nil
}

// soakWorker is one client's mix state.
type soakWorker struct {
	id     int
	rng    *rand.Rand
	nextOp int
	scores map[scoreKey]int // the last score seen of each pinned prompt
}

// next picks the worker's next request: a hostile body at hostileFraction,
// with --events a checked score of a pinned prompt one time in ten,
// otherwise preflight, op and prefix requests 3:4:3, ops round-robin.
func (l *soakLoad) next(w *soakWorker) soakRequest {
	if len(l.bodyKinds) > 0 && w.rng.Float64() < l.hostileFraction {
		return l.hostileRequest(w.rng)
	}
	if l.pinned != nil && w.rng.IntN(10) == 0 {
		return l.pinned.scoreRequest(w)
	}
	switch x := w.rng.IntN(10); {
	case x < 3:
		p := l.preflight[w.rng.IntN(len(l.preflight))]
		return soakRequest{class: classPreflight, method: http.MethodPost, path: preflightPath, body: p.body, want: p.want}
	case x < 7:
		op := l.ops[(w.id+w.nextOp)%len(l.ops)]
		w.nextOp++
		return soakRequest{class: classOp, method: http.MethodPost, path: "/v1/ops/" + op.name, body: op.example, want: http.StatusOK}
	}
	return l.prefixRequest(w.rng)
}

// preflightPath is the route of the preflight endpoint.
const preflightPath = "/v1/openai/preflight"

// prefixRequest is an insert, a match (2 in 5 each) or a score over all pools.
func (l *soakLoad) prefixRequest(rng *rand.Rand) soakRequest {
	body := tokensBody(l.prompt(rng))
	pool := l.pools[rng.IntN(len(l.pools))].name
	r := soakRequest{class: classPrefix, method: http.MethodPost, body: body, want: http.StatusOK}
	switch rng.IntN(5) {
	case 0, 1:
		r.path = "/v1/prefix/" + pool + "/insert"
	case 2, 3:
		r.path = "/v1/prefix/" + pool + "/match"
	default:
		r.path = "/v1/prefix:score"
	}
	return r
}

// prompt is 100 to 8,000 tokens; four in five start with part of a shared
// prefix, so matches and scores find cached tokens.
func (l *soakLoad) prompt(rng *rand.Rand) []int64 {
	n := minPromptTokens + rng.IntN(maxPromptTokens-minPromptTokens+1)
	tokens := make([]int64, 0, n)
	if rng.IntN(5) > 0 {
		shared := rng.IntN(n + 1)
		tokens = append(tokens, l.bases[rng.IntN(len(l.bases))][:shared]...)
	}
	return randomTokens(rng, tokens, n-len(tokens))
}

// randomTokens appends n token ids below vocabSize to dst.
func randomTokens(rng *rand.Rand, dst []int64, n int) []int64 {
	for range n {
		dst = append(dst, rng.Int64N(vocabSize))
	}
	return dst
}

// tokensBody is {"tokens":[...]}, built without reflection: at 8,000
// tokens encoding/json would cost the client more than the server's match.
func tokensBody(tokens []int64) []byte {
	b := make([]byte, 0, 12+7*len(tokens))
	b = append(b, `{"tokens":[`...)
	for i, t := range tokens {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, t, 10)
	}
	return append(b, "]}"...)
}

// hostileTarget is a route and a valid body for it, for a hostile body to derive from.
func (l *soakLoad) hostileTarget(rng *rand.Rand) (string, []byte) {
	switch rng.IntN(3) {
	case 0:
		op := l.ops[rng.IntN(len(l.ops))]
		return "/v1/ops/" + op.name, op.example
	case 1:
		return preflightPath, l.preflight[rng.IntN(len(l.preflight))].body
	}
	pool := l.pools[rng.IntN(len(l.pools))].name
	return "/v1/prefix/" + pool + "/insert", tokensBody(randomTokens(rng, nil, 1+rng.IntN(64)))
}

// hostileRequest derives one hostile body of an enabled kind.
func (l *soakLoad) hostileRequest(rng *rand.Rand) soakRequest {
	kind := l.bodyKinds[rng.IntN(len(l.bodyKinds))]
	path, valid := l.hostileTarget(rng)
	r := soakRequest{class: classHostile, kind: kind, method: http.MethodPost, path: path}
	switch kind {
	case hostileDeep:
		r.body = l.deepBare
		if rng.IntN(2) == 0 {
			r.body = l.deepWrapped
		}
	case hostileHuge:
		r.body = hugeNumber(rng, valid)
	case hostileTruncated:
		r.body = truncated(rng, valid)
	case hostileUnknown:
		r.body = withUnknownMember(valid)
	}
	return r
}

// deepBody is size bytes of nesting: size/2 '[' then as many ']' (inside
// {"tokens": ...} when wrapped), hostile.Nested's flat construction.
func deepBody(size int, wrapped bool) []byte {
	b := hostile.Nested(max(size/2, 1))
	if wrapped {
		b = append(append([]byte(`{"tokens":`), b...), '}')
	}
	return b
}

// truncated is 1 to len-1 bytes of valid: never the whole object, whose
// closing brace is its last byte.
func truncated(rng *rand.Rand, valid []byte) []byte {
	if len(valid) < 2 {
		return nil
	}
	return valid[:1+rng.IntN(len(valid)-1)]
}

// extremeNumbers replace a number of an example: the int64 edges, past
// uint64, the largest float64 magnitude, past it, and a negative.
func extremeNumbers() []string {
	return []string{"9223372036854775807", "-9223372036854775808", "18446744073709551616", "1e308", "1e309", "-1"}
}

// hugeNumber replaces one number literal of valid with an extreme; a body
// without numbers gets one as an unknown member instead.
func hugeNumber(rng *rand.Rand, valid []byte) []byte {
	x := extremeNumbers()[rng.IntN(len(extremeNumbers()))]
	n := hostile.NumberLeaves(valid)
	if n == 0 {
		return withMember(valid, `"soak_huge":`+x)
	}
	out, _ := hostile.ReplaceNumber(valid, rng.IntN(n), x)
	return out
}

// withUnknownMember adds a member no route accepts at the top level.
func withUnknownMember(valid []byte) []byte {
	return withMember(valid, `"soak_unknown_field":{"x":1}`)
}

// withMember inserts member first in the object valid.
func withMember(valid []byte, member string) []byte {
	if len(valid) < 2 || valid[0] != '{' {
		return append([]byte("{"+member+"}"), valid...) // not an object: still hostile, still invalid
	}
	sep := ","
	if bytes.TrimSpace(valid[1:])[0] == '}' {
		sep = ""
	}
	out := make([]byte, 0, len(valid)+len(member)+1)
	out = append(append(append(append(out, '{'), member...), sep...), valid[1:]...)
	return out
}
