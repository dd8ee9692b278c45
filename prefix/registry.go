package prefix

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/spec"
)

// Limits bound a Registry, so no request can make the process allocate
// without bound.
type Limits struct {
	// MaxPools is the most pools the registry holds at once.
	MaxPools int
	// MaxPoolCapacity is the largest capacity_tokens of one pool.
	MaxPoolCapacity int
	// MaxRequestTokens is the longest token list one request may carry.
	MaxRequestTokens int
	// MaxBytes is the heap all pools together may grow to: each pool
	// reserves its worst case (Config.ReservedBytes) when it is created, and
	// a create that would take the reservations past MaxBytes is refused
	// with ErrBudget. Reserving the capacity up front, rather than charging
	// units as they are cached, is what makes the bound hold: a pool's maps
	// and free list keep the size they reached, so memory never goes back
	// down to what is cached now.
	MaxBytes int64
}

// DefaultLimits are 64 pools of at most 2^24 slots each, requests of at
// most 2^20 tokens, and a memory budget of DefaultMaxBytes(os.DirFS("/")):
// a quarter of the memory this process may use (cgroup limit or physical
// memory). It reads the file system on every call.
func DefaultLimits() Limits {
	return Limits{MaxPools: 64, MaxPoolCapacity: 1 << 24, MaxRequestTokens: 1 << 20,
		MaxBytes: DefaultMaxBytes(os.DirFS("/"))}
}

// Validate rejects a limit below 1 with ErrBadLimits naming the field.
func (l Limits) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"MaxPools", l.MaxPools}, {"MaxPoolCapacity", l.MaxPoolCapacity}, {"MaxRequestTokens", l.MaxRequestTokens}} {
		if f.v < 1 {
			return spec.Reject(ErrBadLimits, f.name, f.v, ">= 1")
		}
	}
	if l.MaxBytes < 1 {
		return spec.Reject(ErrBadLimits, "MaxBytes", l.MaxBytes, ">= 1")
	}
	return nil
}

// Registry is a set of named pools under Limits. It is safe for concurrent
// use; a pool it hands out stays usable after Delete, but is no longer
// reachable by name.
type Registry struct {
	mu      sync.RWMutex
	newTree spec.NewRadixTreeFunc
	lim     Limits
	pools   map[string]*Pool
	// reserved is the sum of the pools' Stats.ReservedBytes, <= lim.MaxBytes.
	reserved int64
	// shadow, when EnableShadow was called, gives each new pool a
	// reference shadow.
	shadow *Shadow
}

// NewRegistry returns an empty registry whose pools' trees newTree builds
// (catalog.RadixTree(catalog.Fast) in production, catalog.RadixTree(catalog.Ref)
// as the reference).
func NewRegistry(newTree spec.NewRadixTreeFunc, lim Limits) (*Registry, error) {
	if newTree == nil {
		return nil, spec.Reject(ErrBadLimits, "newTree", "nil", "a spec.NewRadixTreeFunc")
	}
	if err := lim.Validate(); err != nil {
		return nil, err
	}
	return &Registry{newTree: newTree, lim: lim, pools: map[string]*Pool{}}, nil
}

// Limits returns the registry's limits.
func (r *Registry) Limits() Limits { return r.lim }

// CheckName rejects a pool name outside ^[A-Za-z0-9._-]{1,64}$ with
// ErrBadPoolName. "." and ".." match the pattern but are refused too: URL
// path cleaning would make them unreachable at /v1/prefix/{pool}.
func CheckName(name string) error { return checkNameAt("pool", name) }

// checkNameAt is CheckName reporting the name as field.
func checkNameAt(field, name string) error {
	bound := "1 to 64 characters of [A-Za-z0-9._-], not . or .."
	if len(name) < 1 || len(name) > 64 || name == "." || name == ".." {
		return spec.Reject(ErrBadPoolName, field, name, bound)
	}
	for _, c := range []byte(name) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return spec.Reject(ErrBadPoolName, field, name, bound)
		}
	}
	return nil
}

