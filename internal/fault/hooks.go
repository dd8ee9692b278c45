package fault

import (
	"log/slog"
	"sync/atomic"

	"github.com/kvtwin/kvtwin/spec"
)

// Hooks is the bug zoo's way into fast: one field per fast production
// function whose twin carries a switch of this package, holding that
// function with the family's fault value as an extra last parameter (the
// naming rule of the package doc). Called with the zero value, a field is
// the production function.
//
// The hooks are unexported in fast, so `go doc -all ./fast` names no fault;
// fast fills this table once, from its init (fast/hooks.go), and only the
// bug zoo (equiv/mutants) and tests read it, through Installed. Go has no
// friend packages; this is the shape of crypto's test-only hooks, an
// internal package exporting what one other package may reach.
type Hooks struct {
	// AdmissionRound is fast.AdmissionRound (admission.round,
	// docs/spec/admission-serving.md §A1) with the adder bugs f selects.
	AdmissionRound func(lim spec.Limits, in spec.AdmissionRoundInput, f Admission) (spec.AdmissionRoundOutput, error)
	// AdmissionEstimate is fast.AdmissionEstimate (admission.estimate,
	// docs/spec/admission-serving.md A2) with the estimator bugs f selects.
	AdmissionEstimate func(lim spec.Limits, in spec.AdmissionEstimateInput, f Estimate) (spec.AdmissionEstimateOutput, error)
	// ConfigIndexTopKOverrides is fast.ConfigIndexTopKOverrides
	// (config.index_topk_overrides, docs/spec/admission-serving.md §S4)
	// with the merge bugs f selects.
	ConfigIndexTopKOverrides func(lim spec.Limits, in spec.ConfigIndexTopKOverridesInput, f IndexTopK) (spec.ConfigIndexTopKOverridesOutput, error)
	// DeepGEMMWarmupPlan is fast.DeepGEMMWarmupPlan (deepgemm.warmup_plan,
	// docs/spec/admission-serving.md §S3) with the warmup bugs f selects.
	DeepGEMMWarmupPlan func(lim spec.Limits, in spec.DeepGEMMWarmupPlanInput, f DeepGEMM) (spec.DeepGEMMWarmupPlanOutput, error)
	// NewAckQueue is fast.NewAckQueue (hicache.ack_script,
	// docs/spec/radix-acks.md §3) with the ack-queue bugs f selects.
	NewAckQueue func(cfg spec.AckConfig, f Ack) (spec.AckQueue, error)
	// NewLayerDoneCounter is fast.NewLayerDoneCounter
	// (hicache.layer_done_script, docs/spec/radix-acks.md §5.3) with the
	// readiness bugs f selects.
	NewLayerDoneCounter func(layers int, f Load) (spec.LayerDoneCounter, error)
	// NewLoader is fast.NewLoader (hicache.load_script,
	// docs/spec/radix-acks.md §5.2) with the prepared-load bugs f selects.
	NewLoader func(lim spec.Limits, p spec.LoadPools, f Load) (spec.Loader, error)
	// KVEvDecode is fast.KVEvDecode (kvev.decode, docs/spec/kv-events.md §1)
	// with the decoder bugs f selects.
	KVEvDecode func(lim spec.Limits, in spec.KVEvDecodeInput, f KVEv) (spec.KVEvDecodeOutput, error)
	// NewKVEvIndex is fast.NewKVEvIndex (kvev.apply,
	// docs/spec/kv-events.md §2) with the consumer bugs f selects.
	NewKVEvIndex func(cfg spec.KVEvConfig, streams []spec.KVEvStream, f KVEv) (spec.KVEvIndex, error)
	// NewRadixTree is fast.NewRadixTree (radix.script, docs/spec/radix-acks.md §1,
	// §4) with the radix-tree bugs f selects; the tree is a *fast.RadixTree.
	NewRadixTree func(cfg spec.TreeConfig, f Radix) (spec.RadixTree, error)
	// ServingChatNormalize is fast.ServingChatNormalize (serving.chat_normalize,
	// docs/spec/admission-serving.md S2.2–S2.4, S2.7) with the parser bugs
	// f selects.
	ServingChatNormalize func(lim spec.Limits, in spec.ServingChatNormalizeInput, f Serving) (spec.ServingChatNormalizeOutput, error)
	// ServingStreamErrorChunk is fast.ServingStreamErrorChunk
	// (serving.stream_error_chunk, docs/spec/admission-serving.md S1.3,
	// S2.5) with the error-chunk bugs f selects.
	ServingStreamErrorChunk func(lim spec.Limits, in spec.ServingStreamErrorChunkInput, f Serving) (spec.ServingStreamErrorChunkOutput, error)
	// ServingGLMToolArgs is fast.ServingGLMToolArgs (serving.glm_tool_args,
	// docs/spec/admission-serving.md S2.8) with the parser bugs f selects.
	ServingGLMToolArgs func(lim spec.Limits, in spec.ServingGLMToolArgsInput, f Serving) (spec.ServingGLMToolArgsOutput, error)
	// NewPerLayerManager is fast.NewPerLayerManager (a deterministic-mode
	// manager, transfer.per_layer_script, docs/spec/transfer.md §4) with the
	// manager bugs f selects.
	NewPerLayerManager func(cfg spec.PerLayerConfig, engine spec.Engine, events spec.EventFactory, logger *slog.Logger, f Transfer) (spec.PerLayerManager, error)
}

// installed is the table fast's init installed: written once during
// package initialization, before main or any test runs, and only read
// after, so no reader sees it change.
var installed atomic.Pointer[Hooks]

// Install records fast's table. Only fast's init calls it, once; a second
// call is a programming error that would swap the code the bug zoo runs,
// and panics during initialization, before any input is read.
func Install(h Hooks) {
	if !installed.CompareAndSwap(nil, &h) {
		panic("fault.Install called twice: only fast's init installs the hooks")
	}
}

// Installed returns the table fast installed. Every reader links fast (the
// bug zoo imports it; tests reach it through catalog or fast), so fast's
// init has run before the reader's code; in a program without fast every
// field is nil.
func Installed() Hooks {
	if h := installed.Load(); h != nil {
		return *h
	}
	return Hooks{}
}
