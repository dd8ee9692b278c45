package equiv

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// kvev.apply's properties (docs/spec/kv-events.md §2-§3): each checks a
// script and an implementation's output against the spec, re-running ref
// on variants of the script (a step repeated, a stream left out, the
// streams re-interleaved, a refused event removed) where the property is
// about what changes between them.

// kvRunStep dispatches one step on ix as the kvev.apply interpreter does
// (ref.RunKVEvApply), so a property can look at the index between steps.
func kvRunStep(ix spec.KVEvIndex, s spec.KVEvStep) spec.KVEvStepResult {
	fb := func(fs []spec.HexBytes) [][]byte {
		out := make([][]byte, len(fs))
		for i, f := range fs {
			out[i] = f
		}
		return out
	}
	switch s.Op {
	case spec.KVStepLive:
		return ix.Live(s.Stream, fb(s.Frames))
	case spec.KVStepReplay:
		return ix.Replay(s.Stream, fb(s.Frames))
	case spec.KVStepReplayFailed:
		return ix.ReplayFailed(s.Stream, s.Reason)
	case spec.KVStepRestart:
		return ix.Restart(s.Stream)
	case spec.KVStepAddStream:
		return kvOutcomeOf(s.Op, ix.AddStream(*s.Config))
	case spec.KVStepRemoveStream:
		return kvOutcomeOf(s.Op, ix.RemoveStream(s.Stream))
	case spec.KVStepSnapshotReply:
		return ix.(spec.KVEvBootstrapper).SnapshotReply(s.Stream, fb(s.Frames))
	case spec.KVStepSnapshotFailed:
		return ix.(spec.KVEvBootstrapper).SnapshotFailed(s.Stream, s.Reason)
	case spec.KVStepHeartbeatLost:
		return ix.(spec.KVEvBootstrapper).HeartbeatLost(s.Stream)
	}
	scores, err := ix.Score(spec.KVEvScoreQuery{Tokens: s.Tokens, Namespace: s.Namespace, Group: s.Group, Tier: s.Tier, Exact: s.Exact})
	r := spec.KVEvStepResult{Op: s.Op, Scores: scores}
	if err != nil {
		r.Error = new(spec.ErrorObjectOf(err))
	}
	return r
}

// kvOutcomeOf is an add's or a removal's result as the interpreter
// writes it: the op, and the refusal if any.
func kvOutcomeOf(op string, err error) spec.KVEvStepResult {
	r := spec.KVEvStepResult{Op: op}
	if err != nil {
		r.Error = new(spec.ErrorObjectOf(err))
	}
	return r
}

// kvStepped runs in on a fresh index of newIndex, calling visit after
// every step with its result and the index; visit returns false to stop.
func kvStepped(newIndex spec.NewKVEvIndexFunc, in spec.KVEvApplyInput, visit func(i int, r spec.KVEvStepResult, ix spec.KVEvIndex) bool) error {
	ix, err := newIndex(in.Config, in.Streams)
	if err != nil {
		return err
	}
	for i, s := range in.Steps {
		if !visit(i, kvRunStep(ix, s), ix) {
			break
		}
	}
	return nil
}

func kvJSON(v any) string {
	b, err := catalog.Marshal(v)
	if err != nil {
		return "unencodable: " + err.Error()
	}
	return string(b)
}

func kvEqual(a, b any) bool { return kvJSON(a) == kvJSON(b) }

