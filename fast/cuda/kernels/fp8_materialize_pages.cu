// Kernel of fp8.materialize_pages (cp-layout.md §7.4 Materialize), the
// CUDA twin in fast/cuda/fp8_materialize_pages.go. Convention:
// kvtwin_kernel.h.
#include "kvtwin_kernel.h"

// A 656-byte row is 41 16-byte words (kvt_w16).
#define FP8M_WORDS 41

// fp8_materialize_pages_gather: out row i = pool row slots[i] for i < n
// (slots validated in range by the host; repeats allowed), one work item
// per 16-byte output word: every output word is written exactly once.
KVT_KERNEL4(fp8_materialize_pages_gather, kvt_w16 *, out, const kvt_w16 *, pool, const i64 *, slots, i64, n)
{
	KVT_FOR(i, n * FP8M_WORDS)
	{
		i64 r = i / FP8M_WORDS, k = i - r * FP8M_WORDS;
		out[i] = pool[slots[r] * FP8M_WORDS + k];
	}
}
