// Kernels of layout.convert (transfer.md §7.2, §7.3), the CUDA twin in
// fast/cuda/layout_convert.go. Convention: kvtwin_kernel.h.
//
// Every mode is one strided copy: the units (token slices of `unit` bytes)
// are enumerated over four dimensions (n0, n1, n2, n3), outermost first; a
// unit's source and destination offsets are linear in its coordinates
// (every §7.1 layout is), except that dimension 0 may go through an index
// list (the page pairs of a load or backup, the pages of a flat read). Each
// unit is moved in chunks of w bytes (the largest power of two <= 16 that
// divides the unit), one chunk per thread and iteration: chunk i is chunk
// i % per of unit i / per, so consecutive threads move consecutive chunks
// of the destination order (a relayout's and a page read's destination is
// contiguous in that order: consecutive threads store consecutive words).
//
// The per-chunk index arithmetic is the hot path: 64-bit division is a
// ~70-instruction subroutine on the GPU, so the host picks the 32-bit
// variant (_copy32, one hardware-friendly 32-bit divide per coordinate)
// whenever the chunk count fits in 32 bits, which every realistic arena
// does; _copy64 keeps arenas beyond 2^32 chunks exact. The descriptor count
// of a relayout is closed-form on the host (layout_convert.go, relayoutRuns).
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

// copy_geo is geo[] read once into registers before the loop: the stores
// through dst could alias geo as far as the compiler knows, so reading it
// inside the loop would reload all sixteen words every iteration.
struct copy_geo {
	i64 n1, n2, n3, ss[4], ds[4], soff, doff, w, per;
};

KVT_DEVICE copy_geo load_geo(const i64 *geo)
{
	copy_geo g;
	g.n1 = geo[G_N1], g.n2 = geo[G_N2], g.n3 = geo[G_N3];
	for (int k = 0; k < 4; k++) g.ss[k] = geo[G_SS0 + k], g.ds[k] = geo[G_DS0 + k];
	g.soff = geo[G_SOFF], g.doff = geo[G_DOFF], g.w = geo[G_W];
	g.per = geo[G_UNIT] / g.w;
	return g;
}

// copy_body moves chunks [first, nchunks) step by step with index type I
// (unsigned for _copy32, i64 for _copy64): I must hold nchunks, which
// bounds every coordinate and divisor. Offsets are computed in i64.
template <typename I>
KVT_DEVICE void copy_body(unsigned char *dst, const unsigned char *src, const i64 *sidx, const i64 *didx,
                          const copy_geo &g, i64 nchunks)
{
	const I per = (I)g.per, n1 = (I)g.n1, n2 = (I)g.n2, n3 = (I)g.n3;
	KVT_FOR(ii, nchunks)
	{
		I i = (I)ii;
		I u = i / per, c = i - u * per;
		I r = u / n3, i3 = u - r * n3;
		I r2 = r / n2, i2 = r - r2 * n2;
		I i0 = r2 / n1, i1 = r2 - i0 * n1;
		i64 s0 = sidx ? sidx[i0] : (i64)i0, d0 = didx ? didx[i0] : (i64)i0;
		i64 cb = (i64)c * g.w;
		i64 so = g.soff + s0 * g.ss[0] + (i64)i1 * g.ss[1] + (i64)i2 * g.ss[2] + (i64)i3 * g.ss[3] + cb;
		i64 d = g.doff + d0 * g.ds[0] + (i64)i1 * g.ds[1] + (i64)i2 * g.ds[2] + (i64)i3 * g.ds[3] + cb;
		copy_chunk(dst + d, src + so, g.w);
	}
}

// layout_convert_copy32 moves nchunks < 2^32 chunks: dst[D(u)+c] = src[S(u)+c].
KVT_KERNEL6(layout_convert_copy32, unsigned char *, dst, const unsigned char *, src, const i64 *, sidx, const i64 *, didx,
            const i64 *, geo, i64, nchunks)
{
	copy_body<unsigned>(dst, src, sidx, didx, load_geo(geo), nchunks);
}

// layout_convert_copy64 is _copy32 for any nchunks (64-bit coordinates).
KVT_KERNEL6(layout_convert_copy64, unsigned char *, dst, const unsigned char *, src, const i64 *, sidx, const i64 *, didx,
            const i64 *, geo, i64, nchunks)
{
	copy_body<i64>(dst, src, sidx, didx, load_geo(geo), nchunks);
}
