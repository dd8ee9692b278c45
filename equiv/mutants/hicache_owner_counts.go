package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/spec"
)

// OwnerCountsRecounted is docs/spec/radix-acks.md §4.6 B4.a (historic, performance):
// the load-back planner recounted every scanned leaf's owner counts from
// its token tensor (padding it to pages) instead of reading the node's
// metadata, which stalled scheduler planning under shared-KV pressure.
// Plans are identical; owner_count_recomputations is 1 per scanned leaf
// instead of 0.
func OwnerCountsRecounted() equiv.Killable {
	return &equiv.Mutant[spec.RadixScriptInput, spec.RadixScriptOutput]{
		Spec:     equiv.RadixScript(),
		ID:       "owner-counts-recounted",
		Section:  "radix-acks.md §4.6 B4.a",
		About:    "the owner-lane planner recounts each scanned leaf's owner counts from its tokens instead of its metadata",
		Fn:       faultyScript(fault.Radix{RecountOwners: true}),
		Scenario: "equiv/testdata/owners_recount.txt",
	}
}

// SplitKeepsOwnerCounts is docs/spec/radix-acks.md §4.6 B4.b (designed regression
// guard): a split gives both halves the split node's owner counts, so a
// suffix claims pages it does not hold and a plan would admit a load it
// cannot serve. The fast tree's staleness check turns the lie into
// ErrMetadataStale; the observable counts differ from ref's either way.
func SplitKeepsOwnerCounts() equiv.Killable {
	return &equiv.Mutant[spec.RadixScriptInput, spec.RadixScriptOutput]{
		Spec:     equiv.RadixScript(),
		ID:       "split-keeps-owner-counts",
		Section:  "radix-acks.md §4.6 B4.b",
		About:    "a split keeps the node's owner counts on both halves instead of splitting them",
		Fn:       faultyScript(fault.Radix{SplitKeepsOwnerCounts: true}),
		Scenario: "equiv/testdata/owners_split.txt",
	}
}

// OwnerClosedFormGoMod is the pitfall docs/spec/radix-acks.md §4.2 warns about (the
// closed form needs a non-negative mod): written with Go's %, (r − s) % N is
// negative for r < s mod N, so those ranks always get the extra page.
func OwnerClosedFormGoMod() equiv.Killable {
	return &equiv.Mutant[spec.HiCacheOwnerCountsInput, spec.HiCacheOwnerCountsOutput]{
		Spec:    equiv.HiCacheOwnerCounts(),
		ID:      "owner-closed-form-go-mod",
		Section: "radix-acks.md §4.2",
		About:   "the owner-count closed form uses Go's signed % for (r − s) mod N: ranks below s mod N gain a page",
		Fn: func(lim spec.Limits, in spec.HiCacheOwnerCountsInput) (spec.HiCacheOwnerCountsOutput, error) {
			out, err := fast.HiCacheOwnerCounts(lim, in)
			if err != nil {
				return out, err
			}
			n, s := in.CPSize, out.StartPage
			for r := range n {
				c := int32(out.NumPages / n)
				if (r-s)%n < out.NumPages%n {
					c++
				}
				out.Metadata[r], out.ClosedForm[r] = c, c
			}
			return out, nil
		},
	}
}
