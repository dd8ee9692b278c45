// Kernel of fp8.materialize_pages (cp-layout.md §7.4 Materialize), the
// CUDA twin in fast/cuda/fp8_materialize_pages.go. Convention:
// kvtwin_kernel.h.
#include "kvtwin_kernel.h"

#ifdef __CUDACC__
#define FP8M_ALIGN16 __align__(16)
#else
#define FP8M_ALIGN16 __attribute__((aligned(16)))
#endif

// fp8m_w16 is one 16-byte word (ld/st.global.v2.u64 on the GPU); a
// 656-byte row is 41 of them.
struct FP8M_ALIGN16 fp8m_w16 {
	u64 lo, hi;
};
#define FP8M_WORDS 41

// fp8_materialize_pages_gather: out row i = pool row slots[i] for i < n
// (slots validated in range by the host; repeats allowed), one work item
// per 16-byte output word: every output word is written exactly once.
KVT_KERNEL4(fp8_materialize_pages_gather, fp8m_w16 *, out, const fp8m_w16 *, pool, const i64 *, slots, i64, n)
{
	KVT_FOR(i, n * FP8M_WORDS)
	{
		i64 r = i / FP8M_WORDS, k = i - r * FP8M_WORDS;
		out[i] = pool[slots[r] * FP8M_WORDS + k];
	}
}
