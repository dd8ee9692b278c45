package fast_test

import (
	"testing"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// BenchmarkOwnerCounts64K is the owner-count target (docs/spec/radix-acks.md
// §4.3, §4.6 B4.a): one 64K-token node (page size 64, 1,024 pages) at
// token depth 64K under CP size 8. "metadata" reads the node's stored
// counts (the fixed planner, O(1)); "recount" is the same call on a tree
// with the B4.a fault, which recounts from the tokens (depth walk, page
// padding, per-page owner: the old path, O(pages)); "closed-form" is §4.2's
// O(N) formula. Target: metadata ≥ 20× faster than recount.
func BenchmarkOwnerCounts64K(b *testing.B) {
	for _, c := range []struct {
		name string
		f    fault.Radix
	}{{"metadata", fault.Radix{}}, {"recount", fault.Radix{RecountOwners: true}}} {
		b.Run("impl="+c.name, func(b *testing.B) {
			tr, leaf := ownerBenchTree(b, c.f)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tr.OwnerCounts(leaf, 8); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("impl=closed-form", func(b *testing.B) {
		dst := make([]int32, 8)
		for b.Loop() {
			ref.ClosedFormCounts(1024, 1024, 8, dst)
		}
	})
}

// ownerBenchTree holds a 64K-token node below a 64K-token parent and
// returns the tree and the node's id.
func ownerBenchTree(b *testing.B, f fault.Radix) (*fast.RadixTree, spec.NodeID) {
	tr := faultyTree(b, spec.TreeConfig{PageSize: 64, CPSize: 8}, f)
	k, _ := benchKey(2 * 65536)
	insertUnits(b, tr, k.Units[:65536]...)
	insertUnits(b, tr, k.Units...)
	return tr, 2
}

// BenchmarkOwnerPlan10KLeaves is docs/spec/radix-acks.md §4.7's plan shape: 10,000
// evictable leaves of 1,024 pages (page size 1) under CP size 8, and a dry
// run whose lane-0 deficit no set of leaves covers, so every leaf is
// scanned; the leaves' LRU order is scrambled. ref recounts each scanned leaf from its tokens (about 10 M page
// visits per plan); fast reads metadata (about 80 K lane operations, plus
// the heap).
func BenchmarkOwnerPlan10KLeaves(b *testing.B) {
	const leaves, pages, cp = 10000, 1024, 8
	need, free := make([]int, cp), make([]int, cp)
	need[0] = leaves * pages
	req := spec.OwnerPlanRequest{Need: need, Free: free, DryRun: true}
	for _, impl := range benchImpls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			tr, err := impl.new(spec.TreeConfig{PageSize: 1, CPSize: cp})
			if err != nil {
				b.Fatal(err)
			}
			units := make([]spec.Unit, pages)
			for i := range leaves {
				for j := range units {
					units[j] = spec.Unit(i*pages + j)
				}
				insertUnits(b, tr, units...)
			}
			// Touch the leaves in a scrambled order (i·7919 mod 10,000 is a
			// permutation), so the LRU order is not the insertion order.
			for i := range leaves {
				for j := range units {
					units[j] = spec.Unit(i*7919%leaves*pages + j)
				}
				if _, err := tr.MatchPrefix(spec.RadixKey{Units: units}); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for b.Loop() {
				p, err := tr.EvictOwnerLanes(req)
				if err != nil || len(p.Victims) != leaves {
					b.Fatalf("%d victims, %v", len(p.Victims), err)
				}
			}
			b.ReportMetric(float64(leaves), "leaves-scanned/op")
		})
	}
}
