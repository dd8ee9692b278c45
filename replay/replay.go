package replay

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"time"

	"github.com/kvtwin/kvtwin/spec"
)

// Mode selects what the tree is keyed by.
type Mode string

const (
	// ModeTokens keys the tree by the expanded prompt tokens (BlockToken) at
	// Config.PageSize tokens a page: an engine's prefix cache.
	ModeTokens Mode = "tokens"
	// ModeBlocks keys the tree by the hash ids, one unit per 512-token
	// block, page size 1: a KV-aware router's block index.
	ModeBlocks Mode = "blocks"
)

// DefaultPageSize is the token-mode page size when Config.PageSize is 0.
const DefaultPageSize = 64

// MaxPageSize bounds Config.PageSize.
const MaxPageSize = 1 << 16

// Replay-configuration sentinel.
var (
	// ErrBadCapacity: a capacity too small to hold one page.
	ErrBadCapacity = spec.NewSentinel("bad_capacity", "capacity cannot hold one page")
	// ErrTreeContract: the tree under test broke the RadixTree contract
	// (an insert disagreed with the match before it).
	ErrTreeContract = spec.NewSentinel("tree_contract", "the tree broke the RadixTree contract")
)

// Config configures Run.
type Config struct {
	// Mode is ModeTokens or ModeBlocks.
	Mode Mode
	// PageSize is the token-mode page size in [1, MaxPageSize]; 0 means
	// DefaultPageSize. Blocks mode always uses page size 1 (0 or 1 here).
	PageSize int
	// CapacityTokens bounds the tokens the tree may hold; 0 is unlimited.
	// Blocks mode holds CapacityTokens/512 blocks. A non-zero capacity must
	// hold at least one page (ErrBadCapacity).
	CapacityTokens int
	// NewTree builds the tree, required: catalog.RadixTree(catalog.Fast)
	// in production, catalog.RadixTree(catalog.Ref) as the reference.
	NewTree spec.NewRadixTreeFunc
	// Limits bounds the requests Run accepts (CheckRequest); the zero value
	// means DefaultLimits.
	Limits Limits
}

// Report is what a replay measured. Every field but Timing is a
// deterministic function of the trace, the configuration and the tree's
// specified behaviour, so the ref and fast trees must agree on it exactly.
//
// A block operation is one tree page handled by one call: a query counts
// the pages it looks up — its matched pages plus, when it stops before the
// end of the key's ⌊len/page⌋ pages, the first page that missed (lookups
// past a miss never happen, so they are not counted); an insert counts every
// page of the key it is handed (present pages are walked too); an eviction
// counts every page it frees. In blocks mode a page is one 512-token hash
// block, the unit routers count; in tokens mode it is one page of PageSize
// tokens.
type Report struct {
	// Mode is the keying mode.
	Mode Mode `json:"mode"`
	// PageSize is the tree's page size in units (1 in blocks mode).
	PageSize int `json:"page_size"`
	// CapacityTokens is the configured capacity (0 = unlimited).
	CapacityTokens int `json:"capacity_tokens"`
	// CapacityUnits is the capacity in tree units: tokens, or whole blocks.
	CapacityUnits int `json:"capacity_units"`
	// Requests is the number of requests replayed.
	Requests int `json:"requests"`
	// InputTokens is the sum of the prompts' lengths.
	InputTokens int64 `json:"input_tokens"`
	// HitTokens is the sum of the matched prefix lengths in tokens (blocks
	// mode: a matched block counts its tokens, 512 or the last block's).
	HitTokens int64 `json:"hit_tokens"`
	// HitRate is HitTokens / InputTokens (0 for an empty trace).
	HitRate float64 `json:"hit_rate"`
	// MatchBlockOps are the pages looked up by the replay's MatchPrefix calls.
	MatchBlockOps int64 `json:"match_block_ops"`
	// InsertBlockOps are the pages handed to inserts.
	InsertBlockOps int64 `json:"insert_block_ops"`
	// EvictBlockOps are the pages evicted.
	EvictBlockOps int64 `json:"evict_block_ops"`
	// MixedBlockOps is MatchBlockOps + InsertBlockOps + EvictBlockOps: the
	// block operations of the whole replay.
	MixedBlockOps int64 `json:"mixed_block_ops"`
	// QueryBlockOps are the pages looked up by the queries-alone pass:
	// PrefixLen of every request against the final tree.
	QueryBlockOps int64 `json:"query_block_ops"`
	// QueryHitTokens are the tokens that pass matched: what the final
	// cache would serve if every request came again.
	QueryHitTokens int64 `json:"query_hit_tokens"`
	// Evictions is the number of evicted nodes (leaves).
	Evictions int64 `json:"evictions"`
	// EvictedTokens is the tokens those nodes held.
	EvictedTokens int64 `json:"evicted_tokens"`
	// TruncatedInserts counts requests whose page-aligned prompt did not fit
	// beside the locked matched prefix; only the pages that fit are inserted.
	TruncatedInserts int `json:"truncated_inserts"`
	// PeakUnits is the most units the tree held after any request.
	PeakUnits int `json:"peak_units"`
	// FinalUnits is the units the tree holds at the end.
	FinalUnits int `json:"final_units"`
	// Timing holds the wall-clock measurements (not deterministic).
	Timing Timing `json:"timing"`
}

