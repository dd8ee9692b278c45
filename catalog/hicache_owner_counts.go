package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// HiCacheOwnerCounts registers hicache.owner_counts (docs/spec/radix-acks.md §4.1–§4.3): one
// node's page owners and its owner counts computed three ways. The
// owner-lane eviction plan is the plan_evict step of radix.script, which
// runs it on the trees themselves.
func HiCacheOwnerCounts() *Op[spec.HiCacheOwnerCountsInput, spec.HiCacheOwnerCountsOutput] {
	return &Op[spec.HiCacheOwnerCountsInput, spec.HiCacheOwnerCountsOutput]{
		OpName:  "hicache.owner_counts",
		SpecRef: "radix-acks.md §4.3",
		Summary: "CP owner page counts of one node: per-page owners, enumerated, metadata and closed-form counts",
		Ref:     ref.HiCacheOwnerCounts,
		Fast:    fast.HiCacheOwnerCounts,
		Sample:  spec.HiCacheOwnerCountsInput{CPSize: 4, PageSize: 1, TokenDepth: 3, Tokens: 6},
		Shapes: []Shape[spec.HiCacheOwnerCountsInput]{
			// The seed's 64K-token node; the per-page owner list dominates
			// both twins, so the ≥ 20× target is measured on the tree's
			// metadata (BenchmarkOwnerCounts64K in fast/).
			{Name: "64K-tokens-page-64-cp-8", Make: func() spec.HiCacheOwnerCountsInput {
				return spec.HiCacheOwnerCountsInput{CPSize: 8, PageSize: 64, TokenDepth: 65536, Tokens: 65536}
			}},
			{Name: "64K-tokens-page-1-cp-8", Make: func() spec.HiCacheOwnerCountsInput {
				return spec.HiCacheOwnerCountsInput{CPSize: 8, PageSize: 1, TokenDepth: 0, Tokens: 65536}
			}},
		},
	}
}
