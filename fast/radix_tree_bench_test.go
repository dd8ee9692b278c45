package fast_test

import (
	"bytes"
	"fmt"
	"testing"
	"unsafe"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// benchImpls are the twins every radix benchmark compares.
var benchImpls = []struct {
	name string
	new  spec.NewRadixTreeFunc
}{{"ref", ref.NewRadixTree}, {"fast", fast.NewRadixTree}}

// benchKey is an n-token sequence with distinct-looking tokens and its
// slots.
func benchKey(n int) (spec.RadixKey, []spec.SlotIdx) {
	k := spec.RadixKey{Units: make([]spec.Unit, n)}
	v := make([]spec.SlotIdx, n)
	for i := range k.Units {
		k.Units[i] = spec.Unit(i*7919) % 50000
		v[i] = spec.SlotIdx(i)
	}
	return k, v
}

// benchPath stores an n-unit sequence as a k-node root-to-leaf path at
// page size ps by inserting its prefixes of page-floored length n·i/k for
// i = 1..k (docs/spec/radix-acks.md §1.12). In Eagle mode the key has n+1 tokens, so
// its n bigrams are the stored units.
func benchPath(b *testing.B, newTree spec.NewRadixTreeFunc, n, k, ps int, eagle bool) (spec.RadixTree, spec.RadixKey, []spec.SlotIdx) {
	b.Helper()
	tr, err := newTree(spec.TreeConfig{PageSize: ps, Eagle: eagle})
	if err != nil {
		b.Fatal(err)
	}
	extra := 0
	if eagle {
		extra = 1
	}
	key, value := benchKey(n + extra)
	pages := n / ps
	for i := 1; i <= k; i++ {
		end := pages*i/k*ps + extra
		if _, err := tr.Insert(spec.RadixKey{Units: key.Units[:end]}, value[:end], 0); err != nil {
			b.Fatal(err)
		}
	}
	if got := len(tr.State().Nodes) - 1; got != k {
		b.Fatalf("built %d nodes, want %d", got, k)
	}
	return tr, key, value
}

// reportCopied adds the fast tree's copied-units/op metric.
func reportCopied(b *testing.B, tr spec.RadixTree, before int64) {
	if f, ok := tr.(*fast.RadixTree); ok {
		b.ReportMetric(float64(f.CopiedUnits()-before)/float64(b.N), "copied-units/op")
	}
}

// copiedNow is the fast tree's CopiedUnits (0 for ref).
func copiedNow(tr spec.RadixTree) int64 {
	if f, ok := tr.(*fast.RadixTree); ok {
		return f.CopiedUnits()
	}
	return 0
}

// benchFullHit benchmarks full-hit matches of an n-unit sequence stored as
// a k-node path: MatchPrefix on each twin, and MatchPrefixAppend into a
// reused buffer on the fast tree (0 allocs/op).
func benchFullHit(b *testing.B, n, k int, eagle bool) {
	for _, impl := range benchImpls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			tr, key, _ := benchPath(b, impl.new, n, k, 64, eagle)
			before := copiedNow(tr)
			b.ReportAllocs()
			for b.Loop() {
				if r, err := tr.MatchPrefix(key); err != nil || len(r.Indices) != n {
					b.Fatalf("matched %d, %v", len(r.Indices), err)
				}
			}
			reportCopied(b, tr, before)
		})
	}
	b.Run("impl=fast-append", func(b *testing.B) {
		tr, key, _ := benchPath(b, fast.NewRadixTree, n, k, 64, eagle)
		f := tr.(*fast.RadixTree)
		buf := make([]spec.SlotIdx, 0, n)
		before := f.CopiedUnits()
		b.ReportAllocs()
		for b.Loop() {
			out, _, err := f.MatchPrefixAppend(buf[:0], key)
			if err != nil || len(out) != n {
				b.Fatalf("matched %d, %v", len(out), err)
			}
		}
		reportCopied(b, tr, before)
	})
	b.Run("impl=fast-view", func(b *testing.B) {
		tr, key, _ := benchPath(b, fast.NewRadixTree, n, k, 64, eagle)
		f := tr.(*fast.RadixTree)
		var segs [][]spec.SlotIdx
		b.ReportAllocs()
		for b.Loop() {
			v, err := f.MatchPrefixView(segs, key)
			if err != nil || v.Len() != n {
				b.Fatalf("matched %d, %v", v.Len(), err)
			}
			segs, _ = v.Segments()
		}
	})
	if !eagle {
		b.Run("yardstick=compare+copy", func(b *testing.B) { benchFullHitFloor(b, n, true) })
		// The view's floor: it copies no slots, but still compares.
		b.Run("yardstick=compare", func(b *testing.B) { benchFullHitFloor(b, n, false) })
	}
}

