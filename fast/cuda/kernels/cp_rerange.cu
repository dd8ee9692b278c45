// Kernel of cp.rerange (cp-layout.md §3.2), the CUDA twin in
// fast/cuda/cp_rerange.go. Convention: kvtwin_kernel.h; the run gather is
// kvt_rows.h's, shared with cp_compact_valid.
#include "kvt_rows.h"

// cp_rerange_rows: dst row o (of nrows rows, w bytes each) = src row
// runs[2j+1] + (o − runs[2j]) for the run j holding o. The host builds the
// runs (one per request and segment with valid rows, §3.2: source offsets
// from the sizes each rank sent, placement from the valid sizes), so every
// output byte is written exactly once and no thread depends on another.
KVT_KERNEL6(cp_rerange_rows, void *, dst, const void *, src, const i64 *, runs, i64, nruns, i64, nrows, i64, w)
{
	kvt_gather_runs(dst, src, runs, nruns, nrows, w);
}
