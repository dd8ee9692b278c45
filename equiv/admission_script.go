package equiv

import (
	"fmt"
	"slices"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
)

// AdmissionScript is the differential spec of admission.script: rounds
// drawn from the round generator under one configuration; every accepted
// round of the trace must satisfy the round properties on its own input.
func AdmissionScript() *Spec[ref.AdmissionScriptInput, ref.AdmissionScriptOutput] {
	return &Spec[ref.AdmissionScriptInput, ref.AdmissionScriptOutput]{
		Op:    catalog.AdmissionScript(),
		Valid: rapid.Custom(admissionScriptValid),
		Invalid: rapid.Custom(func(t *rapid.T) Bad[ref.AdmissionScriptInput] {
			return Bad[ref.AdmissionScriptInput]{ref.AdmissionScriptInput{Steps: make([]ref.AdmissionStep, ref.MaxAdmissionSteps+1+rapid.IntRange(0, 3).Draw(t, "extra"))}, ref.ErrTooLarge}
		}),
		Boundary: []Case[ref.AdmissionScriptInput]{
			{"e2-chunk-carried-two-rounds", admissionE2Script()},
			{"bad-config-every-step-refused", ref.AdmissionScriptInput{Config: ref.AdderConfig{}, Steps: []ref.AdmissionStep{{}, {}}}},
		},
		Props: []Prop[ref.AdmissionScriptInput, ref.AdmissionScriptOutput]{
			{"rounds-satisfy-round-properties", admissionScriptRoundProps},
		},
	}
}

// admissionScriptValid draws up to four rounds under one configuration,
// renaming each step's requests so a carried chunk never collides.
func admissionScriptValid(t *rapid.T) ref.AdmissionScriptInput {
	first := AdmissionValid(t)
	in := ref.AdmissionScriptInput{Config: first.Config, Steps: []ref.AdmissionStep{}}
	for s := range rapid.IntRange(0, 4).Draw(t, "steps") {
		r := AdmissionValid(t)
		q := slices.Clone(r.Queue)
		for i := range q {
			q[i].RID = fmt.Sprintf("s%d-%s", s, q[i].RID)
		}
		in.Steps = append(in.Steps, ref.AdmissionStep{Pool: r.Pool, Running: r.Running, Queue: q, L2LoadBackCapacity: r.L2LoadBackCapacity})
	}
	return in
}

// admissionScriptRoundProps replays each accepted round's input (with the chunk
// carried from the previous accepted round) through the round properties.
func admissionScriptRoundProps(lim ref.Limits, in ref.AdmissionScriptInput, out ref.AdmissionScriptOutput) error {
	if len(out.Trace) != len(in.Steps) {
		return fmt.Errorf("trace has %d entries for %d steps", len(out.Trace), len(in.Steps))
	}
	var chunked *ref.Request
	for i, s := range in.Steps {
		rin := ref.RoundInput{Config: in.Config, Pool: s.Pool, Running: s.Running, Chunked: chunked, Queue: s.Queue, L2LoadBackCapacity: s.L2LoadBackCapacity}
		tr := out.Trace[i]
		if (tr.Result == nil) == (tr.Error == nil) {
			return fmt.Errorf("step %d: exactly one of result and error must be set", i)
		}
		if tr.Result == nil {
			continue
		}
		for _, p := range AdmissionProps() {
			if err := p.Holds(lim, rin, *tr.Result); err != nil {
				return fmt.Errorf("step %d: %s: %v", i, p.Name, err)
			}
		}
		chunked = ref.NextChunked(rin, *tr.Result)
	}
	if !cmp.Equal(chunked, out.Chunked) {
		return fmt.Errorf("final chunk %+v, want %+v", out.Chunked, chunked)
	}
	return nil
}
