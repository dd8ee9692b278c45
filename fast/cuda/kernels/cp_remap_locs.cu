// Kernel of cp.remap_locs (cp-layout.md §6.1, P6.5: one thread per location,
// binary search, no atomics on the valid path), the CUDA twin in
// fast/cuda/cp_remap_locs.go. Convention: kvtwin_kernel.h.
#include "kvtwin_kernel.h"

// cp_remap_locs_search returns the index of p in the ascending page[lo,
// end), or −1 (lower-bound binary search).
KVT_DEVICE i64 cp_remap_locs_search(const i64 *page, i64 lo, i64 end, i64 p)
{
	i64 hi = end;
	while (lo < hi) {
		i64 mid = lo + (hi - lo) / 2;
		if (page[mid] < p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < end && page[lo] == p ? lo : -1;
}

// cp_remap_locs_remap: out[e] for each of the n locations (§6.1): −1 stays
// −1; otherwise page = loc / ps is searched among row rows[e]'s descriptors
// [rowptr[row], rowptr[row+1]) (rows null: the row-free path, one table of
// nrows = 1) and out[e] = slot·ps + loc mod ps. An entry that is bad (loc
// < −1, row outside [0, nrows), page not in the row) folds its index into
// *bad with atomicMin (commutative: the lowest bad index whatever the thread
// order; the host re-checks that entry to name ref's error) and leaves
// out[e] unwritten: the output is not read back then.
KVT_KERNEL10(cp_remap_locs_remap, i64 *, out, const i64 *, locs, const int *, rows, i64, n, const int *, rowptr,
	     i64, nrows, const i64 *, page, const int *, slot, i64, ps, i64 *, bad)
{
	KVT_FOR(e, n)
	{
		i64 loc = locs[e];
		i64 row = rows ? (i64)rows[e] : 0;
		if (loc < -1 || row < 0 || row >= nrows) {
			atomicMin(bad, e);
			continue;
		}
		if (loc == -1) {
			out[e] = -1;
			continue;
		}
		i64 pg = loc / ps;
		i64 x = cp_remap_locs_search(page, rowptr[row], rowptr[row + 1], pg);
		if (x < 0) {
			atomicMin(bad, e);
			continue;
		}
		out[e] = (i64)slot[x] * ps + (loc - pg * ps);
	}
}
