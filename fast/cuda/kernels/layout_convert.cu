// Kernels of layout.convert (transfer.md §7.2, §7.3), the CUDA twin in
// fast/cuda/layout_convert.go. Convention: kvtwin_kernel.h.
//
// Every mode is one strided copy: the units (token slices of `unit` bytes)
// are enumerated over four dimensions (n0, n1, n2, n3), outermost first; a
// unit's source and destination offsets are linear in its coordinates
// (every §7.1 layout is), except that dimension 0 may go through an index
// list (the page pairs of a load or backup, the pages of a flat read). Each
// unit is moved in chunks of w bytes (the largest power of two <= 16 that
// divides the unit), one chunk per thread and iteration, so neighbouring
// threads touch neighbouring addresses.
#include "kvtwin_kernel.h"

// The geometry array's layout (geo[] in int64s), written by layoutGeo in Go.
enum { G_N0, G_N1, G_N2, G_N3, G_SS0, G_SS1, G_SS2, G_SS3, G_DS0, G_DS1, G_DS2, G_DS3, G_SOFF, G_DOFF, G_UNIT, G_W };

KVT_DEVICE void copy_chunk(unsigned char *d, const unsigned char *s, i64 w)
{
#ifdef __CUDACC__
	switch (w) {
	case 16: *(uint4 *)d = *(const uint4 *)s; break;
	case 8: *(u64 *)d = *(const u64 *)s; break;
	case 4: *(unsigned *)d = *(const unsigned *)s; break;
	case 2: *(unsigned short *)d = *(const unsigned short *)s; break;
	default: *d = *s;
	}
#else
	std::memcpy(d, s, (size_t)w);
#endif
}

// unit_offset is the offset of unit u's first byte under strides st[0..3]
// (+ base), dimension 0 going through idx when it is not null.
KVT_DEVICE i64 unit_offset(const i64 *geo, i64 u, const i64 *idx, int strides, i64 base)
{
	const i64 n1 = geo[G_N1], n2 = geo[G_N2], n3 = geo[G_N3];
	i64 i3 = u % n3, r = u / n3;
	i64 i2 = r % n2;
	r /= n2;
	i64 i1 = r % n1, i0 = r / n1;
	if (idx) i0 = idx[i0];
	return base + i0 * geo[strides] + i1 * geo[strides + 1] + i2 * geo[strides + 2] + i3 * geo[strides + 3];
}

// layout_convert_copy moves nchunks chunks: dst[D(u)+c] = src[S(u)+c].
KVT_KERNEL6(layout_convert_copy, unsigned char *, dst, const unsigned char *, src, const i64 *, sidx, const i64 *, didx,
            const i64 *, geo, i64, nchunks)
{
	const i64 w = geo[G_W], per = geo[G_UNIT] / w;
	KVT_FOR(i, nchunks)
	{
		i64 u = i / per, c = (i - u * per) * w;
		i64 so = unit_offset(geo, u, sidx, G_SS0, geo[G_SOFF]) + c;
		i64 d = unit_offset(geo, u, didx, G_DS0, geo[G_DOFF]) + c;
		copy_chunk(dst + d, src + so, w);
	}
}

// layout_convert_runs counts, in *count, the units u < nunits (destination
// order, no index lists) whose source does not continue unit u-1's: the
// number of maximal contiguous copies, ref's descriptor count of a relayout.
KVT_KERNEL3(layout_convert_runs, const i64 *, geo, i64, nunits, u64 *, count)
{
	const i64 unit = geo[G_UNIT];
	u64 local = 0;
	KVT_FOR(u, nunits)
	{
		if (u == 0 || unit_offset(geo, u, 0, G_SS0, 0) != unit_offset(geo, u - 1, 0, G_SS0, 0) + unit) local++;
	}
	if (local) atomicAdd(count, local);
}
