package equiv

import (
	"fmt"
	"slices"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// AdmissionScript is the differential spec of admission.script: rounds
// drawn from the round generator under one configuration; every accepted
// round of the trace must satisfy the round properties on its own input.
func AdmissionScript() *Spec[spec.AdmissionScriptInput, spec.AdmissionScriptOutput] {
	return &Spec[spec.AdmissionScriptInput, spec.AdmissionScriptOutput]{
		Op:    catalog.AdmissionScript(),
		Valid: rapid.Custom(admissionScriptValid),
		Invalid: rapid.Custom(func(t *rapid.T) Bad[spec.AdmissionScriptInput] {
			return Bad[spec.AdmissionScriptInput]{spec.AdmissionScriptInput{Steps: make([]spec.AdmissionStep, spec.MaxAdmissionSteps+1+rapid.IntRange(0, 3).Draw(t, "extra"))}, spec.ErrTooLarge}
		}),
		Boundary: admissionScriptBoundary(),
		Script:   stepsOf(func(in *spec.AdmissionScriptInput) *[]spec.AdmissionStep { return &in.Steps }),
		Props: []Prop[spec.AdmissionScriptInput, spec.AdmissionScriptOutput]{
			{"rounds-satisfy-round-properties", admissionScriptRoundProps},
		},
	}
}

func admissionScriptBoundary() []Case[spec.AdmissionScriptInput] {
	e2 := admissionE2Script().Config
	big := spec.PoolState{Available: 1_000_000}
	r1 := []spec.Request{admissionReq("r1", 0, 0, 10000, 16)}
	full := e2
	full.MaxRunningRequests = 1
	return []Case[spec.AdmissionScriptInput]{
		{"e2-chunk-carried-two-rounds", admissionE2Script()},
		{"bad-config-every-step-refused", spec.AdmissionScriptInput{Config: spec.AdderConfig{}, Steps: []spec.AdmissionStep{{}, {}}}},
		// §A1.7 and §A1.10's failure paths across rounds, each pinned once
		// (generated scripts reach them only on some seeds, and never a
		// queue naming the carried rid: the generator renames each round's
		// rids): a continuing chunk with no room (rem <= 0) carries over
		// unchanged; a refused round (its queue names the carried rid again)
		// leaves the carry as it was; the carried chunk counts toward
		// max_running_requests.
		{"chunk-no-room-carries-over-unchanged", spec.AdmissionScriptInput{Config: e2, Steps: []spec.AdmissionStep{
			{Pool: big, Queue: r1}, {Pool: spec.PoolState{}, Queue: []spec.Request{}}, {Pool: big, Queue: []spec.Request{}}}}},
		{"requeued-chunk-rid-refused-keeps-carry", spec.AdmissionScriptInput{Config: e2, Steps: []spec.AdmissionStep{
			{Pool: big, Queue: r1}, {Pool: big, Queue: r1}, {Pool: big, Queue: []spec.Request{}}}}},
		{"carried-chunk-fills-max-running", spec.AdmissionScriptInput{Config: full, Steps: []spec.AdmissionStep{
			{Pool: big, Queue: r1}, {Pool: big, Queue: []spec.Request{admissionReq("r2", 0, 0, 100, 0)}}}}},
	}
}

// admissionScriptValid draws up to four rounds under one configuration,
// renaming each step's requests so a carried chunk never collides.
func admissionScriptValid(t *rapid.T) spec.AdmissionScriptInput {
	first := AdmissionValid(t)
	in := spec.AdmissionScriptInput{Config: first.Config, Steps: []spec.AdmissionStep{}}
	for s := range rapid.IntRange(0, 4).Draw(t, "steps") {
		r := AdmissionValid(t)
		q := slices.Clone(r.Queue)
		for i := range q {
			q[i].RID = fmt.Sprintf("s%d-%s", s, q[i].RID)
		}
		in.Steps = append(in.Steps, spec.AdmissionStep{Pool: r.Pool, Running: r.Running, Queue: q, L2LoadBackCapacity: r.L2LoadBackCapacity})
	}
	return in
}

// admissionScriptRoundProps replays each accepted round's input (with the chunk
// carried from the previous accepted round) through the round properties.
func admissionScriptRoundProps(lim spec.Limits, in spec.AdmissionScriptInput, out spec.AdmissionScriptOutput) error {
	if len(out.Trace) != len(in.Steps) {
		return fmt.Errorf("trace has %d entries for %d steps", len(out.Trace), len(in.Steps))
	}
	var chunked *spec.Request
	for i, s := range in.Steps {
		rin := spec.AdmissionRoundInput{Config: in.Config, Pool: s.Pool, Running: s.Running, Chunked: chunked, Queue: s.Queue, L2LoadBackCapacity: s.L2LoadBackCapacity}
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
