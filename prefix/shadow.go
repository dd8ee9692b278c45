package prefix

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvtwin/kvtwin/spec"
)

// ShadowConfig turns on a Registry's reference shadows (serve
// --verify-state, docs/verify.md): every pool created afterwards keeps a
// second pool on NewTree (the reference tree) that a Shadow's Run feeds the
// same operations, in the same order, off the request path, comparing each
// answer, and at DigestInterval the two pools' state digests.
type ShadowConfig struct {
	// NewTree builds the shadows' trees: the reference.
	NewTree spec.NewRadixTreeFunc
	// Queue bounds the operations waiting for Run across all pools. A
	// mutation that finds it full cannot be skipped (the shadow would then
	// differ for no fault), so its pool's shadow is marked lost and stops.
	Queue int
	// QueueBytes bounds the bytes those operations hold together (their
	// tokens and answers): a full byte budget loses the shadow as a full
	// queue does.
	QueueBytes int64
	// ScoreRate is the share of read-only scores (PrefixLen) compared, in
	// [0, 1]; every mutation and match is applied, since they change state.
	ScoreRate float64
	// DigestInterval is how often, at the most, a pool's state digest is
	// taken (under its lock, on its next operation) and compared.
	DigestInterval time.Duration
}

// Shadow states of a pool.
const (
	ShadowAgree    = "agree"    // every comparison so far agreed
	ShadowDiverged = "diverged" // an answer or a digest differed: Detail says where
	ShadowLost     = "lost"     // the queue was full at a mutation; no longer compared
)

// ShadowStatus is a pool's shadow as its Stats report it.
type ShadowStatus struct {
	State string `json:"state"`
	// Compared counts the answers and digests compared.
	Compared int64 `json:"compared"`
	// Detail is the first divergence (the operation, both answers) or why
	// the shadow was lost.
	Detail string `json:"detail,omitempty"`
}

// Shadow runs a Registry's shadows: Run applies the logged operations.
type Shadow struct {
	cfg    ShadowConfig
	ops    *ShadowQueue[shadowOp]
	scores Sampler
}

// shadowOp is one operation a pool applied, with its answer, for its
// shadow to apply and compare.
type shadowOp struct {
	pool     *Pool
	kind     string // insert, match, lock, unlock, evict, score, digest
	tokens   []int64
	extra    spec.ExtraKey
	priority int
	lock     bool
	hashed   bool // a score by prefix hash (it fills the nodes' hash caches)
	node     spec.NodeID
	n        int
	want     []byte // the pool's answer (or digest), encoded
}

// poolShadow is one pool's shadow: the reference pool and its state.
type poolShadow struct {
	ref      *Pool // touched only by Run
	lastTake time.Time
	mu       sync.Mutex
	status   ShadowStatus
}

// EnableShadow turns shadows on for the pools created from now on (a
// server calls it before serving). Errors: ErrBadLimits naming the field.
func (r *Registry) EnableShadow(cfg ShadowConfig) (*Shadow, error) {
	switch {
	case cfg.NewTree == nil:
		return nil, spec.Reject(ErrBadLimits, "Shadow.NewTree", "nil", "a reference tree constructor")
	case cfg.Queue < 1 || cfg.Queue > 1<<24:
		return nil, spec.Reject(ErrBadLimits, "Shadow.Queue", cfg.Queue, "in [1, 16777216]")
	case cfg.QueueBytes < 1:
		return nil, spec.Reject(ErrBadLimits, "Shadow.QueueBytes", cfg.QueueBytes, ">= 1")
	case !(cfg.ScoreRate >= 0 && cfg.ScoreRate <= 1):
		return nil, spec.Reject(ErrBadLimits, "Shadow.ScoreRate", cfg.ScoreRate, "in [0, 1]")
	case cfg.DigestInterval <= 0:
		return nil, spec.Reject(ErrBadLimits, "Shadow.DigestInterval", cfg.DigestInterval.String(), "> 0")
	}
	sh := &Shadow{cfg: cfg, ops: NewShadowQueue[shadowOp](cfg.Queue, cfg.QueueBytes), scores: Sampler{Rate: cfg.ScoreRate}}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.shadow = sh
	return sh, nil
}

