package fast

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/zeebo/xxh3"

	"github.com/kvtwin/kvtwin/internal/u32le"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestHash512IsXXH3 checks the page hash of 512-byte pages, each of its
// implementations this CPU runs (hash512Impls: the generic one, and the
// assembly where it has AVX-512), against github.com/zeebo/xxh3 one page
// at a time and, with fold, chained from prev by ref.NextPrefixHash
// (§1.14):
// batches of 0 to 40 pages of random bytes, of bytes all zero and all 0xff
// (every carry of the accumulators), and of small units with one past
// 2^32-1 planted, at every 8-byte offset of the source. The OR it returns
// is every unit's (the range check).
func TestHash512IsXXH3(t *testing.T) {
	for name, hash := range hash512Impls() {
		t.Run(name, func(t *testing.T) {
			for _, fold := range []bool{false, true} {
				checkHash512(t, hash, fold)
			}
		})
	}
}

// checkHash512 is TestHash512IsXXH3 for one implementation, folding or
// not.
func checkHash512(t *testing.T, hash func([]spec.PrefixHash, []byte, uint64, bool) uint64, fold bool) {
	rng := rand.New(rand.NewPCG(51, 2))
	for n := range 41 {
		for fill := range 4 {
			off := 8 * (n % 8)
			src := make([]byte, off+512*n)
			for i := range src {
				src[i] = [4]byte{byte(rng.IntN(256)), 0, 0xff, 0}[fill]
				if fill == 3 && i%8 == 0 {
					src[i] = byte(rng.IntN(256)) // small units
				}
			}
			if fill == 3 && n > 0 {
				src[off+8*rng.IntN(64*n)+4+rng.IntN(4)] = 1 // one unit past 2^32-1
			}
			src = src[off:]
			var wantAcc uint64
			for i := 0; i < len(src); i += 8 {
				wantAcc |= binary.LittleEndian.Uint64(src[i:])
			}
			got := make([]spec.PrefixHash, n+1)
			got[n] = 7
			prev := rng.Uint64()
			acc := hash(got[:n], src, prev, fold)
			for i := range n {
				want := spec.PrefixHash(xxh3.Hash(src[512*i : 512*i+512]))
				if fold {
					units := make([]spec.Unit, 64)
					for j := range units {
						units[j] = binary.LittleEndian.Uint64(src[512*i+8*j:])
					}
					want = ref.NextPrefixHash(spec.PrefixHash(prev), units)
					prev = uint64(want)
				}
				if got[i] != want {
					t.Fatalf("%d pages, fill %d, fold %t: page %d hashes to %x, want %x", n, fill, fold, i, got[i], want)
				}
			}
			if got[n] != 7 {
				t.Fatalf("%d pages: wrote past len(dst)", n)
			}
			if acc != wantAcc {
				t.Fatalf("%d pages, fill %d: the units' OR is %x, want %x", n, fill, acc, wantAcc)
			}
		}
	}
}

// TestHash512WidenIsWidenThenXXH3 checks the fused decode and page hash of
// binary prompts, each implementation this CPU runs (hash512WidenImpls,
// those of hash512LE32 too), against widening the little-endian u32 ids
// one by one, hashing each page's 512 bytes with github.com/zeebo/xxh3
// and, with fold, chaining each page from prev with ref.NextPrefixHash
// (§1.14): batches of 0 to 40 pages of random ids, of ids all zero and all
// 0xffffffff, at every 4-byte offset of the source up to 60; nothing past
// the pages is written.
func TestHash512WidenIsWidenThenXXH3(t *testing.T) {
	for name, hash := range hash512WidenImpls() {
		t.Run(name, func(t *testing.T) {
			for _, fold := range []bool{false, true} {
				checkHash512Widen(t, hash, fold)
			}
		})
	}
}

// keepingIDs is a page hash of u32 ids that keeps none (hash512LE32's)
// with the ids widened by u32le.Widen beside it, so that
// TestHash512WidenIsWidenThenXXH3 checks its hashes like the fused ones'.
func keepingIDs(hash func([]spec.PrefixHash, []byte, uint64, bool)) func([]spec.PrefixHash, []int64, []byte, uint64, bool) {
	return func(dst []spec.PrefixHash, units []int64, src []byte, prev uint64, fold bool) {
		hash(dst, src, prev, fold)
		u32le.Widen(units[:64*len(dst)], src)
	}
}

// checkHash512Widen is TestHash512WidenIsWidenThenXXH3 for one
// implementation, folding or not.
func checkHash512Widen(t *testing.T, hash func([]spec.PrefixHash, []int64, []byte, uint64, bool), fold bool) {
	rng := rand.New(rand.NewPCG(52, 3))
	for n := range 41 {
		for fill := range 3 {
			off := 4 * (n % 16)
			src := make([]byte, off+256*n)
			for i := range src {
				src[i] = [3]byte{byte(rng.IntN(256)), 0, 0xff}[fill]
			}
			src = src[off:]
			units := make([]int64, 64*n+1)
			units[64*n] = -9
			got := make([]spec.PrefixHash, n+1)
			got[n] = 7
			prev := rng.Uint64()
			hash(got[:n], units, src, prev, fold)
			page := make([]byte, 512)
			pageUnits := make([]spec.Unit, 64)
			for i := range n {
				for j := range 64 {
					id := int64(binary.LittleEndian.Uint32(src[4*(64*i+j):]))
					if units[64*i+j] != id {
						t.Fatalf("%d pages, fill %d: unit %d is %d, want %d", n, fill, 64*i+j, units[64*i+j], id)
					}
					binary.LittleEndian.PutUint64(page[8*j:], uint64(id))
					pageUnits[j] = spec.Unit(id)
				}
				want := spec.PrefixHash(xxh3.Hash(page))
				if fold {
					want = ref.NextPrefixHash(spec.PrefixHash(prev), pageUnits)
					prev = uint64(want)
				}
				if got[i] != want {
					t.Fatalf("%d pages, fill %d, fold %t: page %d hashes to %x, want %x", n, fill, fold, i, got[i], want)
				}
			}
			if got[n] != 7 || units[64*n] != -9 {
				t.Fatalf("%d pages: wrote past the pages", n)
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
			hash512(dst, src, 0, false)
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

// BenchmarkHash512Widen is a 240K-token binary prompt decoded and its
// 3,750 pages hashed by hash512Widen, against u32le.Widen then hash512 and
// a plain copy of the same 960,000 bytes, in the same run.
func BenchmarkHash512Widen(b *testing.B) {
	src := make([]byte, 256*3750)
	for i := range src {
		src[i] = byte(i * 7)
	}
	units := make([]int64, 64*3750)
	dst := make([]spec.PrefixHash, 3750)
	b.Run("impl=fused", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			hash512Widen(dst, units, src, 0, false)
		}
	})
	b.Run("impl=widen+hash512", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			u32le.Widen(units, src)
			hash512(dst, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(units))), 8*len(units)), 0, false)
		}
	})
	b.Run("yardstick=copy", func(b *testing.B) {
		out := make([]byte, len(src))
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			copy(out, src)
		}
	})
}
