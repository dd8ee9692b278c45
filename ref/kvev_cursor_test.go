package ref

import (
	"encoding/json"
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kvtwin/kvtwin/spec"
)

// Cursor tests (docs/spec/kv-events.md §3, §2.10 A3, A7): every step's
// whole result is compared, so the trace a script would record is pinned.

func rep2(seq uint64, payload []byte) [][]byte { return [][]byte{{}, seqFrame(seq), payload} }

func rep3(topic string, seq uint64, payload []byte) [][]byte {
	return [][]byte{{}, []byte(topic), seqFrame(seq), payload}
}

var (
	sentinel2 = [][]byte{{}, seqFrame(math.MaxUint64), {}}
	sentinel3 = [][]byte{{}, {}, seqFrame(math.MaxUint64), {}}
)

func replayReq(start uint64) []spec.HexBytes { return []spec.HexBytes{{}, seqFrame(start)} }

// step runs one cursor step, checks the index's invariants and compares
// the whole result with want.
func step(t *testing.T, ix *refKVEvIndex, got spec.KVEvStepResult, want spec.KVEvStepResult) {
	t.Helper()
	checkKVEvInvariants(t, ix)
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("step result (-want +got):\n%s", d)
	}
}

func cursorOf(t *testing.T, ix *refKVEvIndex, stream string) spec.KVEvStreamState {
	t.Helper()
	for _, s := range ix.State().Streams {
		if s.Name == stream {
			return s
		}
	}
	t.Fatalf("no stream %s", stream)
	return spec.KVEvStreamState{}
}

// checkCursor compares the cursor fields of a stream's state.
func checkCursor(t *testing.T, ix *refKVEvIndex, stream string, known bool, next, lastLive uint64, replaying bool, target uint64, held int) {
	t.Helper()
	s := cursorOf(t, ix, stream)
	type cur struct {
		Known          bool
		Next, LastLive uint64
		Replaying      bool
		Target         uint64
		Held           int
	}
	got := cur{s.Known, s.Next, s.LastLive, s.Replaying, s.ReplayTarget, s.Held}
	want := cur{known, next, lastLive, replaying, target, held}
	if got != want {
		t.Fatalf("cursor %+v\nwant   %+v", got, want)
	}
}

func emptyBatch(t *testing.T) []byte { return batchBytes(t, nil) }

// storeBatch stores one page [seq, seq] with hash seq+1, so every applied
// batch leaves a trace in the pool.
func storeBatch(t *testing.T, seq uint64) []byte {
	return batchBytes(t, nil, evStored([]uint64{seq + 1}, nil, []uint32{uint32(seq), uint32(seq)}, 2))
}

func TestKVEvCursorSection54WithReplay(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "s", Replay: true})
	live := func(seq uint64) spec.KVEvStepResult { return ix.Live("s", liveFrames("", seq, storeBatch(t, seq))) }
	// 0,1,2 applied → next=3.
	for s := uint64(0); s < 3; s++ {
		step(t, ix, live(s), spec.KVEvStepResult{Op: spec.KVStepLive, Applied: []uint64{s}})
	}
	checkCursor(t, ix, "s", true, 3, 2, false, 0, 0)
	// Live 5 → replay from 3.
	step(t, ix, live(5), spec.KVEvStepResult{Op: spec.KVStepLive, Held: 1, ReplayRequest: replayReq(3)})
	checkCursor(t, ix, "s", true, 3, 5, true, 5, 1)
	// Replay returns 3, 4, 5 (both layouts), then the sentinel.
	step(t, ix, ix.Replay("s", rep2(3, storeBatch(t, 3))), spec.KVEvStepResult{Op: spec.KVStepReplay, Applied: []uint64{3}, Held: 1})
	step(t, ix, ix.Replay("s", rep3("", 4, storeBatch(t, 4))), spec.KVEvStepResult{Op: spec.KVStepReplay, Applied: []uint64{4}, Held: 1})
	step(t, ix, ix.Replay("s", rep2(5, storeBatch(t, 5))), spec.KVEvStepResult{Op: spec.KVStepReplay, Applied: []uint64{5}, Held: 1})
	// The held live 5 is dropped as a duplicate → next=6.
	step(t, ix, ix.Replay("s", sentinel2), spec.KVEvStepResult{Op: spec.KVStepReplay, ReplayDone: true, Duplicates: []uint64{5}})
	checkCursor(t, ix, "s", true, 6, 5, false, 0, 0)
	s := cursorOf(t, ix, "s")
	want := spec.KVEvStreamCounters{Batches: 6, Duplicates: 1, ReplaysOK: 1}
	if s.Counters != want || s.StaleSince != nil || len(s.Engines) != 1 {
		t.Fatalf("stream %+v", s)
	}
	if e := engineState(t, ix, "s", 0); e.Stale || e.Tokens != 12 {
		t.Fatalf("engine %+v", e)
	}
	// Live 2 → restart: pools dropped, 2 is a first message → gap [0,2) →
	// replay from 0.
	step(t, ix, live(2), spec.KVEvStepResult{Op: spec.KVStepLive, Restart: true, Held: 1, ReplayRequest: replayReq(0)})
	checkCursor(t, ix, "s", true, 0, 2, true, 2, 1)
	if st := ix.State(); len(st.Engines) != 0 || st.Streams[0].Counters.Restarts != 1 {
		t.Fatalf("restart kept engines: %+v", st)
	}
}

