package fast

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// LayoutConvert is the coalescing twin of ref.LayoutConvert (docs/spec/transfer.md
// §7.2, §7.3): whole-span copy() calls instead of bytes. A relayout walks
// the source arena in memory order and merges pieces that stay contiguous
// in the target (LF↔LPF on MLA is one copy: the offsets coincide); a load or
// backup groups its page pairs into runs and issues §7.2's copies per run;
// a flat page read copies each page's contiguous host ranges. Validation is
// ref's, so both twins report the same first violation.
func LayoutConvert(lim spec.Limits, in spec.LayoutConvertInput) (spec.LayoutConvertOutput, error) {
	plan, err := ref.ValidateLayoutConvert(lim, in)
	if err != nil {
		return spec.LayoutConvertOutput{}, err
	}
	switch in.Mode {
	case spec.ConvertRelayout:
		return relayout(plan, in.Host), nil
	case spec.ConvertPageGet:
		return pageGet(plan, in.Host, in.HostIndices), nil
	default:
		return transfer(plan, in), nil
	}
}

// copier issues copy() calls, growing the pending copy while each new
// piece continues it on both sides, so it issues the fewest copies for the
// order pieces arrive in.
type copier struct {
	dst, src []byte
	d, s, n  int64 // the pending copy: dst[d:d+n] = src[s:s+n]
	copies   int64
}

func (c *copier) add(d, s, n int64) {
	if c.n > 0 && d == c.d+c.n && s == c.s+c.n {
		c.n += n
		return
	}
	c.flush()
	c.d, c.s, c.n = d, s, n
}

func (c *copier) flush() {
	if c.n == 0 {
		return
	}
	copy(c.dst[c.d:c.d+c.n], c.src[c.s:c.s+c.n])
	c.copies++
	c.n = 0
}

// layerMajor reports LF or LPF, whose offsets coincide on an MLA buffer.
func layerMajor(x spec.HostLayout) bool { return x == spec.LayerFirst || x == spec.LayerPageFirst }

// relayout copies the arena whole when the layouts' offsets coincide.
// Otherwise it walks the target in memory order (a PF target in token
// blocks instead, relayoutToPFBlocked, unless its slices coalesce), so the
// writes stream sequentially while the reads come from at most L streams,
// each layer page being one piece unless PF (whose layer page is P strided
// tokens) is on either side. Consecutive pieces merge whenever their
// sources are adjacent too; a permutation and its inverse have the same
// number of maximal runs, so this is ref's count, taken from the other side.
func relayout(plan spec.ConvertPlan, src []byte) spec.LayoutConvertOutput {
	dst := make([]byte, len(src))
	return spec.LayoutConvertOutput{Arena: dst, Descriptors: relayoutInto(plan, src, dst)}
}

// RelayoutInto is LayoutConvert's relayout written into dst, a caller-owned
// arena of the source's size, and returns the number of copies issued.
// HiCache host pools are allocated once and reused, so this is the
// production form: it allocates nothing, where the catalog op must return
// a fresh arena. in.Mode must be "relayout"; dst must not overlap in.Host.
func RelayoutInto(lim spec.Limits, in spec.LayoutConvertInput, dst []byte) (int64, error) {
	if in.Mode != spec.ConvertRelayout {
		return 0, spec.Reject(spec.ErrBadEnum, "mode", string(in.Mode), `"relayout" (RelayoutInto converts whole arenas)`)
	}
	plan, err := ref.ValidateLayoutConvert(lim, in)
	if err != nil {
		return 0, err
	}
	if len(dst) != len(in.Host) {
		return 0, spec.Reject(spec.ErrArenaSize, "dst", len(dst), fmt.Sprintf("len == len(host) = %d", len(in.Host)))
	}
	return relayoutInto(plan, in.Host, dst), nil
}

