package fast

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"maps"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/zeebo/xxh3"

	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// The fast event-fed prefix index (docs/spec/kv-events.md §2-§3, §2.10):
// engines, their pools (kvev_pool.go), streams' cursors (kvev_cursor.go),
// scoring and the observable state.
//
// Concurrency. Calls for one stream are serialized by the stream's mutex;
// calls for different streams, Score, State and Digest run in parallel.
// Lock order: streamsMu < stream < index < engine. The index mutex guards the engine
// map and is held only to create or drop engines; Score reads an immutable
// sorted engine list through an atomic pointer. Each engine has an
// RWMutex: a batch is applied under its write lock (so a score never sees
// half a batch), scores read under its read lock. State locks every stream
// (in configuration order) and so sees no batch in flight.

const kvTierGPU = "GPU"

// kvPoolKey names a pool of an engine (§2.1).
type kvPoolKey struct {
	group int64
	tier  string
}

// kvEngine is one EngineKey's pools, flags and counters.
type kvEngine struct {
	mu         sync.RWMutex
	key        spec.KVEvEngineKey
	stream     *kvStream
	model      string
	dead       bool // dropped by its stream's restart
	stale      bool
	staleSince uint64
	tokens     int64
	c          spec.KVEvEngineCounters
	pools      map[kvPoolKey]*kvPool

	// Scratch of the applying stream (under mu), pointer-free.
	log   []kvUndo
	holes []int32
	// spare is the pool removed last, emptied, whose memory the next new
	// pool reuses (dropPool).
	spare *kvPool
}

// kvIndex implements spec.KVEvIndex.
type kvIndex struct {
	// chainBufs recycles prompt chains between scores (a 240K-token
	// prompt's is 120 KiB at 16-token pages).
	chainBufs sync.Pool
	cfg       spec.KVEvConfig
	f         fault.KVEv
	// streams is the current set, replaced whole (under streamsMu) by
	// AddStream and RemoveStream so that the calls of a stream read it
	// without a lock (A11).
	streams   atomic.Pointer[kvStreamSet]
	streamsMu sync.Mutex

	mu      sync.Mutex
	engines map[spec.KVEvEngineKey]*kvEngine
	sorted  atomic.Pointer[[]*kvEngine]
}

func newKVIndex(cfg spec.KVEvConfig, streams []spec.KVEvStream, f fault.KVEv) (*kvIndex, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := ref.CheckKVEvStreams(streams); err != nil {
		return nil, err
	}
	share, err := cfg.EngineShare(len(streams))
	if err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	cfg.MaxEnginesPerStream = share
	ix := &kvIndex{
		cfg:     cfg,
		f:       f,
		engines: make(map[spec.KVEvEngineKey]*kvEngine),
	}
	set := &kvStreamSet{byName: make(map[string]*kvStream, len(streams))}
	for _, s := range streams {
		set = set.with(newKVStream(s))
	}
	ix.streams.Store(set)
	ix.sorted.Store(new([]*kvEngine{}))
	return ix, nil
}

// kvStreamSet is the index's streams at one time, never changed once
// published: list in configuration order (the build list, then adds) and
// byName.
type kvStreamSet struct {
	list   []*kvStream
	byName map[string]*kvStream
}

// newKVStream is a stream that has received nothing.
func newKVStream(s spec.KVEvStream) *kvStream {
	return &kvStream{name: s.Name, rank: s.Rank, replay: s.Replay, snapshot: s.Snapshot, engines: make(map[spec.KVEvEngineKey]*kvEngine)}
}

// with is the set with st added last, set itself unchanged (unless it is
// still being built and unpublished, which is the same to every reader).
func (set *kvStreamSet) with(st *kvStream) *kvStreamSet {
	out := &kvStreamSet{list: append(slices.Clip(set.list), st), byName: maps.Clone(set.byName)}
	out.byName[st.name] = st
	return out
}

// AddStream implements spec.KVEvIndex (§2.10 A11): the stream joins last
// with the share fixed when the index was built.
func (ix *kvIndex) AddStream(s spec.KVEvStream) error {
	ix.streamsMu.Lock()
	defer ix.streamsMu.Unlock()
	set := ix.streams.Load()
	taken := func(name string) bool { return set.byName[name] != nil }
	if err := ref.CheckKVEvAddStream(s, taken, len(set.list), ix.cfg.MaxEnginesPerStream, ix.cfg.MaxEngines); err != nil {
		return err
	}
	ix.streams.Store(set.with(newKVStream(s)))
	return nil
}

