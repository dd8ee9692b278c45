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
		Boundary: admissionScriptBoundary(),
		Props: []Prop[ref.AdmissionScriptInput, ref.AdmissionScriptOutput]{
			{"rounds-satisfy-round-properties", admissionScriptRoundProps},
		},
	}
}

func admissionScriptBoundary() []Case[ref.AdmissionScriptInput] {
	e2 := admissionE2Script().Config
	big := ref.PoolState{Available: 1_000_000}
	r1 := []ref.Request{admissionReq("r1", 0, 0, 10000, 16)}
	full := e2
	full.MaxRunningRequests = 1
	return []Case[ref.AdmissionScriptInput]{
		{"e2-chunk-carried-two-rounds", admissionE2Script()},
		{"bad-config-every-step-refused", ref.AdmissionScriptInput{Config: ref.AdderConfig{}, Steps: []ref.AdmissionStep{{}, {}}}},
		// §A1.7 and §A1.10's failure paths across rounds, each pinned once
		// (generated scripts reach them only on some seeds, and never a
		// queue naming the carried rid: the generator renames each round's
		// rids): a continuing chunk with no room (rem <= 0) carries over
		// unchanged; a refused round (its queue names the carried rid again)
		// leaves the carry as it was; the carried chunk counts toward
		// max_running_requests.
		{"chunk-no-room-carries-over-unchanged", ref.AdmissionScriptInput{Config: e2, Steps: []ref.AdmissionStep{
			{Pool: big, Queue: r1}, {Pool: ref.PoolState{}, Queue: []ref.Request{}}, {Pool: big, Queue: []ref.Request{}}}}},
		{"requeued-chunk-rid-refused-keeps-carry", ref.AdmissionScriptInput{Config: e2, Steps: []ref.AdmissionStep{
			{Pool: big, Queue: r1}, {Pool: big, Queue: r1}, {Pool: big, Queue: []ref.Request{}}}}},
		{"carried-chunk-fills-max-running", ref.AdmissionScriptInput{Config: full, Steps: []ref.AdmissionStep{
			{Pool: big, Queue: r1}, {Pool: big, Queue: []ref.Request{admissionReq("r2", 0, 0, 100, 0)}}}}},
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
		rin := ref.AdmissionRoundInput{Config: in.Config, Pool: s.Pool, Running: s.Running, Chunked: chunked, Queue: s.Queue, L2LoadBackCapacity: s.L2LoadBackCapacity}
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