func TestKVEvCursorSection54WithoutReplay(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "s"})
	for s := uint64(0); s < 3; s++ {
		step(t, ix, ix.Live("s", liveFrames("", s, storeBatch(t, s))), spec.KVEvStepResult{Op: spec.KVStepLive, Applied: []uint64{s}})
	}
	// Live 5 after next=3 → Stale=true, StaleSince=5, next=6.
	step(t, ix, ix.Live("s", liveFrames("", 5, storeBatch(t, 5))),
		spec.KVEvStepResult{Op: spec.KVStepLive, Applied: []uint64{5}, Lost: []spec.KVEvGap{{From: 3, To: 5}}})
	checkCursor(t, ix, "s", true, 6, 5, false, 0, 0)
	e := engineState(t, ix, "s", 0)
	if !e.Stale || e.StaleSince != 5 || e.Tokens != 8 {
		t.Fatalf("engine %+v", e)
	}
	s := cursorOf(t, ix, "s")
	if s.Counters.Gaps != 1 || s.Counters.GapBatchesLost != 2 || s.StaleSince == nil || *s.StaleSince != 5 {
		t.Fatalf("stream %+v", s)
	}
}

func TestKVEvCursorAFirstMessageAfterZeroIsAGapFromZero(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "r", Replay: true}, spec.KVEvStream{Name: "n"})
	step(t, ix, ix.Live("r", liveFrames("", 3, storeBatch(t, 3))), spec.KVEvStepResult{Op: spec.KVStepLive, Held: 1, ReplayRequest: replayReq(0)})
	checkCursor(t, ix, "r", true, 0, 3, true, 3, 1)
	for s := uint64(0); s < 4; s++ {
		step(t, ix, ix.Replay("r", rep2(s, storeBatch(t, s))), spec.KVEvStepResult{Op: spec.KVStepReplay, Applied: []uint64{s}, Held: 1})
	}
	step(t, ix, ix.Replay("r", sentinel2), spec.KVEvStepResult{Op: spec.KVStepReplay, ReplayDone: true, Duplicates: []uint64{3}})
	checkCursor(t, ix, "r", true, 4, 3, false, 0, 0)

	// Without replay the cold start is lost, and the engine the first
	// batch creates starts stale (A3).
	step(t, ix, ix.Live("n", liveFrames("", 3, storeBatch(t, 3))),
		spec.KVEvStepResult{Op: spec.KVStepLive, Applied: []uint64{3}, Lost: []spec.KVEvGap{{From: 0, To: 3}}})
	if e := engineState(t, ix, "n", 0); !e.Stale || e.StaleSince != 3 {
		t.Fatalf("engine %+v", e)
	}
	// A first message at 0 is applied.
	ix2 := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "r", Replay: true})
	step(t, ix2, ix2.Live("r", liveFrames("", 0, emptyBatch(t))), spec.KVEvStepResult{Op: spec.KVStepLive, Applied: []uint64{0}})
	checkCursor(t, ix2, "r", true, 1, 0, false, 0, 0)
}

func TestKVEvCursorReplayedBatchesAreNamedFromTheirTopicOrTheTriggers(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "r", Replay: true})
	step(t, ix, ix.Live("r", liveFrames("kv@t@m", 2, emptyBatch(t))), spec.KVEvStepResult{Op: spec.KVStepLive, Held: 1, ReplayRequest: replayReq(0)})
	step(t, ix, ix.Replay("r", rep2(0, emptyBatch(t))), spec.KVEvStepResult{Op: spec.KVStepReplay, Applied: []uint64{0}, Held: 1})
	step(t, ix, ix.Replay("r", rep3("kv@u@m", 1, emptyBatch(t))), spec.KVEvStepResult{Op: spec.KVStepReplay, Applied: []uint64{1}, Held: 1})
	step(t, ix, ix.Replay("r", sentinel3), spec.KVEvStepResult{Op: spec.KVStepReplay, ReplayDone: true, Applied: []uint64{2}})
	s := cursorOf(t, ix, "r")
	if d := cmp.Diff([]spec.KVEvEngineKey{{Source: "t", DPRank: 0}, {Source: "u", DPRank: 0}}, s.Engines); d != "" {
		t.Fatal(d)
	}
}

