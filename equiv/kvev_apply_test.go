package equiv

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// kvevTwinIndexes are both twins' index constructors, as the server picks
// them (catalog.KVEvIndex).
func kvevTwinIndexes(t *testing.T) map[catalog.Impl]spec.NewKVEvIndexFunc {
	t.Helper()
	out := map[catalog.Impl]spec.NewKVEvIndexFunc{}
	for _, impl := range []catalog.Impl{catalog.Ref, catalog.Fast} {
		f, err := catalog.KVEvIndex(impl)
		if err != nil {
			t.Fatal(err)
		}
		out[impl] = f
	}
	return out
}

// kvBudgetRefusal is the error entry A9 words for a batch at seq whose
// engine source/rank is past stream's share of share engines, written out
// by hand from the spec rather than taken from ref.
func kvBudgetRefusal(seq uint64, stream, source string, rank int64, value, bound string) spec.KVEvEventError {
	return spec.KVEvEventError{Seq: seq, Event: -1, Engine: &spec.KVEvEngineKey{Source: source, DPRank: rank},
		Error: spec.ErrorObject{Code: "engine_budget", Field: "engine", Value: value, Bound: bound,
			Message: "engine = " + value + ": want " + bound + " (a stream feeds at most max_engines_per_stream engines)"}}
}

// TestKVEvEngineShareCasesGiveTheSpecsNumbersOnBothTwins pins §2.10 A2,
// A5 and A9 on both twins with outcomes worked by hand from the spec, not
// generated from ref: max_engines 4 over two streams is a share of
// floor(4 / 2) = 2 each, so the first stream's ranks 2 and 3 and the
// second's rank 2 are refused for their engine — counted in
// engines_refused, never in decode_errors — while the second stream still
// gets its two engines (a shared cap of 4 gave the first stream all four);
// and a share of 1 is given back by the stream's restart.
func TestKVEvEngineShareCasesGiveTheSpecsNumbersOnBothTwins(t *testing.T) {
	lim := spec.DefaultLimits()
	sp := KVEvApply()
	caseIn := func(name string) spec.KVEvApplyInput {
		for _, c := range sp.Boundary {
			if c.Name == name {
				return c.In
			}
		}
		t.Fatalf("no boundary case %q", name)
		return spec.KVEvApplyInput{}
	}
	const v, s = "vllm-0", "sgl-0"
	share2 := func(stream string) string {
		return "at most 2 engines fed by stream " + stream + " (max_engines_per_stream)"
	}
	for impl, newIndex := range kvevTwinIndexes(t) {
		out, err := ref.RunKVEvApply(lim, caseIn(kvCaseFairShare), newIndex)
		if err != nil {
			t.Fatalf("%s: %v", impl, err)
		}
		wantErrors := [][]spec.KVEvEventError{
			nil, nil,
			{kvBudgetRefusal(2, v, v, 2, v+"/2", share2(v))},
			{kvBudgetRefusal(3, v, v, 3, v+"/3", share2(v))},
			nil, nil,
			{kvBudgetRefusal(2, s, s, 2, s+"/2", share2(s))},
			nil,
		}
		for i, want := range wantErrors {
			if d := cmp.Diff(want, out.Trace[i].Errors); d != "" {
				t.Errorf("%s fair share, step %d errors (-want +got):\n%s", impl, i, d)
			}
		}
		two := func(src string) []spec.KVEvEngineKey {
			return []spec.KVEvEngineKey{{Source: src}, {Source: src, DPRank: 1}}
		}
		for i, want := range []struct {
			engines                      []spec.KVEvEngineKey
			batches, refused, staleSince uint64
		}{{two(v), 4, 2, 2}, {two(s), 3, 1, 2}} {
			st := out.State.Streams[i]
			c := st.Counters
			if !cmp.Equal(st.Engines, want.engines) || c.Batches != want.batches || c.EnginesRefused != want.refused || c.DecodeErrors != 0 ||
				st.StaleSince == nil || *st.StaleSince != want.staleSince {
				t.Errorf("%s fair share, stream %s: engines %v, stale since %v, counters %+v; want %v, %d batches, %d refused, none a decode error, stale since %d",
					impl, st.Name, st.Engines, st.StaleSince, c, want.engines, want.batches, want.refused, want.staleSince)
			}
		}
		var scored []spec.KVEvScore
		for _, e := range []spec.KVEvEngineKey{{Source: s}, {Source: s, DPRank: 1}, {Source: v}, {Source: v, DPRank: 1}} {
			scored = append(scored, spec.KVEvScore{Source: e.Source, DPRank: e.DPRank, Blocks: 1, Tokens: 2, PageSize: 2, Stale: true})
		}
		if d := cmp.Diff(scored, out.Trace[7].Scores); d != "" {
			t.Errorf("%s fair share, the score (-want +got):\n%s", impl, d)
		}

		out, err = ref.RunKVEvApply(lim, caseIn(kvCaseShareRestart), newIndex)
		if err != nil {
			t.Fatalf("%s: %v", impl, err)
		}
		want := []spec.KVEvEventError{kvBudgetRefusal(1, v, v, 1, v+"/1", "at most 1 engines fed by stream "+v+" (max_engines_per_stream)")}
		if d := cmp.Diff(want, out.Trace[1].Errors); d != "" {
			t.Errorf("%s share of 1, step 1 (-want +got):\n%s", impl, d)
		}
		if r := out.Trace[3]; len(r.Errors) != 0 || len(r.Applied) != 1 {
			t.Errorf("%s share of 1: rank 1 after the restart %+v; want it applied", impl, r)
		}
		st := out.State.Streams[0]
		if !cmp.Equal(st.Engines, []spec.KVEvEngineKey{{Source: v, DPRank: 1}}) || st.Counters.EnginesRefused != 1 || st.Counters.Restarts != 1 || st.StaleSince != nil {
			t.Errorf("%s share of 1: stream %+v; want engine %s/1 alone, 1 refusal, 1 restart, not stale", impl, st, v)
		}
		if d := cmp.Diff([]spec.KVEvScore{{Source: v, DPRank: 1, Blocks: 1, Tokens: 2, PageSize: 2}}, out.Trace[4].Scores); d != "" {
			t.Errorf("%s share of 1, the score (-want +got):\n%s", impl, d)
		}
	}
}

