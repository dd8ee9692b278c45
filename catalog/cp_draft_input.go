package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
)

// CPDraftInput registers cp.draft_input (the SPEC_V2 EAGLE draft input after
// a CP prefill; designed from the seed on docs/spec/cp-layout.md §2.4's contracts).
func CPDraftInput() *Op[ref.CPDraftInputInput, ref.CPDraftInputOutput] {
	return &Op[ref.CPDraftInputInput, ref.CPDraftInputOutput]{
		OpName:  "cp.draft_input",
		SpecRef: "cp-layout.md §2.4, §7.5 (contracts); seed SPEC_V2 draft input",
		Summary: "EAGLE draft input after a CP prefill: prefer CP-local draft hidden states, mark the input CP-local explicitly",
		Ref:     ref.CPDraftInput,
		Fast:    fast.CPDraftInput,
		Sample: ref.CPDraftInputInput{Layout: &ref.LayoutSpec{CP: 2, Lens: []int{2}, Granule: 1}, Rank: 0,
			Hidden: ref.Rows{W: 2, B: []byte{1, 2, 3, 4}}, HiddenContract: ref.DraftGlobalValid,
			DraftHidden: &ref.Rows{W: 2, B: []byte{5, 6, 0, 0}}},
		Shapes: []Shape[ref.CPDraftInputInput]{
			{Name: "bs10-cp8-128K-tokens-w256-draft-hidden", Make: func() ref.CPDraftInputInput {
				return draftShape(true)
			}},
			{Name: "bs10-cp8-128K-tokens-w256-global-hidden", Make: func() ref.CPDraftInputInput {
				return draftShape(false)
			}},
		},
	}
}

// draftShape is rank 3 of a cp=8, g=64 padded prefill of 10 requests of
// 12,800 tokens, with 256-byte hidden rows: global (128K rows) and, when
// draft, the rank's CP-local draft rows.
func draftShape(draft bool) ref.CPDraftInputInput {
	sp := ref.LayoutSpec{CP: 8, Lens: make([]int, 10), Granule: 64}
	for i := range sp.Lens {
		sp.Lens[i] = 12_800
	}
	lay, err := sp.Build()
	if err != nil {
		panic(err)
	}
	const w, rank = 256, 3
	in := ref.CPDraftInputInput{Layout: &sp, Rank: rank, HiddenContract: ref.DraftGlobalValid,
		Hidden: ref.Rows{W: w, B: make([]byte, lay.TotalValid()*w)}}
	if draft {
		in.DraftHidden = &ref.Rows{W: w, B: make([]byte, lay.R(rank)*w)}
	}
	return in
}