func TestKVEvCursorAReplayStartingPastNextLosesTheHistoryBeforeIt(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "r", Replay: true})
	ix.Live("r", liveFrames("", 0, storeBatch(t, 0)))
	step(t, ix, ix.Live("r", liveFrames("", 6, storeBatch(t, 6))), spec.KVEvStepResult{Op: spec.KVStepLive, Held: 1, ReplayRequest: replayReq(1)})
	step(t, ix, ix.Replay("r", rep2(4, storeBatch(t, 4))),
		spec.KVEvStepResult{Op: spec.KVStepReplay, Applied: []uint64{4}, Lost: []spec.KVEvGap{{From: 1, To: 4}}, Held: 1})
	step(t, ix, ix.Replay("r", rep2(5, storeBatch(t, 5))), spec.KVEvStepResult{Op: spec.KVStepReplay, Applied: []uint64{5}, Held: 1})
	step(t, ix, ix.Replay("r", sentinel2), spec.KVEvStepResult{Op: spec.KVStepReplay, ReplayDone: true, Applied: []uint64{6}})
	checkCursor(t, ix, "r", true, 7, 6, false, 0, 0)
	if e := engineState(t, ix, "r", 0); !e.Stale || e.StaleSince != 4 {
		t.Fatalf("engine %+v", e)
	}
	// A replayed batch past the trigger is applied; the trigger is then a duplicate.
	step(t, ix, ix.Live("r", liveFrames("", 9, emptyBatch(t))), spec.KVEvStepResult{Op: spec.KVStepLive, Held: 1, ReplayRequest: replayReq(7)})
	step(t, ix, ix.Replay("r", rep2(10, emptyBatch(t))),
		spec.KVEvStepResult{Op: spec.KVStepReplay, Applied: []uint64{10}, Lost: []spec.KVEvGap{{From: 7, To: 10}}, Held: 1})
	step(t, ix, ix.Replay("r", rep2(8, emptyBatch(t))), spec.KVEvStepResult{Op: spec.KVStepReplay, Duplicates: []uint64{8}, Held: 1})
	step(t, ix, ix.Replay("r", sentinel2), spec.KVEvStepResult{Op: spec.KVStepReplay, ReplayDone: true, Duplicates: []uint64{9}})
	checkCursor(t, ix, "r", true, 11, 9, false, 0, 0)
}

func TestKVEvCursorASentinelBeforeTheTriggerLosesTheRest(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "r", Replay: true})
	ix.Live("r", liveFrames("", 0, storeBatch(t, 0)))
	ix.Live("r", liveFrames("", 6, storeBatch(t, 6)))
	step(t, ix, ix.Replay("r", rep2(1, storeBatch(t, 1))), spec.KVEvStepResult{Op: spec.KVStepReplay, Applied: []uint64{1}, Held: 1})
	step(t, ix, ix.Replay("r", sentinel2),
		spec.KVEvStepResult{Op: spec.KVStepReplay, ReplayDone: true, Lost: []spec.KVEvGap{{From: 2, To: 6}}, Applied: []uint64{6}})
	checkCursor(t, ix, "r", true, 7, 6, false, 0, 0)
	e := engineState(t, ix, "r", 0)
	if !e.Stale || e.StaleSince != 6 || e.Tokens != 6 {
		t.Fatalf("engine %+v", e)
	}
	if c := cursorOf(t, ix, "r").Counters; c.Gaps != 1 || c.GapBatchesLost != 4 || c.ReplaysOK != 1 {
		t.Fatalf("counters %+v", c)
	}
}

func TestKVEvCursorReplayFailedLosesTheGapAndDrainsForEveryReason(t *testing.T) {
	for _, reason := range []string{spec.ReplayReasonTimeout, spec.ReplayReasonProtocol, spec.ReplayReasonUnavailable} {
		t.Run(reason, func(t *testing.T) {
			ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "r", Replay: true})
			ix.Live("r", liveFrames("", 0, storeBatch(t, 0)))
			ix.Live("r", liveFrames("", 1, storeBatch(t, 1)))
			ix.Live("r", liveFrames("", 2, storeBatch(t, 2)))
			step(t, ix, ix.Live("r", liveFrames("", 6, storeBatch(t, 6))), spec.KVEvStepResult{Op: spec.KVStepLive, Held: 1, ReplayRequest: replayReq(3)})
			step(t, ix, ix.Live("r", liveFrames("", 7, storeBatch(t, 7))), spec.KVEvStepResult{Op: spec.KVStepLive, Held: 2})
			step(t, ix, ix.Live("r", liveFrames("", 8, storeBatch(t, 8))), spec.KVEvStepResult{Op: spec.KVStepLive, Held: 3})
			checkCursor(t, ix, "r", true, 3, 6, true, 6, 3)
			step(t, ix, ix.ReplayFailed("r", reason),
				spec.KVEvStepResult{Op: spec.KVStepReplayFailed, Lost: []spec.KVEvGap{{From: 3, To: 6}}, Applied: []uint64{6, 7, 8}})
			checkCursor(t, ix, "r", true, 9, 8, false, 0, 0)
			s := cursorOf(t, ix, "r")
			if s.Counters.ReplaysFailed != 1 || s.Counters.Gaps != 1 || s.Counters.GapBatchesLost != 3 || *s.StaleSince != 6 {
				t.Fatalf("stream %+v", s)
			}
			if e := engineState(t, ix, "r", 0); !e.Stale || e.StaleSince != 6 || e.Tokens != 12 {
				t.Fatalf("engine %+v", e)
			}
		})
	}
}

