package mutants

import (
	"errors"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/spec"
)

// FullMaterializeStaleCurrent is docs/spec/cp-layout.md §7.5 historic bug 1: the
// prefix and the current suffix are both materialized from the persistent
// KV cache, so the current rows are whatever the cache slots hold (stale,
// or not yet written) instead of the fresh rows packed to FP8.
func FullMaterializeStaleCurrent() equiv.Killable {
	return &equiv.Mutant[spec.FP8ComposeCurrentInput, spec.FP8ComposeCurrentOutput]{
		Spec:    equiv.FP8ComposeCurrent(),
		ID:      "full-materialize-stale-current",
		Section: "cp-layout.md §7.5",
		About:   "current suffix read back from the cache slots (full materialize) instead of quantized from the fresh k rows",
		Fn: func(lim spec.Limits, in spec.FP8ComposeCurrentInput) (spec.FP8ComposeCurrentOutput, error) {
			out, err := fast.FP8ComposeCurrent(lim, in)
			if err != nil {
				return out, err
			}
			row := 0
			for b, ps := range in.PrefixSlots {
				row += len(ps)
				for _, s := range in.CurrentSlots[b] {
					copy(out.Rows.Row(row), in.Pool.Rows.Row(int(s)))
					row++
				}
			}
			return out, nil
		},
	}
}

// ContractMismatchAccepted is docs/spec/cp-layout.md §7.5 historic bug 2 turned
// around: a row count that does not match the declared contract is not
// rejected but the contract is inferred from the length (the rows taken as
// global valid rows), so a caller's contract confusion passes silently.
func ContractMismatchAccepted() equiv.Killable {
	return &equiv.Mutant[spec.FP8ComposeCurrentInput, spec.FP8ComposeCurrentOutput]{
		Spec:    equiv.FP8ComposeCurrent(),
		ID:      "contract-mismatch-accepted",
		Section: "cp-layout.md §7.5",
		About:   "a row count that contradicts the declared contract is accepted by inferring global valid rows from the length",
		Fn: func(lim spec.Limits, in spec.FP8ComposeCurrentInput) (spec.FP8ComposeCurrentOutput, error) {
			out, err := fast.FP8ComposeCurrent(lim, in)
			if !errors.Is(err, spec.ErrRowContract) {
				return out, err
			}
			in.Layout, in.Contract, in.M = nil, spec.ContractGlobalValid, 0
			return fast.FP8ComposeCurrent(lim, in)
		},
	}
}
