//go:build cuda

package cuda

import (
	"cmp"
	"math"
	"slices"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// LayoutConvert is the CUDA twin of ref.LayoutConvert (docs/spec/transfer.md §7.2,
// §7.3). Every mode is one launch of the strided copy kernel
// (kernels/layout_convert.cu) over token slices: a relayout enumerates the
// target's slices in memory order and reads them from the source layout; a
// load or backup enumerates (page pair, layer, plane, token) through the
// page lists; a flat page read enumerates each page's slices in host order.
// Descriptors follow §7.2's rule: a relayout's maximal runs are counted in
// closed form from the geometry, a load's or backup's runs of page pairs and a page read's
// ranges on the host from the index lists. Validation is ref's.
func LayoutConvert(lim spec.Limits, in spec.LayoutConvertInput) (spec.LayoutConvertOutput, error) {
	plan, err := ref.ValidateLayoutConvert(lim, in)
	if err != nil {
		return spec.LayoutConvertOutput{}, err
	}
	var out spec.LayoutConvertOutput
	err = run("layout.convert", func(c *call) error {
		switch in.Mode {
		case spec.ConvertRelayout:
			out, err = relayout(c, plan, in.Host)
		case spec.ConvertPageGet:
			out, err = pageGet(c, plan, in.Host, in.HostIndices)
		default:
			out, err = transfer(c, plan, in)
		}
		return err
	})
	if err != nil {
		return spec.LayoutConvertOutput{}, err
	}
	return out, nil
}

// strides are a layout's byte strides per plane, layer, page and token
// (each §7.1 offset is linear in them).
type strides struct{ plane, layer, page, tok int64 }

func stridesOf(g spec.HostGeometry) strides {
	plane, layer, page, tok := fast.HostStrides(g)
	return strides{plane: plane, layer: layer, page: page, tok: tok}
}

// copyGeo is the kernel's geometry (kernels/layout_convert.cu, enum G_*):
// four dimensions, source and destination strides and bases, the unit (a
// token slice, tb bytes) and the chunk width.
type copyGeo struct {
	n, ss, ds  [4]int64
	soff, doff int64
	unit       int64
	wide       bool // force layout_convert_copy64 (tests)
}

// contiguous sets the destination strides so units land one after another.
func (g *copyGeo) contiguous() {
	g.ds[3] = g.unit
	for k := 2; k >= 0; k-- {
		g.ds[k] = g.ds[k+1] * g.n[k+1]
	}
}

func (g *copyGeo) units() int64 { return g.n[0] * g.n[1] * g.n[2] * g.n[3] }

// chunkWidth is the largest power of two <= 16 dividing the unit: every
// offset is a multiple of the unit and device buffers are 256-aligned.
func (g *copyGeo) chunkWidth() int64 { return min(g.unit&-g.unit, 16) }

func (g *copyGeo) words() []int64 {
	w := make([]int64, 0, 16)
	w = append(w, g.n[:]...)
	w = append(w, g.ss[:]...)
	w = append(w, g.ds[:]...)
	return append(w, g.soff, g.doff, g.unit, g.chunkWidth())
}

// copyUnits uploads g and launches the copy of its units from src to dst:
// layout_convert_copy32 when the chunk count fits in 32 bits (then so does
// every coordinate and divisor the kernel divides by), _copy64 otherwise.
func copyUnits(c *call, g copyGeo, dst, src, sidx, didx devicePtr) error {
	dgeo, err := c.uploadInt64s(g.words())
	if err != nil {
		return err
	}
	nchunks := g.units() * (g.unit / g.chunkWidth())
	return c.launch(copyKernel(nchunks, g.wide), nchunks, dst, src, sidx, didx, dgeo, nchunks)
}

// copyKernel names the copy kernel for nchunks chunks: the 32-bit variant
// whenever its unsigned index arithmetic is exact, unless wide forces the
// 64-bit one (tests use that to cover it at small sizes).
func copyKernel(nchunks int64, wide bool) string {
	if wide || nchunks > math.MaxUint32 {
		return "layout_convert_copy64"
	}
	return "layout_convert_copy32"
}

// relayout writes the arena in To order: dimensions are the target's memory
// order, strides the source's. The descriptors (maximal contiguous source
// runs) are counted on the host in closed form (relayoutRuns).
func relayout(c *call, plan spec.ConvertPlan, host []byte) (spec.LayoutConvertOutput, error) {
	return relayoutWith(c, plan, host, false)
}

// relayoutWith is relayout with the copy kernel's width forced to 64 bits
// when wide is set.
func relayoutWith(c *call, plan spec.ConvertPlan, host []byte, wide bool) (spec.LayoutConvertOutput, error) {
	g := relayoutGeo(plan, wide)
	src, err := c.upload(host)
	if err != nil {
		return spec.LayoutConvertOutput{}, err
	}
	dst, err := c.alloc(int64(len(host)))
	if err != nil {
		return spec.LayoutConvertOutput{}, err
	}
	if err := copyUnits(c, g, dst, src, 0, 0); err != nil {
		return spec.LayoutConvertOutput{}, err
	}
	out := spec.LayoutConvertOutput{Arena: make([]byte, len(host)), Descriptors: relayoutRuns(g)}
	return out, c.download(out.Arena, dst)
}

// relayoutGeo is a relayout's copy geometry: dimensions in the target's
// memory order (so the destination is contiguous), strides the source's.
func relayoutGeo(plan spec.ConvertPlan, wide bool) copyGeo {
	from, to := plan.Host, plan.To
	f := stridesOf(from)
	g := copyGeo{unit: to.TB, wide: wide}
	switch to.Layout {
	case spec.PageFirst: // (kv, p, o, l)
		g.n, g.ss = [4]int64{to.Planes(), to.NP, to.P, to.L}, [4]int64{f.plane, f.page, f.tok, f.layer}
	case spec.PageFirstDirect: // (kv, p, l, o)
		g.n, g.ss = [4]int64{to.Planes(), to.NP, to.L, to.P}, [4]int64{f.plane, f.page, f.layer, f.tok}
	default: // (kv, l, p, o)
		g.n, g.ss = [4]int64{to.Planes(), to.L, to.NP, to.P}, [4]int64{f.plane, f.layer, f.page, f.tok}
	}
	g.contiguous()
	return g
}

// relayoutRuns is the number of maximal contiguous copies of a relayout:
// the units u in enumeration order (no index lists) whose source does not
// continue unit u-1's. Units u-1 and u differ by a carry into dimension k
// (i_k += 1, every inner coordinate back to 0) for exactly n0···n(k-1) ·
// (n_k - 1) values of u, and their source offsets then differ by
// ss_k - Σ_{j>k} (n_j - 1)·ss_j whatever the other coordinates are; the
// pair continues a run iff that step equals the unit. So runs = units -
// Σ_k [step_k = unit] · n0···n(k-1) · (n_k - 1), with no per-unit work.
// Every product is bounded by the unit count and every step by the arena
// size, which ref's validation bounds.
func relayoutRuns(g copyGeo) int64 {
	units := g.units()
	if units == 0 {
		return 0
	}
	runs, outer := units, int64(1)
	for k := 0; k < 4; k++ {
		step := g.ss[k]
		for j := k + 1; j < 4; j++ {
			step -= (g.n[j] - 1) * g.ss[j]
		}
		if step == g.unit {
			runs -= outer * (g.n[k] - 1)
		}
		outer *= g.n[k]
	}
	return runs
}

// transfer runs a load (host pages → device pages) or a backup (device →
// host) on (pair, layer, plane, token) units; the destination arena is
// uploaded, updated in place and read back whole.
func transfer(c *call, plan spec.ConvertPlan, in spec.LayoutConvertInput) (spec.LayoutConvertOutput, error) {
	h, d := plan.Host, plan.Device
	hp, dp := pagePairs(plan, in.HostIndices, in.DeviceIndices)
	hs, ds := stridesOf(h), stridesOf(d)
	layers := plan.EndLayer - plan.FirstLayer
	hostSide := [4]int64{hs.page, hs.layer, hs.plane, hs.tok}
	devSide := [4]int64{ds.page, ds.layer, ds.plane, ds.tok}
	g := copyGeo{n: [4]int64{int64(len(hp)), layers, h.Planes(), h.P}, unit: h.TB}
	hoff, doff := plan.FirstLayer*hs.layer, plan.FirstLayer*ds.layer
	srcArena, dstArena := in.Host, in.Device
	g.ss, g.ds, g.soff, g.doff = hostSide, devSide, hoff, doff
	if in.Mode == spec.ConvertBackup {
		srcArena, dstArena = in.Device, in.Host
		g.ss, g.ds, g.soff, g.doff = devSide, hostSide, doff, hoff
	}
	src, err := c.upload(srcArena)
	if err != nil {
		return spec.LayoutConvertOutput{}, err
	}
	dst, err := c.upload(dstArena)
	if err != nil {
		return spec.LayoutConvertOutput{}, err
	}
	dhp, err := c.uploadInt64s(hp)
	if err != nil {
		return spec.LayoutConvertOutput{}, err
	}
	ddp, err := c.uploadInt64s(dp)
	if err != nil {
		return spec.LayoutConvertOutput{}, err
	}
	sidx, didx := dhp, ddp
	if in.Mode == spec.ConvertBackup {
		sidx, didx = ddp, dhp
	}
	if err := copyUnits(c, g, dst, src, sidx, didx); err != nil {
		return spec.LayoutConvertOutput{}, err
	}
	out := spec.LayoutConvertOutput{Arena: make([]byte, len(dstArena)),
		Descriptors: transferDescriptors(h, hp, dp) * h.Planes() * layers}
	return out, c.download(out.Arena, dst)
}

// pagePairs returns the pairs' host and device pages, sorted stably by host
// page when §7.2's LF direct rule (plan.SortHost) applies.
func pagePairs(plan spec.ConvertPlan, hostIdx, devIdx []int64) (hp, dp []int64) {
	p := plan.Host.P
	pairs := make([][2]int64, plan.Pages)
	for i := range pairs {
		pairs[i] = [2]int64{hostIdx[int64(i)*p] / p, devIdx[int64(i)*p] / p}
	}
	if plan.SortHost {
		slices.SortStableFunc(pairs, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	}
	hp, dp = make([]int64, len(pairs)), make([]int64, len(pairs))
	for i, pr := range pairs {
		hp[i], dp[i] = pr[0], pr[1]
	}
	return hp, dp
}

// transferDescriptors is §7.2's copies per layer and plane: CopiesPerRun
// summed over the maximal runs of pairs stepping +1 on both sides.
func transferDescriptors(h spec.HostGeometry, hp, dp []int64) int64 {
	var total int64
	for i := 0; i < len(hp); {
		j := i + 1
		for j < len(hp) && hp[j] == hp[j-1]+1 && dp[j] == dp[j-1]+1 {
			j++
		}
		total += ref.CopiesPerRun(h.Layout, int64(j-i), h.P)
		i = j
	}
	return total
}

// pageGet reads each listed page's bytes per plane in ascending host
// offset order: (layer, token) under LF and PFD, (token, layer) under PF.
func pageGet(c *call, plan spec.ConvertPlan, host []byte, idx []int64) (spec.LayoutConvertOutput, error) {
	h := plan.Host
	s := stridesOf(h)
	pages := make([]int64, plan.Pages)
	for i := range pages {
		pages[i] = idx[int64(i)*h.P] / h.P
	}
	g := copyGeo{unit: h.TB}
	if h.Layout == spec.PageFirst {
		g.n, g.ss = [4]int64{plan.Pages, h.Planes(), h.P, h.L}, [4]int64{s.page, s.plane, s.tok, s.layer}
	} else {
		g.n, g.ss = [4]int64{plan.Pages, h.Planes(), h.L, h.P}, [4]int64{s.page, s.plane, s.layer, s.tok}
	}
	g.contiguous()
	src, err := c.upload(host)
	if err != nil {
		return spec.LayoutConvertOutput{}, err
	}
	size := g.units() * g.unit
	dst, err := c.alloc(size)
	if err != nil {
		return spec.LayoutConvertOutput{}, err
	}
	dpages, err := c.uploadInt64s(pages)
	if err != nil {
		return spec.LayoutConvertOutput{}, err
	}
	if err := copyUnits(c, g, dst, src, dpages, 0); err != nil {
		return spec.LayoutConvertOutput{}, err
	}
	// Per page and plane: one span under PF and PFD (one pointer per page);
	// L ranges of pb under LF, which touch only when the arena has one page.
	perPagePlane := int64(1)
	if !h.PageContiguousAcrossLayers() && h.NP > 1 {
		perPagePlane = h.L
	}
	out := spec.LayoutConvertOutput{Arena: make([]byte, size), Descriptors: plan.Pages * h.Planes() * perPagePlane}
	return out, c.download(out.Arena, dst)
}