// kvCursorFollows runs the cursor model over the script and compares
// every stream step's applied and duplicate seqs, replay request, replay
// completion, lost runs, restart, held count and step error with the trace
// (§3.1, §3.2, A7).
func kvCursorFollows(_ spec.Limits, in spec.KVEvApplyInput, out spec.KVEvApplyOutput) error {
	cur := map[string]*kvCursor{}
	// The model is §3.1-§3.4 and A7; a stream with a snapshot endpoint
	// follows A13 too, which the narrated scenario pins and the twins'
	// comparison checks, so its steps are not modelled here.
	a13 := map[string]bool{}
	for _, s := range in.Streams {
		cur[s.Name] = newKVCursor(s, in.Config)
		a13[s.Name] = s.Snapshot
	}
	for i, s := range in.Steps {
		r := out.Trace[i]
		switch {
		case s.Op == spec.KVStepAddStream && r.Error == nil:
			cur[s.Config.Name] = newKVCursor(*s.Config, in.Config)
			a13[s.Config.Name] = s.Config.Snapshot
			continue
		case a13[s.Stream] && cur[s.Stream] != nil:
			continue
		case s.Op == spec.KVStepRemoveStream && r.Error == nil:
			delete(cur, s.Stream)
			continue
		}
		c := cur[s.Stream]
		if c == nil && s.Op != spec.KVStepScore && s.Op != spec.KVStepAddStream {
			// A11: a stream removed (or never added) answers only that.
			if r.Error == nil || r.Error.Code != spec.ErrUnknownStream.Code() || len(r.Applied)+len(r.Duplicates)+r.Held > 0 {
				return fmt.Errorf("step %d (%s %s): the stream was removed, yet the trace has %s", i, s.Op, s.Stream, kvJSON(r))
			}
			continue
		}
		var o kvCursorOut
		switch s.Op {
		case spec.KVStepLive:
			o = c.live(s.Frames)
		case spec.KVStepReplay:
			o = c.reply(s.Frames)
		case spec.KVStepReplayFailed:
			o = c.failed()
		case spec.KVStepRestart:
			o = c.restart()
		default:
			continue
		}
		var req *uint64
		if len(r.ReplayRequest) > 0 {
			if len(r.ReplayRequest) != 2 || len(r.ReplayRequest[0]) != 0 || len(r.ReplayRequest[1]) != 8 {
				return fmt.Errorf("step %d: replay request %x is not [empty, 8-byte start] (§3.2)", i, r.ReplayRequest)
			}
			req = new(seqOf(r.ReplayRequest[1]))
		}
		code := ""
		if r.Error != nil {
			code = r.Error.Code
		}
		got := fmt.Sprintf("applied %v dups %v request %v done %t restart %t held %d error %q", r.Applied, r.Duplicates, kvPtr(req), r.ReplayDone, r.Restart, r.Held, code)
		held := len(c.held)
		want := fmt.Sprintf("applied %v dups %v request %v done %t restart %t held %d error %q", o.applied, o.dups, kvPtr(o.request), o.done, o.restart, held, o.errCode)
		if got != want {
			return fmt.Errorf("step %d (%s %s): the trace has %s; §3.1/A7 give %s", i, s.Op, s.Stream, got, want)
		}
		if !o.overflow && !kvEqual(r.Lost, o.lost) && (len(r.Lost) > 0 || len(o.lost) > 0) {
			return fmt.Errorf("step %d (%s %s): lost %v; §3.1/A7 give %v", i, s.Op, s.Stream, r.Lost, o.lost)
		}
	}
	return nil
}

