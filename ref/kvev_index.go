package ref

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/kvtwin/kvtwin/spec"
)

// The reference event-fed prefix index (docs/spec/kv-events.md §2, §2.10):
// engines, their (group, tier) pools of pages, scores, state and digest.
// The per-stream cursor that decides which batches reach it is
// kvev_cursor.go. It is written to be read next to the spec: plain maps,
// copied keys, residency summed from a page's bindings and an engine's
// tokens from its pools whenever they are needed. The one derived value
// kept is a page's prefix hash (a function of its path, which never
// changes), computed when the page is created and indexed per pool next
// to the spec's byHash, so that A4's uniqueness check is one lookup; the
// tests recompute every page's hash from its path and compare.

// refKVEvIndex is the reference KVEvIndex. One mutex guards everything.
type refKVEvIndex struct {
	mu      sync.Mutex
	cfg     spec.KVEvConfig
	streams []*kvevStream // configuration order
	byName  map[string]*kvevStream
	engines map[spec.KVEvEngineKey]*kvevEngine
	// seed and next are the page prefix-hash chain of §2.10 A4
	// (PrefixHashSeed and NextPrefixHash over tokens as units); tests
	// swap in a weak chain to craft errChainCollision.
	seed func(namespace string) spec.PrefixHash
	next func(prev spec.PrefixHash, tokens []uint32) spec.PrefixHash
}

var _ spec.KVEvIndex = (*refKVEvIndex)(nil)

// kvevEngine is one engine (§2.1): its pools, stale flag and counters.
type kvevEngine struct {
	key        spec.KVEvEngineKey
	stream     string // the stream that created it (§2.10 A2)
	model      string
	stale      bool
	staleSince uint64
	counters   spec.KVEvEngineCounters
	pools      map[kvevPoolKey]*kvevPool
}

// kvevPoolKey selects a pool of an engine (§2.1).
type kvevPoolKey struct {
	group int64
	tier  string
}

// kvevPool is one pool: a tree of pages under a root that holds no block;
// byHash, the index of every page's bindings (§2.1, §2.10 A4); and
// byPrefix, the index of every page's prefix hash, unique in the pool (A4).
// A pool exists while it has a page (A5).
type kvevPool struct {
	pageSize int64
	root     *kvevPage
	byHash   map[spec.EvHash]*kvevPage
	byPrefix map[spec.PrefixHash]*kvevPage
}

func newKVEvPool(pageSize int64) *kvevPool {
	return &kvevPool{
		pageSize: pageSize, root: newKVEvPage(nil, kvevPageKey{}, 0),
		byHash: map[spec.EvHash]*kvevPage{}, byPrefix: map[spec.PrefixHash]*kvevPage{},
	}
}

// kvevPage is one page: one block's namespace and tokens and the hashes
// bound to it with their counts (§2.10 A4). The root has no tokens. A
// page's prefix hash depends on its path only, which never changes, so it
// is computed once when the page is created (pagePrefixHash is its
// definition; the tests check the two agree).
type kvevPage struct {
	parent   *kvevPage
	ns       string
	tokens   []uint32
	prefix   spec.PrefixHash
	bindings map[spec.EvHash]int64
	children map[kvevChildKey]*kvevPage
}

// kvevPageKey is what names a page under its parent: namespace and tokens.
type kvevPageKey struct {
	ns     string
	tokens []uint32
}

// kvevChildKey is a kvevPageKey usable as a map key.
type kvevChildKey struct {
	ns     string
	tokens string
}

func childKeyOf(k kvevPageKey) kvevChildKey {
	b := make([]byte, 0, 4*len(k.tokens))
	for _, t := range k.tokens {
		b = binary.LittleEndian.AppendUint32(b, t)
	}
	return kvevChildKey{ns: k.ns, tokens: string(b)}
}

func newKVEvPage(parent *kvevPage, k kvevPageKey, prefix spec.PrefixHash) *kvevPage {
	return &kvevPage{
		parent:   parent,
		ns:       k.ns,
		tokens:   slices.Clone(k.tokens),
		prefix:   prefix,
		bindings: map[spec.EvHash]int64{},
		children: map[kvevChildKey]*kvevPage{},
	}
}

// resident is the page's residency: the sum of its bindings' counts (A4).
func (p *kvevPage) resident() int64 {
	var n int64
	for _, c := range p.bindings {
		n = satAddI64(n, c)
	}
	return n
}

// isRoot reports whether p is its pool's root, which holds no block.
func (p *kvevPage) isRoot() bool { return p.parent == nil }

func (p *kvevPage) key() kvevPageKey { return kvevPageKey{ns: p.ns, tokens: p.tokens} }

// pages returns every page of the pool (the root excluded) with each page
// before its descendants; siblings in no particular order. The walk keeps
// its own stack: a pool may be one chain millions of pages deep.
func (pl *kvevPool) pages() []*kvevPage {
	var out []*kvevPage
	stack := []*kvevPage{pl.root}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range p.children {
			out = append(out, c)
			stack = append(stack, c)
		}
	}
	return out
}

// tokens is the pool's tokens: its pages (one prefix hash each) times its
// page size (A5).
func (pl *kvevPool) tokens() int64 {
	return satMulI64(int64(len(pl.byPrefix)), pl.pageSize)
}

// tokens is the engine's tokens over all its pools, holes included (A5).
func (e *kvevEngine) tokens() int64 {
	var n int64
	for _, pl := range e.pools {
		n = satAddI64(n, pl.tokens())
	}
	return n
}

