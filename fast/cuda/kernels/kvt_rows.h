// kvt_rows.h — device code shared by the row kernels of cp.* (cp_split,
// cp_rerange, cp_compact_valid, cp_restore_padded): the run-table lookup,
// the grid-stride loop over the words of whole rows, and the choice of the
// widest word a row width allows. Convention: kvtwin_kernel.h; a change
// here marks every PTX module stale (scripts/ptx.sh hashes all headers).
#ifndef KVT_ROWS_H
#define KVT_ROWS_H

#include "kvtwin_kernel.h"

// kvt_run returns the run holding output row o in a table of nruns runs of
// stride i64 each, whose first field is the run's first output row: the
// last j with runs[stride·j] <= o (runs[0] is 0 and the starts ascend, as
// the host builds them).
KVT_DEVICE i64 kvt_run(const i64 *runs, i64 stride, i64 nruns, i64 o)
{
	i64 lo = 0, hi = nruns;
	while (hi - lo > 1) {
		i64 mid = lo + (hi - lo) / 2;
		if (runs[stride * mid] <= o)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

// kvt_for_row_words calls f(i, o, j) for each of this thread's output
// words i of nrows·wpr (grid-stride), o = i / wpr its row and j = i − o·wpr
// its word within the row. The quotient takes 32-bit division when it fits
// (64-bit division is a long instruction sequence on the GPU).
template <typename F>
KVT_DEVICE void kvt_for_row_words(i64 nrows, i64 wpr, F f)
{
	const i64 n = nrows * wpr;
	const bool narrow = n <= 0xffffffffLL;
	KVT_FOR(i, n)
	{
		i64 o = narrow ? (i64)((unsigned)i / (unsigned)wpr) : i / wpr;
		f(i, o, i - o * wpr);
	}
}

// kvt_by_word calls f(T(), w / sizeof(T)) once, with T the widest word
// (kvt_w16, u64, unsigned, unsigned char) dividing the row width w: rows
// whose width is a multiple of 16 move as one 128-bit load and store per
// thread. f is a generic lambda that casts its buffers to T*.
template <typename F>
KVT_DEVICE void kvt_by_word(i64 w, F f)
{
	if (w % 16 == 0)
		f(kvt_w16(), w / 16);
	else if (w % 8 == 0)
		f(u64(), w / 8);
	else if (w % 4 == 0)
		f(0u, w / 4);
	else
		f((unsigned char)0, w);
}

// kvt_gather_runs: dst row o (of nrows rows, w bytes each) = src row
// runs[2j+1] + (o − runs[2j]) for the run j holding o. Every output byte
// is written exactly once and no thread depends on another.
KVT_DEVICE void kvt_gather_runs(void *dst, const void *src, const i64 *runs, i64 nruns, i64 nrows, i64 w)
{
	kvt_by_word(w, [&](auto word, i64 wpr) {
		typedef decltype(word) T;
		T *d = (T *)dst;
		const T *s = (const T *)src;
		kvt_for_row_words(nrows, wpr, [&](i64 i, i64 o, i64 j) {
			i64 r = kvt_run(runs, 2, nruns, o);
			d[i] = s[(runs[2 * r + 1] + (o - runs[2 * r])) * wpr + j];
		});
	});
}

#endif
