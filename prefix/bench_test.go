package prefix_test

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"unsafe"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/prefix"
	"github.com/kvtwin/kvtwin/spec"
)

// BenchmarkScore240K8Pools is the router target: score a 240,000-token
// prompt against 8 pools that each hold all of it as a 16-node path (page
// size 64, the shape of docs/spec/radix-acks.md §1.12), by prefix hashes
// (exact=false, the default: ≤ 150 µs) and by units (exact=true).
func BenchmarkScore240K8Pools(b *testing.B) {
	for name, newTree := range trees() {
		b.Run("tree="+name, func(b *testing.B) {
			const n, pools, nodes = 240_000, 8, 16 // 3,750 pages, as llm-d measured
			prompt := seq(1, n)
			r, err := prefix.NewRegistry(newTree, prefix.Limits{MaxPools: pools, MaxPoolCapacity: n, MaxRequestTokens: n, MaxBytes: 1 << 40})
			if err != nil {
				b.Fatal(err)
			}
			for i := range pools {
				p, err := r.Create(fmt.Sprintf("pool%d", i), prefix.Config{PageSize: 64, CapacityTokens: n})
				if err != nil {
					b.Fatal(err)
				}
				for j := 1; j <= nodes; j++ {
					if _, err := p.Insert(prompt[:n*j/nodes], spec.ExtraKey{}, 0); err != nil {
						b.Fatal(err)
					}
				}
			}
			for _, exact := range []bool{false, true} {
				b.Run(fmt.Sprintf("exact=%t", exact), func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						scores, err := r.Score(prompt, spec.ExtraKey{}, nil, exact)
						if err != nil || scores[pools-1].MatchedTokens != n {
							b.Fatalf("%v, %v", scores, err)
						}
					}
				})
			}
		})
	}
	// The floor of a hashed score by the spec: the prompt's chain of page
	// hashes (radix-acks.md §1.14: each page's unseeded XXH3, folded in
	// order) and its token range check, with no pool walked.
	b.Run("yardstick=check+hash-chain", func(b *testing.B) {
		prompt := seq(1, 240_000)
		b.ReportAllocs()
		for b.Loop() {
			if _, chain, err := fast.TokenKeyChain("tokens", prompt, spec.ExtraKey{}, 64); err != nil || len(chain) != 3750 {
				b.Fatalf("%d pages, %v", len(chain), err)
			}
		}
	})
	// The floor with what the walks must read: the chain, then for each of
	// the eight pools' 16 nodes a stored first page (64 units, compared
	// with the query's page as a child key is) and the node's stored page
	// hashes (compared with the chain), as bytes, in separate arrays, no
	// tree.
	b.Run("yardstick=check+hash-chain+compare", func(b *testing.B) {
		prompt := seq(1, 240_000)
		_, want, _ := fast.TokenKeyChain("tokens", prompt, spec.ExtraKey{}, 64)
		var pages [][]int64
		var hashes [][]spec.PrefixHash
		for range 8 * 16 {
			pages = append(pages, slices.Clone(prompt[:64]))
			hashes = append(hashes, slices.Clone(want[:3750/16]))
		}
		b.ReportAllocs()
		for b.Loop() {
			_, chain, err := fast.TokenKeyChain("tokens", prompt, spec.ExtraKey{}, 64)
			if err != nil {
				b.Fatal(err)
			}
			qp, qh := asBytes(prompt[:64]), asBytes(chain[:3750/16])
			for i := range hashes {
				if !bytes.Equal(asBytes(pages[i]), qp) || !bytes.Equal(asBytes(hashes[i]), qh) {
					b.Fatal("differs")
				}
			}
		}
	})
}

// asBytes is s's memory as bytes, for a comparison of equality.
func asBytes[T int64 | spec.PrefixHash](s []T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), 8*len(s))
}
