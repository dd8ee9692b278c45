// Kernel of fp8.compose_current (cp-layout.md §7.5), the CUDA twin in
// fast/cuda/fp8_compose_current.go; the current rows are quantized first
// by fp8_quantize_row_rows (fp8_quantize_row.cu). Convention:
// kvtwin_kernel.h.
#include "kvtwin_kernel.h"

// A 656-byte row is 41 16-byte words (kvt_w16).
#define FP8C_WORDS 41

// fp8_compose_current_gather: the RAGGED K buffer, out row r for r < n
// from src[r]: a pool slot s >= 0 (a prefix row, raw), or -(q+1) for
// quantized current row q. One work item per 16-byte output word, so
// every output word is written exactly once; src was built and checked by
// the host (slots in range, q below the quantized row count).
KVT_KERNEL5(fp8_compose_current_gather, kvt_w16 *, out, const kvt_w16 *, pool, const kvt_w16 *, cur, const i64 *, src, i64, n)
{
	KVT_FOR(i, n * FP8C_WORDS)
	{
		i64 r = i / FP8C_WORDS, k = i - r * FP8C_WORDS, s = src[r];
		out[i] = s >= 0 ? pool[s * FP8C_WORDS + k] : cur[(-s - 1) * FP8C_WORDS + k];
	}
}
