// Package mutants is kvtwin's bug zoo: each historic bug the engineering
// notes describe, put back into the fast twin. The differential suite must
// kill every one (TestMutantsAreKilled), and each has a named regression
// fixture holding its minimal distinguishing input.
//
// A mutant is a wrapper or a switch, never a copy of fast code
// (docs/adding-an-op.md, "Mutants: a switch or a wrapper"):
//
//   - a wrapper, when the bug can be reproduced from a production
//     function's inputs and outputs, calls fast's exported production
//     function and rewrites its input or its output exactly as the historic
//     code behaved (serving_error_body.go's S1-B1..B4,
//     transfer_prebuilt_slice.go, admission_bench.go);
//   - a switch, when the bug lives inside a stateful type or in the middle
//     of an algorithm where no wrapper can reach, sets a flag of the
//     family's struct in internal/fault and calls the one hook for that
//     type or op, fast's unexported <production>WithFaults, which fast
//     hands to this package through internal/fault's table (fault.Hooks,
//     read with fault.Installed): the production function's parameters
//     followed by f fault.<Family>, returning what the production function
//     returns (fault.Installed().NewRadixTree(cfg, f) in radix_script.go,
//     fault.Installed().AdmissionRound(lim, in, f) in admission_round.go).
package mutants

import (
	"slices"
	"strings"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/spec"
)

// MaxCases is how many generated cases a mutant may survive before the
// suite is judged too weak to catch it.
const MaxCases = 1000

// All returns every mutant, grouped by op in catalog (name) order. The list
// is generated (all_gen.go, `make generate`): every exported, parameterless
// func of this package returning equiv.Killable is a mutant, of the op whose
// spec constructor (equiv.X()) it builds on; within an op, the mutants of the
// file named like the spec's file come first, then by file, each file in
// declaration order.
func All() []equiv.Killable {
	zoo := generatedMutants()
	slices.SortStableFunc(zoo, func(a, b equiv.Killable) int { return strings.Compare(a.Op(), b.Op()) })
	return zoo
}

// switched binds the fault value f to one of fast's hooks (a field of
// fault.Installed()), giving the production function's shape with the bug
// switched on.
func switched[In, Out, F any](hook func(spec.Limits, In, F) (Out, error), f F) func(spec.Limits, In) (Out, error) {
	return func(lim spec.Limits, in In) (Out, error) { return hook(lim, in, f) }
}
