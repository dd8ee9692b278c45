package fast_test

import (
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestLayoutHostOffsetsCarvesSpansFromOneAllocation checks the strided path was
// taken: every PF query answer's page_size ranges are carved from one
// backing array, and validation builds no field names for valid queries,
// so the whole answer is three allocations (offsets, the span headers, the
// ranges) however many queries there are.
func TestLayoutHostOffsetsCarvesSpansFromOneAllocation(t *testing.T) {
	in := spec.LayoutHostOffsetsInput{Layout: spec.PageFirst, Pool: spec.HostPoolMLA, Layers: 61, Pages: 1 << 16, PageSize: 64, TokenBytes: 1152}
	for i := range int64(512) {
		in.Points = append(in.Points, spec.HostPoint{Layer: i % 61, Token: i * 97, Byte: i % 1152})
		in.Spans = append(in.Spans, spec.HostPageQuery{Layer: i % 61, Page: i * 31})
	}
	out, err := fast.LayoutHostOffsets(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Spans) != 512 || len(out.Spans[511]) != 64 {
		t.Fatalf("got %d span answers, the last of %d ranges; want 512 of 64", len(out.Spans), len(out.Spans[len(out.Spans)-1]))
	}
	// One allocation per answer would make this 3+512.
	allocs := testing.AllocsPerRun(20, func() { _, _ = fast.LayoutHostOffsets(spec.DefaultLimits(), in) })
	if allocs != 3 {
		t.Errorf("fast.HostOffsets allocated %v times per call, want 3", allocs)
	}
}

// BenchmarkHostOffsetsShapes times fast and ref on the catalog's shapes.
func BenchmarkHostOffsetsShapes(b *testing.B) {
	for _, sh := range catalog.LayoutHostOffsets().Shapes {
		in := sh.Make()
		for name, f := range map[string]catalog.Func[spec.LayoutHostOffsetsInput, spec.LayoutHostOffsetsOutput]{"fast": fast.LayoutHostOffsets, "ref": ref.LayoutHostOffsets} {
			b.Run(sh.Name+"/"+name, func(b *testing.B) {
				for b.Loop() {
					if _, err := f(spec.DefaultLimits(), in); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
