package fast_test

import (
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestConfigIndexTopKOverridesScansOnce: on a 256-key launch override the
// fast merge allocates only its buffers (compact copy, the growing span
// list, the sort index, output, warnings: about 40), never per member,
// where ref's token decoder allocates several times per member (~2400).
func TestConfigIndexTopKOverridesScansOnce(t *testing.T) {
	var in spec.ConfigIndexTopKOverridesInput
	for _, s := range catalog.ConfigIndexTopKOverrides().Shapes {
		if s.Name == "glm5-pattern-256-key-override" {
			in = s.Make()
		}
	}
	lim := spec.DefaultLimits()
	fastAllocs := testing.AllocsPerRun(20, func() { _, _ = fast.ConfigIndexTopKOverrides(lim, in) })
	refAllocs := testing.AllocsPerRun(20, func() { _, _ = ref.ConfigIndexTopKOverrides(lim, in) })
	if fastAllocs > 64 || fastAllocs*10 > refAllocs {
		t.Fatalf("fast merge: %.0f allocations, ref %.0f; want <= 64 and under a tenth of ref's", fastAllocs, refAllocs)
	}
}