// Create adds an empty pool named name and reserves its worst-case memory,
// cfg.ReservedBytes(), from Limits.MaxBytes. Errors, each changing nothing:
// ErrBadPoolName, the configuration's rejection (spec.ErrInvalidPageSize,
// spec.ErrBadEnum on the policy, ErrBadCapacity), ErrPoolExists,
// ErrTooManyPools, and ErrBudget on capacity_tokens when the reservation
// exceeds what the live pools left of MaxBytes (its bound names the largest
// capacity that would fit).
func (r *Registry) Create(name string, cfg Config) (*Pool, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if err := cfg.validate(r.lim.MaxPoolCapacity); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.pools[name]; ok {
		return nil, spec.Reject(ErrPoolExists, "pool", name, "a name no live pool has; DELETE it first")
	}
	if len(r.pools) >= r.lim.MaxPools {
		return nil, spec.Reject(ErrTooManyPools, "pool", name, fmt.Sprintf("at most %d pools; delete one first", r.lim.MaxPools))
	}
	left := r.lim.MaxBytes - r.reserved
	if need, ok := cfg.ReservedBytes(); !ok || need > left {
		return nil, spec.Reject(ErrBudget, "capacity_tokens", cfg.CapacityTokens,
			budgetBound(cfg, r.lim.MaxPoolCapacity, left, r.lim.MaxBytes))
	}
	p, err := NewPool(r.newTree, cfg, r.lim.MaxPoolCapacity, r.lim.MaxRequestTokens)
	if err != nil {
		return nil, err
	}
	if r.shadow != nil {
		// The shadow is a second pool of the same capacity: it reserves
		// as much again, or the create is refused.
		if 2*p.reserved > left {
			return nil, spec.Reject(ErrBudget, "capacity_tokens", cfg.CapacityTokens,
				fmt.Sprintf("a pool and its reference shadow (--verify-state) within the %d bytes left of MaxBytes (%d)", left, r.lim.MaxBytes))
		}
		if p.shadow, err = r.shadow.newPoolShadow(p, cfg); err != nil {
			return nil, err
		}
		p.shadower = r.shadow
		p.reserved *= 2
	}
	r.pools[name] = p
	r.reserved += p.reserved
	return p, nil
}

// Get returns the pool named name. Errors: ErrUnknownPool.
func (r *Registry) Get(name string) (*Pool, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	p, ok := r.pools[name]
	if !ok {
		return nil, unknownPool("pool", name)
	}
	return p, nil
}

func unknownPool(field, name string) error {
	return spec.Reject(ErrUnknownPool, field, name, "the name of a live pool; GET /v1/prefix lists them")
}

// Delete removes the pool named name and returns its reservation to the
// budget. A caller still holding the *Pool can keep using it, but its
// memory is no longer counted: the budget bounds the pools reachable by
// name. Errors: ErrUnknownPool.
func (r *Registry) Delete(name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.pools[name]
	if !ok {
		return unknownPool("pool", name)
	}
	delete(r.pools, name)
	r.reserved -= p.reserved
	return nil
}

// Budget returns Limits.MaxBytes and the bytes the live pools reserve, read
// together under the registry's lock.
func (r *Registry) Budget() Budget {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return Budget{MaxBytes: r.lim.MaxBytes, ReservedBytes: r.reserved}
}

// Named is one pool with its name.
type Named struct {
	// Name is the pool's name.
	Name string
	// Pool is the pool.
	Pool *Pool
}

