package catalog

import (
	"math/rand/v2"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// LayoutConvert registers layout.convert (docs/spec/transfer.md §7.2, §7.3).
func LayoutConvert() *Op[spec.LayoutConvertInput, spec.LayoutConvertOutput] {
	return &Op[spec.LayoutConvertInput, spec.LayoutConvertOutput]{
		OpName:  "layout.convert",
		SpecRef: "transfer.md §7.2, §7.3",
		Summary: "host arena relayout, per-layer load/backup against a layer-first device pool, and flat page reads",
		Ref:     ref.LayoutConvert,
		Fast:    fast.LayoutConvert,
		CUDA:    cuda.LayoutConvert,
		Sample: spec.LayoutConvertInput{Mode: spec.ConvertRelayout, Layout: spec.LayerFirst, To: spec.PageFirst, Pool: spec.HostPoolMLA,
			Layers: 2, Pages: 2, PageSize: 2, TokenBytes: 1, Host: []byte{0, 1, 2, 3, 4, 5, 6, 7}},
		Shapes: []Shape[spec.LayoutConvertInput]{
			// The headline: an MLA host pool (DeepSeek: 61 layers,
			// 576×bf16 = 1152 B per token, 64-token pages), 15 pages ≈ 64 MiB.
			{Name: "relayout-lf-to-lpf-mla-64MiB", CopyBytes: 61 * 15 * 64 * 1152, Make: func() spec.LayoutConvertInput {
				return relayoutShape(spec.LayerFirst, spec.LayerPageFirst, spec.HostPoolMLA, 61, 15, 64, 1152)
			}},
			{Name: "relayout-lf-to-pf-mla-64MiB", CopyBytes: 61 * 15 * 64 * 1152, Make: func() spec.LayoutConvertInput {
				return relayoutShape(spec.LayerFirst, spec.PageFirst, spec.HostPoolMLA, 61, 15, 64, 1152)
			}},
			// An MHA host pool (32 layers, 8 KV heads×128×bf16 = 2048 B per
			// K or V token), 8 pages of 64 tokens = exactly 64 MiB.
			{Name: "relayout-lf-to-pfd-mha-64MiB", CopyBytes: 64 << 20, Make: func() spec.LayoutConvertInput {
				return relayoutShape(spec.LayerFirst, spec.PageFirstDirect, spec.HostPoolMHA, 32, 8, 64, 2048)
			}},
			// All-layer load of 128 host pages (1024 layer pages) into a
			// ≈64 MiB device pool: 8 layers, 455 pages of 16 tokens × 1152 B.
			// The output is the whole device arena, hence the yardstick.
			{Name: "load-lpf-mla-128-pages-64MiB", CopyBytes: 8 * 455 * 16 * 1152, Make: func() spec.LayoutConvertInput {
				return loadShape(spec.LayerPageFirst, 8, 512, 455, 16, 1152, 128)
			}},
			{Name: "load-pfd-mla-128-pages-64MiB", CopyBytes: 8 * 455 * 16 * 1152, Make: func() spec.LayoutConvertInput {
				return loadShape(spec.PageFirstDirect, 8, 512, 455, 16, 1152, 128)
			}},
		},
	}
}

func relayoutShape(from, to spec.HostLayout, pool spec.HostPool, layers, pages, pageSize, tb int64) spec.LayoutConvertInput {
	planes := int64(1)
	if pool == spec.HostPoolMHA {
		planes = 2
	}
	host := make([]byte, planes*layers*pages*pageSize*tb)
	for i := range host {
		host[i] = byte(i * 7)
	}
	return spec.LayoutConvertInput{Mode: spec.ConvertRelayout, Layout: from, To: to, Pool: pool,
		Layers: layers, Pages: pages, PageSize: pageSize, TokenBytes: tb, Host: host}
}

// loadShape loads n host pages onto n distinct device pages, every layer.
// Both lists come in runs of 1–16 pages, as a radix prefix hit (host) and a
// page allocator's free list (device) hand them out, so the pairs coalesce
// into runs only where both sides do.
func loadShape(layout spec.HostLayout, layers, hostPages, devPages, pageSize, tb int64, n int) spec.LayoutConvertInput {
	rng := rand.New(rand.NewPCG(3, 5))
	var hostRuns, devRuns [][]int64
	for p := int64(0); p < hostPages; {
		r := min(1+rng.Int64N(16), hostPages-p)
		hostRuns = append(hostRuns, contiguousPages(p, int(r)))
		p += r + rng.Int64N(3)
	}
	for p := int64(0); p < devPages; {
		r := min(1+rng.Int64N(16), devPages-p)
		devRuns = append(devRuns, contiguousPages(p, int(r)))
		p += r
	}
	rng.Shuffle(len(hostRuns), func(i, j int) { hostRuns[i], hostRuns[j] = hostRuns[j], hostRuns[i] })
	rng.Shuffle(len(devRuns), func(i, j int) { devRuns[i], devRuns[j] = devRuns[j], devRuns[i] })
	hp, dp := concat(hostRuns)[:n], concat(devRuns)[:n]
	hostIdx, devIdx := make([]int64, 0, int64(n)*pageSize), make([]int64, 0, int64(n)*pageSize)
	for i := range n {
		for o := range pageSize {
			hostIdx, devIdx = append(hostIdx, hp[i]*pageSize+o), append(devIdx, dp[i]*pageSize+o)
		}
	}
	host := make([]byte, layers*hostPages*pageSize*tb)
	for i := range host {
		host[i] = byte(i * 13)
	}
	return spec.LayoutConvertInput{Mode: spec.ConvertLoad, Layout: layout, Pool: spec.HostPoolMLA,
		Layers: layers, Pages: hostPages, PageSize: pageSize, TokenBytes: tb, DevicePages: devPages,
		HostIndices: hostIdx, DeviceIndices: devIdx, Host: host, Device: make([]byte, layers*devPages*pageSize*tb)}
}

func concat(runs [][]int64) []int64 {
	var out []int64
	for _, r := range runs {
		out = append(out, r...)
	}
	return out
}
