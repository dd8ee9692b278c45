package ref

import (
	"fmt"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for cp.draft_input (docs/spec/cp-layout.md §2.4, §7.5 contracts): the input and its row contract.

// ValidateCPDraftInput checks in and returns its layout (nil without CP), in
// order: the layout, the rank, the hidden contract, the hidden rows (shape,
// then the contract's row count), the draft hidden rows (only with a
// layout; shape, then R(rank) rows). Row counts are checked against the
// declared contract only — never used to pick one.
func ValidateCPDraftInput(lim spec.Limits, in spec.CPDraftInputInput) (*spec.Layout, error) {
	var lay *spec.Layout
	if in.Layout != nil {
		l, err := BuildLayoutAt(lim, "layout", *in.Layout)
		if err != nil {
			return nil, err
		}
		lay = &l
		if err := lay.CheckRank("rank", in.Rank); err != nil {
			return nil, err
		}
	} else if in.Rank != 0 {
		return nil, spec.Reject(spec.ErrRank, "rank", in.Rank, "0 without a CP layout")
	}
	if err := checkDraftContract(in.HiddenContract, lay); err != nil {
		return nil, err
	}
	if err := in.Hidden.CheckShape("hidden"); err != nil {
		return nil, err
	}
	if lay != nil {
		if err := checkContractRows("hidden", in.Hidden, in.HiddenContract, lay, in.Rank); err != nil {
			return nil, err
		}
	}
	if in.DraftHidden != nil {
		if lay == nil {
			return nil, spec.Reject(spec.ErrRowContract, "draft_hidden", in.DraftHidden.N(), "null without a CP layout (CP-local rows need a CP forward)")
		}
		if err := in.DraftHidden.CheckShape("draft_hidden"); err != nil {
			return nil, err
		}
		if err := checkContractRows("draft_hidden", *in.DraftHidden, spec.DraftCPLocal, lay, in.Rank); err != nil {
			return nil, err
		}
	}
	return lay, nil
}

// checkDraftContract rejects an unknown contract (ErrBadEnum), and a
// CP-local one without a layout (ErrRowContract, as §7.5 does for
// LOCAL_COMPUTE_PADDED when the forward was not split).
func checkDraftContract(c spec.DraftContract, lay *spec.Layout) error {
	switch c {
	case spec.DraftGlobalValid:
		return nil
	case spec.DraftCPLocal:
		if lay == nil {
			return spec.Reject(spec.ErrRowContract, "hidden_contract", string(c), `"global-valid" without a CP layout`)
		}
		return nil
	}
	return spec.Reject(spec.ErrBadEnum, "hidden_contract", string(c), fmt.Sprintf("%q or %q", spec.DraftGlobalValid, spec.DraftCPLocal))
}

// checkContractRows rejects rows whose count is not contract c's, with
// ErrRowContract{contract, expected, got}.
func checkContractRows(field string, x spec.Rows, c spec.DraftContract, lay *spec.Layout, r int) error {
	if want := DraftContractRows(c, *lay, r); x.N() != want {
		return spec.Reject(spec.ErrRowContract, field, x.N(), fmt.Sprintf("contract %q: %d rows", c, want))
	}
	return nil
}
