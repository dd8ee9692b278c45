// Package admissiontrace builds the admission bench from a Mooncake request
// trace (docs/spec/admission-serving.md §A3, `kvtwin bench admission --trace`).
// It replays the trace in arrival order through a live two-tier prefix cache — a
// capacity-bounded device (L1) radix tree and a larger host (L2) tree, both
// keyed by the trace's 512-token hash blocks, built by Config.NewTree (the
// production fast tree, catalog.RadixTree(catalog.Fast), by default) — so
// that each request's l1_cached_tokens and l2_host_hit_tokens are the
// prefix the caches held when it arrived. The bench itself (ref.RunAdmissionBench over the fast
// round) is unchanged: this package only builds its requests and its
// fake L1 pool.
package admissiontrace

import (
	"fmt"
	"slices"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/replay"
	"github.com/kvtwin/kvtwin/spec"
)

// DefaultWindow is the default queue window: each round sees the next 64
// waiting arrivals.
const DefaultWindow = 64

// ErrTraceConfig: a trace-mode setting out of range.
var ErrTraceConfig = spec.NewSentinel("trace_config", "trace-mode setting out of range")

// Config configures the trace-to-bench conversion.
type Config struct {
	// L1CacheTokens bounds the device prefix cache, in tokens (a multiple
	// of 512 is used: whole blocks), >= 512.
	L1CacheTokens int
	// L2CacheTokens bounds the host cache, in tokens; 0 models no host
	// tier (every l2_host_hit_tokens is 0). When set it must be >=
	// L1CacheTokens (the host tier backs up the device tier).
	L2CacheTokens int
	// Window is the bench's queue_window, >= 1.
	Window int
	// NewTree builds both tiers' radix trees (docs/spec/radix-acks.md §1),
	// e.g. catalog.RadixTree(impl); nil means the production tree,
	// catalog.RadixTree(catalog.Fast). Every tree of the contract gives
	// the same requests and Stats.
	NewTree spec.NewRadixTreeFunc
}

// Stats are what the cache replay saw, for the report.
type Stats struct {
	// Requests is the number of trace requests.
	Requests int `json:"requests"`
	// InputTokens is Σ input_length.
	InputTokens int64 `json:"input_tokens"`
	// L1CachedTokens is Σ l1_cached_tokens.
	L1CachedTokens int64 `json:"l1_cached_tokens"`
	// L2HostHitTokens is Σ l2_host_hit_tokens.
	L2HostHitTokens int64 `json:"l2_host_hit_tokens"`
	// ExtendTokens is Σ extend_tokens.
	ExtendTokens int64 `json:"extend_tokens"`
}

// tier is one capacity-bounded LRU prefix cache over hash blocks.
type tier struct {
	tree   spec.RadixTree
	blocks int // capacity in blocks
}

func newTier(newTree spec.NewRadixTreeFunc, tokens int) (*tier, error) {
	tree, err := newTree(spec.TreeConfig{PageSize: 1, Policy: spec.PolicyLRU})
	if err != nil {
		return nil, err
	}
	return &tier{tree: tree, blocks: tokens / replay.BlockTokens}, nil
}

// visit matches k, then inserts it (evicting LRU leaves beyond the
// capacity, the matched path locked meanwhile) and returns the matched
// blocks: the prefix the cache held at arrival.
func (t *tier) visit(k spec.RadixKey) (int, error) {
	m, err := t.tree.MatchPrefix(k)
	if err != nil {
		return 0, err
	}
	hit := len(m.Indices)
	if _, err := t.tree.IncLockRef(m.LastNode); err != nil {
		return 0, err
	}
	n := len(k.Units)
	size := t.tree.EvictableSize() + t.tree.ProtectedSize()
	if over := size + n - hit - t.blocks; over > 0 && n > hit {
		if _, err := t.tree.Evict(over); err != nil {
			return 0, err
		}
	}
	size = t.tree.EvictableSize() + t.tree.ProtectedSize()
	n = min(n, hit+max(t.blocks-size, 0))
	if n > hit {
		if _, err := t.tree.Insert(spec.RadixKey{Units: k.Units[:n]}, nil, 0); err != nil {
			return 0, err
		}
	}
	if _, err := t.tree.DecLockRef(m.LastNode); err != nil {
		return 0, err
	}
	return hit, nil
}

