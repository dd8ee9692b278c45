package fast

import (
	"log/slog"

	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
)

// init installs the bug zoo's hooks, the one place they leave this
// package. Each twin that carries an internal/fault switch has one
// unexported <production>WithFaults hook beside its production function,
// which is that hook called with the zero fault value; the hooks stay off
// fast's API (`go doc -all ./fast` names no fault), and fault.Hooks hands
// them to equiv/mutants, the only other package internal/repolint lets
// import internal/fault (docs/design/ARCHITECTURE.md "Bug-zoo switches").
func init() {
	fault.Install(fault.Hooks{
		AdmitRound:              admitRoundWithFaults,
		AdmissionEstimate:       admissionEstimateWithFaults,
		MergeIndexTopkOverrides: mergeIndexTopkOverridesWithFaults,
		DeepGEMMWarmupPlan:      deepGEMMWarmupPlanWithFaults,
		NewAckQueue:             newAckQueueWithFaults,
		NewLayerDoneCounter:     newLayerDoneCounterWithFaults,
		NewLoader:               newLoaderWithFaults,
		KVEvDecode:              kvevDecodeWithFaults,
		NewKVEvIndex:            newKVEvIndexWithFaults,
		// The table speaks ref's types only (internal/fault cannot import
		// fast), so the tree goes out as the ref.RadixTree it implements
		// and the manager behind NewPerLayerManager's signature.
		NewTree: func(cfg ref.TreeConfig, f fault.Radix) (ref.RadixTree, error) {
			return newTreeWithFaults(cfg, f)
		},
		ChatNormalize:    chatNormalizeWithFaults,
		StreamErrorChunk: streamErrorChunkWithFaults,
		GLMToolArgs:      glmToolArgsWithFaults,
		// NewPerLayerManager's body, with the hook in place of NewManager.
		NewPerLayerManager: func(cfg ref.PerLayerConfig, engine ref.Engine, events ref.EventFactory, logger *slog.Logger, f fault.Transfer) (ref.PerLayerManager, error) {
			return newManagerWithFaults(PerLayerOptions{Config: cfg, Engine: engine, Events: events, Logger: logger}, f)
		},
	})
}