// relayoutInto writes the relayout of src into dst (same length).
func relayoutInto(plan spec.ConvertPlan, src, dst []byte) int64 {
	from, to := plan.Host, plan.To
	if from.Layout == to.Layout || (layerMajor(from.Layout) && layerMajor(to.Layout)) {
		copy(dst, src)
		return 1
	}
	f := stridesOf(from)
	if to.Layout == spec.PageFirst && !pfRowsCoalesce(to, f) {
		return relayoutToPFBlocked(to, f, src, dst, pfBlockBytes)
	}
	c := copier{dst: dst, src: src}
	P, tb, pb := to.P, to.TB, to.PB()
	byToken := from.Layout == spec.PageFirst || to.Layout == spec.PageFirst
	var d int64 // the target cursor: the walk visits target bytes in order
	layerPage := func(kv, l, p int64) {
		s := kv*f.plane + l*f.layer + p*f.page
		if !byToken {
			c.add(d, s, pb)
			d += pb
			return
		}
		for o := range P {
			c.add(d, s+o*f.tok, tb)
			d += tb
		}
	}
	for kv := range to.Planes() {
		switch to.Layout {
		case spec.PageFirst: // token-major: (p, o, l)
			for p := range to.NP {
				for o := range P {
					for l := range to.L {
						c.add(d, kv*f.plane+l*f.layer+p*f.page+o*f.tok, tb)
						d += tb
					}
				}
			}
		case spec.PageFirstDirect: // page-major: (p, l)
			for p := range to.NP {
				for l := range to.L {
					layerPage(kv, l, p)
				}
			}
		default: // layer-major: (l, p)
			for l := range to.L {
				for p := range to.NP {
					layerPage(kv, l, p)
				}
			}
		}
	}
	c.flush()
	return c.copies
}

// pfBlockBytes bounds the PF target window relayoutToPFBlocked fills per
// block: small enough to stay in a core's L2 (≥ 512 KiB on the server parts
// this targets) while its rows are being filled, large enough that each
// layer's share of a block is several KiB of sequential source.
const pfBlockBytes = 512 << 10

// pfRowsCoalesce reports whether a dst-order walk into PF would merge two
// consecutive token slices of one plane: the next layer, the next token
// (layer back to 0) or the next page (token and layer back to 0) starting
// where the previous slice's source ended. That happens only in degenerate
// geometries (one layer; one token per page from PFD; one token per plane
// from LF); relayoutInto keeps its dst-order walk for them, so the blocked
// walk never has to reproduce such merges.
func pfRowsCoalesce(to spec.HostGeometry, f strides) bool {
	tb, L, P := to.TB, to.L, to.P
	nextLayer := f.layer
	nextToken := f.tok - (L-1)*f.layer
	nextPage := f.page - (P-1)*f.tok - (L-1)*f.layer
	return nextLayer == tb || nextToken == tb || nextPage == tb
}

// relayoutToPFBlocked writes a PF target — token t of layer l at
// (t×L + l)×tb within its plane, a transpose of the layer-major source —
// in blocks of T consecutive tokens (T×L×tb ≤ blockBytes, at least one
// token): per block, layer by layer, it reads the layer's T token slices
// in source order and drops each into its row of the block's window.
// The dst-order walk instead reads one slice from each of the L layers per
// target row, L ≈ 61 interleaved read streams a slice apart, which
// measured 10–20% slower (docs/perf.md); here reads run sequentially for
// T×tb bytes at a time and the scattered writes stay inside a window that
// is cache-resident until it is complete.
//
// The copies match the dst-order walk's one for one, so the count is
// still ref's: with pfRowsCoalesce false no two slices of a plane merge
// in either order. The dst-adjacent pairs the blocked walk visits
// consecutively are a block's last slice and the next block's first, whose
// sources are a "next token" or "next page" step apart, and, in a block of
// one token, layer l's slice and layer l+1's, a "next layer" step apart
// (L = 1 never gets here: every non-PF layout has a token stride of tb).
// A plane's last slice and the next plane's first are consecutive in both
// orders, so the copier merges them in both or neither.
func relayoutToPFBlocked(to spec.HostGeometry, f strides, src, dst []byte, blockBytes int64) int64 {
	c := copier{dst: dst, src: src}
	L, P, tb := to.L, to.P, to.TB
	S, row := to.NP*P, L*tb
	T := max(1, blockBytes/row)
	for kv := range to.Planes() {
		plane := kv * f.plane // both layouts place plane kv at kv×PlaneBytes
		for t0 := int64(0); t0 < S; t0 += T {
			t1 := min(t0+T, S)
			for l := range L {
				p, o := t0/P, t0%P
				layer := plane + l*f.layer
				s, d := layer+p*f.page+o*f.tok, plane+t0*row+l*tb
				for range t1 - t0 {
					c.add(d, s, tb)
					d += row
					if o++; o < P {
						s += f.tok
					} else {
						o, p = 0, p+1
						s = layer + p*f.page
					}
				}
			}
		}
	}
	c.flush()
	return c.copies
}

