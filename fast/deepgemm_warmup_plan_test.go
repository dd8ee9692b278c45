package fast_test

import (
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestDeepGEMMWarmupPlanSkipsSetsAndReflection: on a 64-kernel restart
// (every key a verified hit) the fast planner builds each category's grid
// once without a set and appends key preimages with strconv, saving at
// least 10 allocations per kernel over ref, which builds a set per grid
// and encodes each preimage by reflection. (Both twins share the manifest
// parse, which dominates what is left.)
func TestDeepGEMMWarmupPlanSkipsSetsAndReflection(t *testing.T) {
	in := catalog.DeepGEMMRestart(64)
	lim := spec.DefaultLimits()
	fastAllocs := testing.AllocsPerRun(10, func() { _, _ = fast.DeepGEMMWarmupPlan(lim, in) })
	refAllocs := testing.AllocsPerRun(10, func() { _, _ = ref.DeepGEMMWarmupPlan(lim, in) })
	if refAllocs-fastAllocs < 10*64 {
		t.Fatalf("fast planner: %.0f allocations, ref %.0f; want at least 640 fewer", fastAllocs, refAllocs)
	}
	t.Logf("allocations: fast %.0f, ref %.0f", fastAllocs, refAllocs)
}
