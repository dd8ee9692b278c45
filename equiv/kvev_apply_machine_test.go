package equiv

import (
	"bytes"
	"encoding/hex"
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// kvMachine drives the reference and the fast event-fed index with one
// stream of observations drawn by the fleet generator (kvFleet): live
// messages in both encodings and all three hash shapes from several
// engines (vLLM runs, SGLang pages, interior evictions, duplicates,
// clears, tokenless CPU stores, groups, LoRA namespaces), gaps, restarts,
// malformed frames, replays answered in both layouts, failed or broken,
// and scores.
type kvMachine struct {
	f         *kvFleet
	ref, fast spec.KVEvIndex
	// ran is how many of the fleet's steps both indexes have run.
	ran int
	// trace is the fast index's result of each step run.
	trace []spec.KVEvStepResult
}

func newKVMachine(t *rapid.T) *kvMachine {
	f := newKVFleet(t)
	m := &kvMachine{f: f}
	var err error
	if m.ref, err = ref.NewKVEvIndex(f.in.Config, f.in.Streams); err != nil {
		t.Fatal(err)
	}
	if m.fast, err = fast.NewKVEvIndex(f.in.Config, f.in.Streams); err != nil {
		t.Fatal(err)
	}
	return m
}

// step draws the next observation(s) and runs each on both indexes,
// comparing every result and the whole state after every message.
func (m *kvMachine) step(t *rapid.T) {
	m.f.step()
	for ; m.ran < len(m.f.in.Steps); m.ran++ {
		s := m.f.in.Steps[m.ran]
		before := kvPools(m.fast.State())
		rr, fr := kvRunStep(m.ref, s), kvRunStep(m.fast, s)
		m.trace = append(m.trace, fr)
		rb, fb := catalog.Canonical(rr, nil), catalog.Canonical(fr, nil)
		if !bytes.Equal(rb, fb) {
			t.Fatalf("step %d %s %s: results differ (-ref +fast):\n%s\nframes: %x", m.ran, s.Op, s.Stream, cmp.Diff(string(rb), string(fb)), s.Frames)
		}
		m.compare(t)
		// §2.7 on the fast index itself: a batch refused whole (decode
		// error, engine owner or budget) changes no pool.
		if kvRefusedWhole(s, fr) {
			if after := kvPools(m.fast.State()); after != before {
				t.Fatalf("step %d: batch %d refused whole (%s), yet the pools changed", m.ran, fr.Applied[0], fr.Errors[0].Error.Code)
			}
		}
	}
}

// api calls the indexes the way a Go caller can but a script cannot
// (a script is refused whole first): a stream no one configured (live,
// replay, replay_failed, restart), a replay_failed reason outside the
// enum, score tokens outside [0, 2^32).
// Both must answer alike, and the state comparison shows they changed
// nothing.
func (m *kvMachine) api(t *rapid.T) {
	var rr, fr any
	switch rapid.IntRange(0, 5).Draw(t, "api") {
	case 0:
		fr0 := kvMsg("t", 0, kvE2).FrameBytes()
		rr, fr = m.ref.Live("no-such-stream", fr0), m.fast.Live("no-such-stream", fr0)
	case 4:
		fr0 := kvMsg("t", 0, kvE2).FrameBytes()
		rr, fr = m.ref.Replay("no-such-stream", fr0), m.fast.Replay("no-such-stream", fr0)
	case 5:
		rr, fr = m.ref.ReplayFailed("no-such-stream", "eof"), m.fast.ReplayFailed("no-such-stream", "eof")
	case 1:
		name := m.f.in.Streams[0].Name
		reason := rapid.SampledFrom([]string{"", "eof", "Timeout"}).Draw(t, "bad_reason")
		rr, fr = m.ref.ReplayFailed(name, reason), m.fast.ReplayFailed(name, reason)
	case 2:
		rr, fr = m.ref.Restart("nope"), m.fast.Restart("nope")
	default:
		q := spec.KVEvScoreQuery{Tokens: []int64{1, 2, rapid.SampledFrom([]int64{-1, 1 << 32, math.MaxInt64}).Draw(t, "wide_token")}}
		rs, rerr := m.ref.Score(q)
		fs, ferr := m.fast.Score(q)
		rr, fr = catalog.Canonical(rs, rerr), catalog.Canonical(fs, ferr)
		if rerr == nil {
			t.Fatalf("a score token outside [0, 2^32) was accepted: %v", rs)
		}
	}
	if rb, fb := catalog.Canonical(rr, nil), catalog.Canonical(fr, nil); !bytes.Equal(rb, fb) {
		t.Fatalf("API call: results differ (-ref +fast):\n%s", cmp.Diff(string(rb), string(fb)))
	}
}

// compare requires byte-equal canonical states, the invariants and A8's
// digest (the digest also as Digest() returns it).
func (m *kvMachine) compare(t *rapid.T) {
	rs, fs := m.ref.State(), m.fast.State()
	if rb, fb := catalog.Canonical(rs, nil), catalog.Canonical(fs, nil); !bytes.Equal(rb, fb) {
		t.Fatalf("after step %d the states differ (-ref +fast):\n%s", m.ran, cmp.Diff(rs, fs))
	}
	in := spec.KVEvApplyInput{Config: m.f.in.Config, Streams: m.f.in.Streams, Steps: m.f.in.Steps[:min(m.ran+1, len(m.f.in.Steps))]}
	if err := kvStateInvariants(spec.DefaultLimits(), in, spec.KVEvApplyOutput{State: fs, Trace: m.trace}); err != nil {
		t.Fatalf("after step %d: %v", m.ran, err)
	}
	if want := kvDigest(fs); fs.Digest != want {
		t.Fatalf("after step %d: digest %s, A8 gives %s", m.ran, fs.Digest, want)
	}
	for name, ix := range map[string]spec.KVEvIndex{"ref": m.ref, "fast": m.fast} {
		if d := ix.Digest(); hex.EncodeToString(d[:]) != fs.Digest {
			t.Fatalf("after step %d: %s's Digest() %x, its state says %s", m.ran, name, d, fs.Digest)
		}
	}
}

// TestKVEvTwinsAgreeAfterEveryMessage is the kvev state machine
// (docs/spec/kv-events.md §2-§3, §2.10): after every observation the
// reference and the fast index return the same step result and the same
// observable state (cursors, counters, engines, pools, pages, bindings,
// digest), every invariant holds, and the digest is A8's.
func TestKVEvTwinsAgreeAfterEveryMessage(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newKVMachine(t)
		t.Repeat(map[string]func(*rapid.T){
			"step": m.step,
			"api":  m.api,
			"":     func(t *rapid.T) { m.compare(t) },
		})
	})
}

