package spec

// DeepGEMM sentinels (§S3.2, §S3.7).
var (
	// ErrDGShape: n, k or num_groups below 1.
	ErrDGShape = NewSentinel("deepgemm_shape", "deepgemm: n, k and num_groups must be >= 1")
	// ErrDGEnv: an environment the JIT cannot be prepared from.
	ErrDGEnv = NewSentinel("deepgemm_env", "deepgemm: environment cannot be prepared")
	// ErrDGCacheEntry: a cache-listing entry that is not one valid child of the cache dir.
	ErrDGCacheEntry = NewSentinel("deepgemm_cache_entry", "deepgemm: invalid cache entry")
)
