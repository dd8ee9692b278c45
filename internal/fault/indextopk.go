package fault

// IndexTopK selects the historic bug of the NSA index-topk config merge
// (docs/spec/admission-serving.md §S4.7) that
// Hooks.ConfigIndexTopKOverrides puts back; the zero value is the
// fixed merge. S4-B2 (the flags replace the JSON) is a wrapper in
// equiv/mutants: it drops the input's JSON.
type IndexTopK struct {
	// OffsetZeroInjected is docs/spec/admission-serving.md §S4.7 S4-B1:
	// --nsa-index-skip-topk-offset 0 is written literally as
	// index_skip_topk_offset 0 instead of meaning unset, so layer 0 of a
	// freq>1 plan becomes S.
	OffsetZeroInjected bool
}
