// Kernels of fp8.quantize_row (cp-layout.md §7.2), the CUDA twin in
// fast/cuda/fp8_quantize_row.go (also used by fp8.compose_current).
// Convention: kvtwin_kernel.h. Bit-exact with ref/fp8quant.go and
// ref/fp8codec.go: the codec is written on integers, the only float
// operations are the IEEE ones ref performs (amax/448, x/s, 1/s, x·inv),
// compiled without FMA contraction, with IEEE division and subnormals.
#include "kvtwin_kernel.h"

#ifdef __CUDACC__
#define FP8Q_ALIGN16 __align__(16)
#else
#define FP8Q_ALIGN16 __attribute__((aligned(16)))
#endif

// fp8q_w16 is one 16-byte word: the unit every thread loads and stores
// (ld/st.global.v2.u64 on the GPU). Rows of 1152 and 656 bytes are whole
// 16-byte words, and device buffers are 256-byte aligned.
struct FP8Q_ALIGN16 fp8q_w16 {
	u64 lo, hi;
};

// Byte geometry of §7.1: 512 k_nope + 64 k_rope bf16 in (1152 B), 512
// codes, 4 fp32 scales, 64 bf16 rope out (656 B).
#define FP8Q_IN_W 1152
#define FP8Q_OUT_W 656
#define FP8Q_SCALE_OFF 512
#define FP8Q_ROPE_OFF 528
// Work items per row: 32 code words (16 codes each; 8 per 128-value
// tile) and 8 rope words.
#define FP8Q_ITEMS 40

// fp8q_bf16 returns bf16 value j (0..3) of the little-endian word v.
KVT_DEVICE unsigned fp8q_bf16(u64 v, int j) { return (unsigned)(v >> (16 * j)) & 0xFFFFu; }

// fp8q_absmax16 folds max(h & 0x7FFF) over the 4 bf16 of a u64: for finite
// bf16 the magnitude order is the integer order of h&0x7FFF, and NaN/±Inf
// show as >= 0x7F80 (fast's bf16AbsMax).
KVT_DEVICE unsigned fp8q_absmax4(u64 v, unsigned m)
{
	for (int j = 0; j < 4; j++) {
		unsigned a = fp8q_bf16(v, j) & 0x7FFFu;
		m = a > m ? a : m;
	}
	return m;
}

