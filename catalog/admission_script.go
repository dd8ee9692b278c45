package catalog

import (
	"fmt"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// AdmissionScript registers admission.script: consecutive rounds under one
// configuration, carrying the chunked request between them.
func AdmissionScript() *Op[spec.AdmissionScriptInput, spec.AdmissionScriptOutput] {
	return &Op[spec.AdmissionScriptInput, spec.AdmissionScriptOutput]{
		OpName:  "admission.script",
		SpecRef: "admission-serving.md §A1.7, §A1.10",
		Summary: "prefill admission over several rounds: each step's queue walk, the chunked request carried to the next",
		Ref:     ref.AdmissionScript,
		Fast:    fast.AdmissionScript,
		Sample: spec.AdmissionScriptInput{Config: admissionSample().Config, Steps: []spec.AdmissionStep{
			{Pool: spec.PoolState{Available: 100000}, Queue: []spec.Request{{RID: "a", InputLen: 20000, MaxNewTokens: 16}}},
			{Pool: spec.PoolState{Available: 100000}, Queue: []spec.Request{{RID: "b", InputLen: 300, MaxNewTokens: 16}}},
		}},
		Shapes: []Shape[spec.AdmissionScriptInput]{
			{Name: "16-rounds-of-64", Make: func() spec.AdmissionScriptInput {
				in := spec.AdmissionScriptInput{Config: AdmissionQueue(0, true).Config}
				for s := range 16 {
					q := AdmissionQueue(64, true)
					for i := range q.Queue {
						q.Queue[i].RID = fmt.Sprintf("s%d-%s", s, q.Queue[i].RID)
					}
					in.Steps = append(in.Steps, spec.AdmissionStep{Pool: q.Pool, Queue: q.Queue})
				}
				return in
			}},
		},
	}
}
