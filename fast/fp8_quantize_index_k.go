package fast

import (
	"encoding/binary"
	"math"
	"runtime"
	"sync"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// FP8 quantization twins (docs/spec/cp-layout.md §7.2, §7.3): one pass per row, the
// tile amax taken on bf16 bits (for finite bf16 the magnitude order is the
// integer order of h&0x7FFF, and a NaN/Inf shows as >= 0x7F80), e4m3
// encoding by table lookup, division only near rounding boundaries, no per-row allocation, and row-aligned
// goroutine chunks for large inputs.

// quantParallelMinRows is the row count from which quantization runs in
// parallel chunks (about 1 MiB of 656-byte output).
const quantParallelMinRows = 2048

// FP8QuantizeRow is the twin of ref.FP8QuantizeRow (docs/spec/cp-layout.md §7.2).
// The first non-finite value is found while quantizing: each chunk stops
// at its first bad row, the smallest such row is the input's first, and
// ref names the offending value in it.
func FP8QuantizeRow(_ spec.Limits, in spec.FP8QuantizeRowInput) (spec.FP8QuantizeRowOutput, error) {
	m, err := ref.CheckScaleMode("mode", in.Mode)
	if err != nil {
		return spec.FP8QuantizeRowOutput{}, err
	}
	if err := ref.CheckFP8Width("x", in.X, spec.MLABF16RowBytes); err != nil {
		return spec.FP8QuantizeRowOutput{}, err
	}
	out := ref.NewRows(spec.FP8RowBytes, in.X.N())
	bad := forRowChunks(in.X.N(), func(lo, hi int) int {
		return QuantizeRows656(out.B[lo*spec.FP8RowBytes:hi*spec.FP8RowBytes], in.X.B[lo*spec.MLABF16RowBytes:hi*spec.MLABF16RowBytes], m)
	})
	if bad >= 0 {
		return spec.FP8QuantizeRowOutput{}, ref.FirstNonFiniteRow656(bad, in.X.Row(bad))
	}
	return spec.FP8QuantizeRowOutput{Rows: out}, nil
}

// FP8QuantizeIndexK is the twin of ref.FP8QuantizeIndexK (docs/spec/cp-layout.md §7.3).
func FP8QuantizeIndexK(_ spec.Limits, in spec.FP8QuantizeIndexKInput) (spec.FP8QuantizeIndexKOutput, error) {
	if err := ref.CheckFP8Width("x", in.X, spec.IndexKBF16RowBytes); err != nil {
		return spec.FP8QuantizeIndexKOutput{}, err
	}
	out := ref.NewRows(spec.IndexKRowBytes, in.X.N())
	bad := forRowChunks(in.X.N(), func(lo, hi int) int {
		return QuantizeIndexKRows(out.B[lo*spec.IndexKRowBytes:hi*spec.IndexKRowBytes], in.X.B[lo*spec.IndexKBF16RowBytes:hi*spec.IndexKBF16RowBytes])
	})
	if bad >= 0 {
		return spec.FP8QuantizeIndexKOutput{}, ref.FirstNonFiniteIndexK(bad, in.X.Row(bad))
	}
	return spec.FP8QuantizeIndexKOutput{Rows: out}, nil
}

// forRowChunks runs f on row ranges [lo, hi) covering [0, n) — in parallel
// chunks from quantParallelMinRows rows — and returns the smallest absolute
// row f reported bad (f returns a row offset within its range, or -1), or
// -1. Every chunk stops at its own first bad row, so the minimum is the
// first bad row of the whole input whatever the scheduling.
func forRowChunks(n int, f func(lo, hi int) int) int {
	chunks := 1
	if n >= quantParallelMinRows {
		chunks = max(1, min(runtime.GOMAXPROCS(0), n/(quantParallelMinRows/2)))
	}
	if chunks == 1 {
		if b := f(0, n); b >= 0 {
			return b
		}
		return -1
	}
	bads := make([]int, chunks)
	var wg sync.WaitGroup
	for c := range chunks {
		lo, hi := c*n/chunks, (c+1)*n/chunks
		wg.Go(func() {
			bads[c] = -1
			if b := f(lo, hi); b >= 0 {
				bads[c] = lo + b
			}
		})
	}
	wg.Wait()
	for _, b := range bads {
		if b >= 0 {
			return b
		}
	}
	return -1
}

// QuantizeRows656 quantizes the 1152-byte MLA bf16 rows of src into the
// 656-byte rows of dst (same row count) in mode m, a valid effective mode
// (not ""). It returns the index of the first row holding a NaN or ±Inf —
// dst is then partly written — or -1. It allocates nothing, so a caller
// may reuse dst across forwards.
func QuantizeRows656(dst, src []byte, m spec.ScaleMode) int {
	tab := e4m3Table()
	n := len(src) / spec.MLABF16RowBytes
	for i := range n {
		if !quantRow656((*[spec.FP8RowBytes]byte)(dst[i*spec.FP8RowBytes:]), (*[spec.MLABF16RowBytes]byte)(src[i*spec.MLABF16RowBytes:]), m, tab) {
			return i
		}
	}
	return -1
}

// quantRow656 is ref.quantizeRow656 on bytes; false when a value is not
// finite. tab is e4m3Table().
func quantRow656(dst *[spec.FP8RowBytes]byte, src *[spec.MLABF16RowBytes]byte, m spec.ScaleMode, tab *[1 << 16]uint16) bool {
	rope := src[2*spec.MLANopeDim:]
	if bf16AbsMax(rope) >= 0x7F80 {
		return false
	}
	copy(dst[spec.FP8RopeOff:], rope)
	for t := range spec.FP8Tiles {
		tile := (*[2 * spec.FP8TileDim]byte)(src[2*spec.FP8TileDim*t:])
		codes := (*[spec.FP8TileDim]byte)(dst[spec.FP8TileDim*t:])
		amax := bf16AbsMax(tile[:])
		if amax >= 0x7F80 {
			return false
		}
		var s float32
		if amax == 0 {
			clear(codes[:])
		} else {
			s = ref.FP8TileScale(ref.F32FromBF16(amax), m)
			quantTile(codes, tile, s, m, tab)
		}
		binary.LittleEndian.PutUint32(dst[spec.FP8ScaleOff+4*t:], math.Float32bits(s))
	}
	return true
}

// quantTile writes the codes of one non-zero tile of scale s in mode m.
//
// With s and 1/s normal fp32 (every tile but those of tiny amax), the
// division modes multiply by inv = fl32(1/s) and divide only near a
// rounding boundary: q' = fl32(x·inv) is within 3 fp32 ulps of fl32(x/s)
// (two roundings of 2^-24 each), and every e4m3 rounding boundary (the
// midpoints (2k+1)·2^-10 of the subnormal codes, the normal midpoints, 464)
// is an fp32 whose low 19 bits are zero; so when q' is more than 8 bit
// steps from such a pattern no boundary lies between q' and fl32(x/s) and
// both encode alike; below 2^-12 both are far under the smallest boundary
// 2^-10 (zeros included), so no division either. Other tiles divide every
// value.
func quantTile(codes *[spec.FP8TileDim]byte, tile *[2 * spec.FP8TileDim]byte, s float32, m spec.ScaleMode, tab *[1 << 16]uint16) {
	if s < 0x1p-126 || s >= 0x1p126 {
		for j := range codes {
			x := math.Float32frombits(uint32(binary.LittleEndian.Uint16(tile[2*j:])) << 16)
			codes[j] = ref.FP8TileCode(x, s, m)
		}
		return
	}
	inv := float32(1 / s)
	if m == spec.ScaleRecipFP32 {
		for j := range codes {
			x := math.Float32frombits(uint32(binary.LittleEndian.Uint16(tile[2*j:])) << 16)
			codes[j] = encTab(tab, float32(x*inv))
		}
		return
	}
	// Four values per step (one 8-byte load, one 4-byte store): the
	// steps are independent, so they overlap in the pipeline.
	for j := 0; j < spec.FP8TileDim; j += 4 {
		v := binary.LittleEndian.Uint64(tile[2*j:])
		c0 := divCode(tab, math.Float32frombits(uint32(v)<<16), inv, s)
		c1 := divCode(tab, math.Float32frombits(uint32(v)&0xFFFF0000), inv, s)
		c2 := divCode(tab, math.Float32frombits(uint32(v>>32)<<16), inv, s)
		c3 := divCode(tab, math.Float32frombits(uint32(v>>32)&0xFFFF0000), inv, s)
		binary.LittleEndian.PutUint32(codes[j:], uint32(c0)|uint32(c1)<<8|uint32(c2)<<16|uint32(c3)<<24)
	}
}

// divCode is enc(fl32(x/s)) given inv = fl32(1/s), both normal: the
// product, and the quotient only near a boundary (see quantTile).
func divCode(tab *[1 << 16]uint16, x, inv, s float32) uint8 {
	q := float32(x * inv)
	if a := math.Float32bits(q) & 0x7FFFFFFF; (a+8)&0x7FFFF < 16 && a >= 0x39800000 {
		q = x / s
	}
	return encTab(tab, q)
}

// bf16AbsMax is max(h & 0x7FFF) over the little-endian bf16 values of b
// (len a multiple of 8): the largest magnitude of finite values, and
// >= 0x7F80 when one is NaN or ±Inf. Four accumulators, so the max chain
// is not one long dependency.
func bf16AbsMax(b []byte) uint16 {
	var m0, m1, m2, m3 uint16
	for ; len(b) >= 8; b = b[8:] {
		v := binary.LittleEndian.Uint64(b)
		m0 = max(m0, uint16(v)&0x7FFF)
		m1 = max(m1, uint16(v>>16)&0x7FFF)
		m2 = max(m2, uint16(v>>32)&0x7FFF)
		m3 = max(m3, uint16(v>>48)&0x7FFF)
	}
	return max(m0, m1, m2, m3)
}

// QuantizeIndexKRows quantizes the 256-byte bf16 keys of src into the
// 132-byte rows of dst (same row count); it returns the first row holding
// a NaN or ±Inf, or -1, and allocates nothing.
func QuantizeIndexKRows(dst, src []byte) int {
	tab := e4m3Table()
	n := len(src) / spec.IndexKBF16RowBytes
	for i := range n {
		k := (*[spec.IndexKBF16RowBytes]byte)(src[i*spec.IndexKBF16RowBytes:])
		d := (*[spec.IndexKRowBytes]byte)(dst[i*spec.IndexKRowBytes:])
		amax := bf16AbsMax(k[:])
		if amax >= 0x7F80 {
			return i
		}
		s := ref.IndexKScale(ref.F32FromBF16(amax))
		// s is a power of two with 1/s a normal fp32 (s in [2^-22, 2^121]),
		// so x·(1/s) and x/s are the correctly rounded images of one exact
		// value: byte-identical. enc saturates, which is the ±448 clamp.
		inv := 1 / s
		for j := range spec.IndexKDim {
			x := math.Float32frombits(uint32(binary.LittleEndian.Uint16(k[2*j:])) << 16)
			d[j] = encTab(tab, float32(x*inv))
		}
		binary.LittleEndian.PutUint32(d[spec.IndexKDim:], math.Float32bits(s))
	}
	return -1
}

// e4m3Table is ref.EncodeE4M3 tabulated by the top 16 bits of an fp32 u:
// the low byte of entry u>>16 is enc(u with low bits 0), the high byte enc
// of any u with non-zero low 16 bits. Every e4m3 rounding boundary (and
// the NaN/Inf split) has zero low 16 bits, so no boundary lies strictly
// inside one entry's range and the two bytes are exact. 128 KiB, built on
// first use.
var e4m3Table = sync.OnceValue(func() *[1 << 16]uint16 {
	var t [1 << 16]uint16
	for i := range t {
		u := uint32(i) << 16
		t[i] = uint16(ref.EncodeE4M3(math.Float32frombits(u))) | uint16(ref.EncodeE4M3(math.Float32frombits(u|1)))<<8
	}
	return &t
})

// encTab is ref.EncodeE4M3 by one lookup in tab (e4m3Table()).
func encTab(tab *[1 << 16]uint16, q float32) uint8 {
	u := math.Float32bits(q)
	e := tab[u>>16]
	if u&0xFFFF != 0 {
		e >>= 8
	}
	return uint8(e)
}
