package equiv_test

import (
	"slices"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestBenchPropertiesCatchWrongOutputs: each A3.5 property holds on ref's
// output and fails on an output broken the way it guards against.
func TestBenchPropertiesCatchWrongOutputs(t *testing.T) {
	in := equiv.BenchA37() // two rounds, b chunked in round 0
	noCP := catalog.AdmissionBenchA32()
	noCP.CP = nil
	lim := spec.DefaultLimits()
	run := func(in spec.AdmissionBenchInput) spec.AdmissionBenchOutput {
		out, err := ref.AdmissionBench(lim, in)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	good, goodNoCP := run(in), run(noCP)
	props := map[string]equiv.Prop[spec.AdmissionBenchInput, spec.AdmissionBenchOutput]{}
	for _, p := range equiv.BenchProps() {
		props[p.Name] = p
		if err := p.Holds(lim, in, good); err != nil {
			t.Errorf("%s fails on ref's output: %v", p.Name, err)
		}
		if err := p.Holds(lim, noCP, goodNoCP); err != nil {
			t.Errorf("%s fails on ref's cp-null output: %v", p.Name, err)
		}
	}
	clone := func(o spec.AdmissionBenchOutput) spec.AdmissionBenchOutput {
		o.Rounds = slices.Clone(o.Rounds)
		return o
	}
	broken := []struct {
		prop string
		in   spec.AdmissionBenchInput
		out  func() spec.AdmissionBenchOutput
	}{
		{"A3.5.1-each-request-admitted-once-unless-chunked", in, func() spec.AdmissionBenchOutput {
			o := clone(good)
			o.Rounds[0].Chunked = nil // b admitted twice without being carried
			return o
		}},
		{"A3.5.2-l2-capacity-conserved", in, func() spec.AdmissionBenchOutput {
			o := clone(good)
			o.Rounds[1].L2LoadedTokens = 4096 // loaded without consuming capacity (A3-B1's symptom)
			return o
		}},
		{"A3.5.3-rounds-replay-through-admit-round", in, func() spec.AdmissionBenchOutput {
			o := clone(good)
			o.Rounds[0].Stop.Detail = spec.DetailCPMaxCachedTokens // a stop the round never gave
			return o
		}},
		{"A3.5.3-rounds-replay-through-admit-round", in, func() spec.AdmissionBenchOutput {
			o := clone(good)
			o.Termination = spec.BenchStalled
			return o
		}},
		{"A3.5.4-no-cp-detail-without-cp", noCP, func() spec.AdmissionBenchOutput {
			o := clone(goodNoCP)
			o.Rounds[0].Stop.Detail = spec.DetailCPMaxRequests
			return o
		}},
	}
	for _, b := range broken {
		if err := props[b.prop].Holds(lim, b.in, b.out()); err == nil {
			t.Errorf("%s holds on a broken output", b.prop)
		}
	}
}
