package u32le

import (
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestWidenIsEachTokenItsU32 pins Widen by hand against
// binary.LittleEndian.Uint32 for every length up to 300 tokens (every
// remainder after the vector rounds), at every alignment of src, with
// the top bit of each u32 set half the time (a sign extension would show),
// and leaves dst's tail past len(dst) alone.
func TestWidenIsEachTokenItsU32(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 4))
	for n := range 300 {
		for off := range 4 {
			src := make([]byte, off+4*n)
			for i := range src {
				src[i] = byte(rng.IntN(256))
			}
			src = src[off:]
			dst := make([]int64, n+1)
			dst[n] = -7
			Widen(dst[:n], src)
			for i := range n {
				if want := int64(binary.LittleEndian.Uint32(src[4*i:])); dst[i] != want {
					t.Fatalf("n=%d off=%d: dst[%d] = %d, want %d", n, off, i, dst[i], want)
				}
			}
			if dst[n] != -7 {
				t.Fatalf("n=%d: wrote past len(dst)", n)
			}
		}
	}
}

// TestTheVectorRoundsWidenEachTokenItsU32 checks the assembly alone, where
// the CPU has AVX2, on every whole number of rounds up to 32 against
// binary.LittleEndian.Uint32, the top bit of each u32 set half the time.
func TestTheVectorRoundsWidenEachTokenItsU32(t *testing.T) {
	if runtime.GOARCH != "amd64" || !useVector {
		t.Skip("no vector path on this CPU")
	}
	rng := rand.New(rand.NewPCG(33, 5))
	for rounds := range 33 {
		n := rounds * vectorTokens
		src := make([]byte, 4*n)
		for i := range src {
			src[i] = byte(rng.IntN(256))
		}
		dst := make([]int64, n)
		widenVector(dst, src)
		for i := range n {
			if want := int64(binary.LittleEndian.Uint32(src[4*i:])); dst[i] != want {
				t.Fatalf("%d rounds: dst[%d] = %d, want %d", rounds, i, dst[i], want)
			}
		}
	}
}

// BenchmarkWiden240K is a 240K-token binary prompt widened, by Widen and
// by the generic loop alone, against a plain copy of the same 960 KB.
func BenchmarkWiden240K(b *testing.B) {
	const n = 240_000
	src, dst := make([]byte, 4*n), make([]int64, n)
	for i := range src {
		src[i] = byte(i) // written, so its pages are not the shared zero page
	}
	b.Run("impl=widen", func(b *testing.B) {
		b.SetBytes(4 * n)
		for b.Loop() {
			Widen(dst, src)
		}
	})
	b.Run("impl=generic", func(b *testing.B) {
		b.SetBytes(4 * n)
		for b.Loop() {
			widenGeneric(dst, src)
		}
	})
	b.Run("yardstick=copy", func(b *testing.B) {
		out := make([]byte, 4*n)
		b.SetBytes(4 * n)
		for b.Loop() {
			copy(out, src)
		}
	})
}