func TestKVEvCursorReplayProtocolErrorsChangeNothing(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "r", Replay: true})
	ix.Live("r", liveFrames("", 0, storeBatch(t, 0)))
	// Not replaying: any reply, even a well-formed one, and any failure.
	before := ix.State()
	r := ix.Replay("r", rep2(1, emptyBatch(t)))
	step(t, ix, r, spec.KVEvStepResult{Op: spec.KVStepReplay, Error: new(spec.ErrorObjectOf(KVReplayNotOutstandingError("frames", 3)))})
	r = ix.ReplayFailed("r", spec.ReplayReasonTimeout)
	step(t, ix, r, spec.KVEvStepResult{Op: spec.KVStepReplayFailed, Error: new(spec.ErrorObjectOf(KVReplayNotOutstandingError("reason", "timeout")))})
	if d := cmp.Diff(before, ix.State()); d != "" {
		t.Fatal(d)
	}
	// Replaying: bad layouts.
	ix.Live("r", liveFrames("", 3, storeBatch(t, 3)))
	before = ix.State()
	for _, c := range []struct {
		frames [][]byte
		want   error
	}{
		{[][]byte{{}, seqFrame(1)}, KVReplayLayoutError(2)},
		{[][]byte{{}, {}, {}, seqFrame(1), emptyBatch(t)}, KVReplayLayoutError(5)},
		{nil, KVReplayLayoutError(0)},
		{[][]byte{seqFrame(1), emptyBatch(t)[:1], {}}, KVReplayDelimiterError(8)},
		{[][]byte{{0}, seqFrame(1), emptyBatch(t)}, KVReplayDelimiterError(1)},
		{[][]byte{{}, seqFrame(1)[:7], emptyBatch(t)}, KVReplaySeqWidthError(1, 7)},
		{[][]byte{{}, []byte("kv@a@b"), append(seqFrame(1), 0), emptyBatch(t)}, KVReplaySeqWidthError(2, 9)},
		// The request without its delimiter, echoed back, is 2 frames.
		{[][]byte{seqFrame(1), emptyBatch(t)}, KVReplayLayoutError(2)},
	} {
		r := ix.Replay("r", c.frames)
		step(t, ix, r, spec.KVEvStepResult{Op: spec.KVStepReplay, Held: 1, Error: new(spec.ErrorObjectOf(c.want))})
		if r.Error.Code != spec.ErrReplayProtocol.Code() {
			t.Fatalf("code %s", r.Error.Code)
		}
	}
	if d := cmp.Diff(before, ix.State()); d != "" {
		t.Fatal(d)
	}
	// The subscriber then reports replay_failed with protocol.
	step(t, ix, ix.ReplayFailed("r", spec.ReplayReasonProtocol),
		spec.KVEvStepResult{Op: spec.KVStepReplayFailed, Lost: []spec.KVEvGap{{From: 1, To: 3}}, Applied: []uint64{3}})
}

