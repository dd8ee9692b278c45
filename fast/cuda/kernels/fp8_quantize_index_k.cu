// Kernels of fp8.quantize_index_k (cp-layout.md §7.3), the CUDA twin in
// fast/cuda/fp8_quantize_index_k.go. Convention: kvtwin_kernel.h.
// Bit-exact with ref.QuantizeIndexK: the scale is built from bits as ref
// builds it, the codes are enc(clamp(x/s, ±448)) with IEEE division and
// ref.EncodeE4M3 written on integers (kvt_fp8.h, the encoder
// fp8_quantize_row.cu uses too).
#include "kvt_fp8.h"

// Byte geometry of §7.3: 128 bf16 in (256 B), 128 codes and one fp32
// scale out (132 B, so output rows are only 4-byte aligned).
#define FP8K_IN_W 256
#define FP8K_OUT_W 132
// Work items per key: 8, each 16 codes (four 4-byte stores).
#define FP8K_ITEMS 8

// fp8k_scale is ref.IndexKScale of amax (finite, >= 0): t = fl32(max(amax,
// fl32(1e-4)) · fl32(1/448)), s = 2^(E(t) − 127 + (mantissa(t) != 0)).
KVT_DEVICE float fp8k_scale(float amax)
{
	float floor = __uint_as_float(0x38D1B717u), inv448 = __uint_as_float(0x3B124925u);
	float t = (amax > floor ? amax : floor) * inv448;
	unsigned u = __float_as_uint(t), e = (u >> 23) & 0xFFu;
	if (u & 0x7FFFFFu) e++;
	return __uint_as_float(e << 23);
}

// fp8_quantize_index_k_rows: n keys src (256 B of bf16) to 132-byte rows
// dst; one work item per 16 codes (8 per key). Each folds the key's amax
// on bits (max of h & 0x7FFF; the key's 8 threads read its 256 B
// together), builds the scale, encodes its 16 values as ref does and
// stores them as four 4-byte words; item 0 also stores the scale. A key
// holding NaN/±Inf (amax >= 0x7F80) lowers bad[0] to its row (atomicMin)
// and the host reports ref's error for the first such row.
KVT_KERNEL4(fp8_quantize_index_k_rows, unsigned *, dst, const u64 *, src, i64, n, i64 *, bad)
{
	KVT_FOR(i, n * FP8K_ITEMS)
	{
		i64 row = i / FP8K_ITEMS;
		int k = (int)(i - row * FP8K_ITEMS);
		const u64 *key = src + row * (FP8K_IN_W / 8);
		unsigned *out = dst + row * (FP8K_OUT_W / 4);
		unsigned am = 0;
		for (int j = 0; j < FP8K_IN_W / 8; j++) {
			am = kvt_bf16_absmax4(key[j], am);
		}
		if (am >= 0x7F80u) {
			if (k == 0) atomicMin(bad, row);
			continue;
		}
		float s = fp8k_scale(__uint_as_float(am << 16));
		for (int w = 0; w < 4; w++) {
			u64 v = key[4 * k + w];
			unsigned word = 0;
			for (int b = 0; b < 4; b++) {
				float x = __uint_as_float(kvt_bf16(v, b) << 16);
				float q = x / s;
				q = q < -448.0f ? -448.0f : q;
				q = q > 448.0f ? 448.0f : q;
				word |= kvt_e4m3_enc(q) << (8 * b);
			}
			out[4 * k + w] = word;
		}
		if (k == 0) out[32] = __float_as_uint(s);
	}
}
