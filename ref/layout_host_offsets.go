package ref

import "github.com/kvtwin/kvtwin/spec"

// LayoutHostOffsets answers byte-offset and page-range queries on a host arena
// geometry with the §7.1 formulas, one query at a time.
func LayoutHostOffsets(lim spec.Limits, in spec.LayoutHostOffsetsInput) (spec.LayoutHostOffsetsOutput, error) {
	g, err := validateHostOffsets(lim, in)
	if err != nil {
		return spec.LayoutHostOffsetsOutput{}, err
	}
	out := spec.LayoutHostOffsetsOutput{
		Offsets:                    []int64{},
		Spans:                      [][]spec.ByteRange{},
		TotalBytes:                 g.TotalBytes(),
		PageContiguousAcrossLayers: g.PageContiguousAcrossLayers(),
	}
	for _, pt := range in.Points {
		out.Offsets = append(out.Offsets, g.Offset(pt.KV, pt.Layer, pt.Token, pt.Byte))
	}
	for _, q := range in.Spans {
		out.Spans = append(out.Spans, g.PageRanges(q.KV, q.Layer, q.Page))
	}
	return out, nil
}
