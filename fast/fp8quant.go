package fast

import (
	"encoding/binary"
	"math"
	"runtime"
	"sync"

	"github.com/kvtwin/kvtwin/ref"
)

// FP8 quantization twins (cp-layout.md §7.2, §7.3): one pass per row, the
// tile amax taken on bf16 bits (for finite bf16 the magnitude order is the
// integer order of h&0x7FFF, and a NaN/Inf shows as >= 0x7F80), e4m3
// encoding in integer arithmetic, no per-row allocation, and row-aligned
// goroutine chunks for large inputs.

// quantParallelMinRows is the row count from which quantization runs in
// parallel chunks (about 1 MiB of 656-byte output).
const quantParallelMinRows = 2048

// FP8QuantizeRow is the twin of ref.FP8QuantizeRow (cp-layout.md §7.2).
// The first non-finite value is found while quantizing: each chunk stops
// at its first bad row, the smallest such row is the input's first, and
// ref names the offending value in it.
func FP8QuantizeRow(_ ref.Limits, in ref.FP8QuantizeRowInput) (ref.FP8RowsOutput, error) {
	m, err := ref.CheckScaleMode("mode", in.Mode)
	if err != nil {
		return ref.FP8RowsOutput{}, err
	}
	if err := ref.CheckFP8Width("x", in.X, ref.MLABF16RowBytes); err != nil {
		return ref.FP8RowsOutput{}, err
	}
	out := ref.NewRows(ref.FP8RowBytes, in.X.N())
	bad := forRowChunks(in.X.N(), func(lo, hi int) int {
		return QuantizeRows656(out.B[lo*ref.FP8RowBytes:hi*ref.FP8RowBytes], in.X.B[lo*ref.MLABF16RowBytes:hi*ref.MLABF16RowBytes], m)
	})
	if bad >= 0 {
		return ref.FP8RowsOutput{}, ref.FirstNonFiniteRow656(bad, in.X.Row(bad))
	}
	return ref.FP8RowsOutput{Rows: out}, nil
}

