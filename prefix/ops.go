package prefix

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvtwin/kvtwin/spec"
)

// InsertResult is what Insert did.
type InsertResult struct {
	// PrefixLen is the units that were already cached (docs/spec/radix-acks.md §1.5);
	// their slots were reused.
	PrefixLen int `json:"prefix_len"`
	// InsertedTokens is the units newly cached, each in a newly taken slot.
	InsertedTokens int `json:"inserted_tokens"`
	// EvictedTokens is the units evicted to make room.
	EvictedTokens int `json:"evicted_tokens"`
	// UncachedTailTokens is the tokens past the last whole page, which are
	// not cached: len(tokens) - (PrefixLen + InsertedTokens). In an EAGLE
	// pool it includes the last token, which no bigram slot covers.
	UncachedTailTokens int `json:"uncached_tail_tokens"`
	// Slots are the slots of the cached units, in key order: the reused
	// prefix, then the new suffix. Never nil.
	Slots []spec.SlotIdx `json:"slots"`
	// LastNode is the node holding the last cached unit (the root when
	// nothing was cached); Lock it to protect the inserted path.
	LastNode spec.NodeID `json:"last_node"`
}

// Insert caches the whole pages of tokens in namespace extra with the given
// priority (docs/spec/radix-acks.md §1.5): the cached prefix keeps its slots, the new
// suffix takes slots from the free list, and when the pool is short it
// evicts unlocked leaves in policy order, never the inserted path itself.
// The unaligned tail is not cached and is reported.
//
// Errors, each leaving the pool unchanged: ErrRequestTooLong,
// ErrNamespaceTooLong (extra or salt over MaxNamespaceBytes), ErrTokenRange
// (tokens[i]), ErrExceedsCapacity when the whole pages alone exceed the
// capacity, and ErrPoolFull when the new suffix does not fit after evicting
// everything evictable off the path.
func (p *Pool) Insert(tokens []int64, extra spec.ExtraKey, priority int) (InsertResult, error) {
	if err := checkLength(tokens, p.maxTokens); err != nil {
		return InsertResult{}, err
	}
	if err := checkNamespace(extra); err != nil {
		return InsertResult{}, err
	}
	k, err := unitKey(tokens, extra, p.cfg.Eagle)
	if err != nil {
		return InsertResult{}, err
	}
	aligned := len(k.Units) / p.cfg.PageSize * p.cfg.PageSize
	k.Units = k.Units[:aligned]
	res := InsertResult{UncachedTailTokens: len(tokens) - aligned, Slots: []spec.SlotIdx{}}
	if aligned > p.cfg.CapacityTokens {
		return InsertResult{}, spec.Reject(ErrExceedsCapacity, "tokens", aligned,
			fmt.Sprintf("<= capacity_tokens (%d) whole-page units", p.cfg.CapacityTokens))
	}
	if aligned == 0 {
		return res, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out, err := p.insertLocked(k, priority, res)
	if p.logged() {
		p.log(shadowOp{kind: "insert", tokens: tokens, extra: extra, priority: priority, want: answer(out, err)})
	}
	return out, err
}

// insertLocked is Insert's work under the write lock.
func (p *Pool) insertLocked(k spec.RadixKey, priority int, res InsertResult) (InsertResult, error) {
	shortfall, err := p.plan(k)
	if err != nil {
		return InsertResult{}, err
	}
	return p.commit(k, priority, shortfall, res)
}

// plan decides, without changing anything, how many slots Insert must evict
// for k (0 when the free list suffices), or why it cannot.
func (p *Pool) plan(k spec.RadixKey) (int, error) {
	cached, err := p.tree.PrefixLen(k)
	if err != nil {
		return 0, err
	}
	shortfall := len(k.Units) - cached - p.slots.available()
	if shortfall <= 0 {
		return 0, nil
	}
	evictable := p.tree.EvictableSize()
	// The path of k is locked while evicting, so its unlocked units
	// (at most cached of them) are not available. Only when that bound
	// decides the answer is the exact figure worth a walk of the tree.
	if shortfall > evictable-cached && shortfall <= evictable {
		evictable -= pathEvictable(p.tree.State(), k, p.cfg.PageSize)
	}
	if shortfall > evictable {
		return 0, spec.Reject(ErrPoolFull, "tokens", len(k.Units)-cached, fmt.Sprintf(
			"new units <= free (%d) + evictable off the inserted path (%d) slots; unlock or evict, then retry",
			p.slots.available(), evictable))
	}
	return shortfall, nil
}

// commit performs a planned insert. The tree calls cannot fail on a key the
// plan accepted; an error here is a broken tree and is reported as such.
func (p *Pool) commit(k spec.RadixKey, priority, shortfall int, res InsertResult) (InsertResult, error) {
	m, err := p.tree.MatchPrefix(k)
	if err != nil {
		return InsertResult{}, fmt.Errorf("prefix: match of a planned insert: %w", err)
	}
	p.noteMatch(m)
	if shortfall > 0 {
		if res.EvictedTokens, err = p.evictAround(m.LastNode, shortfall); err != nil {
			return InsertResult{}, err
		}
	}
	res.PrefixLen = len(m.Indices)
	res.InsertedTokens = len(k.Units) - res.PrefixLen
	res.Slots = p.slots.alloc(append(make([]spec.SlotIdx, 0, len(k.Units)), m.Indices...), res.InsertedTokens)
	if res.InsertedTokens > 0 {
		k.Extra = ownNamespace(k.Extra) // the new leaf stores it
	}
	if _, err := p.tree.Insert(k, res.Slots, priority); err != nil {
		return InsertResult{}, fmt.Errorf("prefix: insert of a planned key: %w", err)
	}
	res.LastNode = m.LastNode
	if res.InsertedTokens > 0 {
		res.LastNode = p.nextID
		p.nextID++
		p.nodes++
	}
	p.counters.InsertedTokens += int64(res.InsertedTokens)
	return res, nil
}

// checkNamespace rejects an extra or salt longer than MaxNamespaceBytes,
// reporting its length rather than echoing it.
func checkNamespace(extra spec.ExtraKey) error {
	for _, f := range []struct {
		name string
		v    string
	}{{"extra", extra.Extra}, {"salt", extra.Salt}} {
		if len(f.v) > MaxNamespaceBytes {
			return spec.Reject(ErrNamespaceTooLong, f.name, fmt.Sprintf("%d bytes", len(f.v)),
				fmt.Sprintf("at most %d bytes", MaxNamespaceBytes))
		}
	}
	return nil
}

// ownNamespace copies extra's strings, so a stored node pins exactly their
// bytes (at most 2×MaxNamespaceBytes, as ReservedBytes assumes) and never a
// larger buffer a caller's string may be a slice of.
func ownNamespace(extra spec.ExtraKey) spec.ExtraKey {
	extra.Extra, extra.Salt = strings.Clone(extra.Extra), strings.Clone(extra.Salt)
	return extra
}

// evictAround evicts at least n units while node's path is locked, so the
// prefix an insert is about to reuse stays cached.
func (p *Pool) evictAround(node spec.NodeID, n int) (int, error) {
	if _, err := p.tree.IncLockRef(node); err != nil {
		return 0, fmt.Errorf("prefix: lock of the matched path: %w", err)
	}
	ev, err := p.tree.Evict(n)
	if _, uerr := p.tree.DecLockRef(node); err == nil && uerr != nil {
		err = uerr
	}
	if err != nil {
		return 0, fmt.Errorf("prefix: eviction for an insert: %w", err)
	}
	p.noteEvict(ev)
	return ev.Evicted, nil
}

// pathEvictable is the number of unlocked units on the path k matches in
// st: the units locking that path would take out of the evictable set. It
// walks the snapshot as MatchPrefix walks the tree (docs/spec/radix-acks.md §1.4); a
// node the match ends inside counts only its matched part, which is what
// the split would lock.
func pathEvictable(st spec.TreeState, k spec.RadixKey, ps int) int {
	children := make(map[spec.NodeID][]int, len(st.Nodes))
	for i, n := range st.Nodes {
		if n.Parent >= 0 {
			children[n.Parent] = append(children[n.Parent], i)
		}
	}
	total, cur, rest := 0, spec.NodeID(0), k.Units
	for len(rest) >= ps {
		c, ok := childFor(st, children[cur], k.Extra, rest[:ps])
		if !ok {
			break
		}
		q := pageMatch(c.Key, rest, ps)
		if c.LockRef == 0 {
			total += q
		}
		if q < len(c.Key) {
			break
		}
		cur, rest = c.ID, rest[q:]
	}
	return total
}

// childFor finds the child whose first page is page in namespace extra.
func childFor(st spec.TreeState, idx []int, extra spec.ExtraKey, page []spec.Unit) (spec.NodeState, bool) {
	for _, i := range idx {
		n := st.Nodes[i]
		if n.Extra == extra && len(n.Key) >= len(page) && slices.Equal(n.Key[:len(page)], page) {
			return n, true
		}
	}
	return spec.NodeState{}, false
}

// pageMatch is the page-wise common prefix length of a and b (docs/spec/radix-acks.md §1.3).
func pageMatch(a, b []spec.Unit, ps int) int {
	i := 0
	for i+ps <= len(a) && i+ps <= len(b) && slices.Equal(a[i:i+ps], b[i:i+ps]) {
		i += ps
	}
	return i
}

// MatchResult is what Match found.
type MatchResult struct {
	// MatchedTokens is the cached units of the longest whole-page prefix.
	MatchedTokens int `json:"matched_tokens"`
	// Slots are those units' slots, in key order. Never nil.
	Slots []spec.SlotIdx `json:"slots"`
	// LastNode is the node the match ended on (0, the root, for no match).
	LastNode spec.NodeID `json:"last_node"`
	// Locked reports that LastNode's path was locked as part of the match.
	Locked bool `json:"locked"`
}

// Match looks up the longest cached whole-page prefix of tokens in
// namespace extra (docs/spec/radix-acks.md §1.4): it stamps the path for LRU and may
// split the node the match ends inside. With lock set it also locks the
// path (§1.7) in the same critical section, so nothing can evict the
// matched prefix between the match and the lock. It counts the tokens as
// queried and the matched units as hits.
//
// Errors, each leaving the pool unchanged: ErrRequestTooLong, ErrTokenRange.
func (p *Pool) Match(tokens []int64, extra spec.ExtraKey, lock bool) (MatchResult, error) {
	if err := checkLength(tokens, p.maxTokens); err != nil {
		return MatchResult{}, err
	}
	k, err := unitKey(tokens, extra, p.cfg.Eagle)
	if err != nil {
		return MatchResult{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out, err := p.matchLocked(k, len(tokens), lock)
	if p.logged() {
		p.log(shadowOp{kind: "match", tokens: tokens, extra: extra, lock: lock, want: answer(out, err)})
	}
	return out, err
}

// matchLocked is Match's work under the write lock.
func (p *Pool) matchLocked(k spec.RadixKey, ntokens int, lock bool) (MatchResult, error) {
	m, err := p.tree.MatchPrefix(k)
	if err != nil {
		return MatchResult{}, err
	}
	p.noteMatch(m)
	if lock {
		if _, err := p.tree.IncLockRef(m.LastNode); err != nil {
			return MatchResult{}, fmt.Errorf("prefix: lock of the matched path: %w", err)
		}
	}
	p.counters.QueryTokens += int64(ntokens)
	p.counters.HitTokens += int64(len(m.Indices))
	return MatchResult{MatchedTokens: len(m.Indices), Slots: m.Indices, LastNode: m.LastNode, Locked: lock}, nil
}

// PrefixLen is the cached whole-page prefix length of tokens in namespace
// extra, read-only (spec.RadixTree.PrefixLen): no stamp, no split, no
// counter. Concurrent PrefixLen calls run in parallel under the read lock.
//
// Errors: ErrRequestTooLong, ErrTokenRange.
func (p *Pool) PrefixLen(tokens []int64, extra spec.ExtraKey) (int, error) {
	if err := checkLength(tokens, p.maxTokens); err != nil {
		return 0, err
	}
	k, err := unitKey(tokens, extra, p.cfg.Eagle)
	if err != nil {
		return 0, err
	}
	return p.prefixLenKey(k, tokens, extra)
}

// prefixLenKey is PrefixLen of a key already in the pool's unit space (of
// tokens and extra, which a shadow replays).
func (p *Pool) prefixLenKey(k spec.RadixKey, tokens []int64, extra spec.ExtraKey) (int, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	n, err := p.tree.PrefixLen(k)
	p.logScore(tokens, extra, false, n, err)
	return n, err
}

// logScore hands a score to the shadow, under the read lock the score
// held, so it is replayed between the same mutations.
func (p *Pool) logScore(tokens []int64, extra spec.ExtraKey, hashed bool, n int, err error) {
	if p.logged() && tokens != nil { // nil: the shadow's own replay
		p.log(shadowOp{kind: "score", tokens: tokens, extra: extra, hashed: hashed, want: answer(n, err)})
	}
}

// prefixHashes is k's prefix-hash chain in the pool's unit space and page
// size (docs/spec/radix-acks.md §1.14).
func (p *Pool) prefixHashes(k spec.RadixKey) ([]spec.PrefixHash, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.tree.PrefixHashes(k)
}

// prefixLenHashed is the hashed score of a key already in the pool's unit
// space, given its chain from prefixHashes.
func (p *Pool) prefixLenHashed(k spec.RadixKey, hashes []spec.PrefixHash, tokens []int64, extra spec.ExtraKey) (int, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	n, err := p.tree.PrefixLenHashed(k, hashes)
	p.logScore(tokens, extra, true, n, err)
	return n, err
}

// le32Tree is a tree that walks a binary prompt where it lies
// (fast.RadixTree.PrefixLenHashedLE32).
type le32Tree interface {
	PrefixLenHashedLE32(le []byte, extra spec.ExtraKey, hashes []spec.PrefixHash) (int, error)
}

// scoresLE32 says whether Registry.ScoreLE32 may score p: a token-space
// pool whose tree walks binary prompts, with no shadow to log the score to
// (the shadow replays the decoded tokens).
func (p *Pool) scoresLE32() bool {
	_, ok := p.tree.(le32Tree)
	return ok && !p.cfg.Eagle && !p.logged()
}

// prefixLenHashedLE32 is prefixLenHashed for a binary prompt le (its ids as
// little-endian u32) and its chain, on a pool scoresLE32 allows.
func (p *Pool) prefixLenHashedLE32(le []byte, hashes []spec.PrefixHash, extra spec.ExtraKey) (int, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.tree.(le32Tree).PrefixLenHashedLE32(le, extra, hashes)
}

// Lock protects node and its path from eviction (docs/spec/radix-acks.md §1.7) and
// returns the units newly protected. Each Lock is released by one Unlock of
// the same node. Errors: spec.ErrForeignNode.
func (p *Pool) Lock(node spec.NodeID) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d, err := p.tree.IncLockRef(node)
	if p.logged() {
		p.log(shadowOp{kind: "lock", node: node, want: answer(-d, err)})
	}
	return -d, err
}

// Unlock releases one lock taken on node itself by Lock or a locking Match
// (docs/spec/radix-acks.md §1.7) and returns the units newly evictable. Errors,
// changing nothing: spec.ErrForeignNode, and spec.ErrLockUnderflow when the
// node holds no lock of its own (the lock_ref of an ancestor of a locked
// node counts its descendants' locks, which are not its to release).
func (p *Pool) Unlock(node spec.NodeID) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, err := p.tree.DecLockRef(node)
	if p.logged() {
		p.log(shadowOp{kind: "unlock", node: node, want: answer(n, err)})
	}
	return n, err
}

// EvictResult is what Evict freed.
type EvictResult struct {
	// EvictedTokens is the units freed; whole leaves go, so it may exceed the request.
	EvictedTokens int `json:"evicted_tokens"`
	// EvictedNodes is the number of nodes evicted.
	EvictedNodes int `json:"evicted_nodes"`
}

// Evict frees unlocked leaves in policy order until numTokens units are
// freed or none is evictable (docs/spec/radix-acks.md §1.8); their slots return to
// the free list. Errors: spec.ErrNegativeCount.
func (p *Pool) Evict(numTokens int) (EvictResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out, err := p.evictLocked(numTokens)
	if p.logged() {
		p.log(shadowOp{kind: "evict", n: numTokens, want: answer(out, err)})
	}
	return out, err
}

// evictLocked is Evict's work under the write lock.
func (p *Pool) evictLocked(numTokens int) (EvictResult, error) {
	ev, err := p.tree.Evict(numTokens)
	if err != nil {
		return EvictResult{}, err
	}
	p.noteEvict(ev)
	return EvictResult{EvictedTokens: ev.Evicted, EvictedNodes: len(ev.Victims)}, nil
}
