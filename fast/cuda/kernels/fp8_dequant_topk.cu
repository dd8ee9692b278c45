// Kernel of fp8.dequant_topk (cp-layout.md §7.6), the CUDA twin in
// fast/cuda/fp8_dequant_topk.go. Convention: kvtwin_kernel.h. Bit-exact
// with ref.DequantRow656: out_j = bf16RNE(fl32(dec(code_j)·s_t)), one IEEE
// multiplication per value (no FMA: -fmad=false), the decode and the
// bf16 rounding written on integers (kvt_fp8.h).
#include "kvt_fp8.h"

// Geometry of §7.1/§7.2: 656-byte FP8 rows in (codes, 4 fp32 scales at
// 512, rope at 528), 1152-byte bf16 rows out: 64 nope words of 8 values
// and 8 rope words.
#define FP8D_IN_W 656
#define FP8D_OUT_W 1152
#define FP8D_ITEMS 72

// fp8_dequant_topk_rows: the n packed 656-byte rows src (the referenced
// rows, gathered by the host in ascending id order) dequantized into n
// 1152-byte rows dst; one work item per 16-byte output word (72 per row),
// so the work is proportional to the referenced rows. A nope word decodes
// 8 codes (one 8-byte load) with its tile's scale; a rope word copies.
KVT_KERNEL3(fp8_dequant_topk_rows, kvt_w16 *, dst, const u64 *, src, i64, n)
{
	KVT_FOR(i, n * FP8D_ITEMS)
	{
		i64 row = i / FP8D_ITEMS;
		int k = (int)(i - row * FP8D_ITEMS);
		const char *in = (const char *)src + row * FP8D_IN_W;
		if (k >= 64) {
			dst[i] = ((const kvt_w16 *)(in + 528))[k - 64];
			continue;
		}
		float s = __uint_as_float(((const unsigned *)(in + 512))[k >> 4]);
		u64 codes = ((const u64 *)in)[k];
		kvt_w16 w;
		w.lo = w.hi = 0;
		for (int j = 0; j < 4; j++) {
			w.lo |= kvt_bf16_rne<u64>(kvt_e4m3_dec((unsigned)(codes >> (8 * j)) & 0xFFu) * s) << (16 * j);
			w.hi |= kvt_bf16_rne<u64>(kvt_e4m3_dec((unsigned)(codes >> (8 * (j + 4))) & 0xFFu) * s) << (16 * j);
		}
		dst[i] = w;
	}
}
