// Kernel of cp.restore_padded (cp-layout.md §4.2 step 4), the CUDA twin in
// fast/cuda/cp_restore_padded.go. Convention: kvtwin_kernel.h.
#include "kvtwin_kernel.h"

// A 16-byte word: rows whose width is a multiple of 16 move as one 128-bit
// load and store per thread (buffers are 256-byte aligned, rows start at
// multiples of the word).
struct alignas(16) cp_restore_padded_w16 {
	u64 lo, hi;
};

// cp_restore_padded_run returns the run holding output row o: the last j
// with runs[3j] <= o (runs[0] is 0 and the starts ascend).
KVT_DEVICE i64 cp_restore_padded_run(const i64 *runs, i64 nruns, i64 o)
{
	i64 lo = 0, hi = nruns;
	while (hi - lo > 1) {
		i64 mid = lo + (hi - lo) / 2;
		if (runs[3 * mid] <= o)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

// cp_restore_padded_copy: one thread per output word i of nrows·wpr. Output
// row o = i / wpr is row p = o − runs[3j] of lane slot j: Y row runs[3j+1] +
// p while p < runs[3j+2] (the slot's valid rows), else zero. The quotient
// takes 32-bit division when it fits (64-bit division is a long instruction
// sequence on the GPU).
template <typename T>
KVT_DEVICE void cp_restore_padded_copy(T *dst, const T *y, const i64 *runs, i64 nruns, i64 nrows, i64 wpr)
{
	const i64 n = nrows * wpr;
	const bool narrow = n <= 0xffffffffLL;
	KVT_FOR(i, n)
	{
		i64 o = narrow ? (i64)((unsigned)i / (unsigned)wpr) : i / wpr;
		i64 j = i - o * wpr;
		const i64 *run = runs + 3 * cp_restore_padded_run(runs, nruns, o);
		i64 p = o - run[0];
		dst[i] = p < run[2] ? y[(run[1] + p) * wpr + j] : T();
	}
}

// cp_restore_padded_rows: rank r's R(r) = nrows local rows of w bytes: each
// valid row from the compacted rows y, each padding row zero (Appendix D.3).
// The host builds one run per lane slot, in local order: {first local row,
// first y row, V[i][k]}; a run spans S[i][k] rows. Every output byte is
// written exactly once (padding too: no memset) and no thread depends on
// another.
KVT_KERNEL6(cp_restore_padded_rows, void *, dst, const void *, y, const i64 *, runs, i64, nruns, i64, nrows, i64, w)
{
	if (w % 16 == 0)
		cp_restore_padded_copy((cp_restore_padded_w16 *)dst, (const cp_restore_padded_w16 *)y, runs, nruns, nrows, w / 16);
	else if (w % 8 == 0)
		cp_restore_padded_copy((u64 *)dst, (const u64 *)y, runs, nruns, nrows, w / 8);
	else if (w % 4 == 0)
		cp_restore_padded_copy((unsigned *)dst, (const unsigned *)y, runs, nruns, nrows, w / 4);
	else
		cp_restore_padded_copy((unsigned char *)dst, (const unsigned char *)y, runs, nruns, nrows, w);
}