// RemoveStream implements spec.KVEvIndex (§2.10 A11). It waits for the
// stream's call in flight, marks it removed (so a call that already found
// it answers as for an unknown stream), drops its engines and publishes
// the set without it.
func (ix *kvIndex) RemoveStream(name string) error {
	ix.streamsMu.Lock()
	defer ix.streamsMu.Unlock()
	set := ix.streams.Load()
	st := set.byName[name]
	if st == nil {
		return ref.KVUnknownStreamError(name)
	}
	st.mu.Lock()
	st.removed = true
	if !ix.f.RemoveStreamKeepsEngines {
		ix.dropEngines(st)
	}
	st.held, st.heldBytes = nil, 0
	st.mu.Unlock()
	out := &kvStreamSet{
		list:   slices.DeleteFunc(slices.Clone(set.list), func(x *kvStream) bool { return x == st }),
		byName: maps.Clone(set.byName),
	}
	delete(out.byName, name)
	ix.streams.Store(out)
	return nil
}

func kvEngineLess(a, b spec.KVEvEngineKey) int {
	if c := strings.Compare(a.Source, b.Source); c != 0 {
		return c
	}
	return cmp.Compare(a.DPRank, b.DPRank)
}

// publish rebuilds the sorted engine list; ix.mu is held.
func (ix *kvIndex) publish() {
	l := make([]*kvEngine, 0, len(ix.engines))
	for _, e := range ix.engines {
		l = append(l, e)
	}
	slices.SortFunc(l, func(a, b *kvEngine) int { return kvEngineLess(a.key, b.key) })
	ix.sorted.Store(&l)
}