// Timing is the wall-clock part of a Report, on the calling goroutine.
type Timing struct {
	// QueryNs is the time of the queries-alone pass: read-only PrefixLen of
	// every request against the final tree (token expansion excluded).
	QueryNs int64 `json:"query_ns"`
	// QueryBlockOpsPerSec is QueryBlockOps per second of QueryNs.
	QueryBlockOpsPerSec float64 `json:"query_block_ops_per_sec"`
	// MixedNs is the time spent in tree calls during the replay (match,
	// lock, evict, insert, unlock; key expansion excluded).
	MixedNs int64 `json:"mixed_ns"`
	// MixedBlockOpsPerSec is MixedBlockOps per second of MixedNs.
	MixedBlockOpsPerSec float64 `json:"mixed_block_ops_per_sec"`
	// MatchP50Ns and MatchP99Ns are nearest-rank percentiles of the
	// MatchPrefix latencies during the replay.
	MatchP50Ns int64 `json:"match_p50_ns"`
	// MatchP99Ns: see MatchP50Ns.
	MatchP99Ns int64 `json:"match_p99_ns"`
}

// Deterministic returns r without its Timing: the part two trees must agree on.
func (r Report) Deterministic() Report {
	r.Timing = Timing{}
	return r
}

// resolved is a validated Config: the page size and capacity in tree units.
type resolved struct {
	Config
	pageSize, capUnits int
}

// resolve validates cfg and fills its defaults.
func resolve(cfg Config) (resolved, error) {
	if cfg.NewTree == nil {
		return resolved{}, spec.Reject(spec.ErrBadEnum, "new_tree", "nil", "a spec.NewRadixTreeFunc")
	}
	if cfg.Limits == (Limits{}) {
		cfg.Limits = DefaultLimits()
	}
	r := resolved{Config: cfg, pageSize: cfg.PageSize, capUnits: cfg.CapacityTokens}
	switch cfg.Mode {
	case ModeTokens:
		if r.pageSize == 0 {
			r.pageSize = DefaultPageSize
		}
		if r.pageSize < 1 || r.pageSize > MaxPageSize {
			return resolved{}, spec.Reject(spec.ErrInvalidPageSize, "page_size", cfg.PageSize, fmt.Sprintf("in [1, %d], or 0 for %d", MaxPageSize, DefaultPageSize))
		}
	case ModeBlocks:
		if r.pageSize != 0 && r.pageSize != 1 {
			return resolved{}, spec.Reject(spec.ErrInvalidPageSize, "page_size", cfg.PageSize, "0 or 1 in blocks mode (one unit per 512-token block)")
		}
		r.pageSize, r.capUnits = 1, cfg.CapacityTokens/BlockTokens
	default:
		return resolved{}, spec.Reject(spec.ErrBadEnum, "mode", string(cfg.Mode), "tokens or blocks")
	}
	if cfg.CapacityTokens < 0 {
		return resolved{}, spec.Reject(spec.ErrNegative, "capacity_tokens", cfg.CapacityTokens, ">= 0 (0 = unlimited)")
	}
	if cfg.CapacityTokens > 0 && r.capUnits < r.pageSize {
		return resolved{}, spec.Reject(ErrBadCapacity, "capacity_tokens", cfg.CapacityTokens,
			fmt.Sprintf("0 (unlimited) or >= one page (%d tokens)", r.pageTokens()))
	}
	return r, nil
}

