package prefix

import (
	"github.com/kvtwin/kvtwin/spec"
)

// Pool and registry sentinels. The server maps them to HTTP statuses:
// ErrUnknownPool is 404, ErrPoolExists, ErrTooManyPools, ErrBudget and
// ErrPoolFull are 409 (the request is fine but conflicts with the registry's
// or the pool's current state, so it may succeed later), ErrRequestTooLong
// is 413, and every other rejection is 400.
var (
	// ErrBadPoolName: a pool name outside ^[A-Za-z0-9._-]{1,64}$, or "." or "..".
	ErrBadPoolName = spec.NewSentinel("bad_pool_name", "pool name must be 1 to 64 of [A-Za-z0-9._-], not . or ..")
	// ErrUnknownPool: no pool has that name.
	ErrUnknownPool = spec.NewSentinel("unknown_pool", "no such pool")
	// ErrPoolExists: create with the name of a live pool.
	ErrPoolExists = spec.NewSentinel("pool_exists", "a pool with that name exists")
	// ErrTooManyPools: create when the registry already holds MaxPools pools.
	ErrTooManyPools = spec.NewSentinel("too_many_pools", "the registry holds its maximum number of pools")
	// ErrBadCapacity: capacity_tokens outside [page_size, MaxPoolCapacity].
	ErrBadCapacity = spec.NewSentinel("bad_capacity", "capacity_tokens out of range")
	// ErrRequestTooLong: a token list longer than MaxRequestTokens.
	ErrRequestTooLong = spec.NewSentinel("request_too_long", "token list longer than the per-request limit")
	// ErrExceedsCapacity: an insert whose whole pages alone exceed the pool's
	// capacity; it could never fit, whatever is evicted.
	ErrExceedsCapacity = spec.NewSentinel("exceeds_capacity", "insert is larger than the pool")
	// ErrPoolFull: the new suffix of an insert does not fit even after
	// evicting every unlocked leaf off the inserted path.
	ErrPoolFull = spec.NewSentinel("pool_full", "not enough free or evictable slots")
	// ErrDuplicatePool: a pool named twice in one score request.
	ErrDuplicatePool = spec.NewSentinel("duplicate_pool", "pool named twice")
	// ErrBudget: create when the pool's reservation (Config.ReservedBytes)
	// exceeds what the other pools left of Limits.MaxBytes. Deleting a pool
	// returns its reservation, so the same create may succeed later.
	ErrBudget = spec.NewSentinel("memory_budget", "the pool's memory reservation exceeds what is left of the budget")
	// ErrNamespaceTooLong: an insert whose extra or salt is longer than
	// MaxNamespaceBytes; every node stores its own copy of both.
	ErrNamespaceTooLong = spec.NewSentinel("namespace_too_long", "extra or salt longer than the namespace limit")
	// ErrBadLimits: a Registry limit below 1.
	ErrBadLimits = spec.NewSentinel("bad_limits", "registry limits must be >= 1")
)
