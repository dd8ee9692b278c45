package fast

import (
	"math/rand/v2"
	"testing"

	"github.com/zeebo/xxh3"

	"github.com/kvtwin/kvtwin/spec"
)

// TestHash512IsXXH3 checks the page hash of 512-byte pages, each of its
// implementations this CPU runs (hash512Impls: the generic one, and the
// assembly where it has AVX-512), against github.com/zeebo/xxh3 one page
// at a time: batches of 0 to 40 pages of random bytes, of bytes all zero
// and all 0xff (every carry of the accumulators), at every 8-byte offset
// of the source.
func TestHash512IsXXH3(t *testing.T) {
	for name, hash := range hash512Impls() {
		t.Run(name, func(t *testing.T) { checkHash512(t, hash) })
	}
}

// checkHash512 is TestHash512IsXXH3 for one implementation.
func checkHash512(t *testing.T, hash func([]spec.PrefixHash, []byte)) {
	rng := rand.New(rand.NewPCG(51, 2))
	for n := range 41 {
		for fill := range 3 {
			off := 8 * (n % 8)
			src := make([]byte, off+512*n)
			for i := range src {
				src[i] = [3]byte{byte(rng.IntN(256)), 0, 0xff}[fill]
			}
			src = src[off:]
			got := make([]spec.PrefixHash, n+1)
			got[n] = 7
			hash(got[:n], src)
			for i := range n {
				if want := spec.PrefixHash(xxh3.Hash(src[512*i : 512*i+512])); got[i] != want {
					t.Fatalf("%d pages, fill %d: page %d hashes to %x, want %x", n, fill, i, got[i], want)
				}
			}
			if got[n] != 7 {
				t.Fatalf("%d pages: wrote past len(dst)", n)
			}
		}
	}
}

// BenchmarkHash512 is a 240K-token prompt's 3,750 pages hashed by hash512
// and by xxh3.Hash one page at a time, in the same run.
func BenchmarkHash512(b *testing.B) {
	src := make([]byte, 512*3750)
	for i := range src {
		src[i] = byte(i * 7)
	}
	dst := make([]spec.PrefixHash, 3750)
	b.Run("impl=hash512", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			hash512(dst, src)
		}
	})
	b.Run("impl=xxh3.Hash", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			for i := range dst {
				dst[i] = spec.PrefixHash(xxh3.Hash(src[512*i : 512*i+512]))
			}
		}
	})
}
