// Package topkfault names the historic bugs of the index-topk config merge
// (docs/spec/admission-serving.md §S4.7) that the fast merge can re-introduce for the
// bug zoo (equiv/mutants). The package is internal, so production merges
// never carry a fault.
package topkfault

// Faults selects the re-introduced bugs; the zero value is the fixed merge.
type Faults struct {
	// OffsetZeroInjected is S4-B1: --nsa-index-skip-topk-offset 0 is
	// written literally as index_skip_topk_offset 0 instead of meaning
	// unset, so layer 0 of a freq>1 plan becomes S.
	OffsetZeroInjected bool
	// FlagsReplaceJSON is S4-B2: the flags build a fresh object and the
	// --json-model-override-args keys are lost.
	FlagsReplaceJSON bool
}