// NewKVEvIndex builds the reference event-fed index over streams
// (docs/spec/kv-events.md §2-§3). It rejects a bad config
// (KVEvConfig.Validate), stream list (CheckKVEvStreams) or engine share
// (KVEvConfig.EngineShare), in that order; zero config fields take their
// defaults, MaxEnginesPerStream the streams' fair share.
func NewKVEvIndex(cfg spec.KVEvConfig, streams []spec.KVEvStream) (spec.KVEvIndex, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := CheckKVEvStreams(streams); err != nil {
		return nil, err
	}
	share, err := cfg.EngineShare(len(streams))
	if err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	cfg.MaxEnginesPerStream = share
	ix := &refKVEvIndex{
		cfg:     cfg,
		byName:  map[string]*kvevStream{},
		engines: map[spec.KVEvEngineKey]*kvevEngine{},
		seed:    kvevSeed,
		next:    kvevNext,
	}
	for _, s := range streams {
		st := &kvevStream{cfg: s}
		ix.streams = append(ix.streams, st)
		ix.byName[s.Name] = st
	}
	return ix, nil
}

// AddStream implements KVEvIndex (§2.10 A11): the stream joins last, as a
// build-list stream that has received nothing, with the share every
// stream has.
func (ix *refKVEvIndex) AddStream(s spec.KVEvStream) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	taken := func(name string) bool { return ix.byName[name] != nil }
	if err := CheckKVEvAddStream(s, taken, len(ix.streams), ix.cfg.MaxEnginesPerStream, ix.cfg.MaxEngines); err != nil {
		return err
	}
	st := &kvevStream{cfg: s}
	ix.streams = append(ix.streams, st)
	ix.byName[s.Name] = st
	return nil
}

// RemoveStream implements KVEvIndex (§2.10 A11): the stream's engines go
// with all their pools, and the stream with its cursor, counters and held
// messages.
func (ix *refKVEvIndex) RemoveStream(name string) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	st := ix.byName[name]
	if st == nil {
		return KVUnknownStreamError(name)
	}
	for k, e := range ix.engines {
		if e.stream == name {
			delete(ix.engines, k)
		}
	}
	delete(ix.byName, name)
	ix.streams = slices.DeleteFunc(ix.streams, func(x *kvevStream) bool { return x == st })
	return nil
}

// CheckKVEvAddStream is §2.10 A11's refusal of adding s to an index of
// streams streams (taken says which names they have) whose share, fixed
// when it was built, is share engines out of maxEngines: the name, the
// rank, then room for one more share, in that order. Both twins call it.
func CheckKVEvAddStream(s spec.KVEvStream, taken func(string) bool, streams, share, maxEngines int) error {
	if s.Name == "" || taken(s.Name) {
		return spec.Reject(spec.ErrBadEnum, "stream.name", s.Name, "a non-empty name no other stream has")
	}
	if s.Rank < 0 {
		return spec.Reject(spec.ErrNegative, "stream.rank", s.Rank, ">= 0")
	}
	// Both factors are at most 2^16 (Validate, EngineShare): no overflow.
	if need := int64(streams+1) * int64(share); need > int64(maxEngines) {
		return spec.Reject(spec.ErrTooLarge, "config.max_engines", maxEngines, fmt.Sprintf(
			">= %d = %d streams × %d engines each (the share fixed when the index was built; a lower max_engines_per_stream serves more streams)",
			need, streams+1, share))
	}
	return nil
}

// kvevSeed is the chain seed of a page in namespace ns (§2.10 A4): the
// extra key is set iff ns is non-empty; no salt; token units.
func kvevSeed(ns string) spec.PrefixHash {
	return PrefixHashSeed(spec.ExtraKey{Extra: ns, HasExtra: ns != ""}, false)
}

// kvevNext chains one page of tokens, each as a uint64 unit (§2.10 A4).
func kvevNext(prev spec.PrefixHash, tokens []uint32) spec.PrefixHash {
	units := make([]spec.Unit, len(tokens))
	for i, t := range tokens {
		units[i] = spec.Unit(t)
	}
	return NextPrefixHash(prev, units)
}

// kvevSwitch is the base a page in namespace ns chains from when its
// parent is in another namespace (§2.10 A14): ns's chain started over one
// unit, the parent's prefix hash.
func kvevSwitch(seed, parent spec.PrefixHash) spec.PrefixHash {
	return NextPrefixHash(seed, []spec.Unit{spec.Unit(parent)})
}

// pagePrefixHash is page p's prefix hash by definition (§2.10 A4 as
// amended by A14), computed root first over p's path: a page directly
// under the root chains from its namespace's seed, a page under a parent
// of its namespace from the parent's hash, and a page under a parent of
// another namespace from kvevSwitch of the two. Each step hashes the
// page's tokens.
func (ix *refKVEvIndex) pagePrefixHash(p *kvevPage) spec.PrefixHash {
	var path []*kvevPage
	for q := p; !q.isRoot(); q = q.parent {
		path = append(path, q)
	}
	var h spec.PrefixHash
	for i := len(path) - 1; i >= 0; i-- {
		q := path[i]
		switch {
		case i == len(path)-1:
			h = ix.seed(q.ns)
		case path[i+1].ns != q.ns:
			h = kvevSwitch(ix.seed(q.ns), h)
		}
		h = ix.next(h, q.tokens)
	}
	return h
}

// childPrefix is the prefix hash of page k under p (A4, A14): one step
// from p's, whatever p's depth, so a store, a tokenless copy and a restore
// cost a page its own tokens.
func (ix *refKVEvIndex) childPrefix(p *kvevPage, k kvevPageKey) spec.PrefixHash {
	var base spec.PrefixHash
	switch {
	case p.isRoot():
		base = ix.seed(k.ns)
	case p.ns == k.ns:
		base = p.prefix
	default:
		base = kvevSwitch(ix.seed(k.ns), p.prefix)
	}
	return ix.next(base, k.tokens)
}

