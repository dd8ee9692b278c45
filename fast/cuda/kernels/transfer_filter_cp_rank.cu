// Kernels of transfer.filter_cp_rank (transfer.md §1.2 "Fast path"), the
// CUDA twin in fast/cuda/filter_cp_rank.go. Convention: kvtwin_kernel.h.
#include "kvtwin_kernel.h"

// filter_cp_rank_min: st[0] = min(st[0], min over kv[0:n]). Each thread folds
// its grid-stride share, then one atomicMin: commutative, so any thread order
// (and the emulation's sequential one) gives the same result.
KVT_KERNEL3(filter_cp_rank_min, const i64 *, kv, i64, n, i64 *, st)
{
	i64 m = 0x7fffffffffffffffLL;
	bool any = false;
	KVT_FOR(i, n)
	{
		any = true;
		m = kv[i] < m ? kv[i] : m;
	}
	if (any) atomicMin(&st[0], m);
}

// filter_cp_rank_bounds: st[1] = min index, st[2] = max index of the ids
// with lo <= v < lo+width (one unsigned compare; v, lo >= 0 so v-lo cannot
// overflow). st[1] starts at n and st[2] at -1 (set by the launcher).
KVT_KERNEL5(filter_cp_rank_bounds, const i64 *, kv, i64, n, i64, lo, u64, width, i64 *, st)
{
	i64 first = n, last = -1;
	KVT_FOR(i, n)
	{
		if ((u64)(kv[i] - lo) < width) {
			first = i < first ? i : first;
			last = i;
		}
	}
	if (last >= 0) {
		atomicMin(&st[1], first);
		atomicMax(&st[2], last);
	}
}

// filter_cp_rank_positions: out[i] = start + i for i < n (the absolute
// request positions of the owned span).
KVT_KERNEL3(filter_cp_rank_positions, i64 *, out, i64, n, i64, start)
{
	KVT_FOR(i, n) out[i] = start + i;
}
