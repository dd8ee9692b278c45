//go:build cuda

package cuda

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// relayoutCases are small relayouts over every (from, to, pool) and token
// widths whose chunk is 16, 8, 4, 2 and 1 bytes, with one-page, one-layer
// and one-token edges.
func relayoutCases() []spec.LayoutConvertInput {
	layouts := []spec.HostLayout{spec.LayerFirst, spec.PageFirst, spec.PageFirstDirect, spec.LayerPageFirst}
	var cases []spec.LayoutConvertInput
	for _, from := range layouts {
		for _, to := range layouts {
			for _, pool := range []spec.HostPool{spec.HostPoolMLA, spec.HostPoolMHA} {
				for _, shape := range [][4]int64{{3, 4, 2, 32}, {1, 5, 3, 24}, {2, 1, 4, 6}, {4, 3, 1, 3}, {2, 2, 2, 1}} {
					planes := int64(1)
					if pool == spec.HostPoolMHA {
						planes = 2
					}
					host := make([]byte, planes*shape[0]*shape[1]*shape[2]*shape[3])
					for i := range host {
						host[i] = byte(i*7 + i>>8)
					}
					cases = append(cases, spec.LayoutConvertInput{Mode: spec.ConvertRelayout, Layout: from, To: to, Pool: pool,
						Layers: shape[0], Pages: shape[1], PageSize: shape[2], TokenBytes: shape[3], Host: host})
				}
			}
		}
	}
	return cases
}

// bruteRuns counts a relayout's runs unit by unit, as the former device
// kernel (layout_convert_runs) did: unit u starts a run unless its source
// offset is unit u-1's plus the unit.
func bruteRuns(g copyGeo) int64 {
	off := func(u int64) int64 {
		i3, r := u%g.n[3], u/g.n[3]
		i2, r := r%g.n[2], r/g.n[2]
		i1, i0 := r%g.n[1], r/g.n[1]
		return i0*g.ss[0] + i1*g.ss[1] + i2*g.ss[2] + i3*g.ss[3]
	}
	var runs int64
	for u := range g.units() {
		if u == 0 || off(u) != off(u-1)+g.unit {
			runs++
		}
	}
	return runs
}

// TestRelayoutRunsClosedFormEqualsUnitByUnitCount checks relayoutRuns, the
// closed-form descriptor count, against the unit-by-unit count on every
// case's geometry and on geometries with unit-sized steps in each
// dimension (where runs merge across a carry).
func TestRelayoutRunsClosedFormEqualsUnitByUnitCount(t *testing.T) {
	geos := []copyGeo{
		{n: [4]int64{2, 3, 4, 5}, ss: [4]int64{60, 20, 5, 1}, unit: 1},   // one run
		{n: [4]int64{2, 3, 4, 5}, ss: [4]int64{1000, 20, 5, 1}, unit: 1}, // breaks at dimension 0
		{n: [4]int64{2, 3, 4, 5}, ss: [4]int64{60, 200, 5, 1}, unit: 1},  // breaks at 1
		{n: [4]int64{2, 3, 4, 5}, ss: [4]int64{1, 2, 6, 24}, unit: 1},    // every unit
		{n: [4]int64{1, 1, 1, 7}, ss: [4]int64{0, 0, 0, 3}, unit: 3},     // one run of 7
		{n: [4]int64{0, 3, 4, 5}, ss: [4]int64{60, 20, 5, 1}, unit: 1},   // no units
		{n: [4]int64{3, 1, 2, 1}, ss: [4]int64{8, 100, 4, 100}, unit: 4}, // size-1 dimensions
	}
	for _, in := range relayoutCases() {
		plan, err := ref.ValidateLayoutConvert(spec.DefaultLimits(), in)
		if err != nil {
			continue
		}
		geos = append(geos, relayoutGeo(plan, false))
	}
	if len(geos) < 100 {
		t.Fatalf("only %d geometries: the relayout cases are mostly rejected", len(geos))
	}
	for _, g := range geos {
		if got, want := relayoutRuns(g), bruteRuns(g); got != want {
			t.Errorf("relayoutRuns(%+v) = %d, unit by unit %d", g, got, want)
		}
	}
}

// TestRelayoutCopy64EqualsRef runs every relayout case through the 64-bit
// copy kernel (chosen on the device only beyond 2^32 chunks) and through
// the default choice, and compares both arenas and counts with ref's.
func TestRelayoutCopy64EqualsRef(t *testing.T) {
	valid := 0
	for _, in := range relayoutCases() {
		plan, err := ref.ValidateLayoutConvert(spec.DefaultLimits(), in)
		if err != nil {
			continue
		}
		valid++
		want, err := ref.LayoutConvert(spec.DefaultLimits(), in)
		if err != nil {
			t.Fatalf("ref: %v", err)
		}
		for _, wide := range []bool{false, true} {
			name := fmt.Sprintf("%s->%s/%s/%d,%d,%d,%d/wide=%v", in.Layout, in.To, in.Pool, in.Layers, in.Pages, in.PageSize, in.TokenBytes, wide)
			var got spec.LayoutConvertOutput
			err := run("test.relayout", func(c *call) (err error) {
				got, err = relayoutWith(c, plan, in.Host, wide)
				return err
			})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !bytes.Equal(got.Arena, want.Arena) || got.Descriptors != want.Descriptors {
				t.Errorf("%s: arena equal %v, descriptors %d, ref %d", name, bytes.Equal(got.Arena, want.Arena), got.Descriptors, want.Descriptors)
			}
		}
	}
	if valid < 100 {
		t.Fatalf("only %d valid relayouts: the cases are mostly rejected", valid)
	}
}

// TestCopyKernelChoice: the 32-bit kernel up to 2^32-1 chunks, then 64-bit.
func TestCopyKernelChoice(t *testing.T) {
	for _, c := range []struct {
		n    int64
		wide bool
		want string
	}{{0, false, "layout_convert_copy32"}, {1<<32 - 1, false, "layout_convert_copy32"},
		{1 << 32, false, "layout_convert_copy64"}, {5, true, "layout_convert_copy64"}} {
		if got := copyKernel(c.n, c.wide); got != c.want {
			t.Errorf("copyKernel(%d, %v) = %s, want %s", c.n, c.wide, got, c.want)
		}
	}
}
