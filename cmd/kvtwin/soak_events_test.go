package main

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/server"
	"github.com/kvtwin/kvtwin/spec"
)

// The soak's publishers are judged by the reference index here: their
// well-behaved batches must be exactly what the spec accepts and score what
// their models say, and every hostile message must be refused. Without
// that, a soak that passes could be a soak whose traffic the server never
// really applied, and one that fails could be failing on its own batches.

// soakPython is the interpreter the publisher needs; a test skips without
// zmq and msgpack unless KVTWIN_REQUIRE_PYZMQ is set (CI sets it).
func soakPython(t *testing.T) string {
	t.Helper()
	if _, err := startPublisherProbe(); err != nil {
		if os.Getenv("KVTWIN_REQUIRE_PYZMQ") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return defaultPython
}

// startPublisherProbe checks that the publisher can run at all.
func startPublisherProbe() (string, error) {
	script, err := findRepoFile(publisherScript, "")
	if err != nil {
		return "", err
	}
	p, err := startPublisher(defaultPython, script)
	if err != nil {
		return "", err
	}
	return script, p.close()
}

// testPublisher starts the real script with the role's topic.
func testPublisher(t *testing.T, role sourceRole) *pyPublisher {
	t.Helper()
	soakPython(t)
	script, err := findRepoFile(publisherScript, "")
	if err != nil {
		t.Fatal(err)
	}
	p, err := startPublisher(defaultPython, script, "--topic", role.topic())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.close(); err != nil {
			t.Errorf("publisher close: %v", err)
		}
	})
	return p
}

// emitted sends cmd (an emit) and returns the live frames the script
// published: [topic, seq, payload] from its answer.
func emitted(t *testing.T, p *pyPublisher, topic string, cmd pubCommand) [][]byte {
	t.Helper()
	if cmd["op"] != "emit" {
		t.Fatalf("command %v is not an emit", cmd["op"])
	}
	var ans struct {
		Seq     uint64
		Payload string
	}
	if err := p.do(cmd, &ans); err != nil {
		t.Fatal(err)
	}
	payload, err := hex.DecodeString(ans.Payload)
	if err != nil {
		t.Fatal(err)
	}
	return [][]byte{[]byte(topic), binary.BigEndian.AppendUint64(nil, ans.Seq), payload}
}

