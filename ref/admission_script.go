package ref

// The admission.script op: consecutive scheduling rounds against one
// adder configuration, carrying the chunked request from each round to the
// next (§A1.7, §A1.10). The interpreter is written once and takes the round
// function, so the fast twin is this interpreter over fast.AdmissionRound and
// the script compares the round implementations and nothing else.

import "fmt"

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

// RunAdmissionScript runs the steps in order through round. A refused
// round is recorded as its error object and leaves the carried chunk as it
// was; only a script over MaxAdmissionSteps is rejected whole.
func RunAdmissionScript(lim Limits, in AdmissionScriptInput, round RoundFunc) (AdmissionScriptOutput, error) {
	if len(in.Steps) > MaxAdmissionSteps {
		return AdmissionScriptOutput{}, Reject(ErrTooLarge, "steps", len(in.Steps), fmt.Sprintf("<= %d steps", MaxAdmissionSteps))
	}
	out := AdmissionScriptOutput{Trace: make([]AdmissionStepResult, 0, len(in.Steps))}
	for _, s := range in.Steps {
		rin := AdmissionRoundInput{Config: in.Config, Pool: s.Pool, Running: s.Running, Chunked: out.Chunked, Queue: s.Queue,
			L2LoadBackCapacity: s.L2LoadBackCapacity}
		res, err := round(lim, rin)
		if err != nil {
			eo := ErrorObjectOf(err)
			out.Trace = append(out.Trace, AdmissionStepResult{Error: &eo})
			continue
		}
		out.Trace = append(out.Trace, AdmissionStepResult{Result: &res})
		out.Chunked = NextChunked(rin, res)
	}
	return out, nil
}

// AdmissionScript is admission.script on the reference rounds.
func AdmissionScript(lim Limits, in AdmissionScriptInput) (AdmissionScriptOutput, error) {
	return RunAdmissionScript(lim, in, AdmissionRound)
}
