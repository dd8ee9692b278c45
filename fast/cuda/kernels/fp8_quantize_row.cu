// Kernels of fp8.quantize_row (cp-layout.md §7.2), the CUDA twin in
// fast/cuda/fp8_quantize_row.go (also used by fp8.compose_current).
// Convention: kvtwin_kernel.h. Bit-exact with ref/fp8quant.go and
// ref/fp8codec.go: the codec (kvt_fp8.h) is written on integers, the only float
// operations are the IEEE ones ref performs (amax/448, x/s, 1/s, x·inv),
// compiled without FMA contraction, with IEEE division and subnormals.
#include "kvt_fp8.h"

// Byte geometry of §7.1: 512 k_nope + 64 k_rope bf16 in (1152 B), 512
// codes, 4 fp32 scales, 64 bf16 rope out (656 B).
#define FP8Q_IN_W 1152
#define FP8Q_OUT_W 656
#define FP8Q_SCALE_OFF 512
#define FP8Q_ROPE_OFF 528
// Work items per row: 32 code words (16 codes each; 8 per 128-value
// tile) and 8 rope words.
#define FP8Q_ITEMS 40

// fp8q_code is ref.FP8TileCode: enc(fl32(x/s)), or enc(fl32(x·inv)) with
// inv = fl32(1/s) in recip_fp32 (mode 1).
KVT_DEVICE unsigned fp8q_code(unsigned h, float s, float inv, i64 mode)
{
	float x = __uint_as_float(h << 16);
	float q = mode == 1 ? x * inv : x / s;
	return kvt_e4m3_enc(q);
}

// fp8q_scale is ref.FP8TileScale of a tile with amax > 0 in mode (0
// div_fp32, 1 recip_fp32, 2 div_bf16): fl32(amax/448), rounded once more
// to bf16 in div_bf16 (it may become 0 there, as in ref).
KVT_DEVICE float fp8q_scale(float amax, i64 mode)
{
	float s = amax / 448.0f;
	if (mode == 2) s = __uint_as_float(kvt_bf16_rne(s) << 16);
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
		const kvt_w16 *in = (const kvt_w16 *)((const char *)src + row * FP8Q_IN_W);
		char *out = (char *)dst + row * FP8Q_OUT_W;
		if (k >= 32) {
			kvt_w16 w = in[64 + (k - 32)];
			if (kvt_bf16_absmax4(w.hi, kvt_bf16_absmax4(w.lo, 0)) >= 0x7F80u) atomicMin(bad, row);
			((kvt_w16 *)(out + FP8Q_ROPE_OFF))[k - 32] = w;
			continue;
		}
		int t = k >> 3;
		const kvt_w16 *tile = in + 16 * t;
		unsigned am = 0;
		for (int j = 0; j < 16; j++) {
			kvt_w16 w = tile[j];
			am = kvt_bf16_absmax4(w.hi, kvt_bf16_absmax4(w.lo, am));
		}
		if (am >= 0x7F80u) {
			if ((k & 7) == 0) atomicMin(bad, row);
			continue;
		}
		float s = 0.0f;
		kvt_w16 codes = {0, 0};
		if (am != 0) {
			s = fp8q_scale(__uint_as_float(am << 16), mode);
			float inv = 1.0f / s;
			kvt_w16 v0 = in[2 * k], v1 = in[2 * k + 1];
			u64 lo[2] = {v0.lo, v0.hi}, hi[2] = {v1.lo, v1.hi};
			for (int h = 0; h < 2; h++)
				for (int j = 0; j < 4; j++) {
					codes.lo |= (u64)fp8q_code(kvt_bf16(lo[h], j), s, inv, mode) << (8 * (4 * h + j));
					codes.hi |= (u64)fp8q_code(kvt_bf16(hi[h], j), s, inv, mode) << (8 * (4 * h + j));
				}
		}
		((kvt_w16 *)out)[k] = codes;
		if ((k & 7) == 0) ((unsigned *)(out + FP8Q_SCALE_OFF))[t] = __float_as_uint(s);
	}
}

// fp8_quantize_row_encode_probe: out[i] = enc(fp32 bits x[i]) for i < n, the
// encoder alone, so a test can check it against ref.EncodeE4M3 on every
// class of fp32 (the top 16 bits and whether the low 16 are zero decide
// the code: 2^17 probes cover all 2^32 inputs).
KVT_KERNEL3(fp8_quantize_row_encode_probe, unsigned char *, out, const unsigned *, x, i64, n)
{
	KVT_FOR(i, n) out[i] = (unsigned char)kvt_e4m3_enc(__uint_as_float(x[i]));
}
