package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
)

// CPCanSplit registers cp.can_split (docs/spec/cp-layout.md §5).
func CPCanSplit() *Op[ref.CPCanSplitInput, ref.CPCanSplitOutput] {
	return &Op[ref.CPCanSplitInput, ref.CPCanSplitOutput]{
		OpName:  "cp.can_split",
		SpecRef: "cp-layout.md §5",
		Summary: "whether a forward is CP-split (eligibility before page-plan validation) and its layout",
		Ref:     ref.CPCanSplit,
		Fast:    fast.CPCanSplit,
		Sample: ref.CPCanSplitInput{Mode: ref.ModeExtend, CPEnabled: true, CPSize: 2, UsesCPSharedKV: true,
			BatchSize: 2, ExtendLens: []int{3, 9}, PrefixLens: []int{0, 64}, PageSize: 64},
		Shapes: []Shape[ref.CPCanSplitInput]{
			{Name: "bs10-cp8-shared-kv-extend", Make: func() ref.CPCanSplitInput {
				return canSplitShape(ref.ModeExtend, 10, 8, 100_000)
			}},
			{Name: "bs10-cp8-target-verify", Make: func() ref.CPCanSplitInput {
				in := canSplitShape(ref.ModeTargetVerify, 10, 8, 4)
				in.PrefixLens, in.SeqLens = nil, nil
				return in
			}},
		},
	}
}

// canSplitShape is a shared-KV forward of bs requests of about l tokens
// each, behind page-aligned prefixes.
func canSplitShape(mode ref.ForwardMode, bs, cp, l int) ref.CPCanSplitInput {
	in := ref.CPCanSplitInput{Mode: mode, CPEnabled: true, CPSize: cp, UsesCPSharedKV: true, BatchSize: bs, PageSize: 64}
	for i := range bs {
		e, p := l+37*i, 64*(i%4)
		in.ExtendLens, in.PrefixLens, in.SeqLens = append(in.ExtendLens, e), append(in.PrefixLens, p), append(in.SeqLens, p+e)
	}
	return in
}