func kvPtr(p *uint64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

// kvAppliedAtMostOnce is §2.5/§2.7: within a publisher incarnation a
// stream applies each seq at most once, in increasing order, duplicates
// dropped; a restart starts a new incarnation.
func kvAppliedAtMostOnce(_ spec.Limits, in spec.KVEvApplyInput, out spec.KVEvApplyOutput) error {
	last := map[string]uint64{}
	seen := map[string]bool{}
	// pending counts the restarts a stream reported (a seq regression
	// found live or while held messages drain) that no non-increasing seq
	// has yet accounted for: the restart may fall between two seqs the
	// same step applies, or before a seq a later step applies, so each
	// excuses exactly one seq that does not increase. A restart step
	// forgets the stream's history outright, so it excuses nothing later.
	pending := map[string]int{}
	for i, s := range in.Steps {
		r := out.Trace[i]
		if s.Op == spec.KVStepAddStream {
			seen[s.Config.Name], pending[s.Config.Name] = false, 0 // a new stream (A11)
		} else if s.Op == spec.KVStepRestart {
			seen[s.Stream], pending[s.Stream] = false, 0
		} else if r.Restart {
			pending[s.Stream]++
		}
		for _, q := range r.Applied {
			if seen[s.Stream] && q <= last[s.Stream] {
				if pending[s.Stream] == 0 {
					return fmt.Errorf("step %d: stream %s applies seq %d after %d", i, s.Stream, q, last[s.Stream])
				}
				pending[s.Stream]--
			}
			last[s.Stream], seen[s.Stream] = q, true
		}
		// A13's drains may hold one seq several times (a snapshot stream
		// takes a repeated live seq of the same publisher id as a
		// duplicate, not a restart): the first applies, the copies drop.
		drain := s.Op == spec.KVStepSnapshotReply || s.Op == spec.KVStepSnapshotFailed
		for _, q := range r.Duplicates {
			if slices.Contains(r.Applied, q) && !drain {
				return fmt.Errorf("step %d: seq %d both applied and dropped", i, q)
			}
		}
	}
	return nil
}

// kvScoreWalksState is §2.8 against the state: every score equals a walk
// over the index's pages at that step (engines with a pool for the
// query's group and tier; whole pages; the namespace's child page by
// page; stop at the first missing page or hole), in blocks of that pool.
func kvScoreWalksState(_ spec.Limits, in spec.KVEvApplyInput, out spec.KVEvApplyOutput) error {
	var ferr error
	err := kvStepped(ref.NewKVEvIndex, in, func(i int, r spec.KVEvStepResult, ix spec.KVEvIndex) bool {
		if !kvEqual(r, out.Trace[i]) {
			ferr = fmt.Errorf("step %d: stepping the index gives %s, the script %s", i, kvJSON(r), kvJSON(out.Trace[i]))
			return false
		}
		s := in.Steps[i]
		if s.Op != spec.KVStepScore || r.Error != nil {
			return true
		}
		want := kvWalkScores(ix.State(), s)
		if !kvEqual(want, r.Scores) {
			ferr = fmt.Errorf("step %d: scores %s; a walk over the state gives %s", i, kvJSON(r.Scores), kvJSON(want))
			return false
		}
		return true
	})
	if err != nil {
		return err
	}
	return ferr
}

func kvWalkScores(st spec.KVEvState, s spec.KVEvStep) []spec.KVEvScore {
	tier := strings.ToUpper(s.Tier)
	if tier == "" {
		tier = "GPU"
	}
	var out []spec.KVEvScore
	for _, e := range st.Engines {
		for _, p := range e.Pools {
			if p.Group != s.Group || p.Tier != tier {
				continue
			}
			n := 0
			if root, err := kvTree(p); err == nil {
				node := root
				for (n+1)*int(p.PageSize) <= len(s.Tokens) {
					page := s.Tokens[n*int(p.PageSize) : (n+1)*int(p.PageSize)]
					var next *kvNode
					for _, c := range node.children {
						if c.page.Namespace == s.Namespace && slices.EqualFunc(c.page.Tokens, page, func(a uint32, b int64) bool { return int64(a) == b }) {
							next = c
						}
					}
					if next == nil || next.page.Resident == 0 {
						break
					}
					node, n = next, n+1
				}
			}
			out = append(out, spec.KVEvScore{Source: e.Source, DPRank: e.DPRank, Blocks: n, Tokens: int64(n) * p.PageSize, PageSize: p.PageSize, Stale: e.Stale})
		}
	}
	return out
}

// kvPools is the part of a state that events change: every engine's pools.
func kvPools(st spec.KVEvState) string {
	type eng struct {
		Key   spec.KVEvEngineKey
		Pools []spec.KVEvPoolState
	}
	var es []eng
	for _, e := range st.Engines {
		es = append(es, eng{spec.KVEvEngineKey{Source: e.Source, DPRank: e.DPRank}, e.Pools})
	}
	return kvJSON(es)
}

// kvDecodeFrames is the decode input of a live or replayed batch's
// frames (the topic of a 2-frame reply does not matter to the pools).
func kvDecodeFrames(s spec.KVEvStep) (spec.KVEvDecodeInput, bool) {
	switch {
	case s.Op == spec.KVStepLive && len(s.Frames) == 3:
		return spec.KVEvDecodeInput{Frames: s.Frames}, true
	case s.Op == spec.KVStepReplay && len(s.Frames) == 4:
		return spec.KVEvDecodeInput{Frames: s.Frames[1:]}, true
	case s.Op == spec.KVStepReplay && len(s.Frames) == 3:
		return spec.KVEvDecodeInput{Frames: []spec.HexBytes{{}, s.Frames[1], s.Frames[2]}}, true
	}
	return spec.KVEvDecodeInput{}, false
}

// kvWithFrames returns s with its batch replaced by payload.
func kvWithPayload(s spec.KVEvStep, payload []byte) spec.KVEvStep {
	s.Frames = slices.Clone(s.Frames)
	s.Frames[len(s.Frames)-1] = payload
	return s
}

// kvRefusedEventAtomic is §2.7: an event the pools refuse changes nothing
// — the batch without it leaves every pool as the batch with it does (the
// other events still apply). Checked for the first two single-batch steps
// with a refused event.
func kvRefusedEventAtomic(lim spec.Limits, in spec.KVEvApplyInput, _ spec.KVEvApplyOutput) error {
	type refusal struct {
		step, event int
		pools       string
	}
	var rs []refusal
	if err := kvStepped(ref.NewKVEvIndex, in, func(i int, r spec.KVEvStepResult, ix spec.KVEvIndex) bool {
		if len(r.Applied) != 1 {
			return true
		}
		for _, e := range r.Errors {
			if e.Event >= 0 && e.Seq == r.Applied[0] {
				if fr, ok := kvDecodeFrames(in.Steps[i]); ok && seqOf(fr.Frames[1]) == e.Seq {
					rs = append(rs, refusal{i, e.Event, kvPools(ix.State())})
					break
				}
			}
		}
		return len(rs) < 2
	}); err != nil {
		return err
	}
	for _, rf := range rs {
		fr, _ := kvDecodeFrames(in.Steps[rf.step])
		msg, err := ref.KVEvDecode(lim, fr)
		if err != nil {
			return fmt.Errorf("step %d: the batch with a refused event does not decode: %v", rf.step, err)
		}
		evs := slices.Delete(slices.Clone(msg.Batch.Events), rf.event, rf.event+1)
		msg.Batch.Events = evs
		payload := encodeBatch(msg.Batch, msg.Batch.Form, func(j int) string { return evs[j].Form }, hashUint).bytes()
		variant := in
		variant.Steps = append(slices.Clone(in.Steps[:rf.step]), kvWithPayload(in.Steps[rf.step], payload))
		var got string
		if err := kvStepped(ref.NewKVEvIndex, variant, func(i int, _ spec.KVEvStepResult, ix spec.KVEvIndex) bool {
			if i == rf.step {
				got = kvPools(ix.State())
			}
			return true
		}); err != nil {
			return err
		}
		if got != rf.pools {
			return fmt.Errorf("step %d: event %d was refused, but the batch without it leaves the pools\n%s\nnot\n%s", rf.step, rf.event, got, rf.pools)
		}
	}
	return nil
}

// kvRefusedWhole says whether step s ran one live or replayed batch and
// refused it whole (§2.7: decode error, engine owner or budget), the
// case in which no pool may change. Only those ops: a snapshot reply
// (A13) whose chunk fails reports that error at the snapshot's seq while
// the held messages it then drains apply and change the pools, and its
// seq can equal a drained message's.
func kvRefusedWhole(s spec.KVEvStep, r spec.KVEvStepResult) bool {
	batch := s.Op == spec.KVStepLive || s.Op == spec.KVStepReplay
	whole := len(r.Errors) == 1 && r.Errors[0].Event == -1
	return batch && whole && len(r.Applied) == 1 && r.Errors[0].Seq == r.Applied[0] && !r.Restart
}

// kvDecodeErrorChangesNothing is §2.7 (and A2's refusals): a batch
// refused whole leaves every pool as it was.
func kvDecodeErrorChangesNothing(_ spec.Limits, in spec.KVEvApplyInput, _ spec.KVEvApplyOutput) error {
	var before string
	var ferr error
	ix0, err := ref.NewKVEvIndex(in.Config, in.Streams)
	if err != nil {
		return err
	}
	before = kvPools(ix0.State())
	for i, s := range in.Steps {
		r := kvRunStep(ix0, s)
		after := kvPools(ix0.State())
		if kvRefusedWhole(s, r) && before != after {
			ferr = fmt.Errorf("step %d: the batch was refused whole (%s) but the pools changed:\n%s\nto\n%s", i, r.Errors[0].Error.Code, before, after)
			break
		}
		before = after
	}
	return ferr
}

// kvReplayTwiceIsDuplicate is §2.5 with §3.1: the same replayed batch
// received twice is a duplicate the second time — nothing else in the
// trace changes, the digest stays, and only the stream's duplicate
// counter moves.
func kvReplayTwiceIsDuplicate(lim spec.Limits, in spec.KVEvApplyInput, out spec.KVEvApplyOutput) error {
	at := -1
	for i, s := range in.Steps {
		r := out.Trace[i]
		if s.Op == spec.KVStepReplay && len(r.Applied) == 1 && !r.ReplayDone && r.Error == nil && len(r.ReplayRequest) == 0 {
			at = i
			break
		}
	}
	if at < 0 {
		return nil
	}
	variant := in
	variant.Steps = slices.Insert(slices.Clone(in.Steps), at+1, in.Steps[at])
	got, err := ref.KVEvApply(lim, variant)
	if err != nil {
		return fmt.Errorf("the script with step %d twice is rejected: %v", at, err)
	}
	seq := out.Trace[at].Applied[0]
	if r := got.Trace[at+1]; len(r.Applied) != 0 || !slices.Equal(r.Duplicates, []uint64{seq}) {
		return fmt.Errorf("step %d repeated: %s, want seq %d a duplicate", at, kvJSON(r), seq)
	}
	others := append(slices.Clone(got.Trace[:at+1]), got.Trace[at+2:]...)
	if !kvEqual(others, out.Trace) {
		return fmt.Errorf("step %d repeated changes the rest of the trace", at)
	}
	if got.State.Digest != out.State.Digest {
		return fmt.Errorf("step %d repeated: digest %s, was %s", at, got.State.Digest, out.State.Digest)
	}
	want := out.State
	want.Streams = slices.Clone(out.State.Streams)
	for j := range want.Streams {
		if want.Streams[j].Name == in.Steps[at].Stream && !kvRemovedAfter(in, out, at) {
			want.Streams[j].Counters.Duplicates++
		}
	}
	if !kvEqual(want, got.State) {
		return fmt.Errorf("step %d repeated: the state differs by more than one duplicate:\n%s\nwant\n%s", at, kvJSON(got.State), kvJSON(want))
	}
	return nil
}

// kvRemovedAfter reports whether step at's stream is removed by a later
// step (A11): its counters then start over and the final state keeps no
// count from step at.
func kvRemovedAfter(in spec.KVEvApplyInput, out spec.KVEvApplyOutput, at int) bool {
	for i := at + 1; i < len(in.Steps); i++ {
		if s := in.Steps[i]; s.Op == spec.KVStepRemoveStream && s.Stream == in.Steps[at].Stream && out.Trace[i].Error == nil {
			return true
		}
	}
	return false
}

// kvDigestInterleaving is §4.3's convergence criterion: the same streams'
// steps merged in another order (each stream's order kept, scores left
// out) give the same engines and digest. Skipped when a batch was refused
// for engine ownership, which does depend on which stream came first; an
// engine-budget refusal does not, since each stream has its own share (A5).
func kvDigestInterleaving(lim spec.Limits, in spec.KVEvApplyInput, out spec.KVEvApplyOutput) error {
	if len(in.Streams) < 2 || kvOrderDependent(out) {
		return nil
	}
	queues := map[string][]spec.KVEvStep{}
	for _, s := range in.Steps {
		if s.Op != spec.KVStepScore {
			queues[kvStepStream(s)] = append(queues[kvStepStream(s)], s)
		}
	}
	variant := spec.KVEvApplyInput{Config: in.Config, Streams: in.Streams}
	for round := 0; len(variant.Steps) < len(in.Steps); round++ {
		moved := false
		for j := len(in.Streams) - 1; j >= 0; j-- {
			name := in.Streams[j].Name
			if q := queues[name]; len(q) > 0 {
				n := min(len(q), 1+round%3)
				variant.Steps = append(variant.Steps, q[:n]...)
				queues[name] = q[n:]
				moved = true
			}
		}
		if !moved {
			break
		}
	}
	got, err := ref.KVEvApply(lim, variant)
	if err != nil {
		return fmt.Errorf("the re-interleaved script is rejected: %v", err)
	}
	if kvOrderDependent(got) {
		return nil
	}
	if got.State.Digest != out.State.Digest || !kvEqual(got.State.Engines, out.State.Engines) {
		return fmt.Errorf("re-interleaving the streams changes the engines: digest %s, was %s", got.State.Digest, out.State.Digest)
	}
	return nil
}

// kvStepStream is the stream a step belongs to: an add's is the stream it
// adds (A11).
func kvStepStream(s spec.KVEvStep) string {
	if s.Op == spec.KVStepAddStream && s.Config != nil {
		return s.Config.Name
	}
	return s.Stream
}

func kvOrderDependent(out spec.KVEvApplyOutput) bool {
	for _, r := range out.Trace {
		for _, e := range r.Errors {
			if e.Error.Code == spec.ErrEngineOwner.Code() {
				return true
			}
		}
	}
	return false
}

// kvStreamsAreIndependent is A2 and A5's promise that no stream can lock
// another out: the script without one stream's steps (and without the
// scores, which read every engine) gives every other stream the same step
// results, the same cursor and counters and the same engines. The stream
// left out is the one with the most engine refusals (the first on a tie),
// the likeliest to have crowded the others under a shared cap. Skipped
// when a batch was refused for engine ownership, which is one stream's
// engine taken by another by design.
func kvStreamsAreIndependent(lim spec.Limits, in spec.KVEvApplyInput, out spec.KVEvApplyOutput) error {
	if len(in.Streams) < 2 || len(out.State.Streams) == 0 || kvOrderDependent(out) {
		return nil
	}
	drop := out.State.Streams[0]
	for _, st := range out.State.Streams[1:] {
		if st.Counters.EnginesRefused > drop.Counters.EnginesRefused {
			drop = st
		}
	}
	variant := spec.KVEvApplyInput{Config: in.Config, Streams: in.Streams}
	var kept []int // indexes in in.Steps of the variant's steps
	for i, s := range in.Steps {
		if s.Op != spec.KVStepScore && kvStepStream(s) != drop.Name {
			variant.Steps = append(variant.Steps, s)
			kept = append(kept, i)
		}
	}
	got, err := ref.KVEvApply(lim, variant)
	if err != nil {
		return fmt.Errorf("the script without stream %s is rejected: %v", drop.Name, err)
	}
	for j, i := range kept {
		if !kvEqual(got.Trace[j], out.Trace[i]) {
			return fmt.Errorf("without stream %s, step %d gives %s, not %s", drop.Name, i, kvJSON(got.Trace[j]), kvJSON(out.Trace[i]))
		}
	}
	others := func(st spec.KVEvState) string {
		var ss []spec.KVEvStreamState
		for _, s := range st.Streams {
			if s.Name != drop.Name {
				ss = append(ss, s)
			}
		}
		var es []spec.KVEvEngineState
		for _, e := range st.Engines {
			if e.Stream != drop.Name {
				es = append(es, e)
			}
		}
		return kvJSON([]any{ss, es})
	}
	if a, b := others(got.State), others(out.State); a != b {
		return fmt.Errorf("without stream %s the other streams end as\n%s\nnot\n%s", drop.Name, a, b)
	}
	return nil
}

// kvHashedScoreIsExact is A4: on generated scripts (no two prefixes share
// a chain hash) every hashed score equals the exact one.
func kvHashedScoreIsExact(lim spec.Limits, in spec.KVEvApplyInput, out spec.KVEvApplyOutput) error {
	exact := in
	exact.Steps = slices.Clone(in.Steps)
	for i := range exact.Steps {
		exact.Steps[i].Exact = exact.Steps[i].Exact || exact.Steps[i].Op == spec.KVStepScore
	}
	want, err := ref.KVEvApply(lim, exact)
	if err != nil {
		return fmt.Errorf("the exact script was rejected: %v", err)
	}
	for i, s := range in.Steps {
		if s.Op == spec.KVStepScore && !s.Exact && !kvEqual(out.Trace[i], want.Trace[i]) {
			return fmt.Errorf("step %d: hashed score %s, exact %s", i, kvJSON(out.Trace[i]), kvJSON(want.Trace[i]))
		}
	}
	return nil
}
