package spec

import (
	"encoding/json"
	"math"
)

// Unit is one radix key element (docs/spec/radix-acks.md §0.1): uint64(t) for a token,
// uint64(a)<<32|uint64(b) for the bigram (a, b). The packing is for
// comparison only; hashes write pairs as two LE32 words (§2.4).
type Unit = uint64

// SlotIdx is the index of one token slot in a KV pool (docs/spec/radix-acks.md §0.1).
type SlotIdx = int64

// NodeID identifies a tree node; the root is 0 and every created node takes
// the tree's next id (docs/spec/radix-acks.md §0.2).
type NodeID = int64

// MaxToken is the largest valid token id: the storage hash writes each id as
// 4 little-endian bytes (docs/spec/radix-acks.md §0.1).
const MaxToken = math.MaxUint32

// ExtraKey is a key's namespace (LoRA id and cache salt; docs/spec/radix-acks.md §0.1
// and the §1.1 erratum). Two keys share a subtree only when both fields are
// equal. An unset extra key differs from "", but an empty salt is no salt, as
// upstream's key constructor makes it (the §1.1 amendment); ExtraKeyOf keeps
// that rule, so build namespaces with it. It is comparable, so it can be part
// of a map key.
type ExtraKey struct {
	// Extra is the extra-key namespace (a LoRA id); meaningful when HasExtra.
	Extra string
	// HasExtra distinguishes an unset extra key from "".
	HasExtra bool
	// Salt is the cache salt; meaningful when HasSalt.
	Salt string
	// HasSalt says a salt is set; ExtraKeyOf never sets it for "".
	HasSalt bool
}

// ExtraKeyOf builds an ExtraKey from optional fields (nil = unset). An empty
// salt is no salt: upstream SGLang turns cache_salt "" into None before it
// builds the key, so a client sending "" shares entries with one sending none
// (docs/spec/radix-acks.md §1.1 amendment). An empty extra key stays its own
// namespace, as upstream keeps it.
func ExtraKeyOf(extra, salt *string) ExtraKey {
	var k ExtraKey
	if extra != nil {
		k.Extra, k.HasExtra = *extra, true
	}
	if salt != nil && *salt != "" {
		k.Salt, k.HasSalt = *salt, true
	}
	return k
}

type extraKeyJSON struct {
	Extra *string `json:"extra,omitempty"`
	Salt  *string `json:"salt,omitempty"`
}

// MarshalJSON encodes the namespace as {"extra": …, "salt": …}, omitting
// unset fields, so unset and "" stay distinct in canonical output.
func (k ExtraKey) MarshalJSON() ([]byte, error) {
	var j extraKeyJSON
	if k.HasExtra {
		j.Extra = &k.Extra
	}
	if k.HasSalt {
		j.Salt = &k.Salt
	}
	return json.Marshal(j)
}

// UnmarshalJSON is the inverse of MarshalJSON.
func (k *ExtraKey) UnmarshalJSON(b []byte) error {
	var j extraKeyJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*k = ExtraKeyOf(j.Extra, j.Salt)
	return nil
}

// RadixKey is a radix key as the caller hands it to a tree: the units, the
// namespace, and whether the units are already bigrams (docs/spec/radix-acks.md
// §1.1).
// Trees never modify Units; the fast tree views them without copying while a
// call runs and copies what it stores.
type RadixKey struct {
	// Units are the key's elements (tokens, or packed bigrams when Bigram).
	Units []Unit
	// Extra is the namespace.
	Extra ExtraKey
	// Bigram is set when Units are packed pairs (docs/spec/radix-acks.md §2).
	Bigram bool
}

// EvictPolicy names the order in which evictable leaves are chosen
// (docs/spec/radix-acks.md §0.2 rule 3). Every policy breaks ties by ascending node id.
type EvictPolicy string

// The eviction policies of docs/spec/radix-acks.md §0.2; the empty policy is LRU.
const (
	// PolicyLRU evicts in ascending (lastAccess, id).
	PolicyLRU EvictPolicy = "lru"
	// PolicyLFU evicts in ascending (hitCount, lastAccess, id).
	PolicyLFU EvictPolicy = "lfu"
	// PolicyFIFO evicts in ascending (created, id).
	PolicyFIFO EvictPolicy = "fifo"
	// PolicyMRU evicts in ascending (-lastAccess, id).
	PolicyMRU EvictPolicy = "mru"
	// PolicyFILO evicts in ascending (-created, id).
	PolicyFILO EvictPolicy = "filo"
	// PolicyPriority evicts in ascending (priority, lastAccess, id).
	PolicyPriority EvictPolicy = "priority"
)