// forEachRun is the run coalescing of docs/spec/transfer.md §2 in one pass: it calls
// fn for each maximal run of pages that step by +1 on both sides, in order.
// The i-th host page is hp[i×stride]/stride (token indices with stride P,
// or page lists with stride 1), so no page arrays are built.
func forEachRun(hp, dp []int64, stride int64, fn func(h, d, count int64)) {
	n := int64(len(hp)) / stride
	if n == 0 {
		return
	}
	h0, d0, count := hp[0]/stride, dp[0]/stride, int64(1)
	for i := int64(1); i < n; i++ {
		h, d := hp[i*stride]/stride, dp[i*stride]/stride
		if h == h0+count && d == d0+count {
			count++
			continue
		}
		fn(h0, d0, count)
		h0, d0, count = h, d, 1
	}
	fn(h0, d0, count)
}

// transfer runs a load or backup: for each run of page pairs, for each
// layer moved and each plane, §7.2's copies — one of count×pb under LF and
// LPF, count of pb under PFD, count×P of tb under PF. Descriptors counts
// the copies issued.
func transfer(plan spec.ConvertPlan, in spec.LayoutConvertInput) spec.LayoutConvertOutput {
	h := plan.Host
	hs, ds := stridesOf(h), stridesOf(plan.Device)
	load := in.Mode == spec.ConvertLoad
	src, dst := in.Host, bytes.Clone(in.Device)
	if !load {
		src, dst = in.Device, bytes.Clone(in.Host)
	}
	var copies int64
	move := func(hostOff, devOff, n int64) {
		if load {
			copy(dst[devOff:devOff+n], src[hostOff:hostOff+n])
		} else {
			copy(dst[hostOff:hostOff+n], src[devOff:devOff+n])
		}
		copies++
	}
	P, tb, pb := h.P, h.TB, h.PB()
	run := func(h0, d0, count int64) {
		for l := plan.FirstLayer; l < plan.EndLayer; l++ {
			for kv := range h.Planes() {
				hb, db := kv*hs.plane+l*hs.layer+h0*hs.page, kv*ds.plane+l*ds.layer+d0*pb
				switch h.Layout {
				case spec.PageFirstDirect:
					for j := range count {
						move(hb+j*hs.page, db+j*pb, pb)
					}
				case spec.PageFirst:
					for j := range count {
						for o := range P {
							move(hb+j*hs.page+o*hs.tok, db+j*pb+o*tb, tb)
						}
					}
				default: // LF, LPF: a layer's consecutive pages are adjacent
					move(hb, db, count*pb)
				}
			}
		}
	}
	hp, dp, stride := in.HostIndices, in.DeviceIndices, P
	if plan.SortHost && !pagesAscending(hp, P) {
		both := sortedByHost(hp, dp, P)
		hp, dp, stride = both[:len(both)/2], both[len(both)/2:], 1
	}
	forEachRun(hp, dp, stride, run)
	return spec.LayoutConvertOutput{Arena: dst, Descriptors: copies}
}

// pagesAscending reports whether the pages of token list idx never
// decrease, in which case the stable sort of §7.2 is the identity.
func pagesAscending(idx []int64, p int64) bool {
	for i := p; i < int64(len(idx)); i += p {
		if idx[i] < idx[i-p] {
			return false
		}
	}
	return true
}

// sortedByHost is §7.2's LF index order: the pairs' pages sorted stably by
// host page, returned as one slice holding the host pages then the device
// pages (a single allocation for both lists).
func sortedByHost(hp, dp []int64, p int64) []int64 {
	n := int64(len(hp)) / p
	pairs := make([][2]int64, n)
	for i := range pairs {
		pairs[i] = [2]int64{hp[int64(i)*p] / p, dp[int64(i)*p] / p}
	}
	slices.SortStableFunc(pairs, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	out := make([]int64, 2*n)
	for i, pr := range pairs {
		out[i], out[n+int64(i)] = pr[0], pr[1]
	}
	return out
}

// pageGet copies each listed page's bytes in host order, per plane: one
// span of L×pb under PF and PFD, L ranges of pb under LF, merged where they
// touch. The copier is flushed at every page and plane so Descriptors
// counts ranges per page and plane, as ref does.
func pageGet(plan spec.ConvertPlan, host []byte, idx []int64) spec.LayoutConvertOutput {
	g := plan.Host
	s := stridesOf(g)
	span := g.L * g.PB()
	c := copier{dst: make([]byte, plan.Pages*g.Planes()*span), src: host}
	var w int64
	for i := int64(0); i < int64(len(idx)); i += g.P {
		p := idx[i] / g.P
		for kv := range g.Planes() {
			base := kv*s.plane + p*s.page
			if g.PageContiguousAcrossLayers() {
				c.add(w, base, span)
				w += span
			} else {
				for l := range g.L {
					c.add(w, base+l*s.layer, g.PB())
					w += g.PB()
				}
			}
			c.flush()
		}
	}
	return spec.LayoutConvertOutput{Arena: c.dst, Descriptors: c.copies}
}
