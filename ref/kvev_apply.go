package ref

// The kvev.apply op (docs/spec/kv-events.md §2.10 A1): a script of what a
// subscriber observed on its sockets, run against one event-fed index,
// returning what the index did at every step and its final state, so the
// stateful index gets fixtures and an HTTP endpoint like every pure op.

// ValidateKVEvApply rejects a script that cannot run at all (§2.10 A1): a
// bad config or stream list, an unknown op, a step naming a stream that is
// not configured, or a score token outside [0, 2^32), each naming
// steps[i].field.
func ValidateKVEvApply(in KVEvApplyInput) error {
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
		at := Idx("steps", i)
		switch s.Op {
		case KVStepLive, KVStepReplay, KVStepReplayFailed, KVStepRestart:
			if !names[s.Stream] {
				return Reject(ErrUnknownStream, at+".stream", s.Stream, "the name of a configured stream")
			}
			if s.Op == KVStepReplayFailed && !validReplayReason(s.Reason) {
				return Reject(ErrBadEnum, at+".reason", s.Reason, "one of timeout, protocol, unavailable")
			}
		case KVStepScore:
			if err := CheckTokens(at+".tokens", s.Tokens); err != nil {
				return err
			}
		default:
			return Reject(ErrBadEnum, at+".op", s.Op, "one of live, replay, replay_failed, restart, score")
		}
	}
	return nil
}

func validReplayReason(r string) bool {
	return r == ReplayReasonTimeout || r == ReplayReasonProtocol || r == ReplayReasonUnavailable
}

// RunKVEvApply runs a validated script on an index built by newIndex. Both
// twins of kvev.apply call it with their own index, so the step dispatch is
// written once and the indexes are what differs. The output is bounded by
// lim: every applied batch's trace entry and every page of the final state
// count against it.
func RunKVEvApply(lim Limits, in KVEvApplyInput, newIndex NewKVEvIndexFunc) (KVEvApplyOutput, error) {
	if err := ValidateKVEvApply(in); err != nil {
		return KVEvApplyOutput{}, err
	}
	ix, err := newIndex(in.Config, in.Streams)
	if err != nil {
		return KVEvApplyOutput{}, err
	}
	out := KVEvApplyOutput{Trace: make([]KVEvStepResult, 0, len(in.Steps))}
	var scores int64
	for i, s := range in.Steps {
		if err := lim.poll(i, Idx("steps", i)); err != nil {
			return KVEvApplyOutput{}, err
		}
		r := runKVEvStep(ix, s)
		// A score step is a few request bytes but one entry per engine.
		if scores += int64(len(r.Scores)); len(r.Scores) > 0 {
			if err := lim.CheckOutput(Idx("steps", i), scores, kvevScoreBytes); err != nil {
				return KVEvApplyOutput{}, err
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
		return KVEvApplyOutput{}, err
	}
	return out, nil
}

// kvevScoreBytes is the JSON size of one score entry, a short source name included.
const kvevScoreBytes = 96

// runKVEvStep dispatches one validated step.
func runKVEvStep(ix KVEvIndex, s KVEvStep) KVEvStepResult {
	switch s.Op {
	case KVStepLive:
		return ix.Live(s.Stream, frameBytes(s.Frames))
	case KVStepReplay:
		return ix.Replay(s.Stream, frameBytes(s.Frames))
	case KVStepReplayFailed:
		return ix.ReplayFailed(s.Stream, s.Reason)
	case KVStepRestart:
		return ix.Restart(s.Stream)
	}
	scores, err := ix.Score(KVEvScoreQuery{Tokens: s.Tokens, Namespace: s.Namespace, Group: s.Group, Tier: s.Tier, Exact: s.Exact})
	r := KVEvStepResult{Op: s.Op, Scores: scores}
	if err != nil {
		r.Error = new(ErrorObjectOf(err))
	}
	return r
}

// KVEvApply is the reference twin of kvev.apply (docs/spec/kv-events.md
// §2-§3): the script run on the reference index.
func KVEvApply(lim Limits, in KVEvApplyInput) (KVEvApplyOutput, error) {
	return RunKVEvApply(lim, in, NewKVEvIndex)
}
