package ref_test

import (
	"errors"
	"runtime"
	"testing"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// gathered concatenates each rank's rows padded to m rows with the static
// all-gather pad row {'S','S'}.
func gathered(m int, ranks ...spec.Rows) spec.Rows {
	g := spec.Rows{W: 2, B: []byte{}}
	for _, x := range ranks {
		g.B = append(g.B, x.B...)
		for range m - x.N() {
			g.B = append(g.B, 'S', 'S')
		}
	}
	return g
}

// TestCPRerangeWorkedExamples pins docs/spec/cp-layout.md §3.3 (g=2, L=[3,9], M=12,
// and M=14 with static padding) and §3.6 / Appendix A1 (g=1, L=[3,4], M=4).
func TestCPRerangeWorkedExamples(t *testing.T) {
	for _, c := range []struct {
		sp spec.LayoutSpec
		m  int
	}{
		{spec.LayoutSpec{CP: 2, Lens: []int{3, 9}, Granule: 2}, 12},
		{spec.LayoutSpec{CP: 2, Lens: []int{3, 9}, Granule: 2}, 14},
		{spec.LayoutSpec{CP: 2, Lens: []int{3, 4}, Granule: 1}, 4},
		{spec.LayoutSpec{CP: 2, Lens: []int{8, 9}}, 9},
	} {
		g := gathered(c.m, localRows(t, c.sp, 0), localRows(t, c.sp, 1))
		out, err := ref.CPRerange(spec.DefaultLimits(), spec.CPRerangeInput{Layout: c.sp, G: g, M: c.m})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := names(out.Rows), names(tokRows(c.sp.Lens...)); got != want {
			t.Errorf("%+v M=%d: got %s, want %s", c.sp, c.m, got, want)
		}
	}
	// §3.6: G = [a0 b0 P b3 | a1 b1 a2 b2] literally.
	g := spec.Rows{W: 2, B: []byte{'a', 0, 'b', 0, 'P', 'P', 'b', 3, 'a', 1, 'b', 1, 'a', 2, 'b', 2}}
	out, err := ref.CPRerange(spec.DefaultLimits(), spec.CPRerangeInput{Layout: spec.LayoutSpec{CP: 2, Lens: []int{3, 4}, Granule: 1}, G: g, M: 4})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(out.Rows); got != "a0 a1 a2 b0 b1 b2 b3" {
		t.Errorf("A1: got %s", got)
	}
}

// TestCPRerangeValidSource is P3.2 on §2.2's example: the ranks' selected
// valid rows, gathered at M = max Rv, rerange with src = valid.
func TestCPRerangeValidSource(t *testing.T) {
	sp := spec.LayoutSpec{CP: 2, Lens: []int{3, 9}, Granule: 2}
	lay := mustLayout(t, sp)
	var sel []spec.Rows
	for r := range 2 {
		s, _, err := ref.SelectLocalValidRows(lay, r, localRows(t, sp, r))
		if err != nil {
			t.Fatal(err)
		}
		sel = append(sel, s)
	}
	out, err := ref.CPRerange(spec.DefaultLimits(), spec.CPRerangeInput{Layout: sp, G: gathered(7, sel...), M: 7, Src: spec.SrcValid})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(out.Rows), names(tokRows(3, 9)); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestCPRerangeRejectsBadInput pins §3.5.
func TestCPRerangeRejectsBadInput(t *testing.T) {
	sp := spec.LayoutSpec{CP: 2, Lens: []int{3, 4}, Granule: 1}
	g := gathered(4, localRows(t, sp, 0), localRows(t, sp, 1))
	cases := []struct {
		in    spec.CPRerangeInput
		want  *spec.Sentinel
		field string
	}{
		{spec.CPRerangeInput{Layout: sp, G: g, M: 5}, spec.ErrRowCount, "g"},
		{spec.CPRerangeInput{Layout: sp, G: gathered(3, tokRows(3), tokRows(3)), M: 3}, spec.ErrStride, "m"},
		{spec.CPRerangeInput{Layout: sp, G: spec.Rows{W: 3, B: g.B}, M: 4}, spec.ErrRowCount, "g.b"},
		{spec.CPRerangeInput{Layout: sp, G: g, M: -4}, spec.ErrNegative, "m"},
		{spec.CPRerangeInput{Layout: sp, G: g, M: 4, Src: "padded"}, spec.ErrBadEnum, "src"},
		{spec.CPRerangeInput{Layout: spec.LayoutSpec{CP: 2, Lens: []int{3, 4}, Granule: 0}, G: g, M: 4}, spec.ErrTooShortForZigzag, "layout.lens[0]"},
	}
	for _, c := range cases {
		_, err := ref.CPRerange(spec.DefaultLimits(), c.in)
		ie, ok := spec.AsInputError(err)
		if !ok || !errors.Is(err, c.want) || ie.Field != c.field || ie.Bound == "" {
			t.Errorf("M=%d src=%q: got %v, want %s on %s", c.in.M, c.in.Src, err, c.want.Code(), c.field)
		}
	}
	// §2.2's ranks hold 6 valid of 12 compute rows: the valid source needs
	// only M >= max Rv = 6, the compute source M >= max R = 12.
	sp2 := spec.LayoutSpec{CP: 2, Lens: []int{3, 9}, Granule: 2}
	g6 := spec.Rows{W: 2, B: make([]byte, 2*12)}
	if _, err := ref.CPRerange(spec.DefaultLimits(), spec.CPRerangeInput{Layout: sp2, G: g6, M: 6, Src: spec.SrcValid}); err != nil {
		t.Errorf("valid source at M = max Rv: %v", err)
	}
	if _, err := ref.CPRerange(spec.DefaultLimits(), spec.CPRerangeInput{Layout: sp2, G: g6, M: 6}); !errors.Is(err, spec.ErrStride) {
		t.Errorf("compute source at M = max Rv < max R: got %v, want stride", err)
	}
}

// TestCPRerangeRejectsAGranuleWhoseRoundUpOverflows is the hostile-input
// harness's finding on cp.rerange's example: a granule of 2^61 or 2^63−1,
// or a length of 2^63−1, used to wrap the layout builder's segment
// arithmetic and leave a layout whose row offsets panicked (slice bounds)
// or, in fast, looped for ever. They are too large layouts (§1.5).
func TestCPRerangeRejectsAGranuleWhoseRoundUpOverflows(t *testing.T) {
	for _, c := range []struct {
		sp    spec.LayoutSpec
		field string
	}{
		{spec.LayoutSpec{CP: 2, Lens: []int{3, 9}, Granule: 1 << 61}, "layout.granule"},
		{spec.LayoutSpec{CP: 2, Lens: []int{3, 9}, Granule: 1<<63 - 1}, "layout.granule"},
		{spec.LayoutSpec{CP: 2, Lens: []int{1<<63 - 1, 9}, Granule: 2}, "layout.lens[0]"},
		{spec.LayoutSpec{CP: 2, Lens: []int{3, 1<<63 - 1}, Granule: 2}, "layout.lens[1]"},
	} {
		_, err := ref.CPRerange(spec.DefaultLimits(), spec.CPRerangeInput{Layout: c.sp, G: tokRows(24), M: 12})
		if ie, ok := spec.AsInputError(err); !ok || !errors.Is(err, spec.ErrTooLarge) || ie.Field != c.field {
			t.Errorf("%+v: got %v, want too_large at %s", c.sp, err, c.field)
		}
	}
}

// TestCPRerangeBoundsTheLayoutCPMultipliesBeforeBuildingIt: the layout
// holds 2·B·2·cp sizes, and cp (up to MaxCP) multiplies the batch, so
// 32K one-token requests at cp = 1024 — a 64 KB request — built 1 GB of
// sizes before the buffers were even looked at. The layout is now checked
// against the limits like an output, before it is allocated; under the
// harness's limits this request is too large, and nothing big is allocated.
func TestCPRerangeBoundsTheLayoutCPMultipliesBeforeBuildingIt(t *testing.T) {
	lens := make([]int, 32<<10)
	for i := range lens {
		lens[i] = 1
	}
	in := spec.CPRerangeInput{Layout: spec.LayoutSpec{CP: spec.MaxCP, Lens: lens, Granule: 1}, G: spec.Rows{W: 2, B: []byte{}}}
	lim := spec.Limits{MaxOutputBytes: 1 << 20, MaxOutputRatio: 64, RatioFloorBytes: 256 << 10, InputBytes: 64 << 10}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	_, err := ref.CPRerange(lim, in)
	runtime.ReadMemStats(&m1)
	if ie, ok := spec.AsInputError(err); !ok || !errors.Is(err, spec.ErrTooLarge) || ie.Field != "layout.cp" {
		t.Errorf("got %v, want too_large at layout.cp", err)
	}
	if a := m1.TotalAlloc - m0.TotalAlloc; a > 4<<20 {
		t.Errorf("allocated %d bytes before rejecting", a)
	}
}
