package ref

import (
	"fmt"

	"github.com/kvtwin/kvtwin/spec"
)

// The kvev.apply op (docs/spec/kv-events.md §2.10 A1): a script of what a
// subscriber observed on its sockets, run against one event-fed index,
// returning what the index did at every step and its final state, so the
// stateful index gets fixtures and an HTTP endpoint like every pure op.

// ValidateKVEvApply rejects a script that cannot run at all (§2.10 A1): a
// bad config or stream list, an unknown op, a step naming a stream that is
// not configured, or a score token outside [0, 2^32), each naming
// steps[i].field.
func ValidateKVEvApply(in spec.KVEvApplyInput) error {
	if err := in.Config.Validate(); err != nil {
		return err
	}
	if err := CheckKVEvStreams(in.Streams); err != nil {
		return err
	}
	names := make(map[string]bool, len(in.Streams))
	for _, s := range in.Streams {
		names[s.Name] = true
	}
	for i, s := range in.Steps {
		at := spec.Idx("steps", i)
		switch s.Op {
		case spec.KVStepLive, spec.KVStepReplay, spec.KVStepReplayFailed, spec.KVStepRestart, spec.KVStepRemoveStream,
			spec.KVStepSnapshotReply, spec.KVStepSnapshotFailed, spec.KVStepHeartbeatLost:
			if !names[s.Stream] {
				return spec.Reject(spec.ErrUnknownStream, at+".stream", s.Stream, "the name of a configured stream or of an earlier add_stream")
			}
			if (s.Op == spec.KVStepReplayFailed || s.Op == spec.KVStepSnapshotFailed) && !validReplayReason(s.Reason) {
				return spec.Reject(spec.ErrBadEnum, at+".reason", s.Reason, "one of timeout, protocol, unavailable")
			}
		case spec.KVStepScore:
			if err := CheckTokens(at+".tokens", s.Tokens); err != nil {
				return err
			}
		case spec.KVStepAddStream:
			if s.Config == nil {
				return spec.Reject(spec.ErrBadEnum, at+".config", "missing", "a stream object (name, rank, replay)")
			}
			// A name already taken, or no room for its share, is the
			// step's own result when it runs; the name counts from here on.
			if s.Config.Name == "" {
				return spec.Reject(spec.ErrBadEnum, at+".config.name", s.Config.Name, "a non-empty name")
			}
			if s.Config.Rank < 0 {
				return spec.Reject(spec.ErrNegative, at+".config.rank", s.Config.Rank, ">= 0")
			}
			names[s.Config.Name] = true
		default:
			return spec.Reject(spec.ErrBadEnum, at+".op", s.Op, "one of live, replay, replay_failed, restart, score, add_stream, remove_stream, snapshot_reply, snapshot_failed, heartbeat_lost")
		}
	}
	return nil
}

func validReplayReason(r string) bool {
	return r == spec.ReplayReasonTimeout || r == spec.ReplayReasonProtocol || r == spec.ReplayReasonUnavailable
}

// RunKVEvApply runs a validated script on an index built by newIndex. Both
// twins of kvev.apply call it with their own index, so the step dispatch is
// written once and the indexes are what differs. The output is bounded by
// lim: every applied batch's trace entry and every page of the final state
// count against it.
func RunKVEvApply(lim spec.Limits, in spec.KVEvApplyInput, newIndex spec.NewKVEvIndexFunc) (spec.KVEvApplyOutput, error) {
	if err := ValidateKVEvApply(in); err != nil {
		return spec.KVEvApplyOutput{}, err
	}
	ix, err := newIndex(in.Config, in.Streams)
	if err != nil {
		return spec.KVEvApplyOutput{}, err
	}
	out := spec.KVEvApplyOutput{Trace: make([]spec.KVEvStepResult, 0, len(in.Steps))}
	var scores int64
	for i, s := range in.Steps {
		if err := lim.Poll(i, spec.Idx("steps", i)); err != nil {
			return spec.KVEvApplyOutput{}, err
		}
		r := runKVEvStep(ix, s)
		// A score step is a few request bytes but one entry per engine.
		if scores += int64(len(r.Scores)); len(r.Scores) > 0 {
			if err := lim.CheckOutput(spec.Idx("steps", i), scores, kvevScoreBytes); err != nil {
				return spec.KVEvApplyOutput{}, err
			}
		}
		out.Trace = append(out.Trace, r)
	}
	out.State = ix.State()
	var tokens int64
	for _, e := range out.State.Engines {
		tokens += e.Tokens
	}
	if err := lim.CheckOutput("steps", tokens+scores*kvevScoreBytes/8, 8); err != nil {
		return spec.KVEvApplyOutput{}, err
	}
	return out, nil
}

// stepOutcome is the result of a step that only succeeds or is refused.
func stepOutcome(op string, err error) spec.KVEvStepResult {
	r := spec.KVEvStepResult{Op: op}
	if err != nil {
		r.Error = new(spec.ErrorObjectOf(err))
	}
	return r
}

// kvevScoreBytes is the JSON size of one score entry, a short source name included.
const kvevScoreBytes = 96

// runKVEvStep dispatches one validated step.
func runKVEvStep(ix spec.KVEvIndex, s spec.KVEvStep) spec.KVEvStepResult {
	switch s.Op {
	case spec.KVStepLive:
		return ix.Live(s.Stream, spec.FrameBytes(s.Frames))
	case spec.KVStepReplay:
		return ix.Replay(s.Stream, spec.FrameBytes(s.Frames))
	case spec.KVStepReplayFailed:
		return ix.ReplayFailed(s.Stream, s.Reason)
	case spec.KVStepRestart:
		return ix.Restart(s.Stream)
	case spec.KVStepAddStream:
		return stepOutcome(s.Op, ix.AddStream(*s.Config))
	case spec.KVStepRemoveStream:
		return stepOutcome(s.Op, ix.RemoveStream(s.Stream))
	case spec.KVStepSnapshotReply, spec.KVStepSnapshotFailed, spec.KVStepHeartbeatLost:
		return runKVEvBootstrapStep(ix, s)
	}
	scores, err := ix.Score(spec.KVEvScoreQuery{Tokens: s.Tokens, Namespace: s.Namespace, Group: s.Group, Tier: s.Tier, Exact: s.Exact})
	r := spec.KVEvStepResult{Op: s.Op, Scores: scores}
	if err != nil {
		r.Error = new(spec.ErrorObjectOf(err))
	}
	return r
}

// runKVEvBootstrapStep dispatches an A13 step to an index that serves
// the snapshot bootstrap (both twins do).
func runKVEvBootstrapStep(ix spec.KVEvIndex, s spec.KVEvStep) spec.KVEvStepResult {
	b, ok := ix.(spec.KVEvBootstrapper)
	if !ok {
		return stepOutcome(s.Op, fmt.Errorf("kvev.apply: the index does not serve the snapshot bootstrap (%s)", s.Op))
	}
	switch s.Op {
	case spec.KVStepSnapshotReply:
		return b.SnapshotReply(s.Stream, spec.FrameBytes(s.Frames))
	case spec.KVStepSnapshotFailed:
		return b.SnapshotFailed(s.Stream, s.Reason)
	}
	return b.HeartbeatLost(s.Stream)
}

// KVEvApply is the reference twin of kvev.apply (docs/spec/kv-events.md
// §2-§3): the script run on the reference index.
func KVEvApply(lim spec.Limits, in spec.KVEvApplyInput) (spec.KVEvApplyOutput, error) {
	return RunKVEvApply(lim, in, NewKVEvIndex)
}