// kvevTier is the pool tier of a medium (§2.1): upper-cased, GPU when nil
// or empty.
func kvevTier(medium *string) string {
	if medium == nil || *medium == "" {
		return "GPU"
	}
	return strings.ToUpper(*medium)
}

// kvevGroup is the pool group of a group_idx (§2.1): 0 when nil.
func kvevGroup(g *int64) int64 {
	if g == nil {
		return 0
	}
	return *g
}

// kvevNamespace is a store's namespace (§2.2): lora_name when a non-empty
// string, else "#<lora_id>" when lora_id is set, else "".
func kvevNamespace(ev spec.KVEvent) string {
	if ev.LoraName != nil && *ev.LoraName != "" {
		return *ev.LoraName
	}
	if ev.LoraID != nil {
		return fmt.Sprintf("#%d", *ev.LoraID)
	}
	return ""
}

// kvEvEngineOf names the engine of a batch (§2.10 A2): the source is <a>
// when topic splits at its first two '@' into "kv", a non-empty <a> and a
// (possibly empty) <b>, which is the model; otherwise the stream's name
// and no model. The rank is the batch's when set, else the stream's.
func kvEvEngineOf(stream spec.KVEvStream, topic string, rank *int64) (spec.KVEvEngineKey, string) {
	key := spec.KVEvEngineKey{Source: stream.Name, DPRank: stream.Rank}
	model := ""
	if parts := strings.SplitN(topic, "@", 3); len(parts) == 3 && parts[0] == "kv" && parts[1] != "" {
		// Split on the raw bytes, then make the names valid UTF-8 as the
		// decoded topic is (A6), so every JSON encoder writes them alike.
		key.Source, model = strings.ToValidUTF8(parts[1], "\uFFFD"), strings.ToValidUTF8(parts[2], "\uFFFD")
	}
	if rank != nil {
		key.DPRank = *rank
	}
	return key, model
}

// The words of the index's refusals (§2.3, §2.10 A2, A4, A5), here so that
// both twins report byte-equal errors. event is the event's index in the
// batch, j a block's index in block_hashes.

func kvevEventField(event int) string { return spec.Idx("payload.events", event) }

func kvevHashField(event, j int) string { return spec.Idx(kvevEventField(event)+".block_hashes", j) }

// KVTokenCountError: the BlockStored at event has got tokens for n blocks
// of bs (§2.3 step 1).
func KVTokenCountError(event, n int, bs int64, got int) error {
	return spec.Reject(errTokenCount, kvevEventField(event)+".token_ids", got,
		fmt.Sprintf("0 or len(block_hashes)·block_size = %d·%d tokens", n, bs))
}

// KVBlockSizeChangeError: the store at event has block_size bs but the
// pool (group, tier) it is checked against has pages of pageSize (§2.3
// step 2; for a tokenless update also the tier its pages are copied from).
func KVBlockSizeChangeError(event int, bs, pageSize, group int64, tier string) error {
	return spec.Reject(errBlockSizeChange, kvevEventField(event)+".block_size", bs,
		fmt.Sprintf("== %d, the page size of pool (group %d, tier %s)", pageSize, group, tier))
}

// KVHashConflictError: block_hashes[j] of the store at event is bound to
// another page of the pool (§2.3 step 4).
func KVHashConflictError(event, j int, h spec.EvHash) error {
	return spec.Reject(errHashConflict, kvevHashField(event, j), fmt.Sprintf("%016x", uint64(h)),
		"a hash unbound in the pool or bound to this block's page")
}

// KVChainCollisionError: storing block_hashes[j] of the event at event
// would create a page whose prefix hash ph another page of the pool has
// (§2.10 A4).
func KVChainCollisionError(event, j int, ph spec.PrefixHash) error {
	return spec.Reject(errChainCollision, kvevHashField(event, j), fmt.Sprintf("%016x", uint64(ph)),
		"a page prefix hash no other page of the pool has")
}

// KVPoolBudgetError: the store at event would leave its engine holding
// tokens tokens (§2.10 A5).
func KVPoolBudgetError(event int, tokens, budget int64) error {
	return spec.Reject(spec.ErrPoolBudget, kvevEventField(event), tokens,
		fmt.Sprintf("<= %d tokens per engine (max_tokens_per_engine)", budget))
}

// KVEngineOwnerError: the batch maps to engine, which stream owner feeds
// (§2.10 A2).
func KVEngineOwnerError(engine spec.KVEvEngineKey, owner string) error {
	return spec.Reject(spec.ErrEngineOwner, "engine", fmt.Sprintf("%s/%d", engine.Source, engine.DPRank),
		fmt.Sprintf("an engine no other stream feeds (stream %s feeds it)", owner))
}

// KVEngineBudgetError: a batch of stream would create engine past the
// stream's share of share engines (§2.10 A2, A5).
func KVEngineBudgetError(engine spec.KVEvEngineKey, stream string, share int) error {
	return spec.Reject(spec.ErrEngineBudget, "engine", fmt.Sprintf("%s/%d", engine.Source, engine.DPRank),
		fmt.Sprintf("at most %d engines fed by stream %s (max_engines_per_stream)", share, stream))
}

// KVUnknownStreamError: a call naming a stream the index does not have.
func KVUnknownStreamError(stream string) error {
	return spec.Reject(spec.ErrUnknownStream, "stream", stream, "the name of a configured stream")
}

