package ref

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kvtwin/kvtwin/spec"
)

func workedPools() spec.LoadPools {
	return spec.LoadPools{Layers: 3, HostSlots: 16, DevSlots: 52, KVBytes: 2, IndexBytes: 1, IndexLayers: []int{1}}
}

func span(from, n int64) []spec.SlotIdx {
	s := make([]spec.SlotIdx, n)
	for i := range s {
		s[i] = from + int64(i)
	}
	return s
}

func cat(xs ...[]spec.SlotIdx) []spec.SlotIdx {
	var out []spec.SlotIdx
	for _, x := range xs {
		out = append(out, x...)
	}
	return out
}

// The §5.2 worked example: hp = [2,3,0], dp = [10,11,12] coalesce into
// runs (2,10,2), (0,12,1); each layer copies host pages 2,3 → device 10,11
// and host page 0 → device 12, the index buffer on layer 1 only.
func TestBeginLoadWorkedExample(t *testing.T) {
	ld, err := NewLoader(spec.DefaultLimits(), workedPools())
	if err != nil {
		t.Fatal(err)
	}
	d, err := ld.BeginLoad(7, cat(span(8, 8), span(0, 4)), span(40, 12), 4, spec.LoadBackend{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]spec.Run{{SrcStart: 2, DstStart: 10, Count: 2}, {SrcStart: 0, DstStart: 12, Count: 1}}, d.Runs()); diff != "" {
		t.Fatalf("runs (-want +got):\n%s", diff)
	}
	for l := range 3 {
		if err := d.SubmitLayer(7, l); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.EndLoad(); err != nil || d.Builds() != 1 {
		t.Fatalf("EndLoad = %v, builds %d; want nil, 1", err, d.Builds())
	}
	a := ld.Arena()
	fresh, _ := NewLoadArena(spec.DefaultLimits(), workedPools())
	page := func(b []byte, p, pb int64) []byte { return b[p*pb : (p+1)*pb] }
	for l := range 3 {
		for _, pr := range [][2]int64{{2, 10}, {3, 11}, {0, 12}} {
			if !bytes.Equal(page(a.DevKV[l], pr[1], 8), page(a.HostKV[l], pr[0], 8)) {
				t.Errorf("layer %d: device page %d does not hold host page %d", l, pr[1], pr[0])
			}
		}
		if !bytes.Equal(page(a.DevKV[l], 9, 8), page(fresh.DevKV[l], 9, 8)) {
			t.Errorf("layer %d: device page 9 was written", l)
		}
	}
	if !bytes.Equal(page(a.DevIndex[0], 10, 4), page(a.HostIndex[0], 2, 4)) {
		t.Error("layer 1's index page was not copied")
	}
}

// TestBeginLoadRejects is §5.2's bad-input table: each refusal names the
// field, the value and the bound.
func TestBeginLoadRejects(t *testing.T) {
	cases := []struct {
		name         string
		host, dev    []spec.SlotIdx
		ps           int
		b            spec.LoadBackend
		want         *spec.Sentinel
		field, bound string
		value        any
	}{
		{"duplicate destination", cat(span(8, 4), span(12, 4)), cat(span(40, 4), span(40, 4)), 4, spec.LoadBackend{},
			errDuplicateDestination, "dev_idx[4]", "a device page no earlier page writes (page 10 is written by dev_idx[0])", int64(40)},
		{"unaligned host page", span(1, 4), span(40, 4), 4, spec.LoadBackend{},
			errNotPageContiguous, "host_idx[0]", "a multiple of page_size (4)", int64(1)},
		{"gap inside a device page", span(0, 4), []spec.SlotIdx{40, 41, 43, 44}, 4, spec.LoadBackend{},
			errNotPageContiguous, "dev_idx[2]", "== dev_idx[0]+2 (42)", int64(43)},
		{"lengths differ", span(0, 4), span(40, 8), 4, spec.LoadBackend{},
			errNotPageContiguous, "dev_idx", "== len(host_idx) (4)", 8},
		{"partial page", span(0, 6), span(40, 6), 4, spec.LoadBackend{},
			errNotPageContiguous, "host_idx", "a multiple of page_size (4)", 6},
		{"page size zero", nil, nil, 0, spec.LoadBackend{}, spec.ErrInvalidPageSize, "page_size", ">= 1", 0},
		{"negative slot", span(-4, 4), span(40, 4), 4, spec.LoadBackend{}, spec.ErrNegative, "host_idx[0]", ">= 0", int64(-4)},
		{"host page past the pool", span(16, 4), span(40, 4), 4, spec.LoadBackend{}, errSlotRange, "host_idx[0]", "a page inside the pool: <= 12", int64(16)},
		{"strict without the prepared submit", span(0, 4), span(40, 4), 4, spec.LoadBackend{Unavailable: true},
			spec.ErrPreparedUnavailable, "unavailable", "a backend with the prepared submit under policy strict (allow_fallback runs the per-layer path)", true},
		{"unknown policy", span(0, 4), span(40, 4), 4, spec.LoadBackend{Policy: "lenient"}, spec.ErrBadEnum, "policy", "one of strict, allow_fallback", "lenient"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ld, _ := NewLoader(spec.DefaultLimits(), workedPools())
			_, err := ld.BeginLoad(1, c.host, c.dev, c.ps, c.b)
			ie, ok := spec.AsInputError(err)
			if !ok || !errors.Is(err, c.want) || ie.Field != c.field || ie.Bound != c.bound || ie.Value != c.value {
				t.Fatalf("got %#v, want %s at %s = %v: %s", err, c.want.Code(), c.field, c.value, c.bound)
			}
			if len(ld.Fallbacks()) != 0 {
				t.Fatal("a refused op recorded a fallback")
			}
		})
	}
}