// engineFor returns the engine a batch of st maps to, creating it (A2, A3,
// A5), or the batch's refusal. The stream's share alone bounds a new
// engine: streams × share <= max_engines, so the index's cap needs no
// check of its own and no other stream's engines can refuse this one.
func (ix *kvIndex) engineFor(st *kvStream, key spec.KVEvEngineKey, model string) (*kvEngine, error) {
	if e := st.engines[key]; e != nil {
		return e, nil
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if e := ix.engines[key]; e != nil {
		return nil, ref.KVEngineOwnerError(key, e.stream.name)
	}
	if len(st.engines) >= ix.cfg.MaxEnginesPerStream {
		return nil, ref.KVEngineBudgetError(key, st.name, ix.cfg.MaxEnginesPerStream)
	}
	e := &kvEngine{key: key, stream: st, model: model, pools: make(map[kvPoolKey]*kvPool)}
	if st.staleSet {
		e.stale, e.staleSince = true, st.staleSince
	}
	ix.engines[key] = e
	st.engines[key] = e
	ix.publish()
	return e, nil
}

// dropEngines removes every engine st created (§3.4, A3).
func (ix *kvIndex) dropEngines(st *kvStream) {
	if len(st.engines) == 0 {
		return
	}
	ix.mu.Lock()
	for k, e := range st.engines {
		e.mu.Lock()
		e.dead = true
		e.mu.Unlock()
		delete(ix.engines, k)
	}
	ix.publish()
	ix.mu.Unlock()
	clear(st.engines)
}

// refuseEngine reports a batch refused whole for its engine key
// (ErrEngineOwner, ErrEngineBudget): counted in EnginesRefused, not as a
// decode error, the engine named in the error entry; the batch's effect is
// lost all the same (A2, A3, A9).
func (ix *kvIndex) refuseEngine(st *kvStream, s uint64, key spec.KVEvEngineKey, err error, r *spec.KVEvStepResult) {
	st.c.EnginesRefused++
	r.Errors = append(r.Errors, spec.KVEvEventError{Seq: s, Event: -1, Engine: &key, Error: spec.ErrorObjectOf(err)})
	ix.loseAt(st, s)
}

// kvEngineKeyOf names the engine of a batch (A2).
func kvEngineKeyOf(st *kvStream, topic string, rank *int64) (spec.KVEvEngineKey, string) {
	k := spec.KVEvEngineKey{Source: st.name, DPRank: st.rank}
	model := ""
	if rest, ok := strings.CutPrefix(topic, "kv@"); ok {
		if a, b, ok := strings.Cut(rest, "@"); ok && a != "" {
			k.Source, model = strings.ToValidUTF8(a, "\uFFFD"), strings.ToValidUTF8(b, "\uFFFD")
		}
	}
	if rank != nil {
		k.DPRank = *rank
	}
	return k, model
}

// kvTier is the upper-cased medium, GPU when unset or empty (§2.1).
func kvTier(m *string) string {
	if m == nil || *m == "" {
		return kvTierGPU
	}
	return strings.ToUpper(*m)
}

// kvNamespace is §2.2's namespace of a store.
func kvNamespace(ev *spec.KVEvent) string {
	if ev.LoraName != nil && *ev.LoraName != "" {
		return *ev.LoraName
	}
	if ev.LoraID != nil {
		return "#" + strconv.FormatInt(*ev.LoraID, 10)
	}
	return ""
}

func kvGroup(g *int64) int64 {
	if g == nil {
		return 0
	}
	return *g
}

// applyEvents applies a decoded batch's events to e (§2.3-§2.7); e.mu is held.
func (ix *kvIndex) applyEvents(e *kvEngine, st *kvStream, seq uint64, evs []spec.KVEvent, r *spec.KVEvStepResult) {
	for i := range evs {
		ev := &evs[i]
		switch ev.Type {
		case spec.EventStored:
			a := kvStoreArgs{
				hashes: ev.BlockHashes, parent: ev.ParentBlockHash, tokens: ev.TokenIDs, bs: ev.BlockSize,
				ns: kvNamespace(ev), key: kvPoolKey{kvGroup(ev.GroupIdx), kvTier(ev.Medium)}, event: i,
			}
			orphans, err := ix.store(e, &a, &st.hasher)
			e.log = e.log[:0]
			if err != nil {
				e.c.Refused++
				r.Errors = append(r.Errors, spec.KVEvEventError{Seq: seq, Event: i, Error: spec.ErrorObjectOf(err)})
				if isPoolBudget(err) {
					e.markStale(seq)
				}
				continue
			}
			e.c.Stored++
			if orphans > 0 {
				e.c.OrphanStores += orphans
				if len(ev.TokenIDs) > 0 {
					e.markStale(seq)
				}
			}
		case spec.EventRemoved:
			e.c.UnknownRemovals += e.remove(kvPoolKey{kvGroup(ev.GroupIdx), kvTier(ev.Medium)}, ev.BlockHashes)
			e.c.Removed++
		case spec.EventCleared:
			e.c.Cleared++
			if !ix.f.ClearIgnored {
				clear(e.pools)
				e.tokens = 0
				e.stale, e.staleSince = false, 0
			}
		default:
			e.c.UnknownEvents++
		}
	}
}

func (e *kvEngine) markStale(seq uint64) {
	if !e.stale {
		e.stale, e.staleSince = true, seq
	}
}

// Score is §2.8 with A4's hashed (default) or exact page match.
func (ix *kvIndex) Score(q spec.KVEvScoreQuery) ([]spec.KVEvScore, error) {
	return ix.score(q, "tokens")
}

func (ix *kvIndex) score(q spec.KVEvScoreQuery, field string) ([]spec.KVEvScore, error) {
	tier := kvTierGPU
	if q.Tier != "" {
		tier = strings.ToUpper(q.Tier)
	}
	key := kvPoolKey{q.Group, tier}
	engines := *ix.sorted.Load()
	// The page sizes of the engines' pools: the prompt's chain is computed
	// once per page size.
	var pss []int64
	for _, e := range engines {
		e.mu.RLock()
		pl := e.pools[key]
		ps := int64(0)
		if pl != nil && !e.dead {
			ps = pl.pageSize
		}
		e.mu.RUnlock()
		if ps > 0 && !slices.Contains(pss, ps) {
			pss = append(pss, ps)
		}
	}
	if len(pss) == 0 {
		if err := ref.CheckTokens(field, q.Tokens); err != nil {
			return nil, err
		}
		return nil, nil
	}
	sc := kvScoreChains{seed: kvSeedBase, bufs: &ix.chainBufs}
	if q.Namespace != "" {
		sc.seed = uint64(ref.PrefixHashSeed(spec.ExtraKey{Extra: q.Namespace, HasExtra: true}, false))
	}
	defer sc.release()
	res := make([]kvScoreSlot, len(engines))
	// The chain is the critical path: it keeps this goroutine's P, the
	// walks share the others.
	workers := min(runtime.GOMAXPROCS(0)-1, len(engines))
	if workers > 0 && len(engines) > 1 && len(pss) == 1 && len(q.Tokens)/int(pss[0])*len(engines) >= kvParallelScoreSteps {
		// A long prompt against several engines: the walks run on up to
		// GOMAXPROCS-1 goroutines, each under its engine's read lock,
		// following the chain while this goroutine computes it segment by
		// segment, all joined before Score returns.
		feed := sc.feed(q, pss[0])
		var next atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for i := int(next.Add(1) - 1); i < len(engines); i = int(next.Add(1) - 1) {
					ix.scoreEngine(engines[i], key, q, &sc, feed, &res[i])
				}
			})
		}
		err := feed.produce(q.Tokens, field)
		wg.Wait()
		if err != nil {
			return nil, err
		}
	} else {
		// Chains are extended only as far as some walk needs them: a
		// prompt no engine holds costs a page's hash per page size, not
		// the whole prompt's (and an engine of another page size that
		// holds none of it adds nothing).
		for i, e := range engines {
			ix.scoreEngine(e, key, q, &sc, nil, &res[i])
		}
		if err := sc.checkRest(q.Tokens, field); err != nil {
			return nil, err
		}
	}
	var out []spec.KVEvScore
	for _, r := range res {
		if r.ok {
			out = append(out, r.s)
		}
	}
	return out, nil
}

