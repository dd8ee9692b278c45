package prefix

import (
	"fmt"
	"sync"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// Config configures one pool (docs/spec/radix-acks.md §1.4 for the tree fields).
type Config struct {
	// PageSize is the units per page, >= 1: only whole pages are cached.
	PageSize int `json:"page_size"`
	// CapacityTokens is the number of KV slots the pool owns, in
	// [PageSize, Limits.MaxPoolCapacity]. One cached unit holds one slot.
	CapacityTokens int `json:"capacity_tokens"`
	// Eagle keys the tree by bigrams (docs/spec/radix-acks.md §2): n tokens are n-1
	// units, so the last token of every insert is never cached.
	Eagle bool `json:"eagle,omitempty"`
	// Policy is the eviction order; "" is lru.
	Policy spec.EvictPolicy `json:"policy,omitempty"`
}

// validate rejects a configuration the tree would reject, then a capacity
// outside [page_size, maxCapacity].
func (c Config) validate(maxCapacity int) error {
	if err := c.treeConfig().Validate(); err != nil {
		return err
	}
	if c.CapacityTokens < c.PageSize || c.CapacityTokens > maxCapacity {
		return spec.Reject(ErrBadCapacity, "capacity_tokens", c.CapacityTokens,
			fmt.Sprintf("in [page_size (%d), max pool capacity (%d)]", c.PageSize, maxCapacity))
	}
	return nil
}

func (c Config) treeConfig() spec.TreeConfig {
	return spec.TreeConfig{PageSize: c.PageSize, Eagle: c.Eagle, Policy: c.Policy}
}

// Counters are a pool's cumulative totals since it was created.
type Counters struct {
	// QueryTokens is the tokens passed to Match.
	QueryTokens int64 `json:"query_tokens"`
	// HitTokens is the units Match found cached.
	HitTokens int64 `json:"hit_tokens"`
	// InsertedTokens is the units Insert newly cached (prefixes already
	// cached are not counted again).
	InsertedTokens int64 `json:"inserted_tokens"`
	// EvictedTokens is the units freed by eviction, explicit or by Insert.
	EvictedTokens int64 `json:"evicted_tokens"`
	// Evictions is the number of nodes evicted.
	Evictions int64 `json:"evictions"`
}

// Stats is a pool's configuration, occupancy and counters at one instant.
type Stats struct {
	// PageSize, CapacityTokens, Eagle and Policy echo the Config.
	PageSize       int              `json:"page_size"`
	CapacityTokens int              `json:"capacity_tokens"`
	Eagle          bool             `json:"eagle"`
	Policy         spec.EvictPolicy `json:"policy"`
	// UsedTokens is the slots holding cached units (EvictableTokens + ProtectedTokens).
	UsedTokens int `json:"used_tokens"`
	// FreeTokens is CapacityTokens - UsedTokens.
	FreeTokens int `json:"free_tokens"`
	// EvictableTokens is the units in unlocked nodes.
	EvictableTokens int `json:"evictable_tokens"`
	// ProtectedTokens is the units in locked nodes.
	ProtectedTokens int `json:"protected_tokens"`
	// Nodes is the number of tree nodes, the root excluded.
	Nodes int `json:"nodes"`
	// ReservedBytes is the heap the pool may grow to, Config.ReservedBytes:
	// what a Registry holds back from Limits.MaxBytes while the pool lives.
	// It is fixed at creation, whatever the pool holds now.
	ReservedBytes int64 `json:"reserved_bytes"`
	Counters
	// Shadow is the pool's reference shadow (serve --verify-state), nil
	// without one.
	Shadow *ShadowStatus `json:"shadow,omitempty"`
}

// Pool is one prefix index: a radix tree plus the slots it may use. It is
// safe for concurrent use: PrefixLen takes a read lock (the tree's PrefixLen
// is read-only and safe for concurrent readers), every other method the
// write lock.
type Pool struct {
	mu        sync.RWMutex
	cfg       Config
	maxTokens int
	reserved  int64 // cfg.ReservedBytes(), fixed at creation
	tree      spec.RadixTree
	slots     slotAllocator
	// nextID mirrors the tree's id counter and nodes its node count: node
	// ids are minted in sequence (docs/spec/radix-acks.md §0.2 rule 1), so a match
	// that ends on id nextID split a node, and an insert that stored new
	// units created one leaf. The RadixTree interface has no O(1) node
	// count, and State() copies the whole tree.
	nextID   spec.NodeID
	nodes    int
	counters Counters
	// shadow is the pool's reference shadow and shadower the registry's
	// queue to it (ShadowConfig); both nil without --verify-state.
	shadow   *poolShadow
	shadower *Shadow
}

// NewPool builds an empty pool whose tree newTree constructs. Requests longer
// than maxRequestTokens are rejected with ErrRequestTooLong. Preconditions
// (checked): cfg valid with capacity at most maxCapacity; both limits >= 1;
// cfg.ReservedBytes() fits in int64 (else ErrBudget). A pool built here
// belongs to no budget; Registry.Create charges one.
func NewPool(newTree spec.NewRadixTreeFunc, cfg Config, maxCapacity, maxRequestTokens int) (*Pool, error) {
	if maxCapacity < 1 {
		return nil, spec.Reject(ErrBadLimits, "MaxPoolCapacity", maxCapacity, ">= 1")
	}
	if maxRequestTokens < 1 {
		return nil, spec.Reject(ErrBadLimits, "MaxRequestTokens", maxRequestTokens, ">= 1")
	}
	if err := cfg.validate(maxCapacity); err != nil {
		return nil, err
	}
	reserved, ok := cfg.ReservedBytes()
	if !ok {
		return nil, spec.Reject(ErrBudget, "capacity_tokens", cfg.CapacityTokens, "a capacity whose reservation fits in int64 bytes")
	}
	tree, err := newTree(cfg.treeConfig())
	if err != nil {
		return nil, err
	}
	if cfg.Policy == "" {
		cfg.Policy = spec.PolicyLRU
	}
	return &Pool{cfg: cfg, maxTokens: maxRequestTokens, reserved: reserved, tree: tree,
		slots: newSlotAllocator(cfg.CapacityTokens), nextID: 1}, nil
}

// Config returns the pool's configuration (Policy "" reads as "lru").
func (p *Pool) Config() Config { return p.cfg }

// checkLength rejects a request over the per-request limit before anything
// is allocated for it.
func checkLength(tokens []int64, limit int) error {
	return checkCount(len(tokens), limit)
}

// checkCount is checkLength for a list of n tokens not decoded yet.
func checkCount(n, limit int) error {
	if n > limit {
		return spec.Reject(ErrRequestTooLong, "tokens", n, fmt.Sprintf("<= %d tokens", limit))
	}
	return nil
}

// unitKey turns request tokens into a key in the tree's unit space: tokens,
// or bigrams for an EAGLE pool. Converting here rather than in the tree lets
// Insert align and size the value in the units the tree stores.
func unitKey(tokens []int64, extra spec.ExtraKey, eagle bool) (spec.RadixKey, error) {
	k, err := fast.TokenKeyView("tokens", tokens, extra) // no copy: trees copy what they store
	if err != nil || !eagle {
		return k, err
	}
	return ref.ToBigram(k)
}

// noteMatch keeps the node mirror in step with a MatchPrefix that may have
// split a node: the split's new prefix node takes the next id and is where
// the match ends.
func (p *Pool) noteMatch(m spec.MatchResult) {
	if m.LastNode == p.nextID {
		p.nextID++
		p.nodes++
	}
}

// noteEvict returns the victims' slots to the free list and counts them.
func (p *Pool) noteEvict(ev spec.EvictResult) {
	for _, s := range ev.Freed {
		p.slots.release(s)
	}
	p.nodes -= len(ev.Victims)
	p.counters.EvictedTokens += int64(ev.Evicted)
	p.counters.Evictions += int64(len(ev.Victims))
}

// Stats returns the pool's configuration, occupancy and counters.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.statsLocked()
}

func (p *Pool) statsLocked() Stats {
	used := p.slots.used()
	return Stats{PageSize: p.cfg.PageSize, CapacityTokens: p.cfg.CapacityTokens, Eagle: p.cfg.Eagle,
		Policy: p.cfg.Policy, UsedTokens: used, FreeTokens: p.cfg.CapacityTokens - used,
		EvictableTokens: p.tree.EvictableSize(), ProtectedTokens: p.tree.ProtectedSize(),
		Nodes: p.nodes, ReservedBytes: p.reserved, Counters: p.counters, Shadow: p.ShadowStatus()}
}