func TestKVEvCursorMalformedLiveFramesAreDroppedWithoutTouchingTheCursor(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "r", Replay: true})
	ix.Live("r", liveFrames("", 0, emptyBatch(t)))
	before := ix.State()
	bad := []struct {
		frames [][]byte
		want   error
	}{
		{[][]byte{[]byte("t"), seqFrame(1)}, KVFrameCountError(2)},
		{[][]byte{[]byte("t"), seqFrame(1), emptyBatch(t), {}}, KVFrameCountError(4)},
		{[][]byte{[]byte("t"), seqFrame(1)[1:], emptyBatch(t)}, KVSeqWidthError(7)},
		{[][]byte{[]byte("t"), {}, emptyBatch(t)}, KVSeqWidthError(0)},
	}
	for _, c := range bad {
		step(t, ix, ix.Live("r", c.frames), spec.KVEvStepResult{Op: spec.KVStepLive, Error: new(spec.ErrorObjectOf(c.want))})
	}
	after := ix.State()
	if after.Streams[0].Counters.Malformed != 4 {
		t.Fatalf("malformed %d", after.Streams[0].Counters.Malformed)
	}
	after.Streams[0].Counters.Malformed = 0
	if d := cmp.Diff(before, after); d != "" {
		t.Fatal(d)
	}
	// While replaying they are not held either.
	ix.Live("r", liveFrames("", 2, emptyBatch(t)))
	for _, c := range bad {
		step(t, ix, ix.Live("r", c.frames), spec.KVEvStepResult{Op: spec.KVStepLive, Held: 1, Error: new(spec.ErrorObjectOf(c.want))})
	}
	checkCursor(t, ix, "r", true, 1, 2, true, 2, 1)
	if s := cursorOf(t, ix, "r"); s.Counters.Malformed != 8 || s.Counters.HeldOverflow != 0 || s.StaleSince != nil {
		t.Fatalf("stream %+v", s)
	}
}

func TestKVEvCursorHeldOverflowDropsTheMessageAndMarksTheStreamStale(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{MaxHeld: 2}, spec.KVEvStream{Name: "r", Replay: true})
	ix.Live("r", liveFrames("", 0, storeBatch(t, 0)))
	step(t, ix, ix.Live("r", liveFrames("", 3, storeBatch(t, 3))), spec.KVEvStepResult{Op: spec.KVStepLive, Held: 1, ReplayRequest: replayReq(1)})
	step(t, ix, ix.Live("r", liveFrames("", 4, storeBatch(t, 4))), spec.KVEvStepResult{Op: spec.KVStepLive, Held: 2})
	step(t, ix, ix.Live("r", liveFrames("", 5, storeBatch(t, 5))), spec.KVEvStepResult{Op: spec.KVStepLive, Held: 2})
	s := cursorOf(t, ix, "r")
	if s.Counters.HeldOverflow != 1 || s.StaleSince == nil || *s.StaleSince != 5 {
		t.Fatalf("stream %+v", s)
	}
	if e := engineState(t, ix, "r", 0); !e.Stale || e.StaleSince != 5 {
		t.Fatalf("engine %+v", e)
	}
	step(t, ix, ix.Replay("r", rep2(1, storeBatch(t, 1))), spec.KVEvStepResult{Op: spec.KVStepReplay, Applied: []uint64{1}, Held: 2})
	step(t, ix, ix.Replay("r", rep2(2, storeBatch(t, 2))), spec.KVEvStepResult{Op: spec.KVStepReplay, Applied: []uint64{2}, Held: 2})
	step(t, ix, ix.Replay("r", sentinel2), spec.KVEvStepResult{Op: spec.KVStepReplay, ReplayDone: true, Applied: []uint64{3, 4}})
	checkCursor(t, ix, "r", true, 5, 4, false, 0, 0)
	// The dropped 5 shows up as a gap at the next live message.
	step(t, ix, ix.Live("r", liveFrames("", 6, storeBatch(t, 6))), spec.KVEvStepResult{Op: spec.KVStepLive, Held: 1, ReplayRequest: replayReq(5)})
}

// TestKVEvCursorHeldBytesOverflowIsACountOverflow pins A7's byte bound: a
// message is held while the queue's frames' bytes plus its own stay within
// max_held_bytes (inclusive), dropped like a count overflow past it; the
// trigger is always held. Messages [topic "t", seq, 92 00 90] are
// 1 + 8 + 3 = 12 bytes each.
func TestKVEvCursorHeldBytesOverflowIsACountOverflow(t *testing.T) {
	empty := []byte{0x92, 0x00, 0x90} // [0, []]
	msg := func(s uint64) [][]byte { return liveFrames("t", s, empty) }
	ix := newTestIndex(t, spec.KVEvConfig{MaxHeldBytes: 24}, spec.KVEvStream{Name: "r", Replay: true})
	step(t, ix, ix.Live("r", msg(0)), spec.KVEvStepResult{Op: spec.KVStepLive, Applied: []uint64{0}})
	step(t, ix, ix.Live("r", msg(3)), spec.KVEvStepResult{Op: spec.KVStepLive, Held: 1, ReplayRequest: replayReq(1)})
	step(t, ix, ix.Live("r", msg(4)), spec.KVEvStepResult{Op: spec.KVStepLive, Held: 2}) // 24 bytes: full, not past
	step(t, ix, ix.Live("r", msg(5)), spec.KVEvStepResult{Op: spec.KVStepLive, Held: 2}) // 36 > 24: dropped
	s := cursorOf(t, ix, "r")
	if s.Counters.HeldOverflow != 1 || s.StaleSince == nil || *s.StaleSince != 5 {
		t.Fatalf("stream %+v", s)
	}
	step(t, ix, ix.ReplayFailed("r", spec.ReplayReasonTimeout), spec.KVEvStepResult{Op: spec.KVStepReplayFailed,
		Lost: []spec.KVEvGap{{From: 1, To: 3}}, Applied: []uint64{3, 4}})
	if ix.byName["r"].heldBytes != 0 {
		t.Fatalf("held bytes after the drain: %d", ix.byName["r"].heldBytes)
	}
	// A trigger larger than max_held_bytes is still held; the next message is not.
	small := newTestIndex(t, spec.KVEvConfig{MaxHeldBytes: 5}, spec.KVEvStream{Name: "r", Replay: true})
	step(t, small, small.Live("r", msg(2)), spec.KVEvStepResult{Op: spec.KVStepLive, Held: 1, ReplayRequest: replayReq(0)})
	step(t, small, small.Live("r", msg(3)), spec.KVEvStepResult{Op: spec.KVStepLive, Held: 1})
	if c := cursorOf(t, small, "r").Counters.HeldOverflow; c != 1 {
		t.Fatalf("held_overflow %d", c)
	}
}

