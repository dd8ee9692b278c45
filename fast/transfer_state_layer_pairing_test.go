package fast_test

import (
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/spec"
)

// TestTransferStateLayerPairingTakesTheSliceFastPaths checks the fast paths were
// taken: identical id lists pair i↔i with the pairs as the only allocation;
// reordered lists add exactly one scratch slice (the two sorted index
// orders), so no map or per-id queue is built.
func TestTransferStateLayerPairingTakesTheSliceFastPaths(t *testing.T) {
	for _, c := range []struct {
		shape  int
		allocs float64
	}{{0, 1}, {1, 2}, {2, 2}} {
		sh := catalog.TransferStateLayerPairing().Shapes[c.shape]
		in := sh.Make()
		in.Index = nil // the index plan is ref's shared validation
		if _, err := fast.TransferStateLayerPairing(spec.DefaultLimits(), in); err != nil {
			t.Fatalf("%s: %v", sh.Name, err)
		}
		allocs := testing.AllocsPerRun(50, func() { _, _ = fast.TransferStateLayerPairing(spec.DefaultLimits(), in) })
		if allocs != c.allocs {
			t.Errorf("%s: %v allocations per call, want %v", sh.Name, allocs, c.allocs)
		}
	}
}

func BenchmarkStateLayerPairing(b *testing.B) {
	benchOp(b, catalog.TransferStateLayerPairing().Benchmarks())
}
