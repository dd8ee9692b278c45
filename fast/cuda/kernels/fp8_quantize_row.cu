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
// Work items per row: one per 128-value tile (4); each also copies 2 of
// the 8 rope words.
#define FP8Q_ITEMS 4
// FP8Q_UNROLL unrolls the tile loops on the device, so the tile stays in
// registers (ptxas: no local memory); the host build needs no hint.
#ifdef __CUDACC__
#define FP8Q_UNROLL _Pragma("unroll")
#else
#define FP8Q_UNROLL
#endif

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
// in mode (0 div_fp32, 1 recip_fp32, 2 div_bf16); one work item per (row,
// tile), 4 per row. The item's thread reads its tile's 256 B once, as 16
// 16-byte loads kept in registers, folds the amax, computes the scale as
// ref does, encodes the 128 values from those registers and stores the
// 128 codes as 8 16-byte words and the scale; it also copies rope words
// 2t and 2t+1 (16-byte loads and stores). Every input byte is read from
// memory once, by one thread (the previous design gave each 16-byte code
// word its own thread, so the tile's 8 threads each re-read all 256 B).
// A thread that sees NaN/±Inf (a tile amax or a rope value >= 0x7F80)
// lowers bad[0] to its row (atomicMin): the host then reports ref's error
// for the first bad row, whose output is never read.
KVT_KERNEL5(fp8_quantize_row_rows, u64 *, dst, const u64 *, src, i64, n, i64, mode, i64 *, bad)
{
	KVT_FOR(i, n * FP8Q_ITEMS)
	{
		i64 row = i >> 2;
		int t = (int)(i & 3);
		const kvt_w16 *in = (const kvt_w16 *)((const char *)src + row * FP8Q_IN_W);
		char *out = (char *)dst + row * FP8Q_OUT_W;
		const kvt_w16 *tile = in + 16 * t;
		kvt_w16 v[16];
		unsigned am = 0;
		FP8Q_UNROLL
		for (int j = 0; j < 16; j++) v[j] = tile[j];
		FP8Q_UNROLL
		for (int j = 0; j < 16; j++) am = kvt_bf16_absmax4(v[j].hi, kvt_bf16_absmax4(v[j].lo, am));
		kvt_w16 r0 = in[64 + 2 * t], r1 = in[64 + 2 * t + 1];
		unsigned ram = kvt_bf16_absmax4(r1.hi, kvt_bf16_absmax4(r1.lo, kvt_bf16_absmax4(r0.hi, kvt_bf16_absmax4(r0.lo, 0))));
		kvt_w16 *rope = (kvt_w16 *)(out + FP8Q_ROPE_OFF);
		rope[2 * t] = r0;
		rope[2 * t + 1] = r1;
		if (am >= 0x7F80u || ram >= 0x7F80u) {
			atomicMin(bad, row);
			continue;
		}
		float s = 0.0f, inv = 0.0f;
		if (am != 0) {
			s = fp8q_scale(__uint_as_float(am << 16), mode);
			inv = 1.0f / s;
		}
		kvt_w16 *codes = (kvt_w16 *)out + 8 * t;
		FP8Q_UNROLL
		for (int q = 0; q < 8; q++) {
			kvt_w16 cw = {0, 0};
			if (am != 0) {
				u64 lo[2] = {v[2 * q].lo, v[2 * q].hi}, hi[2] = {v[2 * q + 1].lo, v[2 * q + 1].hi};
				for (int h = 0; h < 2; h++)
					for (int j = 0; j < 4; j++) {
						cw.lo |= (u64)fp8q_code(kvt_bf16(lo[h], j), s, inv, mode) << (8 * (4 * h + j));
						cw.hi |= (u64)fp8q_code(kvt_bf16(hi[h], j), s, inv, mode) << (8 * (4 * h + j));
					}
			}
			codes[q] = cw;
		}
		((unsigned *)(out + FP8Q_SCALE_OFF))[t] = __float_as_uint(s);
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