// TestDescriptorLifecycle: reuse across layers within one op; refused
// across ops, out of order, before completion and after close (§5.2, D4).
func TestDescriptorLifecycle(t *testing.T) {
	ld, _ := NewLoader(spec.DefaultLimits(), workedPools())
	d, _ := ld.BeginLoad(1, span(0, 4), span(4, 4), 4, spec.LoadBackend{})
	steps := []struct {
		call func() error
		want *spec.Sentinel
	}{
		{func() error { return d.SubmitLayer(2, 0) }, spec.ErrDescriptorOpMismatch},
		{func() error { return d.SubmitLayer(1, 1) }, spec.ErrLayerOutOfOrder},
		{func() error { return d.EndLoad() }, spec.ErrEndBeforeComplete},
		{func() error { return d.SubmitLayer(1, 0) }, nil},
		{func() error { return d.SubmitLayer(1, 0) }, spec.ErrLayerOutOfOrder},
		{func() error { return d.SubmitLayer(1, 1) }, nil},
		{func() error { return d.SubmitLayer(1, 2) }, nil},
		{func() error { return d.SubmitLayer(1, 3) }, spec.ErrLayerOutOfOrder},
		{func() error { return d.EndLoad() }, nil},
		{func() error { return d.SubmitLayer(1, 3) }, spec.ErrDescriptorClosed},
		{func() error { return d.EndLoad() }, spec.ErrDescriptorClosed},
		{func() error { return d.Cancel() }, spec.ErrDescriptorClosed},
	}
	for i, s := range steps {
		if err := s.call(); s.want == nil && err != nil || s.want != nil && !errors.Is(err, s.want) {
			t.Fatalf("step %d: got %v, want %v", i, err, s.want)
		}
	}
	if len(d.Runs()) != 0 {
		t.Fatal("EndLoad kept the runs")
	}
}

