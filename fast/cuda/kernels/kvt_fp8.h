// kvt_fp8.h — the FP8 codec on integers, shared by the fp8.* kernels
// (fp8_quantize_row, fp8_quantize_index_k, fp8_dequant_topk): bf16 field
// extraction and amax, round-to-nearest-even fp32 → bf16, and the e4m3fn
// encoder and decoder, each bit-exact with its ref function (ref/fp8codec.go).
// Only IEEE operations the ref performs are float; everything else is
// integer, so nvcc (-fmad=false) and the host emulation agree bit for bit.
// Convention: kvtwin_kernel.h; a change here marks every PTX module stale
// (scripts/ptx.sh hashes all headers).
#ifndef KVT_FP8_H
#define KVT_FP8_H

#include "kvtwin_kernel.h"

// kvt_bf16 returns bf16 value j (0..3) of the little-endian word v.
KVT_DEVICE unsigned kvt_bf16(u64 v, int j) { return (unsigned)(v >> (16 * j)) & 0xFFFFu; }

// kvt_bf16_absmax4 folds max(h & 0x7FFF) over the 4 bf16 of v into m: for
// finite bf16 the magnitude order is the integer order of h & 0x7FFF, and
// NaN/±Inf show as >= 0x7F80 (fast's bf16AbsMax).
KVT_DEVICE unsigned kvt_bf16_absmax4(u64 v, unsigned m)
{
	for (int j = 0; j < 4; j++) {
		unsigned a = kvt_bf16(v, j) & 0x7FFFu;
		m = a > m ? a : m;
	}
	return m;
}

// kvt_bf16_rne is ref.BF16FromF32: round to nearest even, every NaN to
// 0x7FC0, returned as R. A caller that packs the bits into a 64-bit word
// asks for R = u64: the widening then happens in each return, which keeps
// fp8_dequant_topk's PTX as it was before this helper was shared (the
// values are the same either way).
template <typename R = unsigned>
KVT_DEVICE R kvt_bf16_rne(float x)
{
	unsigned u = __float_as_uint(x);
	if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0u;
	return (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
}

// kvt_e4m3_enc is ref.EncodeE4M3 on integers: RNE to e4m3fn, saturating at
// ±448 (code 0x7E), NaN to 0x7F, the sign of zero kept. Below 2^-6 (the
// e4m3 subnormals, units of 2^-9) the exact |x|·2^9 = M·2^(E-141) is
// rounded by a shift with ties to even (ref's roundHalfEven of the exact
// product); above, ref's bit rounding.
KVT_DEVICE unsigned kvt_e4m3_enc(float x)
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

// kvt_e4m3_dec is ref.DecodeE4M3: the exact fp32 value of an e4m3fn code
// (a quiet NaN for S.1111.111; its sign and payload never reach an output,
// since the bf16 rounding canonicalizes every NaN).
KVT_DEVICE float kvt_e4m3_dec(unsigned c)
{
	if ((c & 0x7Fu) == 0x7Fu) return __uint_as_float(0x7FC00000u);
	unsigned e = (c >> 3) & 0xFu, m = c & 7u;
	float v = e == 0 ? (float)m * 0.001953125f /* m·2^-9, exact */ : __uint_as_float(((e + 120u) << 23) | (m << 20));
	return (c & 0x80u) ? -v : v;
}

#endif
