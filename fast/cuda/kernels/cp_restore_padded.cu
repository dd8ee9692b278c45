// Kernel of cp.restore_padded (cp-layout.md §4.2 step 4), the CUDA twin in
// fast/cuda/cp_restore_padded.go. Convention: kvtwin_kernel.h; run lookup
// and word loop: kvt_rows.h.
#include "kvt_rows.h"

// cp_restore_padded_rows: rank r's R(r) = nrows local rows of w bytes: each
// valid row from the compacted rows y, each padding row zero (Appendix D.3).
// The host builds one run per lane slot, in local order: {first local row,
// first y row, V[i][k]}; a run spans S[i][k] rows. One thread per output
// word: output row o is row p = o − runs[3j] of lane slot j, Y row
// runs[3j+1] + p while p < runs[3j+2] (the slot's valid rows), else zero.
// Every output byte is written exactly once (padding too: no memset) and no
// thread depends on another.
KVT_KERNEL6(cp_restore_padded_rows, void *, dst, const void *, y, const i64 *, runs, i64, nruns, i64, nrows, i64, w)
{
	kvt_by_word(w, [&](auto word, i64 wpr) {
		typedef decltype(word) T;
		T *d = (T *)dst;
		const T *src = (const T *)y;
		kvt_for_row_words(nrows, wpr, [&](i64 i, i64 o, i64 j) {
			const i64 *run = runs + 3 * kvt_run(runs, 3, nruns, o);
			i64 p = o - run[0];
			d[i] = p < run[2] ? src[(run[1] + p) * wpr + j] : T();
		});
	});
}