// TreeConfig configures a radix tree (docs/spec/radix-acks.md §1.4).
type TreeConfig struct {
	// PageSize is the number of units per page, >= 1.
	PageSize int `json:"page_size"`
	// Eagle keys the tree by bigrams: token keys are converted on entry (§2).
	Eagle bool `json:"eagle,omitempty"`
	// Disable turns the cache off: match returns nothing, insert returns 0,
	// and neither advances the tick.
	Disable bool `json:"disable,omitempty"`
	// Policy is the eviction order; "" means lru.
	Policy EvictPolicy `json:"policy,omitempty"`
	// CPSize turns on CP owner metadata (docs/spec/radix-acks.md §4.2) for a CP group
	// of this many ranks; 0 is off.
	CPSize int `json:"cp_size,omitempty"`
	// CPDraftSize is a second CP size whose owner counts every node also
	// keeps (a draft tree's group; §4.2 "per-CP-size"); 0 is none.
	CPDraftSize int `json:"cp_draft_size,omitempty"`
}

// MatchResult is the result of MatchPrefix (docs/spec/radix-acks.md §1.4): the device
// slot indices of the matched prefix, in key order, and the deepest matched
// node.
type MatchResult struct {
	// Indices are the matched prefix's slots; never nil.
	Indices []SlotIdx `json:"indices"`
	// LastNode is the node the match ended on (the root for no match).
	LastNode NodeID `json:"last_node"`
}

// EvictResult is the result of Evict (docs/spec/radix-acks.md §1.8).
type EvictResult struct {
	// Evicted is the number of units freed (may exceed the request: whole leaves go).
	Evicted int `json:"evicted"`
	// Freed are the victims' slot lists, in eviction order; never nil.
	Freed [][]SlotIdx `json:"freed"`
	// Victims are the evicted node ids, in eviction order; never nil.
	Victims []NodeID `json:"victims"`
}

// NodeState is the observable state of one node.
type NodeState struct {
	// ID is the node id.
	ID NodeID `json:"id"`
	// Parent is the parent's id, -1 for the root.
	Parent NodeID `json:"parent"`
	// Key are the node's key units (empty for the root).
	Key []Unit `json:"key"`
	// Extra is the node's namespace.
	Extra ExtraKey `json:"extra"`
	// Value are the node's slots.
	Value []SlotIdx `json:"value"`
	// LockRef counts outstanding locks in the node's subtree.
	LockRef int `json:"lock_ref"`
	// LastAccess is the tick of the last call that touched the node.
	LastAccess uint64 `json:"last_access"`
	// Created is the tick the node was created at.
	Created uint64 `json:"created"`
	// HitCount is the node's hit count (LFU).
	HitCount int `json:"hit_count"`
	// Priority is the max priority of the inserts through the node.
	Priority int `json:"priority"`
	// CP is the node's owner metadata when the tree has a cp_size (§4.2);
	// nil otherwise.
	CP *NodeCP `json:"cp,omitempty"`
	// PrefixHashes are the prefix hashes of the node's pages, chained from
	// the root through its ancestors' pages (§1.14); none for the root.
	PrefixHashes []PrefixHash `json:"prefix_hashes,omitempty"`
}

