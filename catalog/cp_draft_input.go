package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// CPDraftInput registers cp.draft_input (the SPEC_V2 EAGLE draft input after
// a CP prefill; designed from the seed on docs/spec/cp-layout.md §2.4's contracts).
func CPDraftInput() *Op[spec.CPDraftInputInput, spec.CPDraftInputOutput] {
	return &Op[spec.CPDraftInputInput, spec.CPDraftInputOutput]{
		OpName:  "cp.draft_input",
		SpecRef: "cp-layout.md §2.4, §7.5 (contracts); seed SPEC_V2 draft input",
		Summary: "EAGLE draft input after a CP prefill: prefer CP-local draft hidden states, mark the input CP-local explicitly",
		Ref:     ref.CPDraftInput,
		Fast:    fast.CPDraftInput,
		Sample: spec.CPDraftInputInput{Layout: &spec.LayoutSpec{CP: 2, Lens: []int{2}, Granule: 1}, Rank: 0,
			Hidden: spec.Rows{W: 2, B: []byte{1, 2, 3, 4}}, HiddenContract: spec.DraftGlobalValid,
			DraftHidden: &spec.Rows{W: 2, B: []byte{5, 6, 0, 0}}},
		Shapes: []Shape[spec.CPDraftInputInput]{
			{Name: "bs10-cp8-128K-tokens-w256-draft-hidden", Make: func() spec.CPDraftInputInput {
				return draftShape(true)
			}},
			{Name: "bs10-cp8-128K-tokens-w256-global-hidden", Make: func() spec.CPDraftInputInput {
				return draftShape(false)
			}},
		},
	}
}

// draftShape is rank 3 of a cp=8, g=64 padded prefill of 10 requests of
// 12,800 tokens, with 256-byte hidden rows: global (128K rows) and, when
// draft, the rank's CP-local draft rows.
func draftShape(draft bool) spec.CPDraftInputInput {
	sp := spec.LayoutSpec{CP: 8, Lens: make([]int, 10), Granule: 64}
	for i := range sp.Lens {
		sp.Lens[i] = 12_800
	}
	lay, err := sp.Build()
	if err != nil {
		panic(err)
	}
	const w, rank = 256, 3
	in := spec.CPDraftInputInput{Layout: &sp, Rank: rank, HiddenContract: spec.DraftGlobalValid,
		Hidden: spec.Rows{W: w, B: make([]byte, lay.TotalValid()*w)}}
	if draft {
		in.DraftHidden = &spec.Rows{W: w, B: make([]byte, lay.R(rank)*w)}
	}
	return in
}