// pageTokens is one page in tokens.
func (r resolved) pageTokens() int {
	if r.Mode == ModeBlocks {
		return BlockTokens
	}
	return r.pageSize
}

// Run replays reqs in order (Read's output is in arrival order) through a
// fresh tree from cfg.NewTree (LRU), modelling an engine. For each request:
//
//  1. MatchPrefix(key) is the query; its matched prefix are the hit tokens;
//  2. IncLockRef(matched node), so eviction cannot take the prefix in use;
//  3. if inserting the prompt's new pages would exceed the capacity,
//     Evict(the excess) in LRU order; if the locked prefix plus the prompt
//     still does not fit, only the pages that fit are inserted
//     (TruncatedInserts);
//  4. Insert(page-aligned prompt): in tokens mode ⌊len/P⌋·P tokens, in
//     blocks mode every id; the tree must report exactly the matched units
//     as present (ErrTreeContract otherwise);
//  5. DecLockRef(matched node).
//
// Then it times a queries-alone pass: PrefixLen of every request against
// the final tree. Bad requests (CheckRequest) are rejected before any
// replay; tree errors are returned with the request's index.
func Run(reqs []Request, cfg Config) (Report, error) {
	r, err := resolve(cfg)
	if err != nil {
		return Report{}, err
	}
	if err := checkAll(reqs, r.Limits); err != nil {
		return Report{}, err
	}
	// Collect the caller's garbage (a parsed trace) off the replay's clock.
	runtime.GC()
	tree, rep, lat, err := mixed(reqs, r)
	if err != nil {
		return Report{}, err
	}
	rep.Timing.MatchP50Ns, rep.Timing.MatchP99Ns = percentile(lat, 0.50), percentile(lat, 0.99)
	rep.Timing.MixedBlockOpsPerSec = perSecond(rep.MixedBlockOps, rep.Timing.MixedNs)
	if err := queries(tree, reqs, r, &rep); err != nil {
		return Report{}, err
	}
	rep.Timing.QueryBlockOpsPerSec = perSecond(rep.QueryBlockOps, rep.Timing.QueryNs)
	return rep, nil
}

// checkAll applies CheckRequest to every request, in order.
func checkAll(reqs []Request, lim Limits) error {
	if len(reqs) > lim.MaxRequests {
		return spec.Reject(spec.ErrTooLarge, "requests", len(reqs), fmt.Sprintf("<= max_requests (%d)", lim.MaxRequests))
	}
	prev := int64(0)
	for i, req := range reqs {
		if err := CheckRequest(req, prev, lim); err != nil {
			return fmt.Errorf("requests[%d]: %w", i, err)
		}
		prev = req.Timestamp
	}
	return nil
}

// engine is the replay's mutable state: the tree and reusable buffers.
type engine struct {
	resolved
	tree   spec.RadixTree
	tokens []spec.Unit
	values []spec.SlotIdx
	rep    Report
}