func TestKVEvCursorARestartWhileReplayingAbandonsTheReplay(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "r", Replay: true}, spec.KVEvStream{Name: "o"})
	ix.Live("o", liveFrames("", 0, storeBatch(t, 0)))
	ix.Live("r", liveFrames("", 0, storeBatch(t, 0)))
	ix.Live("r", liveFrames("", 4, storeBatch(t, 4)))
	ix.Live("r", liveFrames("", 5, storeBatch(t, 5)))
	ix.Live("r", liveFrames("", 7, storeBatch(t, 7))) // held, unread
	step(t, ix, ix.Restart("r"), spec.KVEvStepResult{Op: spec.KVStepRestart, Restart: true})
	checkCursor(t, ix, "r", false, 0, 0, false, 0, 0)
	s := ix.State()
	if len(s.Engines) != 1 || s.Engines[0].Stream != "o" || s.Streams[0].Counters.Restarts != 1 {
		t.Fatalf("state %+v", s)
	}
	step(t, ix, ix.Replay("r", rep2(1, emptyBatch(t))),
		spec.KVEvStepResult{Op: spec.KVStepReplay, Error: new(spec.ErrorObjectOf(KVReplayNotOutstandingError("frames", 3)))})
	step(t, ix, ix.Live("r", liveFrames("", 0, storeBatch(t, 0))), spec.KVEvStepResult{Op: spec.KVStepLive, Applied: []uint64{0}})
	checkCursor(t, ix, "r", true, 1, 0, false, 0, 0)
}

func TestKVEvCursorARestartClearsTheStreamsStaleSince(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "n"})
	ix.Live("n", liveFrames("", 0, storeBatch(t, 0)))
	ix.Live("n", liveFrames("", 2, storeBatch(t, 2)))
	if s := cursorOf(t, ix, "n"); s.StaleSince == nil || *s.StaleSince != 2 {
		t.Fatalf("stream %+v", s)
	}
	step(t, ix, ix.Restart("n"), spec.KVEvStepResult{Op: spec.KVStepRestart, Restart: true})
	if s := cursorOf(t, ix, "n"); s.StaleSince != nil || len(s.Engines) != 0 {
		t.Fatalf("stream %+v", s)
	}
	step(t, ix, ix.Live("n", liveFrames("", 0, storeBatch(t, 0))), spec.KVEvStepResult{Op: spec.KVStepLive, Applied: []uint64{0}})
	if e := engineState(t, ix, "n", 0); e.Stale || e.Tokens != 2 {
		t.Fatalf("engine %+v", e)
	}
	// A seq regression is a restart and its message a first message.
	step(t, ix, ix.Live("n", liveFrames("", 0, storeBatch(t, 9))), spec.KVEvStepResult{Op: spec.KVStepLive, Restart: true, Applied: []uint64{0}})
	if e := engineState(t, ix, "n", 0); e.Stale || e.Tokens != 2 || poolString(t, ix, "n", 0, 0, "GPU") != "0:[9 9]=1{a:1}" {
		t.Fatalf("engine %+v", e)
	}
}