// Requests replays reqs in arrival order through the two cache tiers and
// returns one bench request per trace request (rid "t<index>"):
// l1 = the device tier's hit, l2 = the host tier's hit beyond it (0
// without a host tier), both in whole 512-token blocks and capped at the
// page-floored input_length − 1 so at least one token is computed;
// extend = input − l1 − l2; max_new_tokens = output_length.
func Requests(reqs []replay.Request, pageSize int64, cfg Config) ([]spec.BenchRequest, Stats, error) {
	if err := check(cfg); err != nil {
		return nil, Stats{}, err
	}
	newTree := cfg.NewTree
	if newTree == nil {
		var err error
		if newTree, err = catalog.RadixTree(catalog.Fast); err != nil {
			return nil, Stats{}, err
		}
	}
	l1, err := newTier(newTree, cfg.L1CacheTokens)
	if err != nil {
		return nil, Stats{}, err
	}
	var l2 *tier
	if cfg.L2CacheTokens > 0 {
		if l2, err = newTier(newTree, cfg.L2CacheTokens); err != nil {
			return nil, Stats{}, err
		}
	}
	out := make([]spec.BenchRequest, 0, len(reqs))
	st := Stats{Requests: len(reqs)}
	for i, r := range reqs {
		k := replay.BlockKey(r)
		h1, err := l1.visit(k)
		if err != nil {
			return nil, Stats{}, fmt.Errorf("requests[%d]: L1: %w", i, err)
		}
		h2 := 0
		if l2 != nil {
			if h2, err = l2.visit(k); err != nil {
				return nil, Stats{}, fmt.Errorf("requests[%d]: L2: %w", i, err)
			}
		}
		in := int64(r.InputLength)
		limit := max(ref.FloorPage(in-1, pageSize), 0)
		c1 := min(int64(h1)*replay.BlockTokens, limit)
		c2 := max(min(int64(max(h1, h2))*replay.BlockTokens, limit)-c1, 0)
		br := spec.BenchRequest{RID: fmt.Sprintf("t%d", i), L1CachedTokens: c1, L2HostHitTokens: c2,
			ExtendTokens: in - c1 - c2, MaxNewTokens: int64(r.OutputLength)}
		st.InputTokens += in
		st.L1CachedTokens += c1
		st.L2HostHitTokens += c2
		st.ExtendTokens += br.ExtendTokens
		out = append(out, br)
	}
	return out, st, nil
}

func check(cfg Config) error {
	switch {
	case cfg.L1CacheTokens < replay.BlockTokens:
		return spec.Reject(ErrTraceConfig, "l1_cache_tokens", cfg.L1CacheTokens, fmt.Sprintf(">= %d (one block)", replay.BlockTokens))
	case cfg.L2CacheTokens < 0:
		return spec.Reject(spec.ErrNegative, "l2_cache_tokens", cfg.L2CacheTokens, ">= 0 (0 is no host tier)")
	case cfg.L2CacheTokens > 0 && cfg.L2CacheTokens < cfg.L1CacheTokens:
		return spec.Reject(ErrTraceConfig, "l2_cache_tokens", cfg.L2CacheTokens, fmt.Sprintf(">= l1_cache_tokens (%d): the host tier backs up the device tier", cfg.L1CacheTokens))
	case cfg.Window < 1:
		return spec.Reject(ErrTraceConfig, "window", cfg.Window, ">= 1")
	}
	return nil
}

// LockBound is the fake L1 evictable pool that makes every lock of a round
// satisfiable: the sum of the window largest l1 + l2 values (a round
// locks at most window requests' L1 prefixes, and a load-back may evict
// up to its l2 from the evictable slots first). The cached prefixes are
// evictable device slots, so this is also what a real pool would hold.
func LockBound(reqs []spec.BenchRequest, window int) int64 {
	v := make([]int64, len(reqs))
	for i, r := range reqs {
		v[i] = r.L1CachedTokens + r.L2HostHitTokens
	}
	slices.Sort(v)
	var s int64
	for _, x := range v[max(len(v)-window, 0):] {
		s += x
	}
	return s
}

// Bench builds the bench input for a trace: base's settings (page size,
// budgets, CP knobs, fake L1 available, fake L2 capacity, max_rounds), the
// trace's requests, queue_window = cfg.Window and fake_l1.evictable =
// LockBound.
func Bench(reqs []replay.Request, base spec.AdmissionBenchInput, cfg Config) (spec.AdmissionBenchInput, Stats, error) {
	brs, st, err := Requests(reqs, max(base.PageSize, 1), cfg)
	if err != nil {
		return spec.AdmissionBenchInput{}, Stats{}, err
	}
	base.Requests = brs
	base.QueueWindow = int64(cfg.Window)
	base.FakeL1.Evictable = LockBound(brs, cfg.Window)
	return base, st, nil
}
