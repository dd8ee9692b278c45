// Kernel of cp.split (cp-layout.md §1.2, §1.7: a single row gather), the
// CUDA twin in fast/cuda/cp_split.go. Convention: kvtwin_kernel.h; run
// lookup and word loop: kvt_rows.h.
#include "kvt_rows.h"

// cp_split_rows: every rank's local rows, rank after rank, in one buffer of
// nrows = Σ C_i rows of w bytes, and their position ids. The host builds one
// run per lane slot (rank r, lane k, request i), in output order: {first
// output row, first X row = OutBase(i) + SegStart(i,k), V[i][k], P_i +
// SegStart(i,k)}; a run spans S[i][k] output rows. One thread per output
// word: output row o is row p = o − runs[4j] of lane slot j, X row
// runs[4j+1] + p while p < runs[4j+2] (the slot's valid rows), else the pad
// row; the thread of the row's first word also writes its position
// runs[4j+3] + p. Every output byte and position is written exactly once
// and no thread depends on another.
KVT_KERNEL8(cp_split_rows, void *, dst, const void *, x, const void *, pad, i64 *, pos, const i64 *, runs, i64, nruns,
	    i64, nrows, i64, w)
{
	kvt_by_word(w, [&](auto word, i64 wpr) {
		typedef decltype(word) T;
		T *d = (T *)dst;
		const T *src = (const T *)x, *fill = (const T *)pad;
		kvt_for_row_words(nrows, wpr, [&](i64 i, i64 o, i64 j) {
			const i64 *run = runs + 4 * kvt_run(runs, 4, nruns, o);
			i64 p = o - run[0];
			d[i] = p < run[2] ? src[(run[1] + p) * wpr + j] : fill[j];
			if (j == 0)
				pos[o] = run[3] + p;
		});
	});
}