// scoreEngine scores one engine into res, under its read lock: with feed,
// following the chain as it is computed.
func (ix *kvIndex) scoreEngine(e *kvEngine, key kvPoolKey, q spec.KVEvScoreQuery, sc *kvScoreChains, feed *kvChainFeed, res *kvScoreSlot) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	pl := e.pools[key]
	if pl == nil || e.dead {
		return
	}
	var blocks int
	switch {
	case feed != nil && pl.pageSize == feed.ps:
		w := pl.startWalk(q)
		for seg := 0; !w.done && seg < len(feed.segs); seg++ {
			<-feed.segs[seg]
			pl.walkTo(&w, q, feed.chain[:cap(feed.chain)], min((seg+1)*kvChainSeg, cap(feed.chain)))
		}
		blocks = w.d
	case feed == nil:
		blocks = pl.walkLazy(q, sc.lazyChain(q.Tokens, pl.pageSize))
	default:
		// The pool was replaced since the page sizes were read; the
		// tokens are checked by the chain every score computes.
		chain, _ := kvPromptChain(nil, q.Tokens, sc.seed, pl.pageSize, "tokens", false)
		blocks = pl.walk(q, chain)
	}
	*res = kvScoreSlot{ok: true, s: spec.KVEvScore{
		Source: e.key.Source, DPRank: e.key.DPRank, Blocks: blocks,
		Tokens: satMul(int64(blocks), pl.pageSize), PageSize: pl.pageSize, Stale: e.stale,
	}}
}

// kvParallelScoreSteps is the page steps (prompt pages × engines) from
// which a score fans its walks out over goroutines: below it, starting
// them costs more than the walks.
const kvParallelScoreSteps = 1 << 14

type kvScoreSlot struct {
	ok bool
	s  spec.KVEvScore
}

func satMul(a, b int64) int64 {
	if spec.MulOverflows(a, b) {
		return math.MaxInt64
	}
	return a * b
}

// kvScoreChains caches a prompt's chains per page size for one Score call.
type kvScoreChains struct {
	bufs   *sync.Pool
	seed   uint64
	ps     []int64
	chains [][]uint64
	lazy   []*kvLazyChain
}

// release returns the chains' buffers to the index's pool.
func (sc *kvScoreChains) release() {
	for _, c := range sc.chains {
		if cap(c) > 0 {
			c = c[:0]
			sc.bufs.Put(&c)
		}
	}
	sc.chains = nil
}

// buf is an empty chain buffer of capacity n or more.
func (sc *kvScoreChains) buf(n int) []uint64 {
	if b, ok := sc.bufs.Get().(*[]uint64); ok && cap(*b) >= n {
		return (*b)[:0]
	}
	return make([]uint64, 0, n)
}

// kvLazyChain is a prompt's chain for one page size, computed only as far
// as the walks have asked: full has the capacity of every whole page, and
// full[:done] is written. The units it hashed are range-checked on the way
// (bad records a token outside [0, 2^32)).
type kvLazyChain struct {
	ps    int
	units []spec.Unit
	full  []uint64
	done  int
	prev  uint64
	bad   bool
}

// lazyChain returns the lazy chain of page size ps, creating it.
func (sc *kvScoreChains) lazyChain(tokens []int64, ps int64) *kvLazyChain {
	for _, c := range sc.lazy {
		if int64(c.ps) == ps {
			return c
		}
	}
	n := len(tokens) / int(ps)
	c := &kvLazyChain{ps: int(ps), units: kvUnits(tokens), full: sc.buf(n)[:n], prev: sc.seed}
	sc.lazy = append(sc.lazy, c)
	sc.chains = append(sc.chains, c.full[:0]) // returned to the pool by release
	return c
}

// extend computes the chain up to page to (at most every whole page) and
// returns how far it is written.
func (c *kvLazyChain) extend(to int) int {
	to = min(to, len(c.full))
	var acc uint64
	for i := c.done; i < to; i++ {
		page := c.units[i*c.ps : (i+1)*c.ps]
		acc |= orUnits(page)
		c.prev = kvHashUnits(c.prev, page)
		c.full[i] = c.prev
	}
	c.bad = c.bad || acc>>32 != 0
	c.done = max(c.done, to)
	return c.done
}

