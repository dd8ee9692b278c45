package equiv_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// kvevInputOnly are the kvev properties that never read the output: each
// re-runs ref on inputs derived from the case (a batch without its refused
// event, the payload with bytes appended or cut) and checks what ref does
// there, so no broken output can trip them.
var kvevInputOnly = map[string]bool{
	"refused-event-is-atomic":      true,
	"decode-error-changes-no-pool": true,
	"trailing-bytes-refused":       true,
	"proper-prefix-refused":        true,
}

func kvevCase[In any](t *testing.T, cs []equiv.Case[In], name string) In {
	t.Helper()
	for _, c := range cs {
		if c.Name == name {
			return c.In
		}
	}
	t.Fatalf("no case %q", name)
	var zero In
	return zero
}

// TestKVEvApplyPropertiesCatchWrongRuns: each kvev.apply property holds
// on ref's run of two interleaved streams, one of which replays, and each
// that reads the output fails on a result broken the way it guards against.
func TestKVEvApplyPropertiesCatchWrongRuns(t *testing.T) {
	sp := equiv.KVEvApply()
	in := kvevCase(t, sp.Boundary, "two-streams-interleaved-one-replays")
	good, err := ref.KVEvApply(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(good.Trace[4].Applied) != 1 || !good.Trace[5].ReplayDone || len(good.Trace[6].Scores) != 1 {
		t.Fatalf("the case no longer replays and scores as this test expects: %+v", good.Trace)
	}
	broken := map[string]func(*spec.KVEvApplyOutput){
		"state-invariants":                   func(o *spec.KVEvApplyOutput) { o.State.Engines[0].Pools[0].Pages[0].Resident += 5 },
		"digest-is-a8":                       func(o *spec.KVEvApplyOutput) { o.State.Digest = "00" },
		"cursor-follows-3.1":                 func(o *spec.KVEvApplyOutput) { o.Trace[5].Applied = nil },
		"applied-at-most-once":               func(o *spec.KVEvApplyOutput) { o.Trace[5].Applied = []uint64{1} },
		"score-stops-at-holes":               func(o *spec.KVEvApplyOutput) { o.Trace[6].Scores[0].Blocks++ },
		"replayed-batch-twice-is-duplicate":  func(o *spec.KVEvApplyOutput) { o.State.Streams[0].Counters.Duplicates++ },
		"digest-independent-of-interleaving": func(o *spec.KVEvApplyOutput) { o.State.Engines[0].Counters.Stored++ },
		"streams-are-independent":            func(o *spec.KVEvApplyOutput) { o.State.Streams[1].Counters.Batches++ },
		"hashed-score-equals-exact":          func(o *spec.KVEvApplyOutput) { o.Trace[6].Scores[0].Blocks-- },
	}
	kvevPropsCatchBreaks(t, sp.Props, in, good, broken)
}

// TestKVEvDecodePropertiesCatchWrongMessages: the same for kvev.decode on
// §5.1's E4 (map form: a store, a removal, a clear).
func TestKVEvDecodePropertiesCatchWrongMessages(t *testing.T) {
	sp := equiv.KVEvDecode()
	in := kvevCase(t, sp.Boundary, "e4-map-form-stored-removed-cleared")
	good, err := ref.KVEvDecode(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	broken := map[string]func(*spec.KVMessage){
		"canonical-shape":        func(m *spec.KVMessage) { m.Batch.Events[2].Form = "tuple" },
		"reencoding-round-trips": func(m *spec.KVMessage) { m.Batch.Events[0].BlockSize = 0 },
		"form-a-equals-form-b":   func(m *spec.KVMessage) { m.Batch.Events[1].BlockHashes = []spec.EvHash{} },
		"hash-shapes-agree":      func(m *spec.KVMessage) { m.Batch.Events[0].BlockHashes = []spec.EvHash{} },
	}
	kvevPropsCatchBreaks(t, sp.Props, in, good, broken)
}

func kvevPropsCatchBreaks[In, Out any](t *testing.T, props []equiv.Prop[In, Out], in In, good Out, broken map[string]func(*Out)) {
	t.Helper()
	for _, p := range props {
		if err := p.Holds(spec.DefaultLimits(), in, good); err != nil {
			t.Errorf("%s fails on ref's run: %v", p.Name, err)
		}
		if kvevInputOnly[p.Name] {
			continue
		}
		breakIt, ok := broken[p.Name]
		if !ok {
			t.Errorf("no broken result for property %s", p.Name)
			continue
		}
		bad := deepCopyJSON(t, good)
		breakIt(&bad)
		if p.Holds(spec.DefaultLimits(), in, bad) == nil {
			t.Errorf("%s holds on a broken result", p.Name)
		}
	}
}

// TestKVEvAppliedAtMostOnceAllowsARestartFoundWhileDraining is the case
// rapid shrank on 2026-12-06 (seed 15820055689087673453): a restart step,
// then a replay that fails while a seq regression (seq 0 after 6) is held,
// so one step applies 6 (after the earlier 9: the restart step's new
// incarnation) and then 0 (the regression's). Each restart excuses one seq
// that does not increase; the property once let the first restart excuse
// both and failed ref's and fast's own, correct, runs.
func TestKVEvAppliedAtMostOnceAllowsARestartFoundWhileDraining(t *testing.T) {
	var in spec.KVEvApplyInput
	if err := json.Unmarshal([]byte(restartWhileDrainingCase), &in); err != nil {
		t.Fatal(err)
	}
	out, err := ref.KVEvApply(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	if r := out.Trace[28]; !r.Restart || !slices.Equal(r.Applied, []uint64{6, 0}) {
		t.Fatalf("step 28 no longer applies [6 0] across a restart: %+v", r)
	}
	for _, p := range equiv.KVEvApply().Props {
		if err := p.Holds(spec.DefaultLimits(), in, out); err != nil {
			t.Errorf("%s fails on ref's run: %v", p.Name, err)
		}
	}
	out.Trace[28].Restart = false
	for _, p := range equiv.KVEvApply().Props {
		if p.Name == "applied-at-most-once" && p.Holds(spec.DefaultLimits(), in, out) == nil {
			t.Error("applied-at-most-once holds when seq 0 follows 6 with no restart reported")
		}
	}
}

const restartWhileDrainingCase = `{"streams":[{"name":"vllm-0","replay":true}],"steps":[{"op":"live","stream":"vllm-0","frames":["","0000000000000001","82a27473cb41da305498500000a66576656e747390"]},{"op":"replay","stream":"vllm-0","frames":["","0000000000000001","82a27473cb41da305498500000a66576656e747390"]},{"op":"replay_failed","stream":"vllm-0","reason":"timeout"},{"op":"restart","stream":"vllm-0"},{"op":"score","group":1},{"op":"live","stream":"vllm-0","frames":["","0000000000000002","82a27473cb41da305498900000a66576656e74739192ac426c6f636b52656d6f76656490"]},{"op":"replay","stream":"vllm-0","frames":["","0000000000000001","82a27473cb41da305498500000a66576656e747390"]},{"op":"replay_failed","stream":"vllm-0","reason":"timeout"},{"op":"score","group":1},{"op":"score","group":1},{"op":"live","stream":"vllm-0","frames":["","0000000000000004","82a27473cb41da305499100000a66576656e74739192ac426c6f636b52656d6f76656490"]},{"op":"replay_failed","stream":"vllm-0","reason":"timeout"},{"op":"live","stream":"vllm-0","frames":["","0000000000000006","82a27473cb41da305499900000a66576656e74739192ac426c6f636b52656d6f76656490"]},{"op":"replay_failed","stream":"vllm-0","reason":"timeout"},{"op":"live","stream":"vllm-0","frames":["","0000000000000007","82a27473cb41da305499d00000a66576656e74739192ac426c6f636b52656d6f76656490"]},{"op":"score","group":1},{"op":"score","group":1},{"op":"live","stream":"vllm-0","frames":["","0000000000000009","82a27473cb41da30549a500000a66576656e74739183a474797065ac426c6f636b52656d6f766564ac626c6f636b5f68617368657391cf151788d4012da6ada66d656469756dc0"]},{"op":"replay","stream":"vllm-0","frames":["","0000000000000009","82a27473cb41da30549a500000a66576656e74739183a474797065ac426c6f636b52656d6f766564ac626c6f636b5f68617368657391cf151788d4012da6ada66d656469756dc0"]},{"op":"replay","stream":"vllm-0","frames":["","ffffffffffffffff",""]},{"op":"score","group":1},{"op":"restart","stream":"vllm-0"},{"op":"score","group":1},{"op":"score","group":1},{"op":"score","group":1},{"op":"live","stream":"vllm-0","frames":["","0000000000000006","82a27473cb41da305499900000a66576656e74739192ac426c6f636b52656d6f76656490"]},{"op":"score","group":1},{"op":"live","stream":"vllm-0","frames":["","0000000000000000","93cb41da3054981000009191b0416c6c426c6f636b73436c6561726564c0"]},{"op":"replay_failed","stream":"vllm-0","reason":"timeout"},{"op":"live","stream":"vllm-0","frames":["","0000000000000001","93cb41da3054985000009192ac426c6f636b52656d6f76656490c0"]},{"op":"score","group":1},{"op":"score","group":1},{"op":"score","group":1},{"op":"score","group":1}]}`
