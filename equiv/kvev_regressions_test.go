package equiv

import (
	"slices"
	"testing"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestKVEvRegressionsShowTheirBug runs each kvev.apply regression case on
// the fixed index and on the index with its bug switched on, and checks
// the symptom its comment narrates — not only that the outputs differ.
func TestKVEvRegressionsShowTheirBug(t *testing.T) {
	lim := spec.DefaultLimits()
	run := func(name string, f fault.KVEv) (fixed, buggy spec.KVEvApplyOutput) {
		in, ok := KVEvApply().Regression(name)
		if !ok {
			t.Fatalf("no regression case %q", name)
		}
		var err error
		if fixed, err = ref.KVEvApply(lim, in); err != nil {
			t.Fatalf("%s: ref: %v", name, err)
		}
		newIndex := func(cfg spec.KVEvConfig, s []spec.KVEvStream) (spec.KVEvIndex, error) {
			return fault.Installed().NewKVEvIndex(cfg, s, f)
		}
		if buggy, err = ref.RunKVEvApply(lim, in, newIndex); err != nil {
			t.Fatalf("%s: buggy: %v", name, err)
		}
		return fixed, buggy
	}
	lastScore := func(o spec.KVEvApplyOutput) (blocks int, stale, found bool) {
		r := o.Trace[len(o.Trace)-1]
		if len(r.Scores) == 0 {
			return 0, false, false
		}
		return r.Scores[0].Blocks, r.Scores[0].Stale, true
	}
	for _, c := range []struct {
		name string
		f    fault.KVEv
		// fixed and buggy scores of the case's last step (-1: no engine
		// scored) and staleness.
		fixedBlocks, buggyBlocks int
		fixedStale, buggyStale   bool
	}{
		{"orphan-store-at-root", fault.KVEv{OrphanAtRoot: true}, -1, 1, false, false},
		{"gaps-only-logged", fault.KVEv{GapsOnlyLogged: true}, 1, 1, true, false},
		{"all-blocks-cleared-ignored", fault.KVEv{ClearIgnored: true}, -1, 1, false, false},
		{"residency-as-set", fault.KVEv{CountsAsSet: true}, 1, -1, false, false},
		{"unsigned-hashes-only-index", fault.KVEv{UnsignedHashesOnly: true}, 1, -1, false, false},
		{"signed-hashes-only-index", fault.KVEv{SignedHashesOnly: true}, 2, -1, false, false},
	} {
		fixed, buggy := run(c.name, c.f)
		for _, side := range []struct {
			what   string
			out    spec.KVEvApplyOutput
			blocks int
			stale  bool
		}{{"fixed", fixed, c.fixedBlocks, c.fixedStale}, {"buggy", buggy, c.buggyBlocks, c.buggyStale}} {
			b, st, found := lastScore(side.out)
			if !found {
				b = -1
			}
			if b != side.blocks || (found && st != side.stale) {
				t.Errorf("%s (%s): the last score is %d blocks, stale %t; the narrative says %d, stale %t", c.name, side.what, b, st, side.blocks, side.stale)
			}
		}
	}
	// The orphan's engine is stale once fixed (§2.3 step 3) and fresh in the bug.
	fixed, buggy := run("orphan-store-at-root", fault.KVEv{OrphanAtRoot: true})
	if e := fixed.State.Engines; len(e) != 1 || !e[0].Stale || e[0].Counters.OrphanStores != 1 {
		t.Errorf("orphan-store-at-root fixed: engines %+v", e)
	}
	if e := buggy.State.Engines; len(e) != 1 || e[0].Stale {
		t.Errorf("orphan-store-at-root buggy: engines %+v", e)
	}
	// The replay request: [empty, start 0] fixed, the bare start in the bug.
	fixed, buggy = run("replay-without-delimiter", fault.KVEv{ReplayNoDelimiter: true})
	if rq := fixed.Trace[0].ReplayRequest; len(rq) != 2 || len(rq[0]) != 0 || len(rq[1]) != 8 {
		t.Errorf("replay-without-delimiter fixed: request %x", rq)
	}
	if rq := buggy.Trace[0].ReplayRequest; len(rq) != 1 || len(rq[0]) != 8 {
		t.Errorf("replay-without-delimiter buggy: request %x", rq)
	}
	// The gap: lost [1, 2) fixed; the bug reports nothing stale.
	fixed, _ = run("gaps-only-logged", fault.KVEv{GapsOnlyLogged: true})
	if l := fixed.Trace[1].Lost; len(l) != 1 || l[0] != (spec.KVEvGap{From: 1, To: 2}) {
		t.Errorf("gaps-only-logged fixed: lost %v", l)
	}
}

// TestKVEvDecodedStringsAreValidUTF8 is A6 for the strings a message
// carries besides its topic: an unknown tag, medium, lora_name,
// kv_cache_spec_kind and a duplicate key's reported value come out of both
// decoders with each invalid sequence replaced by U+FFFD. Raw bytes there
// made the server's JSON differ from the canonical encoding (one encoder
// escapes the replacement, the other writes it), so an exact-mode audit of
// `kvtwin serve` saw different bytes for the same value.
func TestKVEvDecodedStringsAreValidUTF8(t *testing.T) {
	cases := map[string]spec.KVEvDecodeInput{}
	for _, c := range kvDecodeBoundary() {
		if c.Name == "non-utf8-strings" || c.Name == "event-map-duplicate-non-utf8-key" {
			cases[c.Name] = c.In
		}
	}
	if len(cases) != 2 {
		t.Fatalf("boundary cases missing: %d", len(cases))
	}
	twins := map[string]func(spec.Limits, spec.KVEvDecodeInput) (spec.KVMessage, error){
		"ref": ref.KVEvDecode, "fast": fast.KVEvDecode,
	}
	for name, decode := range twins {
		m, err := decode(spec.DefaultLimits(), cases["non-utf8-strings"])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		evs := m.Batch.Events
		if len(evs) != 3 {
			t.Fatalf("%s: %d events", name, len(evs))
		}
		got := []string{evs[0].Tag, *evs[1].Medium, *evs[1].LoraName, *evs[1].KVCacheSpecKind, *evs[2].Medium}
		want := []string{"Heart\uFFFDbeat", "G\uFFFDPU", "sql-\uFFFDlora", "full\uFFFDattention", "\uFFFD"}
		if !slices.Equal(got, want) {
			t.Errorf("%s: strings %q, want %q", name, got, want)
		}
		_, err = decode(spec.DefaultLimits(), cases["event-map-duplicate-non-utf8-key"])
		ie, ok := spec.AsInputError(err)
		if !ok || ie.Value != "\uFFFDk" {
			t.Errorf("%s: duplicate key error %v, want the key reported as %q", name, err, "\uFFFDk")
		}
	}
}
