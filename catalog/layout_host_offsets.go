package catalog

import (
	"math/rand/v2"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// LayoutHostOffsets registers layout.host_offsets (docs/spec/transfer.md §7.1).
func LayoutHostOffsets() *Op[spec.LayoutHostOffsetsInput, spec.LayoutHostOffsetsOutput] {
	return &Op[spec.LayoutHostOffsetsInput, spec.LayoutHostOffsetsOutput]{
		OpName:  "layout.host_offsets",
		SpecRef: "transfer.md §7.1",
		Summary: "byte offsets and layer-page ranges of a HiCache host arena in each host layout",
		Ref:     ref.LayoutHostOffsets,
		Fast:    fast.LayoutHostOffsets,
		Sample: spec.LayoutHostOffsetsInput{Layout: spec.PageFirstDirect, Pool: spec.HostPoolMLA, Layers: 2, Pages: 2, PageSize: 2, TokenBytes: 1,
			Points: []spec.HostPoint{{Layer: 1, Token: 2}}, Spans: []spec.HostPageQuery{{Layer: 1, Page: 1}}},
		Shapes: []Shape[spec.LayoutHostOffsetsInput]{
			// DeepSeek-style MLA host pool (61 layers, 576×bf16 per token), 4096 lookups.
			{Name: "4096-points-pfd-mla", Make: func() spec.LayoutHostOffsetsInput {
				return hostQueries(spec.PageFirstDirect, spec.HostPoolMLA, 61, 1<<16, 64, 1152, 4096, 0)
			}},
			// Llama-style MHA host pool (32 layers, 8 heads×128×bf16 per K/V).
			{Name: "4096-points-lf-mha", Make: func() spec.LayoutHostOffsetsInput {
				return hostQueries(spec.LayerFirst, spec.HostPoolMHA, 32, 1<<16, 64, 2048, 4096, 0)
			}},
			// PF splits each layer page into page_size ranges: 1024 queries × 64 ranges.
			{Name: "1024-spans-pf-mla", Make: func() spec.LayoutHostOffsetsInput {
				return hostQueries(spec.PageFirst, spec.HostPoolMLA, 61, 1<<16, 64, 1152, 0, 1024)
			}},
		},
	}
}

// hostQueries builds nPoints point and nSpans page queries spread over the
// geometry, from a fixed seed.
func hostQueries(layout spec.HostLayout, pool spec.HostPool, layers, pages, pageSize, tb int64, nPoints, nSpans int) spec.LayoutHostOffsetsInput {
	rng := rand.New(rand.NewPCG(7, 11))
	planes := int64(1)
	if pool == spec.HostPoolMHA {
		planes = 2
	}
	in := spec.LayoutHostOffsetsInput{Layout: layout, Pool: pool, Layers: layers, Pages: pages, PageSize: pageSize, TokenBytes: tb,
		Points: make([]spec.HostPoint, nPoints), Spans: make([]spec.HostPageQuery, nSpans)}
	for i := range in.Points {
		in.Points[i] = spec.HostPoint{KV: rng.Int64N(planes), Layer: rng.Int64N(layers), Token: rng.Int64N(pages * pageSize), Byte: rng.Int64N(tb)}
	}
	for i := range in.Spans {
		in.Spans[i] = spec.HostPageQuery{KV: rng.Int64N(planes), Layer: rng.Int64N(layers), Page: rng.Int64N(pages)}
	}
	return in
}