// fp8q_bf16_rne is ref.BF16FromF32: round to nearest even, every NaN to 0x7FC0.
KVT_DEVICE unsigned fp8q_bf16_rne(float x)
{
	unsigned u = __float_as_uint(x);
	if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0u;
	return (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
}

// fp8q_enc is ref.EncodeE4M3 on integers: RNE to e4m3fn, saturating at
// ±448 (code 0x7E), NaN to 0x7F, the sign of zero kept. Below 2^-6 (the
// e4m3 subnormals, units of 2^-9) the exact |x|·2^9 = M·2^(E-141) is
// rounded by a shift with ties to even (ref's roundHalfEven of the exact
// product); above, ref's bit rounding.
KVT_DEVICE unsigned fp8q_enc(float x)
{
	unsigned u = __float_as_uint(x), sign = u >> 31, a = u & 0x7FFFFFFFu, code;
	if (a > 0x7F800000u) return 0x7Fu;
	if (a < 0x3C800000u) {
		unsigned e = a >> 23;
		int r = 141 - (int)e; // >= 21 here
		if (e == 0 || r > 24) {
			code = 0; // |x|·2^9 < 1/2 (M < 2^24)
		} else {
			unsigned m = (a & 0x7FFFFFu) | 0x800000u;
			unsigned q = m >> r, rem = m & ((1u << r) - 1u), half = 1u << (r - 1);
			if (rem > half || (rem == half && (q & 1u))) q++;
			code = q;
		}
	} else {
		unsigned r = a + 0x7FFFFu + ((a >> 20) & 1u);
		code = (r >> 20) - 960u; // 960 = (127 − 7) · 8
	}
	if (code > 0x7Eu) code = 0x7Eu;
	return code | sign << 7;
}

// fp8q_code is ref.FP8TileCode: enc(fl32(x/s)), or enc(fl32(x·inv)) with
// inv = fl32(1/s) in recip_fp32 (mode 1).
KVT_DEVICE unsigned fp8q_code(unsigned h, float s, float inv, i64 mode)
{
	float x = __uint_as_float(h << 16);
	float q = mode == 1 ? x * inv : x / s;
	return fp8q_enc(q);
}

// fp8q_scale is ref.FP8TileScale of a tile with amax > 0 in mode (0
// div_fp32, 1 recip_fp32, 2 div_bf16): fl32(amax/448), rounded once more
// to bf16 in div_bf16 (it may become 0 there, as in ref).
KVT_DEVICE float fp8q_scale(float amax, i64 mode)
{
	float s = amax / 448.0f;
	if (mode == 2) s = __uint_as_float(fp8q_bf16_rne(s) << 16);
	return s;
}

// fp8_quantize_row_rows: n MLA bf16 rows src (1152 B) to 656-byte rows dst
// in mode (0 div_fp32, 1 recip_fp32, 2 div_bf16); one work item per
// 16-byte output word of codes or rope (40 per row), so consecutive
// threads store consecutive words. A code word's thread folds its tile's
// amax (the tile's 256 B are read by the tile's 8 threads together: one
// DRAM read, L1 broadcasts), computes the scale as ref does, and encodes
// its 16 values; the tile's first thread also stores the scale. A rope
// word's thread copies 8 rope values. A thread that sees NaN/±Inf (a tile
// amax or a rope value >= 0x7F80) lowers bad[0] to its row (atomicMin):
// the host then reports ref's error for the first bad row, whose output
// is never read.
KVT_KERNEL5(fp8_quantize_row_rows, u64 *, dst, const u64 *, src, i64, n, i64, mode, i64 *, bad)
{
	KVT_FOR(i, n * FP8Q_ITEMS)
	{
		i64 row = i / FP8Q_ITEMS;
		int k = (int)(i - row * FP8Q_ITEMS);
		const fp8q_w16 *in = (const fp8q_w16 *)((const char *)src + row * FP8Q_IN_W);
		char *out = (char *)dst + row * FP8Q_OUT_W;
		if (k >= 32) {
			fp8q_w16 w = in[64 + (k - 32)];
			if (fp8q_absmax4(w.hi, fp8q_absmax4(w.lo, 0)) >= 0x7F80u) atomicMin(bad, row);
			((fp8q_w16 *)(out + FP8Q_ROPE_OFF))[k - 32] = w;
			continue;
		}
		int t = k >> 3;
		const fp8q_w16 *tile = in + 16 * t;
		unsigned am = 0;
		for (int j = 0; j < 16; j++) {
			fp8q_w16 w = tile[j];
			am = fp8q_absmax4(w.hi, fp8q_absmax4(w.lo, am));
		}
		if (am >= 0x7F80u) {
			if ((k & 7) == 0) atomicMin(bad, row);
			continue;
		}
		float s = 0.0f;
		fp8q_w16 codes = {0, 0};
		if (am != 0) {
			s = fp8q_scale(__uint_as_float(am << 16), mode);
			float inv = 1.0f / s;
			fp8q_w16 v0 = in[2 * k], v1 = in[2 * k + 1];
			u64 lo[2] = {v0.lo, v0.hi}, hi[2] = {v1.lo, v1.hi};
			for (int h = 0; h < 2; h++)
				for (int j = 0; j < 4; j++) {
					codes.lo |= (u64)fp8q_code(fp8q_bf16(lo[h], j), s, inv, mode) << (8 * (4 * h + j));
					codes.hi |= (u64)fp8q_code(fp8q_bf16(hi[h], j), s, inv, mode) << (8 * (4 * h + j));
				}
		}
		((fp8q_w16 *)out)[k] = codes;
		if ((k & 7) == 0) ((unsigned *)(out + FP8Q_SCALE_OFF))[t] = __float_as_uint(s);
	}
}

// fp8_quantize_row_encode_probe: out[i] = enc(fp32 bits x[i]) for i < n, the
// encoder alone, so a test can check it against ref.EncodeE4M3 on every
// class of fp32 (the top 16 bits and whether the low 16 are zero decide
// the code: 2^17 probes cover all 2^32 inputs).
KVT_KERNEL3(fp8_quantize_row_encode_probe, unsigned char *, out, const unsigned *, x, i64, n)
{
	KVT_FOR(i, n) out[i] = (unsigned char)fp8q_enc(__uint_as_float(x[i]));
}