// applyBatch applies one batch that the cursor let through at seq (§2.7):
// decoded is the decoder's result, topic names its engine. The seq counts
// as received whatever happens; a decoding error or a refused batch loses
// the batch's effect (§2.10 A3).
func (ix *refKVEvIndex) applyBatch(st *kvevStream, r *spec.KVEvStepResult, seq uint64, topic string, b spec.KVBatch, decodeErr error) {
	r.Applied = append(r.Applied, seq)
	st.counters.Batches = satAddU64(st.counters.Batches, 1)
	if decodeErr != nil {
		ix.refuseBatch(st, r, seq, decodeErr)
		return
	}
	ix.applyDecoded(st, r, seq, topic, b)
}

// applyDecoded applies a decoded batch to its engine (A2): a live or
// replayed batch, or a snapshot's chunk (A13), whose errors name seq.
func (ix *refKVEvIndex) applyDecoded(st *kvevStream, r *spec.KVEvStepResult, seq uint64, topic string, b spec.KVBatch) {
	key, model := kvEvEngineOf(st.cfg, topic, b.DPRank)
	e := ix.engines[key]
	if e != nil && e.stream != st.cfg.Name {
		ix.refuseEngine(st, r, seq, key, KVEngineOwnerError(key, e.stream))
		return
	}
	if e == nil {
		// The stream's share alone bounds it (A5): streams × share <=
		// max_engines, so the index's cap needs no check of its own, and
		// no other stream's engines can refuse this one.
		if ix.streamEngines(st) >= ix.cfg.MaxEnginesPerStream {
			ix.refuseEngine(st, r, seq, key, KVEngineBudgetError(key, st.cfg.Name, ix.cfg.MaxEnginesPerStream))
			return
		}
		e = &kvevEngine{key: key, stream: st.cfg.Name, model: model, pools: map[kvevPoolKey]*kvevPool{}}
		if st.staleSince != nil {
			e.stale, e.staleSince = true, *st.staleSince
		}
		ix.engines[key] = e
	}
	for i, ev := range b.Events {
		if err := ix.applyEvent(e, seq, i, ev); err != nil {
			e.counters.Refused = satAddU64(e.counters.Refused, 1)
			r.Errors = append(r.Errors, spec.KVEvEventError{Seq: seq, Event: i, Error: spec.ErrorObjectOf(err)})
		}
	}
}

// refuseBatch reports a batch the decoder refused (event -1): a decode
// error (§2.7), which loses the batch's effect (§2.10 A3).
func (ix *refKVEvIndex) refuseBatch(st *kvevStream, r *spec.KVEvStepResult, seq uint64, err error) {
	st.counters.DecodeErrors = satAddU64(st.counters.DecodeErrors, 1)
	r.Errors = append(r.Errors, spec.KVEvEventError{Seq: seq, Event: -1, Error: spec.ErrorObjectOf(err)})
	ix.loseAt(st, seq)
}

// refuseEngine reports a batch refused whole for its engine key
// (ErrEngineOwner, ErrEngineBudget): counted in EnginesRefused, not as a
// decode error, the engine named in the error entry; the batch's effect is
// lost all the same (§2.10 A2, A3, A9).
func (ix *refKVEvIndex) refuseEngine(st *kvevStream, r *spec.KVEvStepResult, seq uint64, key spec.KVEvEngineKey, err error) {
	st.counters.EnginesRefused = satAddU64(st.counters.EnginesRefused, 1)
	r.Errors = append(r.Errors, spec.KVEvEventError{Seq: seq, Event: -1, Engine: &key, Error: spec.ErrorObjectOf(err)})
	ix.loseAt(st, seq)
}

// streamEngines is the engines st feeds: those it created since its last
// restart (§2.10 A2), which its share bounds.
func (ix *refKVEvIndex) streamEngines(st *kvevStream) int {
	n := 0
	for _, e := range ix.engines {
		if e.stream == st.cfg.Name {
			n++
		}
	}
	return n
}

// markStale marks one engine stale at seq unless it already is (§3.3).
func (e *kvevEngine) markStale(seq uint64) {
	if !e.stale {
		e.stale, e.staleSince = true, seq
	}
}

// applyEvent applies one event to e (§2.3-§2.6); a refused event leaves
// e's pools exactly as they were and returns the refusal.
func (ix *refKVEvIndex) applyEvent(e *kvevEngine, seq uint64, i int, ev spec.KVEvent) error {
	switch ev.Type {
	case spec.EventStored:
		if err := ix.store(e, seq, i, ev); err != nil {
			return err
		}
		e.counters.Stored = satAddU64(e.counters.Stored, 1)
	case spec.EventRemoved:
		ix.remove(e, ev)
		e.counters.Removed = satAddU64(e.counters.Removed, 1)
	case spec.EventCleared:
		// §2.6: every pool of the engine, all groups and tiers; the clear
		// is a resynchronisation point.
		e.pools = map[kvevPoolKey]*kvevPool{}
		e.stale, e.staleSince = false, 0
		e.counters.Cleared = satAddU64(e.counters.Cleared, 1)
	default:
		e.counters.UnknownEvents = satAddU64(e.counters.UnknownEvents, 1)
	}
	return nil
}

