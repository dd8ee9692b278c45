package equiv_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// loadPropsInput is a script on which every D property has something to
// check: a prepared op with two runs, a fallback op, a misused op and a
// refused strict op.
func loadPropsInput() spec.HiCacheLoadScriptInput {
	in := catalog.LoadWorkedExample()
	second := in.Ops[0]
	second.OpID, second.Unavailable, second.Policy = 2, true, spec.LoadAllowFallback
	third := spec.LoadOp{OpID: 3, PageSize: 1, HostIdx: []spec.SlotIdx{5}, DevIdx: []spec.SlotIdx{0},
		Misuse: []spec.LoadMisuse{{Kind: spec.MisuseOtherOp, At: 0}, {Kind: spec.MisuseReusePrevious, At: 1}, {Kind: spec.MisuseEndEarly, At: 1}}}
	strict := spec.LoadOp{OpID: 4, PageSize: 1, HostIdx: []spec.SlotIdx{5}, DevIdx: []spec.SlotIdx{1}, Unavailable: true}
	in.Ops = append(in.Ops, second, third, strict)
	return in
}

// TestLoadPropertiesCatchBrokenResults: each §5.2 property holds on ref's
// output and fails on an output broken the way it guards against.
func TestLoadPropertiesCatchBrokenResults(t *testing.T) {
	sp := equiv.HiCacheLoadScript()
	in := loadPropsInput()
	good, err := ref.HiCacheLoadScript(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	with := func(f func(o *spec.HiCacheLoadScriptOutput)) spec.HiCacheLoadScriptOutput {
		b, _ := catalog.Marshal(good)
		o, err := catalog.DecodeStrict[spec.HiCacheLoadScriptOutput](b)
		if err != nil {
			t.Fatal(err)
		}
		f(&o)
		return o
	}
	broken := map[string]spec.HiCacheLoadScriptOutput{
		// a stale device byte (B5.b's page never written)
		"D1-device-bytes-equal-per-token-copy": with(func(o *spec.HiCacheLoadScriptOutput) { o.Device.KV[0][40]++ }),
		// B5.a: the prepared op rebuilt per layer
		"D2-one-build-per-prepared-op": with(func(o *spec.HiCacheLoadScriptOutput) { o.Trace[0].Builds = 3 }),
		// B5.b: op 2 handed op 1's descriptor
		"D3-fresh-descriptor-per-op": with(func(o *spec.HiCacheLoadScriptOutput) { o.Trace[1].Descriptor = 1 }),
		// a closed descriptor that accepted a submit
		"D4-closed-descriptor-refuses-every-use": with(func(o *spec.HiCacheLoadScriptOutput) { o.Trace[0].AfterEnd[0].Code = "accepted" }),
		// B5.d: the fallback went unrecorded
		"D5-fallback-explicit-once-per-op": with(func(o *spec.HiCacheLoadScriptOutput) { o.Fallbacks = o.Fallbacks[:0] }),
		// runs out of the caller's order
		"D6-runs-expand-to-page-lists": with(func(o *spec.HiCacheLoadScriptOutput) { slices.Reverse(o.Trace[0].Runs) }),
		// another op id accepted
		"misuse-refused": with(func(o *spec.HiCacheLoadScriptOutput) { o.Trace[2].Misuse[0].Error = nil }),
	}
	for _, p := range sp.Props {
		if err := p.Holds(spec.DefaultLimits(), in, good); err != nil {
			t.Errorf("%s fails on ref's output: %v", p.Name, err)
		}
		bad, ok := broken[p.Name]
		if !ok {
			t.Errorf("no broken output for property %s", p.Name)
			continue
		}
		if p.Holds(spec.DefaultLimits(), in, bad) == nil {
			t.Errorf("%s holds on a broken output", p.Name)
		}
	}
}

// TestCounterPropertiesCatchBrokenResults: each §5.3 property holds on
// ref's trace and fails on a trace broken the way it guards against.
func TestCounterPropertiesCatchBrokenResults(t *testing.T) {
	sp := equiv.HiCacheLayerDoneScript()
	in := catalog.LayerDoneWorkedExample()
	good, err := ref.HiCacheLayerDoneScript(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	with := func(f func(o *spec.HiCacheLayerDoneScriptOutput)) spec.HiCacheLayerDoneScriptOutput {
		b, _ := catalog.Marshal(good)
		o, err := catalog.DecodeStrict[spec.HiCacheLayerDoneScriptOutput](b)
		if err != nil {
			t.Fatal(err)
		}
		f(&o)
		return o
	}
	broken := map[string]spec.HiCacheLayerDoneScriptOutput{
		// step 5 asks Ready(1) with one layer done
		"C1-ready-implies-completed": with(func(o *spec.HiCacheLayerDoneScriptOutput) { *o.Trace[5].Ready = true }),
		// B5.c: Ready(0) false with layer 0 landed
		"C2-ready-needs-no-later-layer": with(func(o *spec.HiCacheLayerDoneScriptOutput) { *o.Trace[4].Ready = false }),
		"C3-no-consumer-always-ready": with(func(o *spec.HiCacheLayerDoneScriptOutput) {
			o.Trace[2].State.Consumer = -1
		}),
		// the wrap onto the loading slot 1 accepted
		"C4-slot-not-reused-while-loading": with(func(o *spec.HiCacheLayerDoneScriptOutput) { o.Trace[13].Error, o.Trace[13].Slot = nil, new(1) }),
		"C5-done-monotone-within-a-use": with(func(o *spec.HiCacheLayerDoneScriptOutput) {
			o.Trace[7].State.Done[0] = 1
		}),
	}
	for _, p := range sp.Props {
		if err := p.Holds(spec.DefaultLimits(), in, good); err != nil {
			t.Errorf("%s fails on ref's trace: %v", p.Name, err)
		}
		bad, ok := broken[p.Name]
		if !ok {
			t.Errorf("no broken trace for property %s", p.Name)
			continue
		}
		if p.Holds(spec.DefaultLimits(), in, bad) == nil {
			t.Errorf("%s holds on a broken trace", p.Name)
		}
	}
}

// loaderSnapshot is everything observable about a loader and one of its
// descriptors.
type loaderSnapshot struct {
	Arena     *spec.LoadArena
	Fallbacks []spec.FallbackEvent
	Runs      []spec.Run
	Next      int
	Builds    int
}

func snapshot(ld spec.Loader, d spec.LoadDescriptor) loaderSnapshot {
	return loaderSnapshot{ld.Arena().Clone(), ld.Fallbacks(), d.Runs(), d.NextLayer(), d.Builds()}
}

// TestLoadRefusalsLeaveStateUnchanged: on both twins, every refused
// BeginLoad, SubmitLayer and EndLoad leaves the loader and an open
// descriptor deep-equal to before, and records no fallback.
func TestLoadRefusalsLeaveStateUnchanged(t *testing.T) {
	p := catalog.LoadWorkedExample().Pools
	for name, newLoader := range map[string]spec.NewLoaderFunc{"ref": ref.NewLoader, "fast": fast.NewLoader} {
		ld, err := newLoader(spec.DefaultLimits(), p)
		if err != nil {
			t.Fatal(err)
		}
		d, err := ld.BeginLoad(1, []spec.SlotIdx{0, 1, 2, 3}, []spec.SlotIdx{4, 5, 6, 7}, 4, spec.LoadBackend{})
		if err != nil || d.SubmitLayer(1, 0) != nil {
			t.Fatal(err)
		}
		before := snapshot(ld, d)
		allow := spec.LoadBackend{Unavailable: true, Policy: spec.LoadAllowFallback}
		refusals := []error{
			func() error {
				_, err := ld.BeginLoad(2, []spec.SlotIdx{0, 1, 2, 3}, []spec.SlotIdx{8, 9, 10, 11, 8, 9, 10, 11}, 4, allow)
				return err
			}(),
			func() error {
				_, err := ld.BeginLoad(2, []spec.SlotIdx{0, 1, 2, 3, 4, 5, 6, 7}, []spec.SlotIdx{8, 9, 10, 11, 8, 9, 10, 11}, 4, allow)
				return err
			}(),
			func() error {
				_, err := ld.BeginLoad(2, []spec.SlotIdx{0}, []spec.SlotIdx{9}, 1, spec.LoadBackend{Unavailable: true})
				return err
			}(),
			d.SubmitLayer(2, 1), d.SubmitLayer(1, 2), d.SubmitLayer(1, 0), d.EndLoad(),
		}
		for i, err := range refusals {
			if _, ok := spec.AsInputError(err); !ok {
				t.Errorf("%s: refusal %d: got %v", name, i, err)
			}
		}
		if diff := cmp.Diff(before, snapshot(ld, d)); diff != "" {
			t.Errorf("%s: refused calls changed the loader (-before +after):\n%s", name, diff)
		}
	}
}
