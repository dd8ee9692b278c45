package u32le

import (
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"golang.org/x/sys/cpu"
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

// TestTheVectorPathIsTakenWhereTheCPUHasIt: on amd64 with AVX2 the vector
// path is chosen, and it alone widens a whole number of rounds exactly as
// the generic loop does.
func TestTheVectorPathIsTakenWhereTheCPUHasIt(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("amd64 only")
	}
	if useVector != cpu.X86.HasAVX2 {
		t.Fatalf("useVector = %v on a CPU with AVX2 %v", useVector, cpu.X86.HasAVX2)
	}
	if !useVector {
		t.Skip("no AVX2 on this CPU")
	}
	src := make([]byte, 4*64)
	for i := range src {
		src[i] = byte(i * 37)
	}
	got, want := make([]int64, 64), make([]int64, 64)
	widenVector(got, src)
	widenGeneric(want, src)
	if !slices.Equal(got, want) {
		t.Fatalf("vector %v, generic %v", got, want)
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