// store applies a BlockStored (§2.3, §2.10 A4, A5): every check runs for
// the whole event, in the order of the spec's steps and block by block,
// before anything changes (kvevPlan).
func (ix *refKVEvIndex) store(e *kvevEngine, seq uint64, i int, ev spec.KVEvent) error {
	pk := kvevPoolKey{group: kvevGroup(ev.GroupIdx), tier: kvevTier(ev.Medium)}
	pool := e.pools[pk]
	n, bs := len(ev.BlockHashes), ev.BlockSize
	// Step 1: shape.
	if len(ev.TokenIDs) != 0 && (bs < 1 || spec.MulOverflows(int64(n), bs) || int64(n)*bs != int64(len(ev.TokenIDs))) {
		return KVTokenCountError(i, n, bs, len(ev.TokenIDs))
	}
	// Step 2: page size.
	if pool != nil && pool.pageSize != bs {
		return KVBlockSizeChangeError(i, bs, pool.pageSize, pk.group, pk.tier)
	}
	plan := ix.newPlan(pool, bs, i)
	var orphans uint64
	if len(ev.TokenIDs) == 0 {
		// Step 6: tokenless tier update.
		var err error
		if orphans, err = ix.planTokenless(e, pk, plan, ev.BlockHashes); err != nil {
			return err
		}
	} else {
		// Step 3: locate the prefix.
		cur := plan.pool.root
		if ev.ParentBlockHash != nil {
			if cur = plan.pool.byHash[*ev.ParentBlockHash]; cur == nil {
				e.counters.OrphanStores = satAddU64(e.counters.OrphanStores, 1)
				e.markStale(seq)
				return nil
			}
		}
		// Step 4: block j's page is the child of block j-1's.
		ns := kvevNamespace(ev)
		for j, h := range ev.BlockHashes {
			k := kvevPageKey{ns: ns, tokens: ev.TokenIDs[int64(j)*bs : int64(j+1)*bs]}
			c, err := plan.place(cur, k, h, j)
			if err != nil {
				return err
			}
			cur = c
		}
	}
	// A5: the engine's tokens after the store, holes included.
	after := satAddI64(e.tokens(), satMulI64(int64(len(plan.created)), bs))
	if after > ix.cfg.MaxTokensPerEngine {
		e.markStale(seq)
		return KVPoolBudgetError(i, after, ix.cfg.MaxTokensPerEngine)
	}
	// Every check passed: mutate.
	e.counters.OrphanStores = satAddU64(e.counters.OrphanStores, orphans)
	plan.commit(e, pk)
	return nil
}

// planTokenless plans a tokenless tier update (§2.3 step 6 as amended by
// §2.10 A14): each hash's page src, found in another tier, is copied into
// the plan's pool, where the copy of a page is the page with its prefix
// hash (A4: unique in a pool, and a function of the page's whole path). A
// hash already bound must name src's copy (errHashConflict); otherwise the
// walk from src goes up only to its nearest ancestor that has a copy (the
// root at the latest), which must have that ancestor's namespace and
// tokens (errChainCollision), and the pages below it are created root
// first, the ancestors as holes without bindings; a hash that would
// create more than spec.KVEvMaxCopyWalk pages is an orphan instead. A
// hash's work is the pages it creates, never its depth. It returns the
// orphans: the hashes found in no tier or too deep to copy.
func (ix *refKVEvIndex) planTokenless(e *kvevEngine, pk kvevPoolKey, plan *kvevPlan, hashes []spec.EvHash) (uint64, error) {
	var orphans uint64
	for j, h := range hashes {
		src, srcKey := ix.findInOtherTier(e, pk, h)
		if src == nil {
			orphans++
			continue
		}
		if srcPool := e.pools[srcKey]; srcPool.pageSize != plan.pageSize {
			return 0, KVBlockSizeChangeError(plan.event, plan.pageSize, srcPool.pageSize, srcKey.group, srcKey.tier)
		}
		if x := plan.boundPage(h); x != nil {
			if !isCopyOf(x, src) {
				return 0, KVHashConflictError(plan.event, j, h)
			}
			plan.bind(x, h)
			continue
		}
		// src's pages without a copy, src first, and the copy they go under.
		path, at, err := plan.uncopied(src, j)
		if err != nil {
			return 0, err
		}
		if len(path) > spec.KVEvMaxCopyWalk {
			orphans++ // A14: too many pages to create for one hash
			continue
		}
		cur := at
		for i := len(path) - 1; i >= 0; i-- {
			if cur, err = plan.create(cur, path[i].key(), j); err != nil {
				return 0, err
			}
		}
		plan.bind(cur, h)
	}
	return orphans, nil
}

// uncopied walks from src (a page of another tier) up to its nearest
// ancestor-or-self that has a copy in the plan's pool, and returns the
// pages it passed, src first, and that copy (the root when it reached the
// root). The copy must have its page's namespace and tokens
// (errChainCollision for block j). It stops after spec.KVEvMaxCopyWalk+1
// pages without a copy (A14): the caller then makes the hash an orphan.
func (plan *kvevPlan) uncopied(src *kvevPage, j int) ([]*kvevPage, *kvevPage, error) {
	var path []*kvevPage
	for q := src; !q.isRoot(); q = q.parent {
		if c := plan.prefixPage(q.prefix); c != nil {
			if !isCopyOf(c, q) {
				return nil, nil, KVChainCollisionError(plan.event, j, q.prefix)
			}
			return path, c, nil
		}
		if path = append(path, q); len(path) > spec.KVEvMaxCopyWalk {
			break
		}
	}
	return path, plan.pool.root, nil
}

// isCopyOf reports whether page c (of one pool) is the copy of page q (of
// another) as A14 defines it: the same prefix hash, namespace and tokens.
func isCopyOf(c, q *kvevPage) bool {
	return c.prefix == q.prefix && c.ns == q.ns && slices.Equal(c.tokens, q.tokens)
}