// TestKVEvLongPromptScoresAgree scores prompts of thousands of pages
// against several engines that hold long prefixes of them — with holes,
// a diverging branch, another page size, a LoRA namespace — where the
// fast index computes the prompt's chain once per page size and (past
// 2^14 page steps) walks the engines on other goroutines while the chain
// is computed; ref and fast must give the same scores and refuse the same
// out-of-range token (§2.8, A4).
func TestKVEvLongPromptScoresAgree(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ps := rapid.SampledFrom([]int{1, 2}).Draw(t, "page_size")
		pages := rapid.IntRange(2000, 12000).Draw(t, "pages")
		prompt := make([]uint32, pages*ps+rapid.IntRange(0, ps-1).Draw(t, "tail"))
		for i := range prompt {
			prompt[i] = uint32(rapid.IntRange(0, 3).Draw(t, "token"))
		}
		n := rapid.IntRange(2, 4).Draw(t, "engines")
		var streams []spec.KVEvStream
		for i := range n {
			streams = append(streams, spec.KVEvStream{Name: kvStreamNames[i%3] + string(rune('a'+i))})
		}
		ixs := make([]spec.KVEvIndex, 2)
		var err error
		if ixs[0], err = ref.NewKVEvIndex(spec.KVEvConfig{}, streams); err != nil {
			t.Fatal(err)
		}
		if ixs[1], err = fast.NewKVEvIndex(spec.KVEvConfig{}, streams); err != nil {
			t.Fatal(err)
		}
		live := func(stream string, seq uint64, payload []byte) {
			fr := kvMsg("", seq, payload).FrameBytes()
			rb, fb := catalog.Canonical(ixs[0].Live(stream, fr), nil), catalog.Canonical(ixs[1].Live(stream, fr), nil)
			if !bytes.Equal(rb, fb) {
				t.Fatalf("live on %s: results differ (-ref +fast):\n%s", stream, cmp.Diff(string(rb), string(fb)))
			}
		}
		for i, s := range streams {
			eps := ps
			if i == n-1 && oneIn(t, 3, "other_page_size") {
				eps = 3 - ps
			}
			held := rapid.IntRange(0, len(prompt)/eps).Draw(t, "held_pages")
			toks := slices.Clone(prompt[:held*eps])
			if held > 0 && oneIn(t, 4, "diverge") {
				toks[rapid.IntRange(0, len(toks)-1).Draw(t, "diverge_at")] += 7
			}
			var ns *string
			if oneIn(t, 5, "lora") {
				ns = new("sql-lora")
			}
			hashes := make([]uint64, held)
			for j := range hashes {
				hashes[j] = uint64(i)<<40 | uint64(j+1)
			}
			ev := kvStX(hashes, 0, toks, eps, "GPU", 0, "", -1)
			if ns != nil {
				ev.elems[7] = mpS(*ns)
			}
			if held == 0 {
				ev = kvClr()
			}
			live(s.Name, 0, kvB(0, ev))
			if held > 2 && oneIn(t, 2, "hole") {
				at := rapid.IntRange(0, held-2).Draw(t, "hole_at")
				live(s.Name, 1, kvB(0, kvRm("GPU", hashes[at])))
			}
		}
		for range rapid.IntRange(1, 4).Draw(t, "scores") {
			q := spec.KVEvScoreQuery{Exact: rapid.Bool().Draw(t, "exact")}
			cut := rapid.IntRange(0, len(prompt)).Draw(t, "cut")
			for _, x := range prompt[:cut] {
				q.Tokens = append(q.Tokens, int64(x))
			}
			if cut > 0 && oneIn(t, 4, "alter") {
				q.Tokens[rapid.IntRange(0, cut-1).Draw(t, "alter_at")] += 9
			}
			if oneIn(t, 5, "score_lora") {
				q.Namespace = "sql-lora"
			}
			if cut > 0 && oneIn(t, 5, "bad_token") {
				q.Tokens[rapid.IntRange(0, cut-1).Draw(t, "bad_at")] = rapid.SampledFrom([]int64{-1, 1 << 32}).Draw(t, "bad")
			}
			rs, rerr := ixs[0].Score(q)
			fs, ferr := ixs[1].Score(q)
			if rb, fb := catalog.Canonical(rs, rerr), catalog.Canonical(fs, ferr); !bytes.Equal(rb, fb) {
				t.Fatalf("score of %d tokens (exact %t, ns %q): results differ (-ref +fast):\n%s", len(q.Tokens), q.Exact, q.Namespace, cmp.Diff(string(rb), string(fb)))
			}
		}
	})
}
