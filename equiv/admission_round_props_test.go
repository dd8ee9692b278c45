package equiv_test

import (
	"slices"
	"testing"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/ref"
)

func ap64(v int64) *int64 { return &v }

func admissionRound(t *testing.T, in ref.AdmissionRoundInput) ref.AdmissionRoundOutput {
	t.Helper()
	out, err := ref.AdmissionRound(ref.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func clone(out ref.AdmissionRoundOutput) ref.AdmissionRoundOutput {
	out.Admitted = slices.Clone(out.Admitted)
	return out
}

// TestAdmissionPropertiesCatchWrongRounds: each A1.13 property holds on
// ref's rounds and fails on a result broken the way it guards against.
func TestAdmissionPropertiesCatchWrongRounds(t *testing.T) {
	// A CP round with running requests, an L1 lock, a load-back refused by
	// the cached gate, page 16 and a chunk budget.
	cp := ref.AdmissionRoundInput{
		Config: ref.AdderConfig{PageSize: 16, NewTokenRatio: 0.7, MaxPrefillTokens: 4096, ChunkedPrefillSize: ap64(3000), MaxRunningRequests: 10,
			CP: &ref.CPAdmission{MaxRequests: ap64(4), MaxTotalCachedTokens: ap64(600)}},
		Pool:    ref.PoolState{Available: 50000, Evictable: 2000},
		Running: []ref.RunningReq{{MaxNewTokens: 300, OutputLen: 10}},
		Queue: []ref.Request{
			{RID: "a", InputLen: 1000, MaxNewTokens: 50, L1Prefix: 320, L1PrefixEvictable: 160},
			{RID: "b", InputLen: 900, MaxNewTokens: 50},
			{RID: "c", InputLen: 900, MaxNewTokens: 50, HostHit: 400},
		},
	}
	// An inert CP round (no knobs, no chunking) that cuts nothing.
	inert := ref.AdmissionRoundInput{Config: ref.AdderConfig{PageSize: 16, NewTokenRatio: 0.5, MaxPrefillTokens: 2000, MaxRunningRequests: 10, CP: &ref.CPAdmission{}},
		Pool: ref.PoolState{Available: 50000}, Queue: []ref.Request{{RID: "a", InputLen: 1000}, {RID: "b", InputLen: 1000}}}
	// A chunked round: a is cut.
	chunk := ref.AdmissionRoundInput{Config: ref.AdderConfig{PageSize: 16, NewTokenRatio: 0.5, MaxPrefillTokens: 8000, ChunkedPrefillSize: ap64(1000), MaxRunningRequests: 10},
		Pool: ref.PoolState{Available: 50000}, Queue: []ref.Request{{RID: "x", InputLen: 100}, {RID: "a", InputLen: 5000}, {RID: "b", InputLen: 10}}}
	// A lone request over the cached limit, admitted alone.
	alone := ref.AdmissionRoundInput{Config: ref.AdderConfig{PageSize: 1, NewTokenRatio: 0.5, MaxPrefillTokens: 8000, MaxRunningRequests: 10,
		CP: &ref.CPAdmission{MaxTotalCachedTokens: ap64(10)}}, Pool: ref.PoolState{Available: 50000},
		Queue: []ref.Request{{RID: "a", InputLen: 1000, HostHit: 500}}}

	good := map[string]ref.AdmissionRoundOutput{"cp": admissionRound(t, cp), "inert": admissionRound(t, inert), "chunk": admissionRound(t, chunk), "alone": admissionRound(t, alone)}
	inputs := map[string]ref.AdmissionRoundInput{"cp": cp, "inert": inert, "chunk": chunk, "alone": alone}
	if g := good["cp"]; g.Stop.Detail != ref.DetailCPMaxCachedTokens || g.L2Loaded != 400 || len(g.Admitted) != 2 {
		t.Fatalf("cp fixture no longer exercises the refused load-back: %+v", g)
	}
	if g := good["chunk"]; len(g.Admitted) != 2 || !g.Admitted[1].Chunked {
		t.Fatalf("chunk fixture no longer cuts: %+v", g.Admitted)
	}
	broken := []struct {
		prop, on string
		brk      func(*ref.AdmissionRoundOutput)
	}{
		{"budget-conservation", "cp", func(o *ref.AdmissionRoundOutput) { o.RemInputTokens-- }},
		{"budget-conservation", "cp", func(o *ref.AdmissionRoundOutput) { o.RemTotalTokens += 0.5 }},
		{"failure-purity", "cp", func(o *ref.AdmissionRoundOutput) { o.Pool.Evictable -= 400 }},
		{"failure-purity", "cp", func(o *ref.AdmissionRoundOutput) { o.L2Loaded += 7 }},
		{"page-alignment", "cp", func(o *ref.AdmissionRoundOutput) { o.Admitted[0].ChargedExtend++ }},
		{"page-alignment", "chunk", func(o *ref.AdmissionRoundOutput) { o.Admitted[1].RunExtend -= 8 }},
		{"monotonic-budgets", "cp", func(o *ref.AdmissionRoundOutput) { o.RemInputTokens = 1 << 20 }},
		{"queue-order", "cp", func(o *ref.AdmissionRoundOutput) { o.Admitted[0], o.Admitted[1] = o.Admitted[1], o.Admitted[0] }},
		{"queue-order", "cp", func(o *ref.AdmissionRoundOutput) { o.Stop.RID = "b" }},
		{"at-most-one-chunk", "chunk", func(o *ref.AdmissionRoundOutput) { o.Admitted[0].Chunked = true }},
		{"at-most-one-chunk", "chunk", func(o *ref.AdmissionRoundOutput) {
			o.Admitted = append(o.Admitted, ref.AdmittedReq{RID: "b", RunExtend: 10, ChargedExtend: 16})
		}},
		{"cp-bounds", "cp", func(o *ref.AdmissionRoundOutput) { o.CumCached += 600 }},
		{"cp-bounds", "cp", func(o *ref.AdmissionRoundOutput) {
			o.Admitted = append(o.Admitted, ref.AdmittedReq{}, ref.AdmittedReq{}, ref.AdmittedReq{})
		}},
		{"inertness", "inert", func(o *ref.AdmissionRoundOutput) { o.Stop.Detail = ref.DetailBudgetInput }},
		{"lift-bound", "cp", func(o *ref.AdmissionRoundOutput) { o.EffectiveCPExtendLimit = ap64(4096) }},
		{"lift-bound", "cp", func(o *ref.AdmissionRoundOutput) { o.RemInputTokens += 100 }},
		{"single-request-fits-alone", "alone", func(o *ref.AdmissionRoundOutput) {
			o.Admitted, o.Stop = nil, ref.RoundStop{Result: ref.Other, Detail: ref.DetailCPMaxCachedTokens, RID: "a"}
		}},
		{"monotone-in-every-budget", "cp", func(o *ref.AdmissionRoundOutput) {
			o.Admitted = append(o.Admitted, ref.AdmittedReq{RID: "zz"}, ref.AdmittedReq{RID: "zz"})
		}},
	}
	props := equiv.AdmissionProps()
	for name, out := range good {
		for _, p := range props {
			if err := p.Holds(ref.DefaultLimits(), inputs[name], out); err != nil {
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
