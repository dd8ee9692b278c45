package fast

import (
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// AdmissionBench is the twin of ref.AdmissionBench (docs/spec/admission-serving.md
// §A3): the shared bench interpreter over the fast round (whose buffer
// gate prices candidates with the incremental A2 estimator) and the fast
// EstimateBuffers.
func AdmissionBench(lim spec.Limits, in spec.AdmissionBenchInput) (spec.AdmissionBenchOutput, error) {
	return ref.RunAdmissionBench(lim, in, spec.BenchDriver{Round: AdmissionRound, Estimate: EstimateBuffers, Map: ref.MapBenchRequest})
}