// List returns every pool in ascending name order.
func (r *Registry) List() []Named {
	r.mu.RLock()
	out := make([]Named, 0, len(r.pools))
	for name, p := range r.pools {
		out = append(out, Named{Name: name, Pool: p})
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Score is one pool's answer to Registry.Score.
type Score struct {
	// Pool is the pool's name.
	Pool string `json:"pool"`
	// MatchedTokens is the pool's cached whole-page prefix of the prompt, in units.
	MatchedTokens int `json:"matched_tokens"`
}

// Score returns, for each named pool in the order given (every pool in name
// order when pools is empty), how many units of tokens' whole-page prefix
// in namespace extra it holds. It is read-only: no pool's LRU order, tree
// shape or counters change, and scores run concurrently with each other.
//
// By default a score compares prefix hashes (docs/spec/radix-acks.md
// §1.14): the prompt is hashed once per kind of pool (page size, unit
// space), in one pass, and each pool compares 8 bytes a page after each
// node's first page; the answer is the exact one unless two different
// prefixes share a 64-bit hash. exact compares every page's units instead
// (spec.RadixTree.PrefixLen). A long prompt scored exactly is scored
// against several pools in parallel, up to GOMAXPROCS at once.
//
// Errors: ErrRequestTooLong, ErrTokenRange (tokens[i]), ErrBadPoolName,
// ErrDuplicatePool and ErrUnknownPool (pools[i]).
func (r *Registry) Score(tokens []int64, extra spec.ExtraKey, pools []string, exact bool) ([]Score, error) {
	return r.ScoreHashed(tokens, extra, pools, exact, nil)
}

// ScoreHashed is Score with some of the prompt's page hashes computed
// ahead: a hashed score takes a token-space chain of page size ps from the
// hasher in pre of that page size, which must have been fed prefixes of
// tokens only (fast.PageHasher.Add), and hashes the rest itself. The answer
// and errors are Score's. A hasher it uses holds the folded chain after it,
// and is not to be used again.
func (r *Registry) ScoreHashed(tokens []int64, extra spec.ExtraKey, pools []string, exact bool, pre []*PageHasher) ([]Score, error) {
	if err := checkLength(tokens, r.lim.MaxRequestTokens); err != nil {
		return nil, err
	}
	targets, err := r.resolve(pools)
	if err != nil {
		return nil, err
	}
	var keys [2]spec.RadixKey
	var chains map[chainKind][]spec.PrefixHash
	if exact {
		keys, err = unitKeys(tokens, extra, targets)
	} else {
		keys, chains, err = hashedKeys(tokens, extra, targets, pre)
	}
	if err != nil {
		return nil, err
	}
	out := make([]Score, len(targets))
	errs := make([]error, len(targets))
	score := func(i int) {
		p := targets[i].Pool
		out[i].Pool = targets[i].Name
		k := keys[eagleIndex(p.cfg.Eagle)]
		if exact {
			out[i].MatchedTokens, errs[i] = p.prefixLenKey(k, tokens, extra)
		} else {
			out[i].MatchedTokens, errs[i] = p.prefixLenHashed(k, chains[kindOf(p.cfg)], tokens, extra)
		}
	}
	workers := min(len(targets), runtime.GOMAXPROCS(0))
	if !exact || len(tokens) < parallelScoreTokens || workers < 2 {
		for i := range targets {
			score(i)
		}
	} else {
		parallel(len(targets), workers, score)
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ScoreLE32 is ScoreHashed(tokens, extra, pools, false, pre) for a binary
// prompt whose ids are the little-endian u32 values of le, with pre fed by
// PageHasher.HashLE32 while it arrived: each pool is walked from the ids
// where they lie (fast.RadixTree.PrefixLenHashedLE32), so a long prompt's
// 8-byte list is never written. The answer and errors are ScoreHashed's.
// ok is false, with nothing done and pre untouched, where this path does
// not apply: len(le) not a multiple of 4, a pool to score that is an Eagle
// pool, has a shadow or runs the reference tree, or a page size with no
// hasher in pre. The caller then decodes the ids and calls ScoreHashed,
// with pre.
func (r *Registry) ScoreLE32(le []byte, extra spec.ExtraKey, pools []string, pre []*PageHasher) (scores []Score, ok bool, err error) {
	if len(le)%4 != 0 {
		return nil, false, nil
	}
	if err := checkCount(len(le)/4, r.lim.MaxRequestTokens); err != nil {
		return nil, true, err
	}
	targets, err := r.resolve(pools)
	if err != nil {
		return nil, true, err
	}
	for _, t := range targets {
		if !t.Pool.scoresLE32() || hasherFor(pre, t.Pool.cfg.PageSize) == nil {
			return nil, false, nil
		}
	}
	chains := map[int][]spec.PrefixHash{}
	out := make([]Score, len(targets))
	for i, t := range targets {
		ps := t.Pool.cfg.PageSize
		c, done := chains[ps]
		if !done {
			c = hasherFor(pre, ps).ChainLE32(le, extra)
			chains[ps] = c
		}
		out[i].Pool = t.Name
		if out[i].MatchedTokens, err = t.Pool.prefixLenHashedLE32(le, c, extra); err != nil {
			return nil, true, err
		}
	}
	return out, true, nil
}

// ScoresLE32 says whether ScoreLE32 takes a score of the named pools (all
// pools for none) given hashers for their page sizes: they resolve, and
// none is an Eagle pool, has a shadow or runs the reference tree. A caller
// reads the prompt's ids into their 8-byte list only when it does not.
func (r *Registry) ScoresLE32(pools []string) bool {
	targets, err := r.resolve(pools)
	if err != nil {
		return false
	}
	for _, t := range targets {
		if !t.Pool.scoresLE32() {
			return false
		}
	}
	return true
}

// chainKind is what a prompt's prefix-hash chain depends on besides the
// prompt: the pool's page size and unit space.
type chainKind struct {
	pageSize int
	eagle    bool
}

// kindOf is the chain kind of a pool with configuration c.
func kindOf(c Config) chainKind { return chainKind{pageSize: c.PageSize, eagle: c.Eagle} }

// hashedKeys builds the keys and chains a hashed score needs, once per
// unit space and chain kind, before any pool is scored: a token-space chain
// comes from fast.TokenKeyChain, which range-checks each page as it hashes
// it, so a long prompt is read from memory once; a bigram chain from the
// first Eagle pool's tree, over the checked bigram key.
func hashedKeys(tokens []int64, extra spec.ExtraKey, targets []Named, pre []*PageHasher) ([2]spec.RadixKey, map[chainKind][]spec.PrefixHash, error) {
	var keys [2]spec.RadixKey
	var built [2]bool
	chains := map[chainKind][]spec.PrefixHash{}
	for _, t := range targets {
		kind := kindOf(t.Pool.cfg)
		if _, ok := chains[kind]; ok {
			continue
		}
		i := eagleIndex(kind.eagle)
		var c []spec.PrefixHash
		var err error
		if !kind.eagle {
			if h := hasherFor(pre, kind.pageSize); h != nil {
				keys[i], c, err = h.Chain("tokens", tokens, extra)
			} else {
				keys[i], c, err = fast.TokenKeyChain("tokens", tokens, extra, kind.pageSize)
			}
		} else {
			if !built[i] {
				keys[i], err = unitKey(tokens, extra, true)
			}
			if err == nil {
				c, err = t.Pool.prefixHashes(keys[i])
			}
		}
		if err != nil {
			return keys, nil, err
		}
		built[i], chains[kind] = true, c
	}
	return keys, chains, nil
}

// PageHasher hashes a prompt's pages while it arrives, for ScoreHashed
// (fast.PageHasher): the server's route to the fast twin's hasher.
type PageHasher = fast.PageHasher

// NewPageHasher is fast.NewPageHasher: an empty hasher for pages of ps
// units appending to pages[:0].
func NewPageHasher(ps int, pages []spec.PrefixHash) (*PageHasher, error) {
	return fast.NewPageHasher(ps, pages)
}

// hasherFor is the hasher of pre for pages of ps units, or nil.
func hasherFor(pre []*PageHasher, ps int) *PageHasher {
	for _, h := range pre {
		if h != nil && h.PageSize() == ps {
			return h
		}
	}
	return nil
}

// HashedPageSizes is the page sizes of the token-space chains a hashed
// score of the named pools (all pools for none) would compute, at most
// limit of them, in the order the pools list them: what a caller may hash
// ahead for ScoreHashed. Pools that do not resolve give none (the score
// itself reports them).
func (r *Registry) HashedPageSizes(pools []string, limit int) []int {
	targets, err := r.resolve(pools)
	if err != nil {
		return nil
	}
	var sizes []int
	for _, t := range targets {
		if c := t.Pool.cfg; !c.Eagle && !slices.Contains(sizes, c.PageSize) {
			if len(sizes) == limit {
				break
			}
			sizes = append(sizes, c.PageSize)
		}
	}
	return sizes
}

// parallelScoreTokens is the prompt length from which an exact Score
// spreads pools over goroutines: matching a long prompt exactly is bound by
// memory reads (a 240K-token prompt compares ~2 MB per pool), while a short
// one costs less than starting a goroutine. A hashed score walks its pools
// on one goroutine whatever the length: its walks compare 8 bytes a page
// (about 4 µs a pool at 240K tokens), less than waking a second core
// costs (240K × 8 pools on two cores: 191–193 µs in parallel, 159–162 µs
// walked in turn; docs/perf.md).
const parallelScoreTokens = 16 << 10

// parallel runs f(0..n-1) on workers goroutines and returns when all are done.
func parallel(n, workers int, f func(int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}

func eagleIndex(eagle bool) int {
	if eagle {
		return 1
	}
	return 0
}

// unitKeys builds tokens' key once per unit space the targets use (index 0
// tokens, 1 bigrams), before any pool is scored, so concurrent scorers only
// read them.
func unitKeys(tokens []int64, extra spec.ExtraKey, targets []Named) ([2]spec.RadixKey, error) {
	var keys [2]spec.RadixKey
	var built [2]bool
	for _, t := range targets {
		i := eagleIndex(t.Pool.cfg.Eagle)
		if built[i] {
			continue
		}
		k, err := unitKey(tokens, extra, t.Pool.cfg.Eagle)
		if err != nil {
			return keys, err
		}
		keys[i], built[i] = k, true
	}
	return keys, nil
}

// resolve looks up the named pools, or lists all of them for none.
func (r *Registry) resolve(pools []string) ([]Named, error) {
	if len(pools) == 0 {
		return r.List(), nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Named, 0, min(len(pools), len(r.pools)))
	for i, name := range pools {
		field := spec.Idx("pools", i)
		if err := checkNameAt(field, name); err != nil {
			return nil, err
		}
		if j := slices.Index(pools[:i], name); j >= 0 {
			return nil, spec.Reject(ErrDuplicatePool, field, name, fmt.Sprintf("a pool not already named (pools[%d])", j))
		}
		p, ok := r.pools[name]
		if !ok {
			return nil, unknownPool(field, name)
		}
		out = append(out, Named{Name: name, Pool: p})
	}
	return out, nil
}