// TestFallbackIsExplicit: allow_fallback records one event per op and
// rebuilds per layer (Builds == L); the bytes equal the prepared path's.
func TestFallbackIsExplicit(t *testing.T) {
	prepared, _ := NewLoader(spec.DefaultLimits(), workedPools())
	fallback, _ := NewLoader(spec.DefaultLimits(), workedPools())
	for op, ld := range []spec.Loader{prepared, fallback} {
		d, err := ld.BeginLoad(uint64(op), cat(span(8, 8), span(0, 4)), span(40, 12), 4, spec.LoadBackend{Unavailable: op == 1, Policy: spec.LoadAllowFallback})
		if err != nil {
			t.Fatal(err)
		}
		for l := range 3 {
			if err := d.SubmitLayer(uint64(op), l); err != nil {
				t.Fatal(err)
			}
		}
		if want := []int{1, 3}[op]; d.Builds() != want || d.Fallback() != (op == 1) {
			t.Fatalf("op %d: builds %d fallback %v, want %d", op, d.Builds(), d.Fallback(), want)
		}
	}
	if diff := cmp.Diff([]spec.FallbackEvent{{OpID: 1, Reason: spec.FallbackReasonUnavailable}}, fallback.Fallbacks()); diff != "" || len(prepared.Fallbacks()) != 0 {
		t.Fatalf("fallback log (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(prepared.Arena(), fallback.Arena()); diff != "" {
		t.Fatalf("device bytes differ:\n%s", diff)
	}
}

func TestValidateLoadPools(t *testing.T) {
	ok := workedPools()
	cases := []struct {
		name  string
		edit  func(*spec.LoadPools)
		want  *spec.Sentinel
		field string
	}{
		{"no layers", func(p *spec.LoadPools) { p.Layers = 0 }, spec.ErrBadLoadPools, "layers"},
		{"negative host slots", func(p *spec.LoadPools) { p.HostSlots = -1 }, spec.ErrNegative, "host_slots"},
		{"negative device slots", func(p *spec.LoadPools) { p.DevSlots = -1 }, spec.ErrNegative, "dev_slots"},
		{"no KV bytes", func(p *spec.LoadPools) { p.KVBytes = 0 }, spec.ErrBadLoadPools, "kv_bytes"},
		{"negative index bytes", func(p *spec.LoadPools) { p.IndexBytes = -1 }, spec.ErrNegative, "index_bytes"},
		{"index layer past L", func(p *spec.LoadPools) { p.IndexLayers = []int{3} }, spec.ErrBadLoadPools, "index_layers[0]"},
		{"index layers not ascending", func(p *spec.LoadPools) { p.IndexLayers = []int{1, 1} }, spec.ErrBadLoadPools, "index_layers[1]"},
		{"index layers without bytes", func(p *spec.LoadPools) { p.IndexBytes = 0 }, spec.ErrBadLoadPools, "index_bytes"},
		{"arena past the limit", func(p *spec.LoadPools) { p.DevSlots = 1 << 40 }, spec.ErrTooLarge, "host_slots+dev_slots"},
		{"bytes per slot overflow", func(p *spec.LoadPools) { p.KVBytes = 1 << 62 }, spec.ErrOverflow, "kv_bytes"},
	}
	for _, c := range cases {
		p := ok
		c.edit(&p)
		err := validateLoadPools(spec.DefaultLimits(), p)
		if ie, isIE := spec.AsInputError(err); !isIE || !errors.Is(err, c.want) || ie.Field != c.field {
			t.Errorf("%s: got %v, want %s at %s", c.name, err, c.want.Code(), c.field)
		}
	}
}

// TestLoadPoolsRejectALayerCountPastTheBound is the hostile-input
// harness's finding on hicache.load_script: the arena's bytes were bounded
// (slots × bytes per slot), but with no slots they are 0 whatever the
// layer count, so pools.layers = 2^31−1 passed and the arena's per-layer
// tables (and fast's index-slot table, and every op's layer loop) were
// sized by the raw number: ref ran for ever, a larger count panicked
// makeslice. L is now bounded like the transfer manager's.
func TestLoadPoolsRejectALayerCountPastTheBound(t *testing.T) {
	for _, layers := range []int{maxLoadLayers + 1, 1<<31 - 1, 1 << 61, 1<<63 - 1} {
		p := spec.LoadPools{Layers: layers, KVBytes: 1}
		err := validateLoadPools(spec.DefaultLimits(), p)
		if ie, ok := spec.AsInputError(err); !ok || !errors.Is(err, spec.ErrBadLoadPools) || ie.Field != "layers" || ie.Value != any(layers) {
			t.Errorf("layers %d: got %v, want bad_load_pools at layers", layers, err)
		}
		_, err = HiCacheLoadScript(spec.DefaultLimits(), spec.HiCacheLoadScriptInput{Pools: p, Ops: []spec.LoadOp{{OpID: 1, PageSize: 1, HostIdx: []spec.SlotIdx{}, DevIdx: []spec.SlotIdx{}}}})
		if ie, ok := spec.AsInputError(err); !ok || ie.Field != "pools.layers" {
			t.Errorf("script with layers %d: got %v, want a rejection at pools.layers", layers, err)
		}
	}
	if err := validateLoadPools(spec.DefaultLimits(), spec.LoadPools{Layers: maxLoadLayers, KVBytes: 1}); err != nil {
		t.Errorf("layers = MaxLoadLayers: %v", err)
	}
}
