package catalog_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// perLayerFanOut is a script whose engine call log grows with layers ×
// pages: one request of pages pages registered with its destination pages
// in reverse (no two adjacent, so every page is its own block), every
// layer ended (one event per layer), every event completed, the worker
// stepped once per event, and the request finished.
func perLayerFanOut(layers, pages int) spec.TransferPerLayerScriptInput {
	reg := spec.PerLayerStep{Op: spec.PerLayerRegister, Room: 1, Infos: 1}
	for i := range int64(pages) {
		reg.Owned, reg.Dst = append(reg.Owned, i), append(reg.Dst, int64(pages)-1-i)
	}
	steps := []spec.PerLayerStep{
		{Op: spec.PerLayerCreate, Layers: layers, Hooked: layers, Group: 1, ItemLen: 4, SrcPages: pages, DstPages: pages},
		reg, {Op: spec.PerLayerForwardBegin},
	}
	for l := range layers {
		steps = append(steps, spec.PerLayerStep{Op: spec.PerLayerLayerEnd, Layer: l})
	}
	steps = append(steps, spec.PerLayerStep{Op: spec.PerLayerForwardEnd})
	for ev := 1; ev <= layers; ev++ {
		steps = append(steps, spec.PerLayerStep{Op: spec.PerLayerCompleteEvent, Event: ev})
	}
	for range layers {
		steps = append(steps, spec.PerLayerStep{Op: spec.PerLayerWorkerStep})
	}
	return spec.TransferPerLayerScriptInput{Steps: append(steps, spec.PerLayerStep{Op: spec.PerLayerFinish, Room: 1})}
}

// TestThePerLayerCallLogIsBoundedAsItGrows: the engine's call log is an
// output that grows with layers × pages, far faster than the script's
// bytes (a 146 KB script logged 36 MB before it was bounded). Each twin
// refuses, with ErrTooLarge at the step that passed it, a script whose log
// needs one item more than MaxOutputBytes / EngineLogItemBytes, and runs
// the same script when the bound holds it exactly.
func TestThePerLayerCallLogIsBoundedAsItGrows(t *testing.T) {
	e, ok := catalog.Lookup("transfer.per_layer_script")
	if !ok {
		t.Fatal("transfer.per_layer_script is not in the catalog")
	}
	in := perLayerFanOut(6, 40)
	body, err := catalog.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := ref.TransferPerLayerScript(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	var items int64
	for _, c := range out.Calls {
		items += int64(1 + len(c.Blocks) + len(c.Batches))
	}
	if items < 6*40 {
		t.Fatalf("the log holds %d items, want at least one block per page and layer (240)", items)
	}
	for _, impl := range []catalog.Impl{catalog.Ref, catalog.Fast} {
		lim := spec.DefaultLimits()
		lim.MaxOutputBytes = items * ref.EngineLogItemBytes
		got, err := e.Run(impl, lim, body)
		if err != nil || !slices.Equal(got, catalog.Canonical(out, nil)) {
			t.Errorf("%s with room for exactly the log: %v", impl, err)
		}
		lim.MaxOutputBytes--
		_, err = e.Run(impl, lim, body)
		var ie *spec.InputError
		if !errors.Is(err, spec.ErrTooLarge) || !errors.As(err, &ie) || ie.Field == "" || ie.Field[:6] != "steps[" {
			t.Errorf("%s with room for one item less: %v, want ErrTooLarge at steps[i]", impl, err)
		}
	}
}