// key is req's tree key; in tokens mode it lives in e.tokens until the
// next call.
func (e *engine) key(req Request) spec.RadixKey {
	if e.Mode == ModeBlocks {
		return BlockKey(req)
	}
	k := TokenKey(e.tokens, req)
	e.tokens = k.Units
	return k
}

// hitTokens converts a matched length in tree units to prompt tokens.
func (e *engine) hitTokens(req Request, units int) int {
	if e.Mode == ModeTokens {
		return units
	}
	return min(units*BlockTokens, req.InputLength)
}

// insertValues are the slots an insert of n units stores: nil (the key's
// units, simulation mode) for tokens; in blocks mode each block's token
// count, so evictions can report tokens.
func (e *engine) insertValues(req Request, n int) []spec.SlotIdx {
	if e.Mode == ModeTokens {
		return nil
	}
	e.values = e.values[:0]
	for i := range n {
		e.values = append(e.values, spec.SlotIdx(blockLen(req, i)))
	}
	return e.values
}

// mixed runs the replay proper and returns the final tree, the report's
// deterministic part with MixedNs, and the match latencies.
func mixed(reqs []Request, r resolved) (spec.RadixTree, Report, []time.Duration, error) {
	tree, err := r.NewTree(spec.TreeConfig{PageSize: r.pageSize, Policy: spec.PolicyLRU})
	if err != nil {
		return nil, Report{}, nil, err
	}
	e := &engine{resolved: r, tree: tree, rep: Report{Mode: r.Mode, PageSize: r.pageSize,
		CapacityTokens: r.CapacityTokens, CapacityUnits: r.capUnits, Requests: len(reqs)}}
	lat := make([]time.Duration, 0, len(reqs))
	for i, req := range reqs {
		k := e.key(req)
		d, err := e.serve(req, k)
		if err != nil {
			return nil, Report{}, nil, fmt.Errorf("requests[%d]: %w", i, err)
		}
		lat = append(lat, d)
		e.rep.InputTokens += int64(req.InputLength)
		e.rep.PeakUnits = max(e.rep.PeakUnits, e.size())
	}
	e.rep.FinalUnits = e.size()
	if e.rep.InputTokens > 0 {
		e.rep.HitRate = float64(e.rep.HitTokens) / float64(e.rep.InputTokens)
	}
	e.rep.MixedBlockOps = e.rep.MatchBlockOps + e.rep.InsertBlockOps + e.rep.EvictBlockOps
	return tree, e.rep, lat, nil
}

// size is the units the tree holds (R-TOTAL: evictable + protected, both
// O(1) where TotalSize may walk).
func (e *engine) size() int { return e.tree.EvictableSize() + e.tree.ProtectedSize() }

// serve runs steps 1–5 of Run for one request and returns the match latency.
func (e *engine) serve(req Request, k spec.RadixKey) (time.Duration, error) {
	t0 := time.Now()
	m, err := e.tree.MatchPrefix(k)
	t1 := time.Now()
	if err != nil {
		return 0, fmt.Errorf("MatchPrefix: %w", err)
	}
	hit := len(m.Indices)
	if _, err := e.tree.IncLockRef(m.LastNode); err != nil {
		return 0, fmt.Errorf("IncLockRef(%d): %w", m.LastNode, err)
	}
	n, err := e.makeRoom(req, hit, len(k.Units)/e.pageSize*e.pageSize)
	if err != nil {
		return 0, err
	}
	present, err := e.tree.Insert(spec.RadixKey{Units: k.Units[:n]}, e.insertValues(req, n), 0)
	if err != nil {
		return 0, fmt.Errorf("Insert(%d units): %w", n, err)
	}
	if present != hit {
		return 0, spec.Reject(ErrTreeContract, "insert_prefix_len", present, fmt.Sprintf("== the locked match's length (%d)", hit))
	}
	if _, err := e.tree.DecLockRef(m.LastNode); err != nil {
		return 0, fmt.Errorf("DecLockRef(%d): %w", m.LastNode, err)
	}
	e.rep.Timing.MixedNs += time.Since(t0).Nanoseconds()
	e.rep.HitTokens += int64(e.hitTokens(req, hit))
	e.rep.MatchBlockOps += e.lookups(k, hit)
	e.rep.InsertBlockOps += int64(n / e.pageSize)
	return t1.Sub(t0), nil
}

