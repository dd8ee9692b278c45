// Package prefix keeps long-lived prefix-index pools: named radix trees
// (docs/spec/radix-acks.md §1), each over a fixed range of KV slots. A router
// can ask "how much of this prompt is cached where" and a cache manager can
// insert, match, lock and evict without tracking slots itself.
//
// A Pool wraps one spec.RadixTree (built by an injected spec.NewRadixTreeFunc,
// so the ref and fast twins are interchangeable) with a slot allocator over
// [0, capacity_tokens). Inserting a prompt caches its whole pages, reuses the
// slots of the prefix already cached, takes slots for the new suffix from the
// free list and, when the pool is short, evicts unlocked leaves in the
// tree's policy order; evicted slots go back to the free list. An insert
// that cannot fit even after evicting everything evictable is refused with
// ErrPoolFull and changes nothing.
//
// A Registry holds named pools under limits (pool count, capacity per pool,
// tokens per request) and scores a prompt against many pools at once with
// the tree's read-only PrefixLen: scoring never changes a pool's LRU order,
// never splits a node and runs concurrently with other scores.
//
// The registry also holds a memory budget, Limits.MaxBytes: each pool
// reserves its worst-case heap when it is created (Config.ReservedBytes,
// from per-unit and per-node costs measured in budget_test.go), a create
// that would exceed the budget is refused with ErrBudget, and a delete
// returns the reservation. An insert evicts rather than hold more than the
// pool's capacity, so whatever the pool caches fits its reservation (apart
// from memory the trees keep after evictions; see budget_test.go).
//
// Every error for bad input is an *spec.InputError naming the field, the value
// and the bound; a failed call leaves the pool unchanged.
package prefix