// Run applies logged operations to the shadows until ctx ends.
func (sh *Shadow) Run(ctx context.Context) {
	for {
		op, ok := sh.ops.Next(ctx)
		if !ok {
			return
		}
		op.pool.shadow.apply(op)
	}
}

// newPoolShadow builds p's shadow: the same pool on the reference tree,
// from the configuration p was created with (p.cfg reads Policy "" as
// lru, which the tree's own state would then spell differently).
func (sh *Shadow) newPoolShadow(p *Pool, cfg Config) (*poolShadow, error) {
	ref, err := NewPool(sh.cfg.NewTree, cfg, cfg.CapacityTokens, p.maxTokens)
	if err != nil {
		return nil, fmt.Errorf("prefix: the pool's reference shadow: %w", err)
	}
	return &poolShadow{ref: ref, lastTake: time.Now(), status: ShadowStatus{State: ShadowAgree}}, nil
}

// log hands op, which p applied under its lock (held by the caller), to
// the shadow; when op is due, a digest of p follows it. A full queue loses
// the shadow rather than wait.
func (p *Pool) log(op shadowOp) {
	ps := p.shadow
	if ps == nil || p.shadower == nil {
		return
	}
	if ps.lost() {
		return
	}
	if op.kind == "score" && !p.shadower.sampled() {
		return
	}
	op.pool = p
	op.tokens = slices.Clone(op.tokens) // only now: a lost shadow or an unsampled score copies nothing
	if err := p.shadower.ops.Offer(op, int64(8*len(op.tokens)+len(op.want)), op.kind); err != nil {
		ps.lose(err.Error())
		return
	}
	// Scores run under the read lock: only operations holding the write
	// lock take digests (and touch lastTake).
	if op.kind == "score" {
		return
	}
	if now := time.Now(); now.Sub(ps.lastTake) >= p.shadower.cfg.DigestInterval {
		ps.lastTake = now
		d := p.digestLocked()
		if err := p.shadower.ops.Offer(shadowOp{pool: p, kind: "digest", want: d}, int64(len(d)), "digest"); err != nil {
			ps.lose(err.Error())
		}
	}
}

// ShadowQueue is a shadow's queue: at most n items holding at most b
// bytes together wait for its one consumer. Offer never blocks; an item
// gives its bytes back when Next hands it over.
type ShadowQueue[T any] struct {
	ch       chan shadowItem[T]
	held     atomic.Int64
	maxBytes int64
}

type shadowItem[T any] struct {
	v    T
	size int64
}

// NewShadowQueue returns an empty queue of n items and b bytes.
// Preconditions: n >= 1, b >= 1.
func NewShadowQueue[T any](n int, b int64) *ShadowQueue[T] {
	return &ShadowQueue[T]{ch: make(chan shadowItem[T], n), maxBytes: b}
}

// Offer queues v, which holds size bytes, when both bounds leave room.
// It returns nil when v waits, or an error naming the bound that refused
// it, for an item of kind (the shadow's status). The bound is named here,
// at the refusal: read later, the consumer may already have drained the
// queue.
func (q *ShadowQueue[T]) Offer(v T, size int64, kind string) error {
	if q.held.Add(size) > q.maxBytes {
		q.held.Add(-size)
		return fmt.Errorf("the shadow queue's %d bytes were spent at a %s", q.maxBytes, kind)
	}
	select {
	case q.ch <- shadowItem[T]{v, size}:
		return nil
	default:
		q.held.Add(-size)
		return fmt.Errorf("the shadow queue (%d operations) was full at a %s", cap(q.ch), kind)
	}
}

// Next waits for an item, or for ctx to end (false).
func (q *ShadowQueue[T]) Next(ctx context.Context) (T, bool) {
	select {
	case <-ctx.Done():
		var zero T
		return zero, false
	case it := <-q.ch:
		q.held.Add(-it.size)
		return it.v, true
	}
}

// Len is the items waiting.
func (q *ShadowQueue[T]) Len() int { return len(q.ch) }

// sampled decides whether a score is compared.
func (sh *Shadow) sampled() bool { return sh.scores.Take() }

