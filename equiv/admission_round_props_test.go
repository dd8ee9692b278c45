package equiv_test

import (
	"slices"
	"testing"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

func ap64(v int64) *int64 { return &v }

func admissionRound(t *testing.T, in spec.AdmissionRoundInput) spec.AdmissionRoundOutput {
	t.Helper()
	out, err := ref.AdmissionRound(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func clone(out spec.AdmissionRoundOutput) spec.AdmissionRoundOutput {
	out.Admitted = slices.Clone(out.Admitted)
	return out
}

// TestAdmissionPropertiesCatchWrongRounds: each A1.13 property holds on
// ref's rounds and fails on a result broken the way it guards against.
func TestAdmissionPropertiesCatchWrongRounds(t *testing.T) {
	// A CP round with running requests, an L1 lock, a load-back refused by
	// the cached gate, page 16 and a chunk budget.
	cp := spec.AdmissionRoundInput{
		Config: spec.AdderConfig{PageSize: 16, NewTokenRatio: 0.7, MaxPrefillTokens: 4096, ChunkedPrefillSize: ap64(3000), MaxRunningRequests: 10,
			CP: &spec.CPAdmission{MaxRequests: ap64(4), MaxTotalCachedTokens: ap64(600)}},
		Pool:    spec.PoolState{Available: 50000, Evictable: 2000},
		Running: []spec.RunningReq{{MaxNewTokens: 300, OutputLen: 10}},
		Queue: []spec.Request{
			{RID: "a", InputLen: 1000, MaxNewTokens: 50, L1Prefix: 320, L1PrefixEvictable: 160},
			{RID: "b", InputLen: 900, MaxNewTokens: 50},
			{RID: "c", InputLen: 900, MaxNewTokens: 50, HostHit: 400},
		},
	}
	// An inert CP round (no knobs, no chunking) that cuts nothing.
	inert := spec.AdmissionRoundInput{Config: spec.AdderConfig{PageSize: 16, NewTokenRatio: 0.5, MaxPrefillTokens: 2000, MaxRunningRequests: 10, CP: &spec.CPAdmission{}},
		Pool: spec.PoolState{Available: 50000}, Queue: []spec.Request{{RID: "a", InputLen: 1000}, {RID: "b", InputLen: 1000}}}
	// A chunked round: a is cut.
	chunk := spec.AdmissionRoundInput{Config: spec.AdderConfig{PageSize: 16, NewTokenRatio: 0.5, MaxPrefillTokens: 8000, ChunkedPrefillSize: ap64(1000), MaxRunningRequests: 10},
		Pool: spec.PoolState{Available: 50000}, Queue: []spec.Request{{RID: "x", InputLen: 100}, {RID: "a", InputLen: 5000}, {RID: "b", InputLen: 10}}}
	// A lone request over the cached limit, admitted alone.
	alone := spec.AdmissionRoundInput{Config: spec.AdderConfig{PageSize: 1, NewTokenRatio: 0.5, MaxPrefillTokens: 8000, MaxRunningRequests: 10,
		CP: &spec.CPAdmission{MaxTotalCachedTokens: ap64(10)}}, Pool: spec.PoolState{Available: 50000},
		Queue: []spec.Request{{RID: "a", InputLen: 1000, HostHit: 500}}}

	good := map[string]spec.AdmissionRoundOutput{"cp": admissionRound(t, cp), "inert": admissionRound(t, inert), "chunk": admissionRound(t, chunk), "alone": admissionRound(t, alone)}
	inputs := map[string]spec.AdmissionRoundInput{"cp": cp, "inert": inert, "chunk": chunk, "alone": alone}
	if g := good["cp"]; g.Stop.Detail != spec.DetailCPMaxCachedTokens || g.L2Loaded != 400 || len(g.Admitted) != 2 {
		t.Fatalf("cp fixture no longer exercises the refused load-back: %+v", g)
	}
	if g := good["chunk"]; len(g.Admitted) != 2 || !g.Admitted[1].Chunked {
		t.Fatalf("chunk fixture no longer cuts: %+v", g.Admitted)
	}
	broken := []struct {
		prop, on string
		brk      func(*spec.AdmissionRoundOutput)
	}{
		{"budget-conservation", "cp", func(o *spec.AdmissionRoundOutput) { o.RemInputTokens-- }},
		{"budget-conservation", "cp", func(o *spec.AdmissionRoundOutput) { o.RemTotalTokens += 0.5 }},
		{"failure-purity", "cp", func(o *spec.AdmissionRoundOutput) { o.Pool.Evictable -= 400 }},
		{"failure-purity", "cp", func(o *spec.AdmissionRoundOutput) { o.L2Loaded += 7 }},
		{"page-alignment", "cp", func(o *spec.AdmissionRoundOutput) { o.Admitted[0].ChargedExtend++ }},
		{"page-alignment", "chunk", func(o *spec.AdmissionRoundOutput) { o.Admitted[1].RunExtend -= 8 }},
		{"monotonic-budgets", "cp", func(o *spec.AdmissionRoundOutput) { o.RemInputTokens = 1 << 20 }},
		{"queue-order", "cp", func(o *spec.AdmissionRoundOutput) { o.Admitted[0], o.Admitted[1] = o.Admitted[1], o.Admitted[0] }},
		{"queue-order", "cp", func(o *spec.AdmissionRoundOutput) { o.Stop.RID = "b" }},
		{"at-most-one-chunk", "chunk", func(o *spec.AdmissionRoundOutput) { o.Admitted[0].Chunked = true }},
		{"at-most-one-chunk", "chunk", func(o *spec.AdmissionRoundOutput) {
			o.Admitted = append(o.Admitted, spec.AdmittedReq{RID: "b", RunExtend: 10, ChargedExtend: 16})
		}},
		{"cp-bounds", "cp", func(o *spec.AdmissionRoundOutput) { o.CumCached += 600 }},
		{"cp-bounds", "cp", func(o *spec.AdmissionRoundOutput) {
			o.Admitted = append(o.Admitted, spec.AdmittedReq{}, spec.AdmittedReq{}, spec.AdmittedReq{})
		}},
		{"inertness", "inert", func(o *spec.AdmissionRoundOutput) { o.Stop.Detail = spec.DetailBudgetInput }},
		{"lift-bound", "cp", func(o *spec.AdmissionRoundOutput) { o.EffectiveCPExtendLimit = ap64(4096) }},
		{"lift-bound", "cp", func(o *spec.AdmissionRoundOutput) { o.RemInputTokens += 100 }},
		{"single-request-fits-alone", "alone", func(o *spec.AdmissionRoundOutput) {
			o.Admitted, o.Stop = nil, spec.RoundStop{Result: spec.Other, Detail: spec.DetailCPMaxCachedTokens, RID: "a"}
		}},
		{"monotone-in-every-budget", "cp", func(o *spec.AdmissionRoundOutput) {
			o.Admitted = append(o.Admitted, spec.AdmittedReq{RID: "zz"}, spec.AdmittedReq{RID: "zz"})
		}},
	}
	props := equiv.AdmissionProps()
	for name, out := range good {
		for _, p := range props {
			if err := p.Holds(spec.DefaultLimits(), inputs[name], out); err != nil {
				t.Errorf("%s fails on ref's %s round: %v", p.Name, name, err)
			}
		}
	}
	covered := map[string]bool{}
	for _, b := range broken {
		out := clone(good[b.on])
		b.brk(&out)
		if propHolds(t, props, b.prop, inputs[b.on], out) == nil {
			t.Errorf("%s holds on a %s round broken for it", b.prop, b.on)
		}
		covered[b.prop] = true
	}
	for _, p := range props {
		if !covered[p.Name] {
			t.Errorf("property %s has no broken-result case", p.Name)
		}
	}
}