// referenceIndex is the reference event-fed index over the soak's
// sources; the hostile one has no replay endpoint, so a gap is lost at once.
func referenceIndex(t *testing.T) spec.KVEvIndex {
	t.Helper()
	var streams []spec.KVEvStream
	for role := range numRoles {
		streams = append(streams, spec.KVEvStream{Name: role.name(), Replay: role.wellBehaved()})
	}
	ix, err := ref.NewKVEvIndex(spec.KVEvConfig{}, streams)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// mustApply feeds a live message and requires it applied without error.
func mustApply(t *testing.T, ix spec.KVEvIndex, stream string, frames [][]byte) {
	t.Helper()
	res := ix.Live(stream, frames)
	if res.Error != nil || len(res.Errors) > 0 || len(res.Applied) != 1 || len(res.Lost) > 0 {
		t.Fatalf("seq %x not applied cleanly: %+v", frames[1], res)
	}
}

// residentPrefix is the model's score of prompt: its leading blocks with a
// residency count above zero.
func (e *churnEngine) residentPrefix(prompt []int64) int {
	n := 0
	for _, h := range chainHashes(prompt, churnPage) {
		if e.counts[h] == 0 {
			break
		}
		n++
	}
	return n
}

// TestSoakChurnBatchesApplyCleanlyAndScoreAsTheirModelSays runs 300 churn
// batches (every encoding, LoRA, evictions of interior runs, a clear)
// through the real publisher into the reference index: none is refused, no
// store is an orphan and no removal unknown (the model only removes what
// it stored), and every engine scores random prompts exactly as the
// model's residency counts say.
func TestSoakChurnBatchesApplyCleanlyAndScoreAsTheirModelSays(t *testing.T) {
	p := testPublisher(t, roleChurn)
	ix := referenceIndex(t)
	c := newChurnWorkload(rand.New(rand.NewPCG(7, 8)), 4, false)
	batches := 300
	if raceEnabled {
		batches = 100 // the reference index is 5x slower under the detector
	}
	for range batches {
		mustApply(t, ix, roleChurn.name(), emitted(t, p, roleChurn.topic(), c.batch()))
	}
	cleared := c.engines[1] // a clear in the map form, then stores again
	mustApply(t, ix, roleChurn.name(), emitted(t, p, roleChurn.topic(), pubCommand{"op": "emit", "events": []pubEvent{cleared.clear()}, "rank": cleared.rank}))
	for range 8 {
		mustApply(t, ix, roleChurn.name(), emitted(t, p, roleChurn.topic(), c.batch()))
	}
	st := ix.State()
	if len(st.Engines) != 4 {
		t.Fatalf("%d engines, want the 4 ranks", len(st.Engines))
	}
	for _, e := range st.Engines {
		cnt := e.Counters
		if cnt.Stored == 0 || cnt.Removed == 0 || cnt.Refused != 0 || cnt.OrphanStores != 0 || cnt.UnknownRemovals != 0 || e.Stale {
			t.Errorf("engine %s/%d: counters %+v, stale %v; want stores and removals, nothing refused, orphaned or unknown", e.Source, e.DPRank, cnt, e.Stale)
		}
		if e.Tokens > 1<<20 {
			t.Errorf("engine %s/%d holds %d tokens: the churn is not bounded", e.Source, e.DPRank, e.Tokens)
		}
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for _, m := range c.engines {
		for range 25 {
			prompt := c.prompt()
			if rng.IntN(2) == 0 && len(m.runs) > 0 {
				prompt = c.bases[rng.IntN(len(c.bases))] // a base's blocks are often resident
			}
			scores, err := ix.Score(spec.KVEvScoreQuery{Tokens: prompt, Namespace: m.style.lora})
			if err != nil {
				t.Fatal(err)
			}
			got := -1
			for _, s := range scores {
				if s.DPRank == m.rank {
					got = s.Blocks
				}
			}
			if want := m.residentPrefix(prompt); got != want && (got != -1 || want != 0) {
				t.Fatalf("engine rank %d scores %d blocks of a %d-token prompt; its model holds %d", m.rank, got, len(prompt), want)
			}
		}
	}
}

// TestSoakPinnedBatchesScoreEveryPublishedBlock grows the pinned prompts
// (vLLM runs and SGLang pages) through the real publisher into the
// reference index: after every batch each prompt scores exactly its
// published blocks, and keeps doing so once they are all complete and
// re-stored.
func TestSoakPinnedBatchesScoreEveryPublishedBlock(t *testing.T) {
	p := testPublisher(t, rolePinned)
	ix := referenceIndex(t)
	set := newPinnedSet(rolePinned.name(), rand.New(rand.NewPCG(11, 12)))
	w := &pinnedWorkload{rng: rand.New(rand.NewPCG(13, 14)), set: set}
	total := 0
	for _, pr := range set.prompts {
		total += pr.blocks()
	}
	for i := 0; i < total/3+40; i++ {
		cmd := w.batch()
		cmd["op"] = "emit" // lost batches are replay's business, tested by the soak itself
		mustApply(t, ix, rolePinned.name(), emitted(t, p, rolePinned.topic(), cmd))
		if i%25 == 0 {
			checkPinnedScores(t, ix, set)
		}
	}
	checkPinnedScores(t, ix, set)
	for _, pr := range set.prompts {
		if int(pr.published.Load()) != pr.blocks() {
			t.Fatalf("prompt %d: %d of %d blocks published after every batch; the workload stalls", pr.id, pr.published.Load(), pr.blocks())
		}
	}
}

func checkPinnedScores(t *testing.T, ix spec.KVEvIndex, set *pinnedSet) {
	t.Helper()
	for _, pr := range set.prompts {
		scores, err := ix.Score(spec.KVEvScoreQuery{Tokens: pr.tokens})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range scores {
			want := 0
			if s.DPRank == pr.engine.rank {
				want = int(pr.published.Load())
			}
			if s.Blocks != want || s.PageSize != int64(pr.engine.pageSize) && s.DPRank == pr.engine.rank {
				t.Fatalf("prompt %d: engine %d scores %d blocks (page %d); want %d", pr.id, s.DPRank, s.Blocks, s.PageSize, want)
			}
		}
	}
}

// expandFrames builds the bytes of a "frames" command's list as the
// script does: hex, or [hex, n] pieces.
func expandFrames(t *testing.T, sp []any) [][]byte {
	t.Helper()
	var out [][]byte
	for _, f := range sp {
		var b []byte
		switch f := f.(type) {
		case string:
			b = mustHex(t, f)
		case []any:
			for _, piece := range f {
				pc := piece.([]any)
				b = append(b, []byte(strings.Repeat(string(mustHex(t, pc[0].(string))), pc[1].(int)))...)
			}
		default:
			t.Fatalf("frame %T", f)
		}
		out = append(out, b)
	}
	return out
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSoakHostileMessagesAreRefusedByTheReference sends every hostile kind
// (both shapes of those that alternate) to the reference index after a
// benign batch: malformed frames are counted and leave the cursor alone,
// bad payloads are decode errors, a huge event count is applied whole or
// refused whole, a seq jump loses about 2^63 batches, and
// a store under the pinned source's topic is refused as that source's
// engine, whose score does not move.
func TestSoakHostileMessagesAreRefusedByTheReference(t *testing.T) {
	set := newPinnedSet(rolePinned.name(), rand.New(rand.NewPCG(1, 2)))
	owner := set.prompts[0]
	h := &hostileEvents{topic: roleHostile.topic(), ownerTopic: rolePinned.topic(), owner: owner, hugeEvents: 5000, rng: rand.New(rand.NewPCG(3, 4))}
	for kind := range numEvHostile {
		for shape := range 2 {
			t.Run(fmt.Sprintf("%s/%d", kind, shape), func(t *testing.T) {
				ix := referenceIndex(t)
				pinnedFrames := [][]byte{[]byte(rolePinned.topic()), make([]byte, 8), ownerBlockBatch(t, owner)}
				mustApply(t, ix, rolePinned.name(), pinnedFrames)
				benign := [][]byte{[]byte(roleHostile.topic()), make([]byte, 8), emptyBatch()}
				mustApply(t, ix, roleHostile.name(), benign)
				sp, err := h.frames(kind, 1)
				if err != nil {
					t.Fatal(err)
				}
				res := ix.Live(roleHostile.name(), expandFrames(t, sp))
				checkRefused(t, ix, kind, res)
				if got := pinnedBlocks(t, ix, owner); got != 1 {
					t.Errorf("the pinned engine scores %d blocks after %s, want its 1", got, kind)
				}
			})
		}
	}
}

// ownerBlockBatch is a batch storing the owner prompt's first block on its
// rank, encoded like the hostile owner message (so the test needs no Python).
func ownerBlockBatch(t *testing.T, p *pinnedPrompt) []byte {
	t.Helper()
	one := &pinnedPrompt{engine: p.engine, tokens: p.tokens[:p.engine.pageSize], hashes: p.hashes[:1]}
	b, err := (&hostileEvents{owner: one}).ownerPayload()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func pinnedBlocks(t *testing.T, ix spec.KVEvIndex, p *pinnedPrompt) int {
	t.Helper()
	scores, err := ix.Score(spec.KVEvScoreQuery{Tokens: p.tokens})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range scores {
		if s.Source == rolePinned.name() && s.DPRank == p.engine.rank {
			return s.Blocks
		}
	}
	return 0
}

// checkRefused asserts what the spec does with one hostile kind.
func checkRefused(t *testing.T, ix spec.KVEvIndex, kind evHostileKind, res spec.KVEvStepResult) {
	t.Helper()
	var stream spec.KVEvStreamState
	for _, s := range ix.State().Streams {
		if s.Name == roleHostile.name() {
			stream = s
		}
	}
	c := stream.Counters
	switch kind {
	case evFrameCount, evSeqWidth:
		if res.Error == nil || c.Malformed != 1 || stream.Next != 1 {
			t.Errorf("%s: step error %v, malformed %d, next %d; want refused, counted, cursor unmoved", kind, res.Error, c.Malformed, stream.Next)
		}
	case evHugeCount:
		// Valid under spec §1.4 rule 2 (unknown tags are skipped and
		// counted) until a per-message event bound refuses it whole
		// (issue 27, part 1); what it must never do is half-apply.
		unknown := uint64(0)
		for _, e := range ix.State().Engines {
			if e.Source == roleHostile.name() {
				unknown += e.Counters.UnknownEvents
			}
		}
		refused := len(res.Errors) == 1 && res.Errors[0].Event == -1 && c.DecodeErrors == 1
		if !refused && (len(res.Errors) != 0 || unknown != 5000) {
			t.Errorf("%s: errors %+v, %d unknown events counted; want all 5000 counted or the batch refused whole", kind, res.Errors, unknown)
		}
	case evRankCycle:
		// A new engine while the source is within its share (A2, A5),
		// refused for its engine past it; never a decode error.
		if res.Error != nil || c.DecodeErrors != 0 || len(res.Errors) != int(c.EnginesRefused) {
			t.Errorf("%s: errors %+v, decode errors %d, engines refused %d; want applied or refused for its engine", kind, res.Errors, c.DecodeErrors, c.EnginesRefused)
		}
	case evOwner:
		// Refused whole for its engine (spec A2), which is not a decode
		// error: the payload decoded.
		if len(res.Errors) != 1 || res.Errors[0].Event != -1 || c.EnginesRefused != 1 || c.DecodeErrors != 0 {
			t.Errorf("%s: errors %+v, engines refused %d, decode errors %d; want the whole batch refused for its engine", kind, res.Errors, c.EnginesRefused, c.DecodeErrors)
		}
	case evSeqJump:
		if len(res.Lost) == 0 || c.GapBatchesLost < 1<<62 {
			t.Errorf("%s: lost %+v, %d batches lost; want a gap of about 2^63", kind, res.Lost, c.GapBatchesLost)
		}
	default:
		if len(res.Errors) != 1 || res.Errors[0].Event != -1 || c.DecodeErrors != 1 {
			t.Errorf("%s: errors %+v, decode errors %d; want the whole batch refused", kind, res.Errors, c.DecodeErrors)
		} else {
			t.Logf("%s: %s", kind, res.Errors[0].Error.Code)
		}
	}
}

// TestSoakScoreCheckCatchesEveryImpossibleScore: a score above what was
// published, one that fell, another engine scoring a pinned prompt, and a
// wrong page size are each reported; sane answers are not.
func TestSoakScoreCheckCatchesEveryImpossibleScore(t *testing.T) {
	set := newPinnedSet(rolePinned.name(), rand.New(rand.NewPCG(5, 6)))
	p := set.prompts[0] // rank 0, page 16
	p.published.Store(10)
	body := func(engines ...spec.KVEvScore) []byte {
		b, err := json.Marshal(server.ScoreResult{Engines: engines})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	mine := func(blocks int) spec.KVEvScore {
		return spec.KVEvScore{Source: set.source, DPRank: 0, Blocks: blocks, Tokens: int64(blocks * 16), PageSize: 16}
	}
	w := &soakWorker{}
	for _, c := range []struct {
		name string
		body []byte
		bad  string
	}{
		{"no engine yet", body(), ""},
		{"some blocks", body(mine(4), spec.KVEvScore{Source: "soak-churn", Blocks: 0, PageSize: 16}), ""},
		{"fell", body(mine(3)), "fell from 4 to 3"},
		{"all published", body(mine(10)), ""},
		{"more than published", body(mine(11)), "only 10 were published"},
		{"another engine", body(mine(10), spec.KVEvScore{Source: "soak-churn", DPRank: 2, Blocks: 1, Tokens: 16, PageSize: 16}), "never sent"},
		{"page size", body(spec.KVEvScore{Source: set.source, Blocks: 10, Tokens: 320, PageSize: 32}), "page size"},
		{"not JSON", []byte("{"), "not a ScoreResult"},
	} {
		got := set.checkScore(w, p, c.body)
		if c.bad == "" && got != "" || c.bad != "" && !strings.Contains(got, c.bad) {
			t.Errorf("%s: %q, want %q", c.name, got, c.bad)
		}
	}
}

// TestSoakStallNeedsAWholeWindowWithBatchesSent: nothing applied over the
// window fails only when batches were sent in its first half.
func TestSoakStallNeedsAWholeWindowWithBatchesSent(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int, applied uint64, sent int64) appliedSample {
		return appliedSample{at: t0.Add(time.Duration(s) * time.Second), applied: applied, sent: sent}
	}
	const window = 10 * time.Second
	for _, c := range []struct {
		name  string
		h     []appliedSample
		stall bool
	}{
		{"one sample", []appliedSample{at(0, 5, 5)}, false},
		{"short window", []appliedSample{at(0, 5, 5), at(5, 5, 9), at(9, 5, 12)}, false},
		{"grew", []appliedSample{at(0, 5, 5), at(5, 7, 9), at(10, 8, 12)}, false},
		{"idle publisher", []appliedSample{at(0, 5, 5), at(5, 5, 5), at(10, 5, 5)}, false},
		{"sent only at the end", []appliedSample{at(0, 5, 5), at(5, 5, 5), at(10, 5, 9)}, false},
		{"stuck", []appliedSample{at(0, 5, 5), at(5, 5, 9), at(10, 5, 12)}, true},
	} {
		if got := stallOf(c.h, window) != ""; got != c.stall {
			t.Errorf("%s: stall %v, want %v", c.name, got, c.stall)
		}
	}
}

// TestSoakFindsItsFilesAndQuotesTheirPaths: the script and the example are
// found from a test's working directory (cmd/kvtwin) and from a binary's
// directory; a missing file is an error naming it; odd paths are quoted.
func TestSoakFindsItsFilesAndQuotesTheirPaths(t *testing.T) {
	for _, rel := range []string{publisherScript, auditExample} {
		p, err := findRepoFile(rel, "")
		if err != nil || !strings.HasSuffix(p, rel) {
			t.Errorf("%s: %q %v", rel, p, err)
		}
	}
	root, _ := filepath.Abs("../..")
	t.Chdir(t.TempDir())
	if p, err := findRepoFile(publisherScript, filepath.Join(root, "bin", "kvtwin")); err != nil || p != filepath.Join(root, publisherScript) {
		t.Errorf("from bin/kvtwin: %q %v", p, err)
	}
	if _, err := findRepoFile("scripts/no-such.py", ""); err == nil || !strings.Contains(err.Error(), "scripts/no-such.py") {
		t.Errorf("missing file: %v", err)
	}
	for in, want := range map[string]string{"/usr/bin/python3": "/usr/bin/python3", "/a b/x.py": "'/a b/x.py'", "/it's": `'/it'\''s'`} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestSoakPublisherDriverReportsWhatWentWrong: a refused command, a script
// that does not exist and a process that cannot start are errors, never
// hangs.
func TestSoakPublisherDriverReportsWhatWentWrong(t *testing.T) {
	p := testPublisher(t, roleHostile)
	if err := p.do(pubCommand{"op": "no-such-op"}, nil); err == nil || !strings.Contains(err.Error(), "unknown op") {
		t.Errorf("unknown op: %v", err)
	}
	if err := p.do(pubCommand{"op": "frames", "frames": []any{"6b76"}}, nil); err != nil {
		t.Errorf("frames: %v", err)
	}
	if _, err := startPublisher(defaultPython, "/no/such/script.py"); err == nil {
		t.Error("a missing script started")
	}
	if _, err := startPublisher("/no/such/python", "x.py"); err == nil {
		t.Error("a missing interpreter started")
	}
}

// TestSoakFailsAWellBehavedSourceThatStopsApplying feeds the watch three
// readings of /v1/events/sources ten seconds apart in which no source
// applies anything while every publisher sends: the churn and pinned
// sources fail the run, once each; the hostile one, whose cursor the soak
// throws about on purpose, does not; and the pinned engines' appearance
// lets the hostile publisher send its owner message.
func TestSoakFailsAWellBehavedSourceThatStopsApplying(t *testing.T) {
	ev := &soakEvents{cfg: eventsConfig{stall: 10 * time.Second}}
	for role := range numRoles {
		ev.sources[role] = &eventSource{role: role}
	}
	r := &soakRun{events: ev, start: time.Now()}
	reading := func(batches uint64) *server.EventSources {
		all := &server.EventSources{}
		for role := range numRoles {
			src := server.EventSource{Name: role.name()}
			src.Stream.Counters.Batches = batches
			if role == rolePinned {
				src.Engines = []server.EventEngine{{}}
			}
			all.Sources = append(all.Sources, src)
		}
		return all
	}
	t0 := time.Now()
	for i := range 4 {
		for _, s := range ev.sources {
			s.emitted.Add(50)
		}
		r.observeSources(reading(7), t0.Add(time.Duration(i)*5*time.Second))
	}
	if len(r.failures) != 2 || !strings.Contains(r.failures[0], "soak-churn stopped applying") || !strings.Contains(r.failures[1], "soak-pinned stopped applying") {
		t.Errorf("failures %q: want churn and pinned, once each", r.failures)
	}
	if !ev.ownerReady.Load() {
		t.Error("the pinned engines appeared, yet the owner message is still held back")
	}

	r2 := &soakRun{events: ev, start: time.Now()}
	ev.watch = eventsWatch{}
	for i := range 4 {
		r2.observeSources(reading(uint64(7+i)), t0.Add(time.Duration(i)*5*time.Second))
	}
	if len(r2.failures) != 0 {
		t.Errorf("sources that keep applying failed the run: %q", r2.failures)
	}
}

// TestSoakRankCyclingSourceKeepsToItsEngineShare: the hostile source's
// rank-cycle bursts create engines up to its share of the reference index
// (256 engines over the soak's three sources: 85, its benign rank-0 engine
// included) and are refused for their engine past it, never as decode
// errors, while the pinned source keeps its engine and its score.
func TestSoakRankCyclingSourceKeepsToItsEngineShare(t *testing.T) {
	set := newPinnedSet(rolePinned.name(), rand.New(rand.NewPCG(7, 8)))
	owner := set.prompts[0]
	ix := referenceIndex(t)
	mustApply(t, ix, rolePinned.name(), [][]byte{[]byte(rolePinned.topic()), make([]byte, 8), ownerBlockBatch(t, owner)})
	mustApply(t, ix, roleHostile.name(), [][]byte{[]byte(roleHostile.topic()), make([]byte, 8), emptyBatch()})
	h := &hostileEvents{topic: roleHostile.topic(), rng: rand.New(rand.NewPCG(9, 10))}
	const bursts = 2
	for i := range bursts * rankBurst {
		sp, err := h.frames(evRankCycle, uint64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		ix.Live(roleHostile.name(), expandFrames(t, sp))
	}
	const share = 256 / int(numRoles)
	for _, s := range ix.State().Streams {
		c := s.Counters
		switch s.Name {
		case roleHostile.name():
			if len(s.Engines) != share || c.EnginesRefused != uint64(bursts*rankBurst+1-share) || c.DecodeErrors != 0 {
				t.Errorf("hostile source: %d engines, %d refused for their engine, %d decode errors; want %d, %d, 0",
					len(s.Engines), c.EnginesRefused, c.DecodeErrors, share, bursts*rankBurst+1-share)
			}
		default:
			if c.EnginesRefused != 0 {
				t.Errorf("source %s: %d refused for their engine, want 0", s.Name, c.EnginesRefused)
			}
		}
	}
	if got := pinnedBlocks(t, ix, owner); got != 1 {
		t.Errorf("the pinned engine scores %d blocks after the rank cycling, want its 1", got)
	}
}
