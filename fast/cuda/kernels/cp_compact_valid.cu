// Kernel of cp.compact_valid (cp-layout.md §4.2 steps 1–2), the CUDA twin
// in fast/cuda/cp_compact_valid.go. Convention: kvtwin_kernel.h; the run
// gather is kvt_rows.h's, shared with cp_rerange.
#include "kvt_rows.h"

// cp_compact_valid_rows: dst row o (of nrows = Rv(r) rows, w bytes each) =
// src row runs[2j+1] + (o − runs[2j]) for the run j holding o. The host
// builds the runs (one per lane slot with valid rows: its valid rows are the
// first V of the slot, §0.3, so padding is skipped by the run table, never by
// a count of leading rows, §4.5); every output byte is written exactly once
// and no thread depends on another.
KVT_KERNEL6(cp_compact_valid_rows, void *, dst, const void *, src, const i64 *, runs, i64, nruns, i64, nrows, i64, w)
{
	kvt_gather_runs(dst, src, runs, nruns, nrows, w);
}