// kvLazyFirstStep is the pages a walk first asks a lazy chain for; each
// later request doubles, so a miss costs a few hashes and a deep hit
// computes each page once.
const kvLazyFirstStep = 8

// walkLazy is walk over a lazy chain, extending it as the walk goes.
func (pl *kvPool) walkLazy(q spec.KVEvScoreQuery, c *kvLazyChain) int {
	w := pl.startWalk(q)
	for step := kvLazyFirstStep; !w.done; step *= 2 {
		end := c.extend(w.d + step)
		pl.walkTo(&w, q, c.full, end)
		if end == len(c.full) {
			break
		}
	}
	return w.d
}

// checkRest range-checks the tokens no lazy chain hashed (and reports
// one that did find a bad token) with ref.CheckTokens's error.
func (sc *kvScoreChains) checkRest(tokens []int64, field string) error {
	from := 0
	for _, c := range sc.lazy {
		if c.bad {
			return ref.CheckTokens(field, tokens)
		}
		from = max(from, c.done*c.ps)
	}
	var acc uint64
	acc |= orUnits(kvUnits(tokens)[from:])
	if acc>>32 != 0 {
		return ref.CheckTokens(field, tokens)
	}
	return nil
}

// kvChainSeg is the pages of a chain segment the pipelined walks wait for.
const kvChainSeg = 512

// kvChainFeed is a chain computed while walks follow it: segs[k] is closed
// once chain[:(k+1)·kvChainSeg] (or all of it) is written.
type kvChainFeed struct {
	sc    *kvScoreChains
	seed  uint64
	ps    int64
	chain []uint64 // len 0, cap the prompt's whole pages
	segs  []chan struct{}
}

// feed prepares the pipelined chain of page size ps.
func (sc *kvScoreChains) feed(q spec.KVEvScoreQuery, ps int64) *kvChainFeed {
	n := len(q.Tokens) / int(ps)
	f := &kvChainFeed{sc: sc, seed: sc.seed, ps: ps, chain: sc.buf(n)[:0:n]}
	f.segs = make([]chan struct{}, (n+kvChainSeg-1)/kvChainSeg)
	for i := range f.segs {
		f.segs[i] = make(chan struct{})
	}
	return f
}

// produce computes the chain segment by segment, releasing each to the
// walks, and range-checks every token (ref.CheckTokens's error). Every
// segment is released whatever happens, so no walk waits forever.
func (f *kvChainFeed) produce(tokens []int64, field string) error {
	p := int(f.ps)
	units := kvUnits(tokens)
	var acc uint64
	prev := f.seed
	full := f.chain[:cap(f.chain)]
	for k, seg := range f.segs {
		lo, hi := k*kvChainSeg, min((k+1)*kvChainSeg, len(full))
		for i := lo; i < hi; i++ {
			page := units[i*p : (i+1)*p]
			acc |= orUnits(page)
			prev = kvHashUnits(prev, page)
			full[i] = prev
		}
		close(seg)
	}
	acc |= orUnits(units[len(full)*p:])
	f.sc.ps = append(f.sc.ps, f.ps)
	f.sc.chains = append(f.sc.chains, full)
	if acc>>32 != 0 {
		return ref.CheckTokens(field, tokens)
	}
	return nil
}

// kvHashUnits is NextPrefixHash(prev, page), hashing the units in place
// on a little-endian machine.
func kvHashUnits(prev uint64, page []spec.Unit) uint64 {
	var buf []byte // used only on a big-endian machine
	return foldHash(prev, xxh3.Hash(pageBytes(page, &buf)))
}

// kvWalk is one pool's score walk in progress: the current page's slot
// and the pages matched so far.
type kvWalk struct {
	slot int32
	d    int
	qid  uint32
	done bool
}

// startWalk begins a score walk of q's namespace; a namespace no page of
// the pool has matches nothing.
func (pl *kvPool) startWalk(q spec.KVEvScoreQuery) kvWalk {
	qid, ok := pl.nsIDs[q.Namespace]
	return kvWalk{qid: qid, done: !ok}
}

// walk counts the prompt's leading resident pages in q's namespace (§2.8).
func (pl *kvPool) walk(q spec.KVEvScoreQuery, chain []uint64) int {
	w := pl.startWalk(q)
	pl.walkTo(&w, q, chain, len(chain))
	return w.d
}

