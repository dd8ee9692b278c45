package mutants

import (
	"slices"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// kvSnapshotPlants are kvev.snapshot plants: fast's own A12 encoder
// (fast/kvev_snapshot_encode.go) with one reach switch on. Since fast
// stopped writing its bytes through ref's encoder, an encoder bug is
// fast's alone, and the differential check must see it.
func kvSnapshotPlants(switches map[string]fault.KVEv) []reachPlant[spec.KVEvSnapshotInput, spec.KVEvSnapshotOutput] {
	var ps []reachPlant[spec.KVEvSnapshotInput, spec.KVEvSnapshotOutput]
	for name, f := range switches {
		newIndex := func(cfg spec.KVEvConfig, streams []spec.KVEvStream) (spec.KVEvIndex, error) {
			return fault.Installed().NewKVEvIndex(cfg, streams, f)
		}
		fn := func(lim spec.Limits, in spec.KVEvSnapshotInput) (spec.KVEvSnapshotOutput, error) {
			return ref.RunKVEvSnapshot(lim, in, newIndex, fast.RestoreKVEvIndex)
		}
		ps = append(ps, reachPlant[spec.KVEvSnapshotInput, spec.KVEvSnapshotOutput]{name: "fast: " + name, fn: fn})
	}
	slices.SortFunc(ps, func(a, b reachPlant[spec.KVEvSnapshotInput, spec.KVEvSnapshotOutput]) int {
		return strings.Compare(a.name, b.name)
	})
	return ps
}

// TestReachSnapshotEncoderOrders: a snapshot of pages with several
// children and with several bindings (§2.10 A12: children sorted by
// (namespace, tokens), bindings by hash), written by fast's own encoder.
// A restore refuses the unsorted bytes, so a plant fails the op itself.
func TestReachSnapshotEncoderOrders(t *testing.T) {
	reachClass[spec.KVEvSnapshotInput, spec.KVEvSnapshotOutput]{spec: equiv.KVEvSnapshot(), cases: 60, plants: kvSnapshotPlants(map[string]fault.KVEv{
		"a page's children are written in sibling order, unsorted": {SnapshotSiblingsUnsorted: true},
		"a page's bindings are written in pool order, unsorted":    {SnapshotBindingsUnsorted: true},
	})}.run(t)
}
