//go:build cuda

package cuda

import (
	"math/rand/v2"
	"testing"
	"time"

	"gorgonia.org/cu"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/spec"
)

// Kernel-only benchmarks of the cp.* row kernels at the payload shape
// (bs=10, cp=8, g=64, rows of 656 B): inputs are uploaded once, each
// iteration is one launch and its cuCtxSynchronize, and a device-to-device
// copy of the same bytes timed in the same run is the yardstick
// (copy_frac = kernel bandwidth / copy bandwidth, both counting bytes read
// plus bytes written; the target for cp.rerange and cp.compact_valid
// is >= 0.70). Under the emulation driver the figures mean nothing.

const benchW = 656

// kernelBench uploads an op's payload inputs and returns one launch of its
// kernel and the bytes that launch reads plus writes.
type kernelBench func(c *call) (launch func() error, moved int64, err error)

func benchKernel(b *testing.B, op string, setup kernelBench) {
	err := run(op, func(c *call) error {
		launch, moved, err := setup(c)
		if err != nil {
			return err
		}
		copyBW, err := copyBandwidth(c, moved/2)
		if err != nil {
			return err
		}
		if err := launch(); err != nil { // warm-up (module JIT, caches)
			return err
		}
		b.SetBytes(moved)
		start := time.Now()
		for b.Loop() {
			if err := launch(); err != nil {
				return err
			}
		}
		bw := float64(moved) * float64(b.N) / time.Since(start).Seconds()
		b.ReportMetric(bw/1e9, "GB/s")
		b.ReportMetric(bw/copyBW, "copy_frac")
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// copyBandwidth times device-to-device copies of n bytes and returns bytes
// read plus written per second.
func copyBandwidth(c *call, n int64) (float64, error) {
	src, err := c.alloc(n)
	if err != nil {
		return 0, err
	}
	dst, err := c.alloc(n)
	if err != nil {
		return 0, err
	}
	const reps = 20
	var start time.Time
	for i := range reps + 1 {
		if i == 1 {
			start = time.Now() // the first copy is a warm-up
		}
		if err := cu.MemcpyDtoD(dst, src, n); err != nil {
			return 0, c.fail("cuMemcpyDtoD", err)
		}
		if err := cu.Synchronize(); err != nil {
			return 0, c.fail("cuCtxSynchronize", err)
		}
	}
	return 2 * float64(n) * reps / time.Since(start).Seconds(), nil
}

func benchLayout(b *testing.B, units int) spec.Layout {
	lens := make([]int, 10)
	for i := range lens {
		lens[i] = 16*64*units - 37*(i+1)
	}
	lay, err := spec.LayoutSpec{CP: 8, Lens: lens, Granule: 64}.Build()
	if err != nil {
		b.Fatal(err)
	}
	return lay
}

func benchBytes(n int) []byte {
	rng := rand.New(rand.NewPCG(uint64(n), 3))
	out := make([]byte, n)
	for i := range out {
		out[i] = byte(rng.Uint32())
	}
	return out
}

// uploadAll uploads bufs and allocates out bytes of output.
func uploadAll(c *call, out int64, bufs ...[]byte) ([]devicePtr, error) {
	ptrs := make([]devicePtr, 0, len(bufs)+1)
	for _, buf := range bufs {
		p, err := c.upload(buf)
		if err != nil {
			return nil, err
		}
		ptrs = append(ptrs, p)
	}
	p, err := c.alloc(out)
	return append(ptrs, p), err
}

func int64Bytes(v []int64) []byte {
	out := make([]byte, 8*len(v))
	for i, x := range v {
		for j := range 8 {
			out[8*i+j] = byte(x >> (8 * j))
		}
	}
	return out
}

// BenchmarkKernelCPRerange: 130K gathered rows (compute source) → 128K valid rows.
func BenchmarkKernelCPRerange(b *testing.B) {
	lay := benchLayout(b, 13)
	m := lay.R(0)
	runs := rerangeRuns(lay, newLayoutSums(lay), m, spec.SrcCompute)
	n := int64(lay.TotalValid())
	benchKernel(b, "cp.rerange", func(c *call) (func() error, int64, error) {
		p, err := uploadAll(c, n*benchW, benchBytes(lay.CP*m*benchW), int64Bytes(runs))
		launch := func() error {
			return c.launch("cp_rerange_rows", n*rowWords(benchW), p[2], p[0], p[1], int64(len(runs)/2), n, int64(benchW))
		}
		return launch, 2 * n * benchW, err
	})
}

// BenchmarkKernelCPCompactValid: rank 0's 128.75K rows, 2035 of them padding.
func BenchmarkKernelCPCompactValid(b *testing.B) {
	lay := benchLayout(b, 103)
	runs, valid := compactRuns(lay, 0)
	n := int64(valid)
	benchKernel(b, "cp.compact_valid", func(c *call) (func() error, int64, error) {
		p, err := uploadAll(c, n*benchW, benchBytes(lay.R(0)*benchW), int64Bytes(runs))
		launch := func() error {
			return c.launch("cp_compact_valid_rows", n*rowWords(benchW), p[2], p[0], p[1], int64(len(runs)/2), n,
				int64(benchW))
		}
		return launch, 2 * n * benchW, err
	})
}

// BenchmarkKernelCPRestorePadded: rank 0's 128.75K rows from its valid rows.
func BenchmarkKernelCPRestorePadded(b *testing.B) {
	lay := benchLayout(b, 103)
	runs, rows := restoreRuns(lay, 0)
	n := int64(rows)
	benchKernel(b, "cp.restore_padded", func(c *call) (func() error, int64, error) {
		p, err := uploadAll(c, n*benchW, benchBytes(lay.Rv(0)*benchW), int64Bytes(runs))
		launch := func() error {
			return c.launch("cp_restore_padded_rows", n*rowWords(benchW), p[2], p[0], p[1], int64(len(runs)/3), n,
				int64(benchW))
		}
		return launch, int64(lay.Rv(0)+rows) * benchW, err
	})
}

// BenchmarkKernelCPSplit: 128K valid rows → every rank's 130K compute rows
// and their positions.
func BenchmarkKernelCPSplit(b *testing.B) {
	lay := benchLayout(b, 13)
	runs, rankEnd := splitRuns(lay, newLayoutSums(lay), make([]int64, lay.B()))
	n := rankEnd[lay.CP-1]
	benchKernel(b, "cp.split", func(c *call) (func() error, int64, error) {
		p, err := uploadAll(c, n*benchW, benchBytes(lay.TotalValid()*benchW), benchBytes(benchW), int64Bytes(runs))
		if err != nil {
			return nil, 0, err
		}
		pos, err := c.alloc(8 * n)
		launch := func() error {
			return c.launch("cp_split_rows", n*rowWords(benchW), p[3], p[0], p[1], pos, p[2], int64(len(runs)/4), n,
				int64(benchW))
		}
		return launch, (int64(lay.TotalValid())+n)*benchW + 8*n, err
	})
}

// BenchmarkKernelRemapLocs: 1M locations of 10 rows of 100K tokens (ps=64,
// a 40K-token shared prefix), row-aware.
func BenchmarkKernelRemapLocs(b *testing.B) {
	const bs, tokens, ps = 10, 100_000, 64
	perRow, shared := (tokens+ps-1)/ps, 40_000/ps
	pages := make([][]int64, bs)
	next := int64(shared)
	for r := range pages {
		for j := range perRow {
			p := int64(j)
			if j >= shared {
				p, next = next, next+1
			}
			pages[r] = append(pages[r], p*3)
		}
	}
	var locs []int64
	var rows []int32
	for r, row := range pages {
		for t := range int64(tokens) {
			locs, rows = append(locs, row[t/ps]*ps+t%ps), append(rows, int32(r))
		}
	}
	d, err := fast.CPPageDescriptors(spec.DefaultLimits(), spec.CPPageDescriptorsInput{Pages: pages})
	if err != nil {
		b.Fatal(err)
	}
	n := int64(len(locs))
	benchKernel(b, "cp.remap_locs", func(c *call) (func() error, int64, error) {
		p, err := uploadAll(c, 8*n, int64Bytes(locs), int32Bytes(rows), int32Bytes(d.RowPtr), int64Bytes(d.Page),
			int32Bytes(d.Slot), int64Bytes([]int64{n}))
		launch := func() error {
			return c.launch("cp_remap_locs_remap", n, p[6], p[0], p[1], n, p[2], int64(bs), p[3], p[4], int64(ps), p[5])
		}
		return launch, 8*n + 4*n + 8*n, err
	})
}