// walkTo continues w up to page end of the prompt (or its stop) over the
// hot array: the current page's first child is the next page in the
// common case (one match on 16 bytes); otherwise its siblings are scanned,
// or under a wide node (the root of a busy pool) byPrefix names the
// candidate, which must then be a child of the current page.
func (pl *kvPool) walkTo(w *kvWalk, q spec.KVEvScoreQuery, chain []uint64, end int) {
	if w.done {
		return
	}
	w.slot, w.d, w.done = pl.walkRun(q, chain, w.slot, w.d, w.qid, end)
	if w.d == len(chain) {
		w.done = true
	}
}

// walkRun is walkTo's loop on locals (a deferred write-back would keep
// them in memory): it returns where the walk stopped and whether it ended.
// Where the next pages have consecutive slots it takes them a block at a
// time (walkBlock); a block that does not match whole, and the exact
// mode, go page by page.
func (pl *kvPool) walkRun(q spec.KVEvScoreQuery, chain []uint64, slot int32, d int, qid uint32, end int) (int32, int, bool) {
	prefix, link := pl.prefix, pl.link
	ps := int(pl.pageSize)
	for d < end {
		stop := end
		if !q.Exact && end-d >= kvWalkBlock/2 {
			n := min(end-d, kvWalkBlock)
			if pl.walkBlock(chain[d:d+n], slot, qid) {
				slot, d = slot+int32(n), d+n
				continue
			}
			stop = d + n
		}
		for ; d < stop; d++ {
			// The pages of a chain usually have consecutive slots (a store
			// allocates them in order; the free list gives a pruned chain's
			// slots back in the same order): guessing slot+1 lets the CPU
			// load the next entry before this one's first-child field
			// arrives.
			c := slot + 1
			if f := kvLinkFirst(link[slot]); f != c {
				if f == 0 {
					return slot, d, true
				}
				c = f
			}
			want := chain[d]
			if prefix[c] != want || kvLinkNSHole(link[c]) != qid && !pl.faults.WalkNextSlotHoleUnchecked {
				c = pl.child(slot, want, qid)
				if c == 0 || kvLinkNSHole(link[c]) != qid {
					return slot, d, true // missing, or a hole
				}
			}
			if q.Exact && !equalPromptPage(pl.tokensOf(c), q.Tokens[d*ps:(d+1)*ps]) {
				return slot, d, true
			}
			slot = c
		}
	}
	return slot, d, false
}

// kvWalkBlock is the most pages walkBlock compares at once.
const kvWalkBlock = 64

// walkBlock reports whether the len(want) pages after slot are the chain
// want in consecutive slots: slot's first child is slot+1, each page's
// first child (but the last's) is the next slot, each is resident in
// namespace qid, and their prefix hashes are want. The link words are
// checked branch-free and the hashes compared as one memory block, so a
// matching block costs a fraction of a page-by-page walk; a walk that
// stops inside the block learns where from the page-by-page loop.
func (pl *kvPool) walkBlock(want []uint64, slot int32, qid uint32) bool {
	n := len(want)
	x := int(slot) + 1
	if x+n > len(pl.prefix) || kvLinkFirst(pl.link[slot]) != int32(x) {
		return false
	}
	links := pl.link[x : x+n : x+n]
	// Page j's link must be kvLink(x+j+1, qid) for j < n-1.
	exp := kvLink(int32(x+1), qid)
	var a0, a1 uint64
	j := 0
	for ; j+2 < n; j += 2 {
		a0 |= links[j] ^ exp
		a1 |= links[j+1] ^ (exp + 1)
		exp += 2
	}
	for ; j < n-1; j++ {
		a0 |= links[j] ^ exp
		exp++
	}
	last := uint64(kvLinkNSHole(links[n-1]) ^ qid)
	if pl.faults.WalkBlockLastPageUnchecked {
		last = 0
	}
	if pl.faults.WalkBlockOddPagesUnchecked {
		a1 = 0
	}
	if a0|a1|last != 0 {
		return false
	}
	return equalWords(pl.prefix[x:x+n], want)
}

// equalWords is slices.Equal for words, as one memory compare (the
// runtime's vectorised memequal) instead of a loop of word compares.
func equalWords(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 {
		return true
	}
	ab := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(a))), 8*len(a))
	bb := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(b))), 8*len(b))
	return bytes.Equal(ab, bb)
}

// child is the slot of the child of slot with prefix hash want in
// namespace qid (hole or not), 0 when there is none.
func (pl *kvPool) child(slot int32, want uint64, qid uint32) int32 {
	if pl.page[slot].nkids > 8 {
		if k := pl.byPrefix.get(want); k != kvNoSlot && pl.page[k].parent == slot && pl.nsID(k) == qid {
			return k
		}
		return 0
	}
	for k := kvLinkFirst(pl.link[slot]); k != 0; k = pl.page[k].next {
		if pl.prefix[k] == want && pl.nsID(k) == qid {
			return k
		}
	}
	return 0
}