// apply runs op on the reference pool and compares.
func (ps *poolShadow) apply(op shadowOp) {
	if ps.lost() {
		return
	}
	var got []byte
	switch op.kind {
	case "insert":
		got = answer(ps.ref.Insert(op.tokens, op.extra, op.priority))
	case "match":
		got = answer(ps.ref.Match(op.tokens, op.extra, op.lock))
	case "lock":
		got = answer(ps.ref.Lock(op.node))
	case "unlock":
		got = answer(ps.ref.Unlock(op.node))
	case "evict":
		got = answer(ps.ref.Evict(op.n))
	case "score":
		got = answer(ps.score(op))
	case "digest":
		ps.ref.mu.Lock()
		got = ps.ref.digestLocked()
		ps.ref.mu.Unlock()
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.status.Compared++
	if ps.status.State == ShadowAgree && string(got) != string(op.want) {
		ps.status.State = ShadowDiverged
		ps.status.Detail = fmt.Sprintf("%s: the pool answered %.300s, its reference shadow %.300s", op.kind, op.want, got)
	}
}

// score replays a score the way the pool ran it: by units, or by prefix
// hash (which caches hashes in the nodes it passes, state a digest sees).
func (ps *poolShadow) score(op shadowOp) (int, error) {
	if !op.hashed {
		return ps.ref.PrefixLen(op.tokens, op.extra)
	}
	k, err := unitKey(op.tokens, op.extra, ps.ref.cfg.Eagle)
	if err != nil {
		return 0, err
	}
	chain, err := ps.ref.prefixHashes(k)
	if err != nil {
		return 0, err
	}
	return ps.ref.prefixLenHashed(k, chain, nil, spec.ExtraKey{})
}

func (ps *poolShadow) lost() bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.status.State == ShadowLost
}

func (ps *poolShadow) lose(why string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.status.State == ShadowAgree {
		ps.status.State, ps.status.Detail = ShadowLost, why
	}
}

// Status is the shadow's state now.
func (ps *poolShadow) Status() ShadowStatus {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.status
}

// answer encodes an operation's result and error for comparison.
func answer[T any](v T, err error) []byte { return EncodeAnswer(v, err) }

// EncodeAnswer is the bytes a shadow compares for one call: the result's
// JSON and the error's text (a served index and its reference shadow
// answer alike exactly when these are equal). A result that does not
// encode gives the encoder's error, which no real answer equals.
func EncodeAnswer(v any, err error) []byte {
	e := ""
	if err != nil {
		e = err.Error()
	}
	b, jerr := json.Marshal(struct {
		Result any
		Err    string
	}{v, e})
	if jerr != nil {
		return []byte("unencodable: " + jerr.Error())
	}
	return b
}

// Sampler takes Rate of the calls it is asked about, deterministically
// from a counter (splitmix64), without locks: the shadows' share of scores.
type Sampler struct {
	// Rate is the share taken, in [0, 1].
	Rate float64
	n    atomic.Uint64
}

// Take reports whether this call is sampled.
func (s *Sampler) Take() bool {
	if s.Rate >= 1 {
		return true
	}
	x := s.n.Add(0x9e3779b97f4a7c15)
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11)/(1<<53) < s.Rate
}

// digestLocked is the SHA-256 of the pool's observable state: the tree's
// State, the slot allocator and the node mirror. Called with p.mu held.
func (p *Pool) digestLocked() []byte {
	h := sha256.New()
	enc := json.NewEncoder(h)
	_ = enc.Encode(p.tree.State())
	_ = enc.Encode(struct {
		Next  spec.SlotIdx
		Free  []spec.SlotIdx
		ID    spec.NodeID
		Nodes int
	}{p.slots.next, p.slots.free, p.nextID, p.nodes})
	return fmt.Appendf(nil, "%x", h.Sum(nil))
}

// logged is whether p has a shadow to log to; callers skip building a
// record otherwise.
func (p *Pool) logged() bool { return p.shadow != nil }

// ShadowStatus is p's shadow state, or nil when p has no shadow.
func (p *Pool) ShadowStatus() *ShadowStatus {
	if p.shadow == nil {
		return nil
	}
	s := p.shadow.Status()
	return &s
}

// Pending is the operations waiting for Run.
func (sh *Shadow) Pending() int { return sh.ops.Len() }