// TreeState is the whole observable state of a tree: what the differential
// suite compares after every step (docs/spec/radix-acks.md §1.9 P5).
type TreeState struct {
	// Config is the tree's configuration.
	Config TreeConfig `json:"config"`
	// Tick is the logical clock.
	Tick uint64 `json:"tick"`
	// NextID is the id the next created node will take.
	NextID NodeID `json:"next_id"`
	// EvictableSize is the units held by unlocked nodes.
	EvictableSize int `json:"evictable_size"`
	// ProtectedSize is the units held by locked nodes.
	ProtectedSize int `json:"protected_size"`
	// CopiedUnits counts the units copied into stored keys: a new leaf's
	// length, and a split node's whole length (both halves are stored anew;
	// store sites S1–S2 of docs/spec/radix-acks.md §1.1). Walking a key costs nothing,
	// so a match that ends on a node boundary adds 0 (§1.9 P6). The reference
	// counts what the fixed tree must copy; the fast tree counts what it
	// does copy, and the two must agree.
	CopiedUnits int64 `json:"copied_units"`
	// OwnerCountRecomputations counts owner counts recomputed from a
	// node's tokens while planning (§4.6 B4.a). The fixed planner reads
	// metadata, so the reference reports 0, the contract, and the fast tree
	// what it did: the counter turns the historic stall into an observable
	// difference, as CopiedUnits does for B1.a.
	OwnerCountRecomputations int64 `json:"owner_count_recomputations,omitempty"`
	// MetaMisses counts scanned leaves whose metadata lacks the planned CP
	// size, counted from positions instead (§4.5).
	MetaMisses int64 `json:"meta_misses,omitempty"`
	// LoadRefusals counts executed plans that left a deficit: the load-back
	// was refused with one warning and nothing evicted (§4.4).
	LoadRefusals int64 `json:"load_refusals,omitempty"`
	// Nodes are every node, root first, in ascending id.
	Nodes []NodeState `json:"nodes"`
}

// RadixTree is the radix prefix cache both twins implement
// (docs/spec/radix-acks.md §1). Node handles are ids; an id that is not a live node
// is ErrForeignNode. A failed call leaves the tree unchanged.
type RadixTree interface {
	// Config returns the tree's configuration.
	Config() TreeConfig
	// MatchPrefix returns the slots of the longest page-aligned cached
	// prefix of k, splitting the node the match ends inside (§1.4).
	MatchPrefix(k RadixKey) (MatchResult, error)
	// PrefixLen is a read-only match: the length of the cached page-aligned
	// prefix of k, without advancing the tick, stamping or splitting
	// (designed for routers scoring a prompt against many pools). It is safe
	// to call concurrently with other PrefixLen calls.
	PrefixLen(k RadixKey) (int, error)
	// PrefixHashes is the prefix-hash chain of k's whole pages in the
	// tree's unit space and page size (§1.14): a score hashes a prompt once
	// per kind of tree and passes the chain to PrefixLenHashed. It reads
	// only the configuration.
	PrefixHashes(k RadixKey) ([]PrefixHash, error)
	// PrefixLenHashed is PrefixLen comparing each node's first page by its
	// units and the pages after it by prefix hash (§1.14); hashes must be
	// PrefixHashes(k) of a tree with this configuration. Read-only and
	// safe concurrently with PrefixLen and itself.
	PrefixLenHashed(k RadixKey, hashes []PrefixHash) (int, error)
	// Insert stores k → value and returns how many leading units were
	// already present (§1.5). A nil value is simulation mode: the slots are
	// the key's units before any bigram conversion.
	Insert(k RadixKey, value []SlotIdx, priority int) (int, error)
	// IncLockRef protects the path from node to the root and returns minus
	// the units newly protected (§1.7).
	IncLockRef(node NodeID) (int, error)
	// DecLockRef releases one lock on the path and returns the units newly
	// evictable; ErrLockUnderflow changes nothing (§1.7).
	DecLockRef(node NodeID) (int, error)
	// Evict frees unlocked leaves in policy order until numTokens units are
	// freed or none is left (§1.8).
	Evict(numTokens int) (EvictResult, error)
	// EvictableSize is the units held by unlocked nodes.
	EvictableSize() int
	// ProtectedSize is the units held by locked nodes.
	ProtectedSize() int
	// EvictOwnerLanes plans the owner-lane eviction of a load-back and,
	// unless req.DryRun, executes it: the victims are evicted only when
	// they cover every lane; otherwise nothing is evicted and one refusal
	// is counted (docs/spec/radix-acks.md §4.4). A rejected request changes nothing.
	EvictOwnerLanes(req OwnerPlanRequest) (OwnerPlan, error)
	// TotalSize is the units held by all nodes.
	TotalSize() int
	// State returns the observable state.
	State() TreeState
}

// NewRadixTreeFunc constructs a tree; ref.NewRadixTree and fast.NewRadixTree
// have this type, so drivers (scripts, pools, replay) take either.
type NewRadixTreeFunc func(TreeConfig) (RadixTree, error)