func TestKVEvCursorTheDrainCanStartAnotherReplayAndKeepsTheRestHeld(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "r", Replay: true})
	ix.Live("r", liveFrames("", 0, storeBatch(t, 0)))
	ix.Live("r", liveFrames("", 3, storeBatch(t, 3)))
	ix.Live("r", liveFrames("", 4, storeBatch(t, 4)))
	ix.Live("r", liveFrames("", 7, storeBatch(t, 7)))
	ix.Live("r", liveFrames("", 8, storeBatch(t, 8)))
	ix.Replay("r", rep2(1, storeBatch(t, 1)))
	ix.Replay("r", rep2(2, storeBatch(t, 2)))
	step(t, ix, ix.Replay("r", sentinel2),
		spec.KVEvStepResult{Op: spec.KVStepReplay, ReplayDone: true, Applied: []uint64{3, 4}, ReplayRequest: replayReq(5), Held: 2})
	checkCursor(t, ix, "r", true, 5, 7, true, 7, 2)
	step(t, ix, ix.Replay("r", rep3("", 5, storeBatch(t, 5))), spec.KVEvStepResult{Op: spec.KVStepReplay, Applied: []uint64{5}, Held: 2})
	step(t, ix, ix.Replay("r", rep3("", 6, storeBatch(t, 6))), spec.KVEvStepResult{Op: spec.KVStepReplay, Applied: []uint64{6}, Held: 2})
	step(t, ix, ix.Replay("r", sentinel3), spec.KVEvStepResult{Op: spec.KVStepReplay, ReplayDone: true, Applied: []uint64{7, 8}})
	checkCursor(t, ix, "r", true, 9, 8, false, 0, 0)
	if e := engineState(t, ix, "r", 0); e.Stale || e.Tokens != 18 {
		t.Fatalf("engine %+v", e)
	}
}

func TestKVEvCursorARestartInTheDrainKeepsTheLaterMessages(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "r", Replay: true})
	ix.Live("r", liveFrames("", 0, storeBatch(t, 0)))
	ix.Live("r", liveFrames("", 3, storeBatch(t, 3)))
	ix.Live("r", liveFrames("", 4, storeBatch(t, 4)))
	ix.Live("r", liveFrames("", 1, storeBatch(t, 1))) // a new incarnation
	ix.Live("r", liveFrames("", 2, storeBatch(t, 2)))
	ix.Replay("r", rep2(1, storeBatch(t, 1)))
	ix.Replay("r", rep2(2, storeBatch(t, 2)))
	step(t, ix, ix.Replay("r", sentinel2),
		spec.KVEvStepResult{Op: spec.KVStepReplay, ReplayDone: true, Applied: []uint64{3, 4}, Restart: true, ReplayRequest: replayReq(0), Held: 2})
	checkCursor(t, ix, "r", true, 0, 1, true, 1, 2)
	if s := ix.State(); len(s.Engines) != 0 {
		t.Fatalf("engines %+v", s.Engines)
	}
	ix.Replay("r", rep2(0, storeBatch(t, 0)))
	step(t, ix, ix.Replay("r", sentinel2), spec.KVEvStepResult{Op: spec.KVStepReplay, ReplayDone: true, Applied: []uint64{1, 2}})
	checkCursor(t, ix, "r", true, 3, 2, false, 0, 0)
}

func TestKVEvCursorSeqMaxIsAppliedOnceAndCountersSaturate(t *testing.T) {
	const max = math.MaxUint64
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "r", Replay: true}, spec.KVEvStream{Name: "n"})
	ix.Live("r", liveFrames("", 0, emptyBatch(t)))
	step(t, ix, ix.Live("r", liveFrames("", max, storeBatch(t, 7))), spec.KVEvStepResult{Op: spec.KVStepLive, Held: 1, ReplayRequest: replayReq(1)})
	// A reply at seq 2^64-1 with a payload is a batch, not the sentinel.
	step(t, ix, ix.Replay("r", rep2(max, storeBatch(t, 7))),
		spec.KVEvStepResult{Op: spec.KVStepReplay, Applied: []uint64{max}, Lost: []spec.KVEvGap{{From: 1, To: max}}, Held: 1})
	step(t, ix, ix.Replay("r", rep2(max, storeBatch(t, 7))), spec.KVEvStepResult{Op: spec.KVStepReplay, Duplicates: []uint64{max}, Held: 1})
	step(t, ix, ix.Replay("r", rep2(0, storeBatch(t, 7))), spec.KVEvStepResult{Op: spec.KVStepReplay, Duplicates: []uint64{0}, Held: 1})
	step(t, ix, ix.Replay("r", sentinel2), spec.KVEvStepResult{Op: spec.KVStepReplay, ReplayDone: true, Duplicates: []uint64{max}})
	checkCursor(t, ix, "r", true, max, max, false, 0, 0)
	if e := engineState(t, ix, "r", 0); e.Tokens != 2 {
		t.Fatalf("seq 2^64-1 applied twice: %+v", e)
	}
	// Every later live seq is a restart.
	step(t, ix, ix.Live("r", liveFrames("", max, emptyBatch(t))), spec.KVEvStepResult{Op: spec.KVStepLive, Restart: true, Held: 1, ReplayRequest: replayReq(0)})

	// Without replay: [0, 2^64-1) lost, then [0, 5) after a restart; the
	// lost-batch counter stops at its maximum.
	step(t, ix, ix.Live("n", liveFrames("", max, emptyBatch(t))),
		spec.KVEvStepResult{Op: spec.KVStepLive, Applied: []uint64{max}, Lost: []spec.KVEvGap{{From: 0, To: max}}})
	checkCursor(t, ix, "n", true, max, max, false, 0, 0)
	step(t, ix, ix.Live("n", liveFrames("", 5, emptyBatch(t))),
		spec.KVEvStepResult{Op: spec.KVStepLive, Restart: true, Applied: []uint64{5}, Lost: []spec.KVEvGap{{From: 0, To: 5}}})
	if c := cursorOf(t, ix, "n").Counters; c.GapBatchesLost != max || c.Gaps != 2 {
		t.Fatalf("counters %+v", c)
	}
}

