// Kernel of fp8.store_pages (cp-layout.md §7.4 Store), the CUDA twin in
// fast/cuda/fp8_store_pages.go. Convention: kvtwin_kernel.h.
#include "kvtwin_kernel.h"

#ifdef __CUDACC__
#define FP8S_ALIGN16 __align__(16)
#else
#define FP8S_ALIGN16 __attribute__((aligned(16)))
#endif

// fp8s_w16 is one 16-byte word (ld/st.global.v2.u64 on the GPU); a
// 656-byte row is 41 of them.
struct FP8S_ALIGN16 fp8s_w16 {
	u64 lo, hi;
};
#define FP8S_WORDS 41

// fp8_store_pages_scatter: pool row locs[e] = rows[e] for e < n, one work
// item per 16-byte word (41 per row): consecutive threads copy consecutive
// words of a row. The host has validated that every loc is in range and
// the locs are pairwise distinct, so no two items write one word.
KVT_KERNEL4(fp8_store_pages_scatter, fp8s_w16 *, pool, const fp8s_w16 *, rows, const i64 *, locs, i64, n)
{
	KVT_FOR(i, n * FP8S_WORDS)
	{
		i64 e = i / FP8S_WORDS, k = i - e * FP8S_WORDS;
		pool[locs[e] * FP8S_WORDS + k] = rows[i];
	}
}