// kvevPlan is one store's effect, planned and checked before anything
// changes: the pages it creates (pointing at their parents, but not yet
// in their parents' children) and the bindings it adds.
type kvevPlan struct {
	ix       *refKVEvIndex
	event    int
	pageSize int64
	pool     *kvevPool // the target pool; a new empty one when it is absent
	fresh    bool      // pool is new: commit adds it to the engine
	created  []*kvevPage
	pending  map[*kvevPage]map[kvevChildKey]*kvevPage // created pages by parent
	binds    []kvevBind
	boundTo  map[spec.EvHash]*kvevPage     // the bindings of binds
	taken    map[spec.PrefixHash]*kvevPage // created pages by prefix hash
}

type kvevBind struct {
	page *kvevPage
	hash spec.EvHash
}

func (ix *refKVEvIndex) newPlan(pool *kvevPool, pageSize int64, event int) *kvevPlan {
	plan := &kvevPlan{
		ix: ix, event: event, pageSize: pageSize, pool: pool,
		pending: map[*kvevPage]map[kvevChildKey]*kvevPage{},
		boundTo: map[spec.EvHash]*kvevPage{}, taken: map[spec.PrefixHash]*kvevPage{},
	}
	if pool == nil {
		plan.fresh = true
		plan.pool = newKVEvPool(pageSize)
	}
	return plan
}

// child is p's child k, existing or created by the plan; nil when neither.
func (plan *kvevPlan) child(p *kvevPage, k kvevPageKey) *kvevPage {
	if c := p.children[childKeyOf(k)]; c != nil {
		return c
	}
	return plan.pending[p][childKeyOf(k)]
}

// place binds block j's hash h to child k of cur (§2.3 step 4): the hash
// must be unbound or bound to that child (errHashConflict), and the child
// is created when missing (errChainCollision).
func (plan *kvevPlan) place(cur *kvevPage, k kvevPageKey, h spec.EvHash, j int) (*kvevPage, error) {
	c := plan.child(cur, k)
	if err := plan.checkBinding(c, h, j); err != nil {
		return nil, err
	}
	if c == nil {
		var err error
		if c, err = plan.create(cur, k, j); err != nil {
			return nil, err
		}
	}
	plan.bind(c, h)
	return c, nil
}

// checkBinding refuses binding h to page (nil: a page still to be
// created) when the pool or an earlier block of the store binds h to
// another page.
func (plan *kvevPlan) checkBinding(page *kvevPage, h spec.EvHash, j int) error {
	if b := plan.boundPage(h); b != nil && b != page {
		return KVHashConflictError(plan.event, j, h)
	}
	return nil
}

func (plan *kvevPlan) bind(page *kvevPage, h spec.EvHash) {
	plan.binds = append(plan.binds, kvevBind{page, h})
	plan.boundTo[h] = page
}

// create plans page k under p, refusing it when its prefix hash is one of
// the pool's pages' or of a page the plan creates (§2.10 A4).
func (plan *kvevPlan) create(p *kvevPage, k kvevPageKey, j int) (*kvevPage, error) {
	ph := plan.ix.childPrefix(p, k)
	if plan.prefixPage(ph) != nil {
		return nil, KVChainCollisionError(plan.event, j, ph)
	}
	c := newKVEvPage(p, k, ph)
	if plan.pending[p] == nil {
		plan.pending[p] = map[kvevChildKey]*kvevPage{}
	}
	plan.pending[p][childKeyOf(k)] = c
	plan.created = append(plan.created, c)
	plan.taken[ph] = c
	return c, nil
}

// prefixPage is the page with prefix hash ph, in the pool or created by
// the plan; nil when neither.
func (plan *kvevPlan) prefixPage(ph spec.PrefixHash) *kvevPage {
	if p := plan.pool.byPrefix[ph]; p != nil {
		return p
	}
	return plan.taken[ph]
}

// boundPage is the page hash h is bound to, in the pool or by the plan;
// nil when neither.
func (plan *kvevPlan) boundPage(h spec.EvHash) *kvevPage {
	if p := plan.pool.byHash[h]; p != nil {
		return p
	}
	return plan.boundTo[h]
}

// commit makes the plan's pages and bindings part of the pool, and a new
// pool part of the engine.
func (plan *kvevPlan) commit(e *kvevEngine, pk kvevPoolKey) {
	if len(plan.binds) == 0 {
		return
	}
	for _, c := range plan.created {
		c.parent.children[childKeyOf(c.key())] = c
		plan.pool.byPrefix[c.prefix] = c
	}
	for _, b := range plan.binds {
		b.page.bindings[b.hash] = satAddI64(b.page.bindings[b.hash], 1)
		plan.pool.byHash[b.hash] = b.page
	}
	if plan.fresh {
		e.pools[pk] = plan.pool
	}
}