func TestKVEvCursorLiveMessagesAreCopiedWhenHeld(t *testing.T) {
	ix := newTestIndex(t, spec.KVEvConfig{}, spec.KVEvStream{Name: "r", Replay: true})
	ix.Live("r", liveFrames("", 0, emptyBatch(t)))
	ix.Live("r", liveFrames("", 2, emptyBatch(t)))
	f := liveFrames("kv@x@m", 3, storeBatch(t, 3))
	ix.Live("r", f)
	for i := range f {
		for j := range f[i] {
			f[i][j] = 0xc1
		}
	}
	ix.Replay("r", rep2(1, emptyBatch(t)))
	step(t, ix, ix.Replay("r", sentinel2), spec.KVEvStepResult{Op: spec.KVStepReplay, ReplayDone: true, Applied: []uint64{2, 3}})
	if e := engineState(t, ix, "x", 0); e.Tokens != 2 {
		t.Fatalf("engine %+v", e)
	}
}

// TestKVEvApplyRunsTheSampleScript runs the shared interpreter on the
// reference index: §5.1's E1 as seq 0, its score, E2 as seq 1, the score.
func TestKVEvApplyRunsTheSampleScript(t *testing.T) {
	frames := func(seq uint64, h string) []spec.HexBytes {
		return []spec.HexBytes{[]byte(topicE), seqFrame(seq), hexBytes(t, h)}
	}
	in := spec.KVEvApplyInput{
		Streams: []spec.KVEvStream{{Name: "vllm-0", Replay: true}},
		Steps: []spec.KVEvStep{
			{Op: spec.KVStepLive, Stream: "vllm-0", Frames: frames(0, hexE1)},
			{Op: spec.KVStepScore, Tokens: promptE1.Tokens},
			{Op: spec.KVStepLive, Stream: "vllm-0", Frames: frames(1, hexE2)},
			{Op: spec.KVStepScore, Tokens: promptE1.Tokens, Exact: true},
			{Op: spec.KVStepLive, Stream: "vllm-0", Frames: frames(3, hexE3)},
			{Op: spec.KVStepReplay, Stream: "vllm-0", Frames: []spec.HexBytes{{}, seqFrame(2), hexBytes(t, hexE4)}},
			{Op: spec.KVStepReplay, Stream: "vllm-0", Frames: []spec.HexBytes{{}, seqFrame(math.MaxUint64), {}}},
			{Op: spec.KVStepScore, Tokens: promptE1.Tokens, Tier: "gpu"},
		},
	}
	out, err := KVEvApply(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []int
	for _, r := range out.Trace {
		if r.Op == spec.KVStepScore {
			b := -1 // no engine has the pool
			if len(r.Scores) == 1 {
				b = r.Scores[0].Blocks
			}
			blocks = append(blocks, b)
		}
	}
	// E4 (store H1, remove, clear) at seq 2 empties the engine before E3
	// re-stores H2 under H1 at seq 3: an orphan.
	if !slices.Equal(blocks, []int{2, 1, -1}) {
		t.Fatalf("scores %v", blocks)
	}
	if d := cmp.Diff(spec.KVEvStepResult{Op: spec.KVStepLive, Held: 1, ReplayRequest: replayReq(2)}, out.Trace[4]); d != "" {
		t.Fatal(d)
	}
	if d := cmp.Diff(spec.KVEvStepResult{Op: spec.KVStepReplay, ReplayDone: true, Applied: []uint64{3}}, out.Trace[6]); d != "" {
		t.Fatal(d)
	}
	e := out.State.Engines[0]
	if !e.Stale || e.StaleSince != 3 || e.Counters.OrphanStores != 1 || len(e.Pools) != 0 {
		t.Fatalf("engine %+v", e)
	}
	if _, err := json.Marshal(out); err != nil {
		t.Fatal(err)
	}
}
