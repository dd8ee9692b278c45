// Kernel of fp8.store_pages (cp-layout.md §7.4 Store), the CUDA twin in
// fast/cuda/fp8_store_pages.go. Convention: kvtwin_kernel.h.
#include "kvtwin_kernel.h"

// A 656-byte row is 41 16-byte words (kvt_w16).
#define FP8S_WORDS 41

// fp8_store_pages_scatter: pool row locs[e] = rows[e] for e < n, one work
// item per 16-byte word (41 per row): consecutive threads copy consecutive
// words of a row. The host has validated that every loc is in range and
// the locs are pairwise distinct, so no two items write one word.
KVT_KERNEL4(fp8_store_pages_scatter, kvt_w16 *, pool, const kvt_w16 *, rows, const i64 *, locs, i64, n)
{
	KVT_FOR(i, n * FP8S_WORDS)
	{
		i64 e = i / FP8S_WORDS, k = i - e * FP8S_WORDS;
		pool[locs[e] * FP8S_WORDS + k] = rows[i];
	}
}
