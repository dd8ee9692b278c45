// Kernel of cp.split (cp-layout.md §1.2, §1.7: a single row gather), the
// CUDA twin in fast/cuda/cp_split.go. Convention: kvtwin_kernel.h.
#include "kvtwin_kernel.h"

// A 16-byte word: rows whose width is a multiple of 16 move as one 128-bit
// load and store per thread (buffers are 256-byte aligned, rows start at
// multiples of the word).
struct alignas(16) cp_split_w16 {
	u64 lo, hi;
};

// cp_split_run returns the run holding output row o: the last j with
// runs[4j] <= o (runs[0] is 0 and the starts ascend).
KVT_DEVICE i64 cp_split_run(const i64 *runs, i64 nruns, i64 o)
{
	i64 lo = 0, hi = nruns;
	while (hi - lo > 1) {
		i64 mid = lo + (hi - lo) / 2;
		if (runs[4 * mid] <= o)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

// cp_split_copy: one thread per output word i of nrows·wpr. Output row o = i
// / wpr is row p = o − runs[4j] of lane slot j: X row runs[4j+1] + p while p
// < runs[4j+2] (the slot's valid rows), else the pad row; the thread of the
// row's first word also writes its position runs[4j+3] + p. The quotient
// takes 32-bit division when it fits (64-bit division is a long instruction
// sequence on the GPU).
template <typename T>
KVT_DEVICE void cp_split_copy(T *dst, const T *x, const T *pad, i64 *pos, const i64 *runs, i64 nruns, i64 nrows, i64 wpr)
{
	const i64 n = nrows * wpr;
	const bool narrow = n <= 0xffffffffLL;
	KVT_FOR(i, n)
	{
		i64 o = narrow ? (i64)((unsigned)i / (unsigned)wpr) : i / wpr;
		i64 j = i - o * wpr;
		const i64 *run = runs + 4 * cp_split_run(runs, nruns, o);
		i64 p = o - run[0];
		dst[i] = p < run[2] ? x[(run[1] + p) * wpr + j] : pad[j];
		if (j == 0)
			pos[o] = run[3] + p;
	}
}

// cp_split_rows: every rank's local rows, rank after rank, in one buffer of
// nrows = Σ C_i rows of w bytes, and their position ids. The host builds one
// run per lane slot (rank r, lane k, request i), in output order: {first
// output row, first X row = OutBase(i) + SegStart(i,k), V[i][k], P_i +
// SegStart(i,k)}; a run spans S[i][k] output rows. Every output byte and
// position is written exactly once and no thread depends on another.
KVT_KERNEL8(cp_split_rows, void *, dst, const void *, x, const void *, pad, i64 *, pos, const i64 *, runs, i64, nruns,
	    i64, nrows, i64, w)
{
	if (w % 16 == 0)
		cp_split_copy((cp_split_w16 *)dst, (const cp_split_w16 *)x, (const cp_split_w16 *)pad, pos, runs, nruns, nrows, w / 16);
	else if (w % 8 == 0)
		cp_split_copy((u64 *)dst, (const u64 *)x, (const u64 *)pad, pos, runs, nruns, nrows, w / 8);
	else if (w % 4 == 0)
		cp_split_copy((unsigned *)dst, (const unsigned *)x, (const unsigned *)pad, pos, runs, nruns, nrows, w / 4);
	else
		cp_split_copy((unsigned char *)dst, (const unsigned char *)x, (const unsigned char *)pad, pos, runs, nruns, nrows, w);
}
