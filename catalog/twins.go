package catalog

import (
	"fmt"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// This file pairs the twins that are Go values rather than ops: the
// constructors of the stateful algorithms (the radix tree, the write-ack
// queue, the load descriptors, the layer-done counter, the per-layer
// transfer manager), which the script ops drive and the server, the CLI and
// the replay build directly, and the serving functions the preflight
// endpoint chains. Callers ask for one by Impl here instead of naming
// package ref or fast, so the catalog stays the only place twins are paired.

// stateTwin is one stateful algorithm's constructor twins. The constructors
// run on the CPU only: no stateful algorithm has a CUDA twin.
type stateTwin[F any] struct {
	name      string // what errors call it, e.g. "radix tree"
	op        string // the script op that drives it, e.g. "radix.script"
	ref, fast F
}

// get returns the twin for impl, or an error wrapping ErrImplUnavailable
// (cuda) or ErrUnknownImpl (anything else) that names the twin and why.
func (t stateTwin[F]) get(impl Impl) (F, error) {
	var none F
	switch impl {
	case Ref:
		return t.ref, nil
	case Fast:
		return t.fast, nil
	case CUDA:
		return none, fmt.Errorf("%s (%s): %w: cuda: it has no CUDA twin (it runs on the CPU: use ref or fast)", t.name, t.op, ErrImplUnavailable)
	}
	return none, fmt.Errorf("%s (%s): %w %q: want ref or fast", t.name, t.op, ErrUnknownImpl, impl)
}

// RadixTree returns impl's radix prefix-cache constructor (docs/spec/radix-acks.md
// §1): ref.NewRadixTree for Ref, fast.NewRadixTree for Fast. Both build trees
// with identical observable behaviour; fast is the production tree. Cuda is
// an error wrapping ErrImplUnavailable (the tree has no CUDA twin), any
// other name one wrapping ErrUnknownImpl; neither falls back.
func RadixTree(impl Impl) (spec.NewRadixTreeFunc, error) {
	return stateTwin[spec.NewRadixTreeFunc]{"radix tree", "radix.script", ref.NewRadixTree, fast.NewRadixTree}.get(impl)
}

// AckQueue returns impl's constructor of one rank's HiCache write-ack state
// (docs/spec/radix-acks.md §3): ref.NewAckQueue or fast.NewAckQueue. Cuda and
// unknown names are errors, as for RadixTree.
func AckQueue(impl Impl) (spec.NewAckQueueFunc, error) {
	return stateTwin[spec.NewAckQueueFunc]{"write-ack queue", "hicache.ack_script", ref.NewAckQueue, fast.NewAckQueue}.get(impl)
}

// Loader returns impl's constructor of prepared H2D load descriptors over a
// fresh arena (docs/spec/radix-acks.md §5.2): ref.NewLoader or fast.NewLoader.
// Cuda and unknown names are errors, as for RadixTree.
func Loader(impl Impl) (spec.NewLoaderFunc, error) {
	return stateTwin[spec.NewLoaderFunc]{"load descriptors", "hicache.load_script", ref.NewLoader, fast.NewLoader}.get(impl)
}

// LayerDoneCounter returns impl's constructor of the per-layer load
// readiness counter (docs/spec/radix-acks.md §5.3): ref.NewLayerDoneCounter or
// fast.NewLayerDoneCounter. Cuda and unknown names are errors, as for
// RadixTree.
func LayerDoneCounter(impl Impl) (spec.NewLayerDoneCounterFunc, error) {
	return stateTwin[spec.NewLayerDoneCounterFunc]{"layer-done counter", "hicache.layer_done_script", ref.NewLayerDoneCounter, fast.NewLayerDoneCounter}.get(impl)
}

// PerLayerManager returns impl's constructor of the per-layer prefill→decode
// transfer manager in deterministic mode (docs/spec/transfer.md §4):
// ref.NewPerLayerManager or fast.NewPerLayerManager. Cuda and unknown names
// are errors, as for RadixTree.
func PerLayerManager(impl Impl) (spec.NewPerLayerManagerFunc, error) {
	return stateTwin[spec.NewPerLayerManagerFunc]{"per-layer transfer manager", "transfer.per_layer_script", ref.NewPerLayerManager, fast.NewPerLayerManager}.get(impl)
}

// KVEvIndex returns impl's constructor of the event-fed prefix index
// (docs/spec/kv-events.md §2-§3): ref.NewKVEvIndex or fast.NewKVEvIndex.
// Cuda and unknown names are errors, as for RadixTree.
func KVEvIndex(impl Impl) (spec.NewKVEvIndexFunc, error) {
	return stateTwin[spec.NewKVEvIndexFunc]{"event-fed index", "kvev.apply", ref.NewKVEvIndex, fast.NewKVEvIndex}.get(impl)
}

// PreflightTwins are the serving functions of one implementation that the
// OpenAI preflight (docs/api.md, POST /v1/openai/preflight) chains: normalize
// the request, bound its input length, render the error body.
type PreflightTwins struct {
	// Normalize is serving.chat_normalize (docs/spec/admission-serving.md
	// S2.2–S2.4, S2.7): the opt-in OpenAI compatibility rewrites, or the
	// 400 message of a client fault.
	Normalize Func[spec.ServingChatNormalizeInput, spec.ServingChatNormalizeOutput]
	// InputLength is serving.validate_input_length
	// (docs/spec/admission-serving.md S1.2): accepted, or 413 and its message.
	InputLength Func[spec.ServingValidateInputLengthInput, spec.ServingValidateInputLengthOutput]
	// ErrorBody is serving.error_body (docs/spec/admission-serving.md S1.3):
	// the exact status and body of an error on a surface.
	ErrorBody Func[spec.ServingErrorBodyInput, spec.ServingErrorBodyOutput]
}

// Preflight returns impl's preflight functions, taken from the registered
// ops ServingChatNormalize, ServingValidateInputLength and ServingErrorBody (their Op.Func), so
// they are exactly the twins those ops run (docs/spec/admission-serving.md
// S1.2, S1.3, S2.2–S2.4). An implementation one of them lacks (cuda: the
// serving ops have no CUDA twin) is that op's Func error, prefixed
// "preflight: ", wrapping ErrImplUnavailable or ErrUnknownImpl.
func Preflight(impl Impl) (PreflightTwins, error) {
	var tw PreflightTwins
	var err error
	if tw.Normalize, err = ServingChatNormalize().Func(impl); err != nil {
		return PreflightTwins{}, fmt.Errorf("preflight: %w", err)
	}
	if tw.InputLength, err = ServingValidateInputLength().Func(impl); err != nil {
		return PreflightTwins{}, fmt.Errorf("preflight: %w", err)
	}
	if tw.ErrorBody, err = ServingErrorBody().Func(impl); err != nil {
		return PreflightTwins{}, fmt.Errorf("preflight: %w", err)
	}
	return tw, nil
}

// KVEvRestore returns impl's restore of the event-fed index from an A12
// snapshot (docs/spec/kv-events.md §2.10 A12): ref.RestoreKVEvIndex or
// fast.RestoreKVEvIndex, one byte format and one set of refusals. A
// replica's warm start (§4.3 option (a)) restores with the twin it
// serves. Cuda and unknown names are errors, as for RadixTree.
func KVEvRestore(impl Impl) (spec.RestoreKVEvIndexFunc, error) {
	return stateTwin[spec.RestoreKVEvIndexFunc]{"event-fed index restore", "kvev.snapshot", ref.RestoreKVEvIndex, fast.RestoreKVEvIndex}.get(impl)
}
