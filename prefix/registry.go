package prefix

import (
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/kvtwin/kvtwin/ref"
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
}

// DefaultLimits are 64 pools of at most 2^24 slots each, and requests of at
// most 2^20 tokens.
func DefaultLimits() Limits {
	return Limits{MaxPools: 64, MaxPoolCapacity: 1 << 24, MaxRequestTokens: 1 << 20}
}

// Validate rejects a limit below 1 with ErrBadLimits naming the field.
func (l Limits) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"MaxPools", l.MaxPools}, {"MaxPoolCapacity", l.MaxPoolCapacity}, {"MaxRequestTokens", l.MaxRequestTokens}} {
		if f.v < 1 {
			return ref.Reject(ErrBadLimits, f.name, f.v, ">= 1")
		}
	}
	return nil
}

// Registry is a set of named pools under Limits. It is safe for concurrent
// use; a pool it hands out stays usable after Delete, but is no longer
// reachable by name.
type Registry struct {
	mu      sync.RWMutex
	newTree ref.NewRadixTreeFunc
	lim     Limits
	pools   map[string]*Pool
}

// NewRegistry returns an empty registry whose pools' trees newTree builds
// (fast.NewRadixTree in production, ref.NewRadixTree in tests).
func NewRegistry(newTree ref.NewRadixTreeFunc, lim Limits) (*Registry, error) {
	if newTree == nil {
		return nil, ref.Reject(ErrBadLimits, "newTree", "nil", "a ref.NewRadixTreeFunc")
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
		return ref.Reject(ErrBadPoolName, field, name, bound)
	}
	for _, c := range []byte(name) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return ref.Reject(ErrBadPoolName, field, name, bound)
		}
	}
	return nil
}

// Create adds an empty pool named name. Errors: ErrBadPoolName, the
// configuration's rejection (ref.ErrInvalidPageSize, ref.ErrBadEnum on the
// policy, ErrBadCapacity), ErrPoolExists, ErrTooManyPools.
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
		return nil, ref.Reject(ErrPoolExists, "pool", name, "a name no live pool has; DELETE it first")
	}
	if len(r.pools) >= r.lim.MaxPools {
		return nil, ref.Reject(ErrTooManyPools, "pool", name, fmt.Sprintf("at most %d pools; delete one first", r.lim.MaxPools))
	}
	p, err := NewPool(r.newTree, cfg, r.lim.MaxPoolCapacity, r.lim.MaxRequestTokens)
	if err != nil {
		return nil, err
	}
	r.pools[name] = p
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
	return ref.Reject(ErrUnknownPool, field, name, "the name of a live pool; GET /v1/prefix lists them")
}

// Delete removes the pool named name. Errors: ErrUnknownPool.
func (r *Registry) Delete(name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.pools[name]; !ok {
		return unknownPool("pool", name)
	}
	delete(r.pools, name)
	return nil
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
// in namespace extra it holds. It is read-only (ref.RadixTree.PrefixLen):
// no pool's LRU order, tree shape or counters change, and scores run
// concurrently with each other. The key is built once per unit space
// (tokens, bigrams), not once per pool.
//
// Errors: ErrRequestTooLong, ErrTokenRange (tokens[i]), ErrBadPoolName,
// ErrDuplicatePool and ErrUnknownPool (pools[i]).
func (r *Registry) Score(tokens []int64, extra ref.ExtraKey, pools []string) ([]Score, error) {
	if err := checkLength(tokens, r.lim.MaxRequestTokens); err != nil {
		return nil, err
	}
	targets, err := r.resolve(pools)
	if err != nil {
		return nil, err
	}
	var keys [2]*ref.Key // [token key, bigram key], built on first use
	out := make([]Score, len(targets))
	for i, t := range targets {
		k, err := keyFor(&keys, tokens, extra, t.Pool.cfg.Eagle)
		if err != nil {
			return nil, err
		}
		n, err := t.Pool.prefixLenKey(*k)
		if err != nil {
			return nil, err
		}
		out[i] = Score{Pool: t.Name, MatchedTokens: n}
	}
	return out, nil
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
		field := ref.Idx("pools", i)
		if err := checkNameAt(field, name); err != nil {
			return nil, err
		}
		if j := slices.Index(pools[:i], name); j >= 0 {
			return nil, ref.Reject(ErrDuplicatePool, field, name, fmt.Sprintf("a pool not already named (pools[%d])", j))
		}
		p, ok := r.pools[name]
		if !ok {
			return nil, unknownPool(field, name)
		}
		out = append(out, Named{Name: name, Pool: p})
	}
	return out, nil
}

// keyFor returns the key of tokens in the unit space of an EAGLE or plain
// pool, converting at most once per space.
func keyFor(keys *[2]*ref.Key, tokens []int64, extra ref.ExtraKey, eagle bool) (*ref.Key, error) {
	i := 0
	if eagle {
		i = 1
	}
	if keys[i] != nil {
		return keys[i], nil
	}
	k, err := unitKey(tokens, extra, eagle)
	if err != nil {
		return nil, err
	}
	keys[i] = &k
	return keys[i], nil
}