// lookups is the pages a match of k that found hit units looked up: the
// hit pages and, if it stopped short of k's last whole page, the miss.
func (e *engine) lookups(k spec.RadixKey, hit int) int64 {
	return int64(min(hit/e.pageSize+1, len(k.Units)/e.pageSize))
}

// makeRoom evicts LRU leaves so that the n-unit insert after a hit-unit
// match fits the capacity, and returns the units to insert: n, or the
// page-aligned part that fits beside what cannot be evicted.
func (e *engine) makeRoom(req Request, hit, n int) (int, error) {
	if e.capUnits == 0 || n <= hit {
		return n, nil
	}
	if over := e.size() + n - hit - e.capUnits; over > 0 {
		res, err := e.tree.Evict(over)
		if err != nil {
			return 0, fmt.Errorf("Evict(%d): %w", over, err)
		}
		e.account(res)
	}
	if room := e.capUnits - e.size(); n-hit > room {
		e.rep.TruncatedInserts++
		return hit + max(room, 0)/e.pageSize*e.pageSize, nil
	}
	return n, nil
}

// account adds an eviction's victims to the report.
func (e *engine) account(res spec.EvictResult) {
	e.rep.Evictions += int64(len(res.Victims))
	e.rep.EvictBlockOps += int64(res.Evicted / e.pageSize)
	if e.Mode == ModeTokens {
		e.rep.EvictedTokens += int64(res.Evicted)
		return
	}
	for _, slots := range res.Freed {
		for _, tokens := range slots {
			e.rep.EvictedTokens += tokens
		}
	}
}

// queries is the queries-alone pass: PrefixLen of every request against
// tree, twice. The first, untimed pass counts QueryBlockOps and
// QueryHitTokens and warms the caches; then the heap is collected, so the
// replay's garbage is not collected on the query clock, and the second pass
// is timed into QueryNs. Blocks-mode keys are views, so that whole pass is
// timed; token-mode keys are expanded first and only the PrefixLen calls are
// timed (their sum).
func queries(tree spec.RadixTree, reqs []Request, r resolved, rep *Report) error {
	e := &engine{resolved: r, tree: tree}
	for i, req := range reqs {
		k := e.key(req)
		hit, err := tree.PrefixLen(k)
		if err != nil {
			return fmt.Errorf("requests[%d]: PrefixLen: %w", i, err)
		}
		rep.QueryBlockOps += e.lookups(k, hit)
		rep.QueryHitTokens += int64(e.hitTokens(req, hit))
	}
	runtime.GC()
	if r.Mode == ModeBlocks {
		start := time.Now()
		for _, req := range reqs {
			_, _ = tree.PrefixLen(BlockKey(req)) // the first pass saw no error
		}
		rep.Timing.QueryNs = time.Since(start).Nanoseconds()
		return nil
	}
	for _, req := range reqs {
		k := e.key(req)
		t0 := time.Now()
		_, _ = tree.PrefixLen(k)
		rep.Timing.QueryNs += time.Since(t0).Nanoseconds()
	}
	return nil
}

// percentile is the nearest-rank p-quantile of ds in nanoseconds (0 when
// empty). It sorts ds.
func percentile(ds []time.Duration, p float64) int64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	rank := int(math.Ceil(p * float64(len(ds))))
	return ds[min(max(rank, 1), len(ds))-1].Nanoseconds()
}

// perSecond is ops per second of ns (0 when no time was measured).
func perSecond(ops, ns int64) float64 {
	if ns <= 0 {
		return 0
	}
	return float64(ops) / (float64(ns) / 1e9)
}
