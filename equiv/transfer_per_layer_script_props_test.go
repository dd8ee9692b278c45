package equiv_test

import (
	"testing"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestPerLayerPropertiesCatchWrongRuns: each §4.8 property holds on ref's
// run of a two-room script (per-layer submits, an MTP sync fallback, a
// finish and a refinish) and fails on a result broken the way it guards
// against.
func TestPerLayerPropertiesCatchWrongRuns(t *testing.T) {
	sp := equiv.TransferPerLayerScript()
	reg := func(room uint64, owned, dst []int64) spec.PerLayerStep {
		return spec.PerLayerStep{Op: spec.PerLayerRegister, Room: room, Infos: 1, Owned: owned, Dst: dst}
	}
	in := spec.TransferPerLayerScriptInput{Steps: []spec.PerLayerStep{
		{Op: spec.PerLayerCreate, Layers: 3, Hooked: 2, Group: 1, ItemLen: 2, SrcPages: 4, DstPages: 4},
		reg(1, []int64{0, 1}, []int64{3, 2}), reg(2, []int64{2}, []int64{0}),
		{Op: spec.PerLayerForwardBegin}, {Op: spec.PerLayerLayerEnd, Layer: 0}, {Op: spec.PerLayerLayerEnd, Layer: 1}, {Op: spec.PerLayerForwardEnd},
		{Op: spec.PerLayerCompleteEvent, Event: 1}, {Op: spec.PerLayerCompleteEvent, Event: 2},
		{Op: spec.PerLayerWorkerStep}, {Op: spec.PerLayerWorkerStep}, {Op: spec.PerLayerWorkerStep}, {Op: spec.PerLayerWorkerStep},
		{Op: spec.PerLayerFinish, Room: 1}, {Op: spec.PerLayerRefinish},
	}}
	good, err := ref.TransferPerLayerScript(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	if f := good.Trace[13].Finish; f == nil || f.Status != 0 || len(good.Calls) != 6 || good.Calls[4].Kind != spec.CallSync {
		t.Fatalf("the script does not finish room 1 through async submits and the MTP fallback: %+v %+v", f, good.Calls)
	}
	broken := map[string]func(*spec.TransferPerLayerScriptOutput){
		// B2's symptom: a target beyond the enqueued layers.
		"enqueued-bounded": func(o *spec.TransferPerLayerScriptOutput) { o.State.Rooms[0].Contexts[0].Target = 5 },
		// room 1's second submit repeats its first one's blocks.
		"no-double-send": func(o *spec.TransferPerLayerScriptOutput) { o.Calls[2].Blocks = o.Calls[0].Blocks },
		// room 1's first submit failed, yet it submitted again.
		"no-submit-after-failure": func(o *spec.TransferPerLayerScriptOutput) { o.Calls[0].Status, o.Calls[0].Batch = -1, 0 },
		// B1's symptom: the MTP layer never sent, yet status 0.
		"finish-zero-is-monolithic": func(o *spec.TransferPerLayerScriptOutput) { o.Calls[4].Blocks = nil },
		// finish returned with room 1's batch 1 never waited.
		"batches-waited": func(o *spec.TransferPerLayerScriptOutput) { o.Unwaited = append(o.Unwaited, 1) },
		// B6's symptom: the finish of chunk 0 finished chunk 4.
		"fifo-per-room": func(o *spec.TransferPerLayerScriptOutput) { o.Trace[13].Finish.Chunk = 4 },
		// a second finish of the same context changed its status.
		"refinish-idempotent": func(o *spec.TransferPerLayerScriptOutput) { o.Trace[14].Finish.Status = -1 },
	}
	propsCatchBreaks(t, sp.Props, in, good, broken)
}
