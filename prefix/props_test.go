package prefix_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/prefix"
	"github.com/kvtwin/kvtwin/spec"
)

// TestPoolInvariantsHoldUnderRandomOperations drives small pools with random
// inserts, matches, locks, unlocks and evictions and checks after every step
// that the pool agrees with its tree (node count, used slots, distinct
// in-range slots, the tree's own invariants), that a cached key matches
// the slots its insert returned, and that every failed call changed nothing.
func TestPoolInvariantsHoldUnderRandomOperations(t *testing.T) {
	eachTree(t, func(t *testing.T, newTree spec.NewRadixTreeFunc) {
		rapid.Check(t, func(rt *rapid.T) {
			ps := rapid.SampledFrom([]int{1, 2, 4}).Draw(rt, "page_size")
			cfg := prefix.Config{
				PageSize:       ps,
				CapacityTokens: rapid.IntRange(ps, 24).Draw(rt, "capacity"),
				Eagle:          rapid.Bool().Draw(rt, "eagle"),
				Policy:         rapid.SampledFrom([]spec.EvictPolicy{"", spec.PolicyLRU, spec.PolicyMRU, spec.PolicyFIFO, spec.PolicyPriority}).Draw(rt, "policy"),
			}
			p, tree := newPool(t, newTree, cfg)
			var locked []spec.NodeID
			tokens := rapid.SliceOfN(rapid.Int64Range(0, 3), 0, 14)
			for range rapid.IntRange(1, 40).Draw(rt, "steps") {
				before, stats := tree.State(), p.Stats()
				var err error
				switch rapid.IntRange(0, 4).Draw(rt, "op") {
				case 0:
					k := tokens.Draw(rt, "insert")
					var r prefix.InsertResult
					if r, err = p.Insert(k, noExtra, rapid.IntRange(0, 3).Draw(rt, "priority")); err == nil && len(r.Slots) > 0 {
						m, _ := p.Match(k, noExtra, false)
						if !cmp.Equal(m.Slots, r.Slots) {
							rt.Fatalf("match after insert %v: slots %v, the insert stored %v", k, m.Slots, r.Slots)
						}
					}
				case 1:
					var m prefix.MatchResult
					if m, err = p.Match(tokens.Draw(rt, "match"), noExtra, rapid.Bool().Draw(rt, "lock")); m.Locked {
						locked = append(locked, m.LastNode)
					}
				case 2:
					node := spec.NodeID(rapid.IntRange(0, 12).Draw(rt, "lock"))
					if _, err = p.Lock(node); err == nil {
						locked = append(locked, node)
					}
				case 3:
					if len(locked) > 0 && rapid.Bool().Draw(rt, "valid unlock") {
						i := rapid.IntRange(0, len(locked)-1).Draw(rt, "unlock")
						_, err = p.Unlock(locked[i])
						if err != nil {
							rt.Fatalf("unlock of a held lock on %d: %v", locked[i], err)
						}
						locked = slices.Delete(locked, i, i+1)
					} else {
						node := spec.NodeID(rapid.IntRange(0, 12).Draw(rt, "unlock"))
						if _, err = p.Unlock(node); err == nil {
							i := slices.Index(locked, node)
							if i < 0 && node != 0 { // the root is always locked; its unlock is a no-op
								rt.Fatalf("unlock of %d, never locked, succeeded", node)
							}
							if i >= 0 {
								locked = slices.Delete(locked, i, i+1)
							}
						}
					}
				case 4:
					_, err = p.Evict(rapid.IntRange(0, 8).Draw(rt, "evict"))
				}
				if err != nil {
					if _, ok := spec.AsInputError(err); !ok {
						rt.Fatalf("not an input error: %v", err)
					}
					if diff := cmp.Diff(before, tree.State()); diff != "" {
						rt.Fatalf("failed call (%v) changed the tree:\n%s", err, diff)
					}
					if diff := cmp.Diff(stats, p.Stats()); diff != "" {
						rt.Fatalf("failed call (%v) changed the stats:\n%s", err, diff)
					}
				}
				checkConsistent(rt, p, tree)
			}
		})
	})
}
