package fast

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/zeebo/xxh3"
	"golang.org/x/sys/cpu"

	"github.com/kvtwin/kvtwin/spec"
)

// TestHash512IsXXH3 checks the page hash of 512-byte pages against
// github.com/zeebo/xxh3 one page at a time: batches of 0 to 40 pages of
// random bytes, of bytes all zero and all 0xff (every carry of the
// accumulators), at every 8-byte offset of the source; and that the
// vector path is the one taken where the CPU has AVX-512.
func TestHash512IsXXH3(t *testing.T) {
	if runtime.GOARCH == "amd64" && useHash512 != cpu.X86.HasAVX512F {
		t.Fatalf("useHash512 = %v on a CPU with AVX-512F %v", useHash512, cpu.X86.HasAVX512F)
	}
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
			hash512(got[:n], src)
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
