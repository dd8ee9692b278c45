package ref

// The admission.script op: consecutive scheduling rounds against one
// adder configuration, carrying the chunked request from each round to the
// next (§A1.7, §A1.10). The interpreter is written once and takes the round
// function, so the fast twin is this interpreter over fast.AdmissionRound and
// the script compares the round implementations and nothing else.

import (
	"fmt"

	"github.com/kvtwin/kvtwin/spec"
)

// RunAdmissionScript runs the steps in order through round. A refused
// round is recorded as its error object and leaves the carried chunk as it
// was; only a script over MaxAdmissionSteps is rejected whole.
func RunAdmissionScript(lim spec.Limits, in spec.AdmissionScriptInput, round spec.RoundFunc) (spec.AdmissionScriptOutput, error) {
	if len(in.Steps) > spec.MaxAdmissionSteps {
		return spec.AdmissionScriptOutput{}, spec.Reject(spec.ErrTooLarge, "steps", len(in.Steps), fmt.Sprintf("<= %d steps", spec.MaxAdmissionSteps))
	}
	out := spec.AdmissionScriptOutput{Trace: make([]spec.AdmissionStepResult, 0, len(in.Steps))}
	for _, s := range in.Steps {
		rin := spec.AdmissionRoundInput{Config: in.Config, Pool: s.Pool, Running: s.Running, Chunked: out.Chunked, Queue: s.Queue,
			L2LoadBackCapacity: s.L2LoadBackCapacity}
		res, err := round(lim, rin)
		if err != nil {
			eo := spec.ErrorObjectOf(err)
			out.Trace = append(out.Trace, spec.AdmissionStepResult{Error: &eo})
			continue
		}
		out.Trace = append(out.Trace, spec.AdmissionStepResult{Result: &res})
		out.Chunked = NextChunked(rin, res)
	}
	return out, nil
}

// AdmissionScript is admission.script on the reference rounds.
func AdmissionScript(lim spec.Limits, in spec.AdmissionScriptInput) (spec.AdmissionScriptOutput, error) {
	return RunAdmissionScript(lim, in, AdmissionRound)
}