// benchFullHitFloor is the memory traffic a full-hit match of n tokens
// cannot avoid with 8-byte units and 8-byte slots, as plain Go: comparing
// the query's n units with n stored units (bytes.Equal, the runtime's
// vectorised memequal) and, with copySlots, copying n slots into a buffer
// (copy). No tree can answer a full hit in less on the same machine, so
// the match's target is read against this row of the same run (the
// view's against the compare alone).
func benchFullHitFloor(b *testing.B, n int, copySlots bool) {
	query, stored := make([]spec.Unit, n), make([]spec.Unit, n)
	for i := range query {
		query[i] = spec.Unit(i % 50000)
		stored[i] = query[i]
	}
	slots, buf := make([]spec.SlotIdx, n), make([]spec.SlotIdx, n)
	for i := range slots {
		slots[i] = spec.SlotIdx(i)
	}
	qb := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(query))), 8*n)
	sb := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(stored))), 8*n)
	b.SetBytes(int64(8 * n))
	for b.Loop() {
		if !bytes.Equal(qb, sb) || copySlots && copy(buf, slots) != n {
			b.Fatal("yardstick: unequal")
		}
	}
}

// BenchmarkMatchFullHit64K is §1.12's shape: 65,536 tokens at page size 64
// stored as a 16- or 128-node path, a full-hit match of the whole key.
func BenchmarkMatchFullHit64K(b *testing.B) {
	for _, k := range []int{16, 128} {
		b.Run(fmt.Sprintf("nodes=%d", k), func(b *testing.B) { benchFullHit(b, 1<<16, k, false) })
	}
}

// BenchmarkMatchFullHitEagle64K is the 128-node shape in an Eagle tree: the
// query is 65,537 tokens viewed as 65,536 bigrams without materializing
// them, compared pair by pair against the stored packed keys.
func BenchmarkMatchFullHitEagle64K(b *testing.B) {
	b.Run("nodes=128", func(b *testing.B) { benchFullHit(b, 1<<16, 128, true) })
}

// BenchmarkMatchFullHit240K is the llm-d shape: 240,000 tokens (3,750 pages
// of 64) stored as one path of 16 nodes (inserted in 16 page-floored
// chunks), a full-hit match.
func BenchmarkMatchFullHit240K(b *testing.B) { benchFullHit(b, 240_000, 16, false) }

