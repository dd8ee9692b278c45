package ref

import (
	"fmt"
	"strings"
)

// Validation for deepgemm.warmup_plan (docs/spec/admission-serving.md §S3): warmup input, kernels and cache entries.

// DeepGEMM sentinels (§S3.2, §S3.7).
var (
	// ErrDGShape: n, k or num_groups below 1.
	ErrDGShape = NewSentinel("deepgemm_shape", "deepgemm: n, k and num_groups must be >= 1")
	// ErrDGEnv: an environment the JIT cannot be prepared from.
	ErrDGEnv = NewSentinel("deepgemm_env", "deepgemm: environment cannot be prepared")
	// ErrDGCacheEntry: a cache-listing entry that is not one valid child of the cache dir.
	ErrDGCacheEntry = NewSentinel("deepgemm_cache_entry", "deepgemm: invalid cache entry")
)

// ValidateDeepGEMMWarmupPlan checks in, in contract order: the scalars
// (masked_m_max, alignment), each kernel (type, n, k, num_groups, compiled
// names), then the cache listing (names, duplicates, sizes). The
// environment is checked by PrepareDeepGEMMEnv afterwards.
func ValidateDeepGEMMWarmupPlan(in DeepGEMMWarmupPlanInput) error {
	if in.MaskedMMax < 0 || in.MaskedMMax > DeepGEMMMaxM {
		return Reject(ErrConfig, "masked_m_max", in.MaskedMMax, fmt.Sprintf("in [1, %d], or 0 for m_max", DeepGEMMMaxM))
	}
	if in.Alignment < 1 {
		return Reject(ErrConfig, "alignment", in.Alignment, ">= 1 (DeepGEMM's mk alignment, 128)")
	}
	for i, k := range in.Kernels {
		if err := validateDGKernel(Idx("kernels", i), k); err != nil {
			return err
		}
	}
	return validateDeepGEMMCache("cache", in.Cache)
}

func validateDGKernel(field string, k DeepGEMMKernel) error {
	switch k.KernelType {
	case KernelGEMMNT, KernelGroupedMasked, KernelGroupedContig:
	default:
		return Reject(ErrBadEnum, field+".kernel_type", k.KernelType,
			fmt.Sprintf("%s, %s or %s", KernelGEMMNT, KernelGroupedMasked, KernelGroupedContig))
	}
	for _, d := range []struct {
		name string
		v    int64
	}{{"n", k.N}, {"k", k.K}, {"num_groups", k.NumGroups}} {
		if d.v < 1 {
			return Reject(ErrDGShape, field+"."+d.name, d.v, ">= 1")
		}
	}
	for j, name := range k.Compiles {
		if err := checkDGCacheName(Idx(field+".compiles", j), name); err != nil {
			return err
		}
	}
	return nil
}

// checkDGCacheName rejects a name that is not one immediate child of a
// directory.
func checkDGCacheName(field, name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return Reject(ErrDGCacheEntry, field, name, `a directory entry name (non-empty, no '/', not "." or "..")`)
	}
	return nil
}

// validateDeepGEMMCache checks a cache listing: valid names, each once, a
// file with exactly one size, and no negative size.
func validateDeepGEMMCache(field string, cache []DeepGEMMCacheEntry) error {
	seen := make(map[string]bool, len(cache))
	for i, e := range cache {
		f := Idx(field, i)
		if err := checkDGCacheName(f+".name", e.Name); err != nil {
			return err
		}
		if seen[e.Name] {
			return Reject(ErrDGCacheEntry, f+".name", e.Name, "each name once")
		}
		seen[e.Name] = true
		if !e.Dir && len(e.Sizes) != 1 {
			return Reject(ErrLengthMismatch, f+".sizes", len(e.Sizes), "exactly 1 size for a regular file")
		}
		for j, s := range e.Sizes {
			if s < 0 {
				return Reject(ErrNegative, Idx(f+".sizes", j), s, ">= 0")
			}
		}
	}
	return nil
}