// FP8QuantizeIndexK is the twin of ref.FP8QuantizeIndexK (cp-layout.md §7.3).
func FP8QuantizeIndexK(_ ref.Limits, in ref.FP8QuantizeIndexKInput) (ref.FP8RowsOutput, error) {
	if err := ref.CheckFP8Width("x", in.X, ref.IndexKBF16RowBytes); err != nil {
		return ref.FP8RowsOutput{}, err
	}
	out := ref.NewRows(ref.IndexKRowBytes, in.X.N())
	bad := forRowChunks(in.X.N(), func(lo, hi int) int {
		return QuantizeIndexKRows(out.B[lo*ref.IndexKRowBytes:hi*ref.IndexKRowBytes], in.X.B[lo*ref.IndexKBF16RowBytes:hi*ref.IndexKBF16RowBytes])
	})
	if bad >= 0 {
		return ref.FP8RowsOutput{}, ref.FirstNonFiniteIndexK(bad, in.X.Row(bad))
	}
	return ref.FP8RowsOutput{Rows: out}, nil
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
func QuantizeRows656(dst, src []byte, m ref.ScaleMode) int {
	n := len(src) / ref.MLABF16RowBytes
	for i := range n {
		if !quantRow656((*[ref.FP8RowBytes]byte)(dst[i*ref.FP8RowBytes:]), (*[ref.MLABF16RowBytes]byte)(src[i*ref.MLABF16RowBytes:]), m) {
			return i
		}
	}
	return -1
}

// quantRow656 is ref.QuantizeRow656 on bytes; false when a value is not finite.
func quantRow656(dst *[ref.FP8RowBytes]byte, src *[ref.MLABF16RowBytes]byte, m ref.ScaleMode) bool {
	rope := src[2*ref.MLANopeDim:]
	var ropeMax uint16
	for j := 0; j < len(rope); j += 2 {
		ropeMax = max(ropeMax, binary.LittleEndian.Uint16(rope[j:])&0x7FFF)
	}
	if ropeMax >= 0x7F80 {
		return false
	}
	copy(dst[ref.FP8RopeOff:], rope)
	for t := range ref.FP8Tiles {
		tile := (*[2 * ref.FP8TileDim]byte)(src[2*ref.FP8TileDim*t:])
		codes := (*[ref.FP8TileDim]byte)(dst[ref.FP8TileDim*t:])
		var amax uint16
		for j := 0; j < len(tile); j += 2 {
			amax = max(amax, binary.LittleEndian.Uint16(tile[j:])&0x7FFF)
		}
		if amax >= 0x7F80 {
			return false
		}
		var s float32
		switch {
		case amax == 0:
			clear(codes[:])
		case m == ref.ScaleRecipFP32:
			s = ref.FP8TileScale(ref.F32FromBF16(amax), m)
			inv := float32(1 / s)
			for j := range codes {
				x := math.Float32frombits(uint32(binary.LittleEndian.Uint16(tile[2*j:])) << 16)
				codes[j] = encE4M3(float32(x * inv))
			}
		default:
			s = ref.FP8TileScale(ref.F32FromBF16(amax), m)
			for j := range codes {
				x := math.Float32frombits(uint32(binary.LittleEndian.Uint16(tile[2*j:])) << 16)
				codes[j] = encE4M3(x / s)
			}
		}
		binary.LittleEndian.PutUint32(dst[ref.FP8ScaleOff+4*t:], math.Float32bits(s))
	}
	return true
}

// QuantizeIndexKRows quantizes the 256-byte bf16 keys of src into the
// 132-byte rows of dst (same row count); it returns the first row holding
// a NaN or ±Inf, or -1, and allocates nothing.
func QuantizeIndexKRows(dst, src []byte) int {
	n := len(src) / ref.IndexKBF16RowBytes
	for i := range n {
		k := (*[ref.IndexKBF16RowBytes]byte)(src[i*ref.IndexKBF16RowBytes:])
		d := (*[ref.IndexKRowBytes]byte)(dst[i*ref.IndexKRowBytes:])
		var amax uint16
		for j := 0; j < len(k); j += 2 {
			amax = max(amax, binary.LittleEndian.Uint16(k[j:])&0x7FFF)
		}
		if amax >= 0x7F80 {
			return i
		}
		s := ref.IndexKScale(ref.F32FromBF16(amax))
		// s is a power of two with 1/s a normal fp32 (s in [2^-22, 2^121]),
		// so x·(1/s) and x/s are the correctly rounded images of one exact
		// value: byte-identical. enc saturates, which is the ±448 clamp.
		inv := 1 / s
		for j := range ref.IndexKDim {
			x := math.Float32frombits(uint32(binary.LittleEndian.Uint16(k[2*j:])) << 16)
			d[j] = encE4M3(float32(x * inv))
		}
		binary.LittleEndian.PutUint32(d[ref.IndexKDim:], math.Float32bits(s))
	}
	return -1
}

// encE4M3 is ref.EncodeE4M3 without branches or rounding calls: both the
// normal-range and the subnormal-range code are computed and one selected
// (conditional moves). In the subnormal range |x|+2^14 puts RNE(|x|·2^9)
// in the low mantissa bits (one fp32 add, ulp 2^-9 at 2^14).
func encE4M3(x float32) uint8 {
	u := math.Float32bits(x)
	a := u & 0x7FFFFFFF
	code := min((a+0x7FFFF+((a>>20)&1))>>20-960, uint32(ref.E4M3Max))
	sub := math.Float32bits(math.Float32frombits(a)+16384) - 0x46800000
	if a < 0x3C800000 {
		code = sub
	}
	code |= u >> 24 & 0x80
	if a > 0x7F800000 {
		code = uint32(ref.E4M3NaN)
	}
	return uint8(code)
}