// BenchmarkRadixMatchZeroFaults pins what the bug-zoo switches cost the
// hottest path, the radix walk: a full-hit MatchPrefixAppend (0 allocs/op)
// on the production tree (NewRadixTree) and on newRadixTreeWithFaults(cfg,
// fault.Radix{}) with the same shape. The walk reads one fault flag per hop
// (RadixTree.rest); the two trees run the same code and must not differ
// measurably. Shapes: §1.12's 64K tokens as 128 nodes of 512, and 4,096
// one-unit nodes at page size 1, where the per-hop check weighs most.
func BenchmarkRadixMatchZeroFaults(b *testing.B) {
	trees := []struct {
		name string
		new  spec.NewRadixTreeFunc
	}{
		{"production", fast.NewRadixTree},
		{"zero-faults", func(cfg spec.TreeConfig) (spec.RadixTree, error) {
			return fault.Installed().NewRadixTree(cfg, fault.Radix{})
		}},
	}
	for _, shape := range []struct{ n, k, ps int }{{1 << 16, 128, 64}, {4096, 4096, 1}} {
		b.Run(fmt.Sprintf("tokens=%d/nodes=%d", shape.n, shape.k), func(b *testing.B) {
			for _, tree := range trees {
				b.Run("tree="+tree.name, func(b *testing.B) {
					tr, key, _ := benchPath(b, tree.new, shape.n, shape.k, shape.ps, false)
					f := tr.(*fast.RadixTree)
					buf := make([]spec.SlotIdx, 0, shape.n)
					b.ReportAllocs()
					for b.Loop() {
						out, _, err := f.MatchPrefixAppend(buf[:0], key)
						if err != nil || len(out) != shape.n {
							b.Fatalf("matched %d, %v", len(out), err)
						}
					}
				})
			}
		})
	}
}

// BenchmarkPrefixLen240K is the read-only router score of the same 240K,
// 16-node path.
func BenchmarkPrefixLen240K(b *testing.B) {
	for _, impl := range benchImpls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			tr, key, _ := benchPath(b, impl.new, 240_000, 16, 64, false)
			b.ReportAllocs()
			for b.Loop() {
				if n, err := tr.PrefixLen(key); err != nil || n != 240_000 {
					b.Fatalf("prefix %d, %v", n, err)
				}
			}
		})
	}
}

// BenchmarkInsertRewalk64K re-inserts the full 64K key on the 128-node path
// (§1.12 "insert re-walk"): it returns 65,536 and creates nothing.
func BenchmarkInsertRewalk64K(b *testing.B) {
	b.Run("nodes=128", func(b *testing.B) {
		for _, impl := range benchImpls {
			b.Run("impl="+impl.name, func(b *testing.B) {
				tr, key, value := benchPath(b, impl.new, 1<<16, 128, 64, false)
				before := copiedNow(tr)
				b.ReportAllocs()
				for b.Loop() {
					if n, err := tr.Insert(key, value, 0); err != nil || n != 1<<16 {
						b.Fatalf("insert returned %d, %v", n, err)
					}
				}
				reportCopied(b, tr, before)
			})
		}
	})
}

// BenchmarkBigram64K converts 64K tokens to bigrams: an O(1)-per-slice view
// (construction includes the read-only token range scan), the one-pass
// materialization, and ref's index loop.
func BenchmarkBigram64K(b *testing.B) {
	key, _ := benchKey(1 << 16)
	b.Run("view", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v, err := fast.NewBigramView(key.Units)
			if err != nil || v.Len() != 1<<16-1 {
				b.Fatal(err)
			}
		}
	})
	b.Run("view-slice", func(b *testing.B) {
		v, _ := fast.NewBigramView(key.Units)
		b.ReportAllocs()
		for b.Loop() {
			s, err := v.Slice(1000, 60000)
			if err != nil || s.Len() != 59000 {
				b.Fatal(err)
			}
		}
	})
	b.Run("materialize", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if k, err := fast.ToBigram(key); err != nil || len(k.Units) != 1<<16-1 {
				b.Fatal(err)
			}
		}
	})
	b.Run("materialize-into", func(b *testing.B) {
		dst := make([]spec.Unit, 0, 1<<16)
		b.ReportAllocs()
		for b.Loop() {
			v, err := fast.NewBigramView(key.Units)
			if dst = v.AppendTo(dst[:0]); err != nil || len(dst) != 1<<16-1 {
				b.Fatal(err)
			}
		}
	})
	b.Run("ref", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if k, err := ref.ToBigram(key); err != nil || len(k.Units) != 1<<16-1 {
				b.Fatal(err)
			}
		}
	})
}
