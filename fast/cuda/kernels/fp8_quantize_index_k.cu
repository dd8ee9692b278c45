// Kernels of fp8.quantize_index_k (cp-layout.md §7.3), the CUDA twin in
// fast/cuda/fp8_quantize_index_k.go. Convention: kvtwin_kernel.h.
// Bit-exact with ref.QuantizeIndexK: the scale is built from bits as ref
// builds it, the codes are enc(clamp(x/s, ±448)) with IEEE division and
// ref.EncodeE4M3 written on integers (the same encoder as
// fp8_quantize_row.cu; each kernel module is self-contained).
#include "kvtwin_kernel.h"

// Byte geometry of §7.3: 128 bf16 in (256 B), 128 codes and one fp32
// scale out (132 B, so output rows are only 4-byte aligned).
#define FP8K_IN_W 256
#define FP8K_OUT_W 132
// Work items per key: 8, each 16 codes (four 4-byte stores).
#define FP8K_ITEMS 8

// fp8k_enc is ref.EncodeE4M3 (see fp8_quantize_row.cu's fp8q_enc).
KVT_DEVICE unsigned fp8k_enc(float x)
{
	unsigned u = __float_as_uint(x), sign = u >> 31, a = u & 0x7FFFFFFFu, code;
	if (a > 0x7F800000u) return 0x7Fu;
	if (a < 0x3C800000u) {
		unsigned e = a >> 23;
		int r = 141 - (int)e; // |x|·2^9 = M·2^(e-141), r >= 21 here
		if (e == 0 || r > 24) {
			code = 0; // below one half (M < 2^24)
		} else {
			unsigned m = (a & 0x7FFFFFu) | 0x800000u;
			unsigned q = m >> r, rem = m & ((1u << r) - 1u), half = 1u << (r - 1);
			if (rem > half || (rem == half && (q & 1u))) q++;
			code = q;
		}
	} else {
		unsigned r = a + 0x7FFFFu + ((a >> 20) & 1u);
		code = (r >> 20) - 960u;
	}
	if (code > 0x7Eu) code = 0x7Eu;
	return code | sign << 7;
}

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
			u64 v = key[j];
			for (int b = 0; b < 4; b++) {
				unsigned a = (unsigned)(v >> (16 * b)) & 0x7FFFu;
				am = a > am ? a : am;
			}
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
				float x = __uint_as_float(((unsigned)(v >> (16 * b)) & 0xFFFFu) << 16);
				float q = x / s;
				q = q < -448.0f ? -448.0f : q;
				q = q > 448.0f ? 448.0f : q;
				word |= fp8k_enc(q) << (8 * b);
			}
			out[4 * k + w] = word;
		}
		if (k == 0) out[32] = __float_as_uint(s);
	}
}