// findInOtherTier finds hash's page for a tokenless update of pool pk
// (§2.3 step 6): in the engine's other tiers of the same group, GPU first,
// then the others in lexicographic order.
func (ix *refKVEvIndex) findInOtherTier(e *kvevEngine, pk kvevPoolKey, h spec.EvHash) (*kvevPage, kvevPoolKey) {
	var tiers []string
	for k := range e.pools {
		if k.group == pk.group && k.tier != pk.tier {
			tiers = append(tiers, k.tier)
		}
	}
	slices.SortFunc(tiers, func(a, b string) int {
		if (a == "GPU") != (b == "GPU") {
			if a == "GPU" {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	for _, t := range tiers {
		k := kvevPoolKey{group: pk.group, tier: t}
		if p := e.pools[k].byHash[h]; p != nil {
			return p, k
		}
	}
	return nil, kvevPoolKey{}
}

// remove applies a BlockRemoved (§2.4, §2.10 A4): each known hash's
// binding loses one copy, never going below 0. Then the pages that lost a
// copy are pruned.
func (ix *refKVEvIndex) remove(e *kvevEngine, ev spec.KVEvent) {
	pk := kvevPoolKey{group: kvevGroup(ev.GroupIdx), tier: kvevTier(ev.Medium)}
	pool := e.pools[pk]
	var touched []*kvevPage
	for _, h := range ev.BlockHashes {
		var p *kvevPage
		if pool != nil {
			p = pool.byHash[h]
		}
		if p == nil {
			e.counters.UnknownRemovals = satAddU64(e.counters.UnknownRemovals, 1)
			continue
		}
		if p.bindings[h] > 0 {
			p.bindings[h]--
		}
		touched = append(touched, p)
	}
	if pool != nil {
		ix.prune(e, pk, touched)
	}
}

// prune deletes each hole with no resident descendant and unbinds its
// hashes (§2.4), then the pool if no page is left (A5). Only a removal
// makes holes (a refused store changes nothing, a tokenless update's
// ancestor holes have a resident descendant), so after each event the
// candidates are the pages it touched and, as each is deleted, its parent.
func (ix *refKVEvIndex) prune(e *kvevEngine, pk kvevPoolKey, touched []*kvevPage) {
	pool := e.pools[pk]
	for _, p := range touched {
		for !p.isRoot() && p.resident() == 0 && len(p.children) == 0 {
			if p.parent.children[childKeyOf(p.key())] != p {
				break // already deleted through another touched page
			}
			delete(p.parent.children, childKeyOf(p.key()))
			delete(pool.byPrefix, p.prefix)
			for h := range p.bindings {
				delete(pool.byHash, h)
			}
			p = p.parent
		}
	}
	if len(pool.root.children) == 0 {
		delete(e.pools, pk)
	}
}

// Score implements KVEvIndex (§2.8, §2.10 A4).
func (ix *refKVEvIndex) Score(q spec.KVEvScoreQuery) ([]spec.KVEvScore, error) {
	if err := CheckTokens("tokens", q.Tokens); err != nil {
		return nil, err
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	tier := "GPU"
	if q.Tier != "" {
		tier = strings.ToUpper(q.Tier)
	}
	pk := kvevPoolKey{group: q.Group, tier: tier}
	var out []spec.KVEvScore
	for _, e := range ix.sortedEngines() {
		pool := e.pools[pk]
		if pool == nil {
			continue
		}
		blocks := ix.scorePool(pool, q)
		out = append(out, spec.KVEvScore{
			Source: e.key.Source, DPRank: e.key.DPRank,
			Blocks: blocks, Tokens: satMulI64(int64(blocks), pool.pageSize),
			PageSize: pool.pageSize, Stale: e.stale,
		})
	}
	return out, nil
}

// scorePool counts the leading resident pages of the prompt in pool: the
// prompt is cut to whole pages, and page by page the walk takes the child
// in the query's namespace whose tokens (exact) or prefix hash (hashed)
// are the prompt's, stopping at a missing page or a hole.
func (ix *refKVEvIndex) scorePool(pool *kvevPool, q spec.KVEvScoreQuery) int {
	ps := pool.pageSize
	if ps < 1 {
		return 0
	}
	pages := int64(len(q.Tokens)) / ps
	p := pool.root
	h := ix.seed(q.Namespace) // the prompt's chain over the pages walked so far
	blocks := 0
	for i := int64(0); i < pages; i++ {
		page := make([]uint32, ps)
		for j := range page {
			page[j] = uint32(q.Tokens[i*ps+int64(j)])
		}
		var c *kvevPage
		if q.Exact {
			c = p.children[childKeyOf(kvevPageKey{ns: q.Namespace, tokens: page})]
		} else {
			h = ix.next(h, page)
			for _, cand := range p.children {
				if cand.ns == q.Namespace && cand.prefix == h {
					c = cand // prefix hashes are unique in a pool: at most one
				}
			}
		}
		if c == nil || c.resident() == 0 {
			break
		}
		blocks++
		p = c
	}
	return blocks
}

// sortedEngines returns the engines sorted by (source, dp_rank).
func (ix *refKVEvIndex) sortedEngines() []*kvevEngine {
	out := make([]*kvevEngine, 0, len(ix.engines))
	for _, e := range ix.engines {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b *kvevEngine) int { return compareEngineKeys(a.key, b.key) })
	return out
}

func compareEngineKeys(a, b spec.KVEvEngineKey) int {
	return cmp.Or(strings.Compare(a.Source, b.Source), cmp.Compare(a.DPRank, b.DPRank))
}

// sortedPoolKeys returns e's pool keys sorted by (group, tier).
func (e *kvevEngine) sortedPoolKeys() []kvevPoolKey {
	out := make([]kvevPoolKey, 0, len(e.pools))
	for k := range e.pools {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b kvevPoolKey) int {
		return cmp.Or(cmp.Compare(a.group, b.group), strings.Compare(a.tier, b.tier))
	})
	return out
}

// sortedChildren returns p's children sorted by (namespace bytewise,
// tokens lexicographically by value) (§2.10 A8).
func (p *kvevPage) sortedChildren() []*kvevPage {
	out := make([]*kvevPage, 0, len(p.children))
	for _, c := range p.children {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *kvevPage) int {
		return cmp.Or(strings.Compare(a.ns, b.ns), slices.Compare(a.tokens, b.tokens))
	})
	return out
}

// sortedBindings returns p's bindings sorted by hash, nil when it has none.
func (p *kvevPage) sortedBindings() []spec.KVEvBinding {
	var out []spec.KVEvBinding
	for h, c := range p.bindings {
		out = append(out, spec.KVEvBinding{Hash: h, Count: c})
	}
	slices.SortFunc(out, func(a, b spec.KVEvBinding) int { return cmp.Compare(a.Hash, b.Hash) })
	return out
}

// kvevDepthPage is a page and its depth, 0 for a child of the root.
type kvevDepthPage struct {
	p     *kvevPage
	depth int
}

// preOrder lists the pool's pages in pre-order with children sorted by
// (namespace, tokens) (§2.10 A8), on its own stack.
func (pl *kvevPool) preOrder() []kvevDepthPage {
	var out []kvevDepthPage
	var stack []kvevDepthPage
	push := func(p *kvevPage, depth int) {
		cs := p.sortedChildren()
		for i := len(cs) - 1; i >= 0; i-- {
			stack = append(stack, kvevDepthPage{cs[i], depth})
		}
	}
	push(pl.root, 0)
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		out = append(out, d)
		push(d.p, d.depth+1)
	}
	return out
}

// poolState lists the pool's pages in pre-order, children sorted.
func poolState(k kvevPoolKey, pool *kvevPool) spec.KVEvPoolState {
	ps := spec.KVEvPoolState{Group: k.group, Tier: k.tier, PageSize: pool.pageSize, Pages: []spec.KVEvPageState{}}
	for _, d := range pool.preOrder() {
		ps.Pages = append(ps.Pages, spec.KVEvPageState{
			Depth: d.depth, Namespace: d.p.ns, Tokens: slices.Clone(d.p.tokens),
			Resident: d.p.resident(), Bindings: d.p.sortedBindings(),
		})
	}
	return ps
}

// State implements KVEvIndex.
func (ix *refKVEvIndex) State() spec.KVEvState {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	out := spec.KVEvState{Streams: make([]spec.KVEvStreamState, 0, len(ix.streams)), Engines: []spec.KVEvEngineState{}}
	for _, st := range ix.streams {
		out.Streams = append(out.Streams, ix.streamState(st))
	}
	for _, e := range ix.sortedEngines() {
		out.Engines = append(out.Engines, snapEngineState(e))
	}
	d := ix.digest()
	out.Digest = fmt.Sprintf("%x", d[:])
	return out
}

// snapEngineState is e's observable state, its pools sorted by (group, tier).
func snapEngineState(e *kvevEngine) spec.KVEvEngineState {
	es := spec.KVEvEngineState{
		Source: e.key.Source, DPRank: e.key.DPRank, Stream: e.stream, Model: e.model,
		Stale: e.stale, StaleSince: e.staleSince, Tokens: e.tokens(), Counters: e.counters,
		Pools: []spec.KVEvPoolState{},
	}
	for _, k := range e.sortedPoolKeys() {
		es.Pools = append(es.Pools, poolState(k, e.pools[k]))
	}
	return es
}

// Digest implements KVEvIndex (§2.10 A8).
func (ix *refKVEvIndex) Digest() [32]byte {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.digest()
}

// kvevCanon is A8's canonical encoder: little-endian fixed-width integers,
// strings as a u64 length and their bytes.
type kvevCanon struct{ b []byte }

func (c *kvevCanon) u64(v uint64) { c.b = binary.LittleEndian.AppendUint64(c.b, v) }
func (c *kvevCanon) i64(v int64)  { c.u64(uint64(v)) }
func (c *kvevCanon) u32(v uint32) { c.b = binary.LittleEndian.AppendUint32(c.b, v) }
func (c *kvevCanon) str(s string) { c.u64(uint64(len(s))); c.b = append(c.b, s...) }
func (c *kvevCanon) flag(v bool) {
	if v {
		c.b = append(c.b, 1)
	} else {
		c.b = append(c.b, 0)
	}
}

// digest is SHA-256 of the canonical encoding of the engines (§2.10 A8).
func (ix *refKVEvIndex) digest() [32]byte {
	var c kvevCanon
	engines := ix.sortedEngines()
	c.u64(uint64(len(engines)))
	for _, e := range engines {
		c.str(e.key.Source)
		c.i64(e.key.DPRank)
		c.flag(e.stale)
		keys := e.sortedPoolKeys()
		c.u64(uint64(len(keys)))
		for _, k := range keys {
			pool := e.pools[k]
			c.i64(k.group)
			c.str(k.tier)
			c.i64(pool.pageSize)
			pages := pool.preOrder()
			c.u64(uint64(len(pages)))
			for _, d := range pages {
				c.u64(uint64(d.depth))
				c.str(d.p.ns)
				c.u64(uint64(len(d.p.tokens)))
				for _, t := range d.p.tokens {
					c.u32(t)
				}
				bs := d.p.sortedBindings()
				c.u64(uint64(len(bs)))
				for _, b := range bs {
					c.u64(uint64(b.Hash))
					c.i64(b.Count)
				}
			}
		}
	}
	return sha256.Sum256(c.b)
}

// Saturating arithmetic for counts that a publisher drives: a counter
// stops at its maximum instead of wrapping.

func satAddU64(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

func satAddI64(a, b int64) int64 {
	if spec.AddOverflows(a, b) {
		return math.MaxInt64
	}
	return a + b
}

func satMulI64(a, b int64) int64 {
	if spec.MulOverflows(a, b) {
		return math.MaxInt64
	}
	return a * b
}