func equalPromptPage(a []uint32, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if int64(a[i]) != b[i] {
			return false
		}
	}
	return true
}

// kvPromptChain is the A4 chain of the prompt's whole pages of ps tokens
// from seed, appended to dst[:0]; with check it also range-checks every
// token (the trailing partial page included), reporting the first bad one
// as ref.CheckTokens does. One pass: each page is OR-folded for the check
// and hashed where it lies (int64 tokens are the little-endian 8-byte
// units the hash is defined over), so a long prompt is read once.
func kvPromptChain(dst []uint64, tokens []int64, seed uint64, ps int64, field string, check bool) ([]uint64, error) {
	chain := dst[:0]
	if ps < 1 || ps > int64(len(tokens)) {
		if check {
			if err := ref.CheckTokens(field, tokens); err != nil {
				return nil, err
			}
		}
		return chain, nil
	}
	p := int(ps)
	n := len(tokens) / p
	units := kvUnits(tokens)
	var acc uint64
	prev := seed
	for i := range n {
		page := units[i*p : (i+1)*p]
		if check {
			acc |= orUnits(page)
		}
		prev = kvHashUnits(prev, page)
		chain = append(chain, prev)
	}
	if check {
		acc |= orUnits(units[n*p:])
		if acc>>32 != 0 {
			return nil, ref.CheckTokens(field, tokens)
		}
	}
	return chain, nil
}

// State is the observable state (§2.10 A1, A8).
func (ix *kvIndex) State() spec.KVEvState { return ix.state(kvStatePages) }

// Summary is State without the pages: each pool's PageCount instead of
// its Pages. /metrics and /v1/events/sources read it on every request, so
// it copies no token of the index (the digest walk still runs).
func (ix *kvIndex) Summary() spec.KVEvState { return ix.state(kvStateSummary) }

// What an engine's state walk produces: only the digest, the engine and
// pool summaries, or everything.
const (
	kvStateDigest = iota
	kvStateSummary
	kvStatePages
)

// holdAll locks the stream set and every stream in it, so that what is
// read next is one consistent state: the set cannot change while it is
// held (AddStream and RemoveStream wait for streamsMu), nor can any
// stream's cursor or engines. It returns the streams and the release.
func (ix *kvIndex) holdAll() ([]*kvStream, func()) {
	ix.streamsMu.Lock()
	streams := ix.streams.Load().list
	for _, st := range streams {
		st.mu.Lock()
	}
	return streams, func() {
		for _, st := range streams {
			st.mu.Unlock()
		}
		ix.streamsMu.Unlock()
	}
}

func (ix *kvIndex) state(mode int) spec.KVEvState {
	streams, release := ix.holdAll()
	defer release()
	out := spec.KVEvState{Streams: make([]spec.KVEvStreamState, 0, len(streams))}
	for _, st := range streams {
		out.Streams = append(out.Streams, st.state())
	}
	var d kvDigest
	engines := *ix.sorted.Load()
	out.Engines = make([]spec.KVEvEngineState, 0, len(engines))
	d.u64(uint64(len(engines)))
	for _, e := range engines {
		e.mu.RLock()
		out.Engines = append(out.Engines, e.state(&d, mode))
		e.mu.RUnlock()
	}
	sum := d.sum()
	out.Digest = hex.EncodeToString(sum[:])
	return out
}

// Digest is A8's SHA-256.
func (ix *kvIndex) Digest() [32]byte {
	var d kvDigest
	engines := *ix.sorted.Load()
	d.u64(uint64(len(engines)))
	for _, e := range engines {
		e.mu.RLock()
		e.state(&d, kvStateDigest)
		e.mu.RUnlock()
	}
	return d.sum()
}

// kvDigest streams A8's canonical encoding into SHA-256.
type kvDigest struct {
	buf []byte
	sha interface {
		Write([]byte) (int, error)
		Sum([]byte) []byte
	}
}

func (d *kvDigest) flush(force bool) {
	if d.sha == nil {
		d.sha = sha256.New()
	}
	if force || len(d.buf) >= 32<<10 {
		d.sha.Write(d.buf)
		d.buf = d.buf[:0]
	}
}
func (d *kvDigest) u64(v uint64) {
	d.buf = binary.LittleEndian.AppendUint64(d.buf, v)
	d.flush(false)
}
func (d *kvDigest) u32(v uint32) { d.buf = binary.LittleEndian.AppendUint32(d.buf, v) }
func (d *kvDigest) str(s string) {
	d.u64(uint64(len(s)))
	d.buf = append(d.buf, s...)
	d.flush(false)
}
func (d *kvDigest) sum() [32]byte {
	d.flush(true)
	var out [32]byte
	copy(out[:], d.sha.Sum(nil))
	return out
}