// TestKVEvEngineShareConfigsAreRefusedAlikeNamingTheBound: a config whose
// share cannot hold (A5) is refused by both twins' constructors with the
// field, the value and the bound worked out by hand.
func TestKVEvEngineShareConfigsAreRefusedAlikeNamingTheBound(t *testing.T) {
	three := []spec.KVEvStream{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	for _, c := range []struct {
		cfg     spec.KVEvConfig
		streams []spec.KVEvStream
		field   string
		value   int
		bound   string
	}{
		{spec.KVEvConfig{MaxEngines: 1}, three[:2], "config.max_engines", 1, ">= 2, the number of streams: every stream's share is at least one engine"},
		{spec.KVEvConfig{MaxEngines: 2}, three, "config.max_engines", 2, ">= 3, the number of streams: every stream's share is at least one engine"},
		{spec.KVEvConfig{MaxEngines: 8, MaxEnginesPerStream: 3}, three, "config.max_engines_per_stream", 3, "<= 2 = max_engines 8 / 3 streams, so that every stream keeps its share"},
		{spec.KVEvConfig{MaxEnginesPerStream: 129}, three[:2], "config.max_engines_per_stream", 129, "<= 128 = max_engines 256 / 2 streams, so that every stream keeps its share"},
		{spec.KVEvConfig{MaxEnginesPerStream: 65537}, three[:1], "config.max_engines_per_stream", 65537, "in [0, 65536]"},
		{spec.KVEvConfig{MaxEnginesPerStream: -1}, three[:1], "config.max_engines_per_stream", -1, "in [0, 65536]"},
	} {
		for impl, newIndex := range kvevTwinIndexes(t) {
			_, err := newIndex(c.cfg, c.streams)
			ie, ok := spec.AsInputError(err)
			if !ok || !errors.Is(err, spec.ErrTooLarge) || ie.Field != c.field || ie.Value != c.value || ie.Bound != c.bound {
				t.Errorf("%s: %+v over %d streams: %v; want too_large %s = %d: %s", impl, c.cfg, len(c.streams), err, c.field, c.value, c.bound)
			}
		}
	}
	// At the bound: 8 engines over 3 streams with a share of 2 (6 in all).
	for impl, newIndex := range kvevTwinIndexes(t) {
		ix, err := newIndex(spec.KVEvConfig{MaxEngines: 8, MaxEnginesPerStream: 2}, three)
		if err != nil || ix == nil {
			t.Errorf("%s: a share of floor(8 / 3) = 2 was refused: %v", impl, err)
		}
	}
}
