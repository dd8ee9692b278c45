// Kernel of cp.compact_valid (cp-layout.md §4.2 steps 1–2), the CUDA twin
// in fast/cuda/cp_compact_valid.go. Convention: kvtwin_kernel.h.
#include "kvtwin_kernel.h"

// A 16-byte word: rows whose width is a multiple of 16 move as one 128-bit
// load and store per thread (buffers are 256-byte aligned, rows start at
// multiples of the word).
struct alignas(16) cp_compact_valid_w16 {
	u64 lo, hi;
};

// cp_compact_valid_run returns the run holding output row o: the last j with
// runs[2j] <= o (runs[0] is 0 and the starts ascend).
KVT_DEVICE i64 cp_compact_valid_run(const i64 *runs, i64 nruns, i64 o)
{
	i64 lo = 0, hi = nruns;
	while (hi - lo > 1) {
		i64 mid = lo + (hi - lo) / 2;
		if (runs[2 * mid] <= o)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

// cp_compact_valid_copy: one thread per output word i of nrows·wpr; output row
// o = i / wpr is source row runs[2j+1] + (o − runs[2j]) of run j. The
// quotient takes 32-bit division when it fits (64-bit division is a long
// instruction sequence on the GPU).
template <typename T>
KVT_DEVICE void cp_compact_valid_copy(T *dst, const T *src, const i64 *runs, i64 nruns, i64 nrows, i64 wpr)
{
	const i64 n = nrows * wpr;
	const bool narrow = n <= 0xffffffffLL;
	KVT_FOR(i, n)
	{
		i64 o = narrow ? (i64)((unsigned)i / (unsigned)wpr) : i / wpr;
		i64 j = i - o * wpr;
		i64 r = cp_compact_valid_run(runs, nruns, o);
		dst[i] = src[(runs[2 * r + 1] + (o - runs[2 * r])) * wpr + j];
	}
}

// cp_compact_valid_rows: dst row o (of nrows = Rv(r) rows, w bytes each) =
// src row runs[2j+1] + (o − runs[2j]) for the run j holding o. The host
// builds the runs (one per lane slot with valid rows: its valid rows are the
// first V of the slot, §0.3, so padding is skipped by the run table, never by
// a count of leading rows, §4.5); every output byte is written exactly once
// and no thread depends on another.
KVT_KERNEL6(cp_compact_valid_rows, void *, dst, const void *, src, const i64 *, runs, i64, nruns, i64, nrows, i64, w)
{
	if (w % 16 == 0)
		cp_compact_valid_copy((cp_compact_valid_w16 *)dst, (const cp_compact_valid_w16 *)src, runs, nruns, nrows, w / 16);
	else if (w % 8 == 0)
		cp_compact_valid_copy((u64 *)dst, (const u64 *)src, runs, nruns, nrows, w / 8);
	else if (w % 4 == 0)
		cp_compact_valid_copy((unsigned *)dst, (const unsigned *)src, runs, nruns, nrows, w / 4);
	else
		cp_compact_valid_copy((unsigned char *)dst, (const unsigned char *)src, runs, nruns, nrows, w);
}
