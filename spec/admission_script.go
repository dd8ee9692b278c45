package spec

// MaxAdmissionSteps bounds a script's rounds.
const MaxAdmissionSteps = 4096

// AdmissionStep is one round of a script: the pool, running batch and
// waiting queue the scheduler sees at that step.
type AdmissionStep struct {
	// Pool is the device pool at the start of the round.
	Pool PoolState `json:"pool"`
	// Running are the decoding requests.
	Running []RunningReq `json:"running"`
	// Queue is the waiting queue in priority order.
	Queue []Request `json:"queue"`
	// L2LoadBackCapacity is the bench's fake L2 capacity; nil is unlimited.
	L2LoadBackCapacity *int64 `json:"l2_load_back_capacity,omitempty"`
}

// AdmissionScriptInput is a configuration and the rounds run under it.
type AdmissionScriptInput struct {
	// Config configures every round's adder.
	Config AdderConfig `json:"config"`
	// Steps are the rounds, in order.
	Steps []AdmissionStep `json:"steps"`
}

// AdmissionStepResult is one round's result, or the error it was refused with.
type AdmissionStepResult struct {
	// Result is the round's result; nil when refused.
	Result *AdmissionRoundOutput `json:"result,omitempty"`
	// Error is the canonical error of a refused round; nil when accepted.
	Error *ErrorObject `json:"error,omitempty"`
}

// AdmissionScriptOutput is the trace and the request left chunked at the end.
type AdmissionScriptOutput struct {
	// Trace has one entry per step.
	Trace []AdmissionStepResult `json:"trace"`
	// Chunked is the request to continue after the last step, or nil.
	Chunked *Request `json:"chunked"`
}

// RoundFunc is a twin's round function (ref.AdmissionRound, fast.AdmissionRound).
type RoundFunc func(Limits, AdmissionRoundInput) (AdmissionRoundOutput, error)
