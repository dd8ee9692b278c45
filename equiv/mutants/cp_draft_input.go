package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// DraftCPLocalFromLength is the seed's rejected alternative to the SPEC_V2
// draft-input fix: infer the CP-local marker from the draft rows' length
// (CP-local iff the count is R(rank)). Under compute padding R(r) can equal
// Σ L_i, so global rows get marked CP-local and the padding guard masks
// real tokens.
func DraftCPLocalFromLength() equiv.Killable {
	return &equiv.Mutant[spec.CPDraftInputInput, spec.CPDraftInputOutput]{
		Spec:    equiv.CPDraftInput(),
		ID:      "draft-cp-local-from-length",
		Section: "seed SPEC_V2 draft input (cp-layout.md §2.4 contracts)",
		About:   "CP-local marker inferred from the row count: global rows with R(r) == Σ L are marked CP-local and real tokens masked",
		Fn: func(lim spec.Limits, in spec.CPDraftInputInput) (spec.CPDraftInputOutput, error) {
			out, err := fast.CPDraftInput(lim, in)
			if err != nil || in.Layout == nil {
				return out, err
			}
			lay, _ := in.Layout.Build()
			out.CPLocal = out.Hidden.N() == lay.R(in.Rank)
			out.Contract = spec.DraftGlobalValid
			if out.CPLocal {
				out.Contract = spec.DraftCPLocal
			}
			out.Guard = ref.DraftGuard(&lay, in.Rank, out.CPLocal, out.Hidden.N())
			return out, nil
		},
	}
}

// DraftV2GlobalHidden is the SPEC_V2 bug the seed fixed: the v2 draft
// extend for prefill passed the target's global hidden states and never
// marked the input CP-local, ignoring the model's CP-local draft hidden
// states (the non-v2 path already used them).
func DraftV2GlobalHidden() equiv.Killable {
	return &equiv.Mutant[spec.CPDraftInputInput, spec.CPDraftInputOutput]{
		Spec:    equiv.CPDraftInput(),
		ID:      "draft-v2-global-hidden",
		Section: "seed SPEC_V2 draft input",
		About:   "v2 draft input ignores the CP-local draft hidden states: global rows, marker never set",
		Fn: func(lim spec.Limits, in spec.CPDraftInputInput) (spec.CPDraftInputOutput, error) {
			if _, err := ref.ValidateCPDraftInput(lim, in); err != nil {
				return spec.CPDraftInputOutput{}, err
			}
			in.DraftHidden = nil
			return fast.CPDraftInput(lim, in)
		},
	}
}
