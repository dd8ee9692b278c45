package ref

import (
	"fmt"
	"strings"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for deepgemm.warmup_plan (docs/spec/admission-serving.md §S3): warmup input, kernels and cache entries.

// ValidateDeepGEMMWarmupPlan checks in, in contract order: the scalars
// (masked_m_max, alignment), each kernel (type, n, k, num_groups, compiled
// names), then the cache listing (names, duplicates, sizes). The
// environment is checked by PrepareDeepGEMMEnv afterwards.
func ValidateDeepGEMMWarmupPlan(in spec.DeepGEMMWarmupPlanInput) error {
	if in.MaskedMMax < 0 || in.MaskedMMax > spec.DeepGEMMMaxM {
		return spec.Reject(spec.ErrConfig, "masked_m_max", in.MaskedMMax, fmt.Sprintf("in [1, %d], or 0 for m_max", spec.DeepGEMMMaxM))
	}
	if in.Alignment < 1 {
		return spec.Reject(spec.ErrConfig, "alignment", in.Alignment, ">= 1 (DeepGEMM's mk alignment, 128)")
	}
	for i, k := range in.Kernels {
		if err := validateDGKernel(spec.Idx("kernels", i), k); err != nil {
			return err
		}
	}
	return validateDeepGEMMCache("cache", in.Cache)
}

func validateDGKernel(field string, k spec.DeepGEMMKernel) error {
	switch k.KernelType {
	case spec.KernelGEMMNT, spec.KernelGroupedMasked, spec.KernelGroupedContig:
	default:
		return spec.Reject(spec.ErrBadEnum, field+".kernel_type", k.KernelType,
			fmt.Sprintf("%s, %s or %s", spec.KernelGEMMNT, spec.KernelGroupedMasked, spec.KernelGroupedContig))
	}
	for _, d := range []struct {
		name string
		v    int64
	}{{"n", k.N}, {"k", k.K}, {"num_groups", k.NumGroups}} {
		if d.v < 1 {
			return spec.Reject(spec.ErrDGShape, field+"."+d.name, d.v, ">= 1")
		}
	}
	for j, name := range k.Compiles {
		if err := checkDGCacheName(spec.Idx(field+".compiles", j), name); err != nil {
			return err
		}
	}
	return nil
}

// checkDGCacheName rejects a name that is not one immediate child of a
// directory.
func checkDGCacheName(field, name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return spec.Reject(spec.ErrDGCacheEntry, field, name, `a directory entry name (non-empty, no '/', not "." or "..")`)
	}
	return nil
}

// validateDeepGEMMCache checks a cache listing: valid names, each once, a
// file with exactly one size, and no negative size.
func validateDeepGEMMCache(field string, cache []spec.DeepGEMMCacheEntry) error {
	seen := make(map[string]bool, len(cache))
	for i, e := range cache {
		f := spec.Idx(field, i)
		if err := checkDGCacheName(f+".name", e.Name); err != nil {
			return err
		}
		if seen[e.Name] {
			return spec.Reject(spec.ErrDGCacheEntry, f+".name", e.Name, "each name once")
		}
		seen[e.Name] = true
		if !e.Dir && len(e.Sizes) != 1 {
			return spec.Reject(spec.ErrLengthMismatch, f+".sizes", len(e.Sizes), "exactly 1 size for a regular file")
		}
		for j, s := range e.Sizes {
			if s < 0 {
				return spec.Reject(spec.ErrNegative, spec.Idx(f+".sizes", j), s, ">= 0")
			}
		}
	}
	return nil
}
