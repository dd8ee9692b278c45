// Kernel of fp8.dequant_topk (cp-layout.md §7.6), the CUDA twin in
// fast/cuda/fp8_dequant_topk.go. Convention: kvtwin_kernel.h. Bit-exact
// with ref.DequantRow656: out_j = bf16RNE(fl32(dec(code_j)·s_t)), one IEEE
// multiplication per value (no FMA: -fmad=false), the decode and the
// bf16 rounding written on integers.
#include "kvtwin_kernel.h"

#ifdef __CUDACC__
#define FP8D_ALIGN16 __align__(16)
#else
#define FP8D_ALIGN16 __attribute__((aligned(16)))
#endif

// fp8d_w16 is one 16-byte word (ld/st.global.v2.u64 on the GPU).
struct FP8D_ALIGN16 fp8d_w16 {
	u64 lo, hi;
};

// Geometry of §7.1/§7.2: 656-byte FP8 rows in (codes, 4 fp32 scales at
// 512, rope at 528), 1152-byte bf16 rows out: 64 nope words of 8 values
// and 8 rope words.
#define FP8D_IN_W 656
#define FP8D_OUT_W 1152
#define FP8D_ITEMS 72

// fp8d_dec is ref.DecodeE4M3: the exact fp32 value of an e4m3fn code (a
// quiet NaN for S.1111.111; its sign and payload never reach an output,
// since the bf16 rounding canonicalizes every NaN).
KVT_DEVICE float fp8d_dec(unsigned c)
{
	if ((c & 0x7Fu) == 0x7Fu) return __uint_as_float(0x7FC00000u);
	unsigned e = (c >> 3) & 0xFu, m = c & 7u;
	float v = e == 0 ? (float)m * 0.001953125f /* m·2^-9, exact */ : __uint_as_float(((e + 120u) << 23) | (m << 20));
	return (c & 0x80u) ? -v : v;
}

// fp8d_bf16_rne is ref.BF16FromF32: round to nearest even, every NaN to 0x7FC0.
KVT_DEVICE u64 fp8d_bf16_rne(float x)
{
	unsigned u = __float_as_uint(x);
	if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0u;
	return (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
}

// fp8_dequant_topk_rows: the n packed 656-byte rows src (the referenced
// rows, gathered by the host in ascending id order) dequantized into n
// 1152-byte rows dst; one work item per 16-byte output word (72 per row),
// so the work is proportional to the referenced rows. A nope word decodes
// 8 codes (one 8-byte load) with its tile's scale; a rope word copies.
KVT_KERNEL3(fp8_dequant_topk_rows, fp8d_w16 *, dst, const u64 *, src, i64, n)
{
	KVT_FOR(i, n * FP8D_ITEMS)
	{
		i64 row = i / FP8D_ITEMS;
		int k = (int)(i - row * FP8D_ITEMS);
		const char *in = (const char *)src + row * FP8D_IN_W;
		if (k >= 64) {
			dst[i] = ((const fp8d_w16 *)(in + 528))[k - 64];
			continue;
		}
		float s = __uint_as_float(((const unsigned *)(in + 512))[k >> 4]);
		u64 codes = ((const u64 *)in)[k];
		fp8d_w16 w;
		w.lo = w.hi = 0;
		for (int j = 0; j < 4; j++) {
			w.lo |= fp8d_bf16_rne(fp8d_dec((unsigned)(codes >> (8 * j)) & 0xFFu) * s) << (16 * j);
			w.hi |= fp8d_bf16_rne(fp8d_dec((unsigned)(codes >> (8 * (j + 4))) & 0xFFu) * s) << (16 * j);
		}
		dst[i] = w;
	}
}