// state writes e's A8 encoding into d and, with full, returns its state.
func (e *kvEngine) state(d *kvDigest, mode int) spec.KVEvEngineState {
	full := mode != kvStateDigest
	d.str(e.key.Source)
	d.u64(uint64(e.key.DPRank))
	if e.stale {
		d.buf = append(d.buf, 1)
	} else {
		d.buf = append(d.buf, 0)
	}
	pools := make([]*kvPool, 0, len(e.pools))
	for _, p := range e.pools {
		pools = append(pools, p)
	}
	slices.SortFunc(pools, func(a, b *kvPool) int {
		if c := cmp.Compare(a.group, b.group); c != 0 {
			return c
		}
		return strings.Compare(a.tier, b.tier)
	})
	d.u64(uint64(len(pools)))
	var es spec.KVEvEngineState
	if full {
		es = spec.KVEvEngineState{
			Source: e.key.Source, DPRank: e.key.DPRank, Stream: e.stream.name, Model: e.model,
			Stale: e.stale, StaleSince: e.staleSince, Tokens: e.tokens, Counters: e.c,
			Pools: make([]spec.KVEvPoolState, 0, len(pools)),
		}
		if !e.stale {
			es.StaleSince = 0
		}
	}
	for _, pl := range pools {
		d.u64(uint64(pl.group))
		d.str(pl.tier)
		d.u64(uint64(pl.pageSize))
		d.u64(uint64(pl.pages))
		ps := pl.walkState(d, mode == kvStatePages)
		if full {
			st := spec.KVEvPoolState{Group: pl.group, Tier: pl.tier, PageSize: pl.pageSize, Pages: ps}
			if mode == kvStateSummary {
				st.PageCount = pl.pages
			}
			es.Pools = append(es.Pools, st)
		}
	}
	return es
}

// walkState is the canonical pre-order walk (A8): children sorted by
// (namespace, tokens) only here.
func (pl *kvPool) walkState(d *kvDigest, full bool) []spec.KVEvPageState {
	var out []spec.KVEvPageState
	if full {
		out = make([]spec.KVEvPageState, 0, pl.pages)
	}
	type frame struct {
		s     int32
		depth int
	}
	stack := []frame{}
	push := func(parent int32, depth int) {
		start := len(stack)
		for k := kvLinkFirst(pl.link[parent]); k != 0; k = pl.page[k].next {
			stack = append(stack, frame{k, depth})
		}
		kids := stack[start:]
		if len(kids) > 1 {
			// Reverse order so the smallest is popped first.
			slices.SortFunc(kids, func(a, b frame) int { return -pl.pageCompare(a.s, b.s) })
		}
	}
	push(0, 0)
	var binds []kvBinding
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		ns, toks := pl.nsOf(f.s), pl.tokensOf(f.s)
		d.u64(uint64(f.depth))
		d.str(ns)
		d.u64(uint64(len(toks)))
		for _, t := range toks {
			d.u32(t)
		}
		binds = pl.appendBindings(binds[:0], f.s)
		if len(binds) > 1 {
			slices.SortFunc(binds, func(a, b kvBinding) int { return cmp.Compare(a.hash, b.hash) })
		}
		d.u64(uint64(len(binds)))
		for _, b := range binds {
			d.u64(b.hash)
			d.u64(uint64(b.count))
		}
		d.flush(false)
		if full {
			ps := spec.KVEvPageState{Depth: f.depth, Namespace: ns, Tokens: slices.Clone(toks), Resident: pl.page[f.s].resident}
			if ps.Tokens == nil {
				ps.Tokens = []uint32{}
			}
			if len(binds) > 0 {
				ps.Bindings = make([]spec.KVEvBinding, len(binds))
				for i, b := range binds {
					ps.Bindings[i] = spec.KVEvBinding{Hash: spec.EvHash(b.hash), Count: b.count}
				}
			}
			out = append(out, ps)
		}
		push(f.s, f.depth+1)
	}
	return out
}

// pageCompare orders sibling slots a and b for the canonical walk (A8):
// by namespace, then tokens.
func (pl *kvPool) pageCompare(a, b int32) int {
	if c := strings.Compare(pl.nsOf(a), pl.nsOf(b)); c != 0 {
		return c
	}
	return slices.Compare(pl.tokensOf(a), pl.tokensOf(b))
}

func isPoolBudget(err error) bool {
	ie, ok := spec.AsInputError(err)
	return ok && ie.Err == spec.ErrPoolBudget
}
