package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// CPCanSplit registers cp.can_split (docs/spec/cp-layout.md §5).
func CPCanSplit() *Op[spec.CPCanSplitInput, spec.CPCanSplitOutput] {
	return &Op[spec.CPCanSplitInput, spec.CPCanSplitOutput]{
		OpName:  "cp.can_split",
		SpecRef: "cp-layout.md §5",
		Summary: "whether a forward is CP-split (eligibility before page-plan validation) and its layout",
		Ref:     ref.CPCanSplit,
		Fast:    fast.CPCanSplit,
		Sample: spec.CPCanSplitInput{Mode: spec.ModeExtend, CPEnabled: true, CPSize: 2, UsesCPSharedKV: true,
			BatchSize: 2, ExtendLens: []int{3, 9}, PrefixLens: []int{0, 64}, PageSize: 64},
		Shapes: []Shape[spec.CPCanSplitInput]{
			{Name: "bs10-cp8-shared-kv-extend", Make: func() spec.CPCanSplitInput {
				return canSplitShape(spec.ModeExtend, 10, 8, 100_000)
			}},
			{Name: "bs10-cp8-target-verify", Make: func() spec.CPCanSplitInput {
				in := canSplitShape(spec.ModeTargetVerify, 10, 8, 4)
				in.PrefixLens, in.SeqLens = nil, nil
				return in
			}},
		},
	}
}

// canSplitShape is a shared-KV forward of bs requests of about l tokens
// each, behind page-aligned prefixes.
func canSplitShape(mode spec.ForwardMode, bs, cp, l int) spec.CPCanSplitInput {
	in := spec.CPCanSplitInput{Mode: mode, CPEnabled: true, CPSize: cp, UsesCPSharedKV: true, BatchSize: bs, PageSize: 64}
	for i := range bs {
		e, p := l+37*i, 64*(i%4)
		in.ExtendLens, in.PrefixLens, in.SeqLens = append(in.ExtendLens, e), append(in.PrefixLens, p), append(in.SeqLens, p+e)
	}
	return in
}
