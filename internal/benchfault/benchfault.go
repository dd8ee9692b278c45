// Package benchfault names the historic admission-bench bugs that the fast
// bench can re-introduce for the bug zoo (equiv/mutants,
// docs/spec/admission-serving.md §A3.7). The package is internal, so nothing outside
// kvtwin can construct Faults and production benches never carry one.
package benchfault

// Faults selects the re-introduced bugs; the zero value is the fixed bench.
type Faults struct {
	// L2AsL1 is A3-B1: L2 host hits counted as L1 cached tokens, so no
	// load-back runs and no fake L2 load-back capacity is consumed.
	L2AsL1 bool
}
