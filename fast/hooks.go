package fast

import "github.com/kvtwin/kvtwin/internal/fault"

// init installs the bug zoo's hooks, the one place they leave this
// package. Each twin that carries an internal/fault switch has one
// unexported <production>WithFaults hook beside its production function,
// which is that hook called with the zero fault value; the hooks stay off
// fast's API (`go doc -all ./fast` names no fault), and fault.Hooks hands
// them to equiv/mutants, the only other package internal/repolint lets
// import internal/fault (docs/design/ARCHITECTURE.md "Bug-zoo switches").
func init() {
	fault.Install(fault.Hooks{
		AdmissionRound:           admissionRoundWithFaults,
		AdmissionEstimate:        admissionEstimateWithFaults,
		ConfigIndexTopKOverrides: configIndexTopKOverridesWithFaults,
		DeepGEMMWarmupPlan:       deepGEMMWarmupPlanWithFaults,
		NewAckQueue:              newAckQueueWithFaults,
		NewLayerDoneCounter:      newLayerDoneCounterWithFaults,
		NewLoader:                newLoaderWithFaults,
		KVEvDecode:               kvevDecodeWithFaults,
		NewKVEvIndex:             newKVEvIndexWithFaults,
		NewRadixTree:             newRadixTreeWithFaults,
		ServingChatNormalize:     servingChatNormalizeWithFaults,
		ServingStreamErrorChunk:  servingStreamErrorChunkWithFaults,
		ServingGLMToolArgs:       servingGLMToolArgsWithFaults,
		NewPerLayerManager:       newPerLayerManagerWithFaults,
	})
}
