package catalog

import (
	"fmt"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
)

// AdmissionScript registers admission.script: consecutive rounds under one
// configuration, carrying the chunked request between them.
func AdmissionScript() *Op[ref.AdmissionScriptInput, ref.AdmissionScriptOutput] {
	return &Op[ref.AdmissionScriptInput, ref.AdmissionScriptOutput]{
		OpName:  "admission.script",
		SpecRef: "admission-serving.md §A1.7, §A1.10",
		Summary: "prefill admission over several rounds: each step's queue walk, the chunked request carried to the next",
		Ref:     ref.AdmissionScript,
		Fast:    fast.AdmissionScript,
		Sample: ref.AdmissionScriptInput{Config: admissionSample().Config, Steps: []ref.AdmissionStep{
			{Pool: ref.PoolState{Available: 100000}, Queue: []ref.Request{{RID: "a", InputLen: 20000, MaxNewTokens: 16}}},
			{Pool: ref.PoolState{Available: 100000}, Queue: []ref.Request{{RID: "b", InputLen: 300, MaxNewTokens: 16}}},
		}},
		Shapes: []Shape[ref.AdmissionScriptInput]{
			{Name: "16-rounds-of-64", Make: func() ref.AdmissionScriptInput {
				in := ref.AdmissionScriptInput{Config: AdmissionQueue(0, true).Config}
				for s := range 16 {
					q := AdmissionQueue(64, true)
					for i := range q.Queue {
						q.Queue[i].RID = fmt.Sprintf("s%d-%s", s, q.Queue[i].RID)
					}
					in.Steps = append(in.Steps, ref.AdmissionStep{Pool: q.Pool, Queue: q.Queue})
				}
				return in
			}},
		},
	}
}
