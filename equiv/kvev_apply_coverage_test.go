package equiv

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// kvFeatures names what one generated kvev.apply script exercised, read
// off ref's trace and final state.
func kvFeatures(in spec.KVEvApplyInput, out spec.KVEvApplyOutput) map[string]bool {
	f := map[string]bool{}
	f[fmt.Sprintf("streams=%d", len(in.Streams))] = true
	for _, s := range in.Streams {
		if s.Replay {
			f["stream with replay"] = true
		} else {
			f["stream without replay"] = true
		}
	}
	for i, s := range in.Steps {
		r := out.Trace[i]
		f["op "+s.Op] = true
		if s.Op == spec.KVStepReplay && len(s.Frames) == 4 {
			f["reply layout 4 frames"] = true
		}
		if s.Op == spec.KVStepReplay && len(s.Frames) == 3 {
			f["reply layout 3 frames"] = true
		}
		if s.Op == spec.KVStepReplayFailed {
			f["replay_failed "+s.Reason] = true
		}
		if len(r.ReplayRequest) > 0 {
			f["replay requested"] = true
			if seqOf(r.ReplayRequest[1]) == 0 {
				f["replay requested from 0"] = true
			}
		}
		if r.ReplayDone {
			f["replay done"] = true
		}
		if r.ReplayDone && len(r.ReplayRequest) > 0 {
			f["drain starts another replay"] = true
		}
		if len(r.Lost) > 0 {
			f["lost run"] = true
		}
		if len(r.Duplicates) > 0 {
			f["duplicate seq"] = true
		}
		if r.Restart {
			f["restart "+s.Op] = true
		}
		if r.Held > 1 {
			f["held > 1"] = true
		}
		if len(r.Applied) > 1 {
			f["one step applies several batches"] = true
		}
		if r.Error != nil {
			f["step error "+r.Error.Code] = true
		}
		for _, e := range r.Errors {
			if e.Event < 0 {
				f["batch refused "+e.Error.Code] = true
			} else {
				f["event refused "+e.Error.Code] = true
			}
		}
		for _, sc := range r.Scores {
			if sc.Blocks > 0 {
				f["score > 0"] = true
			}
			if sc.Blocks > 1 {
				f["score > 1"] = true
			}
			if sc.Stale {
				f["score of a stale engine"] = true
			}
			if s.Tier == "CPU" && sc.Blocks > 0 {
				f["CPU score > 0"] = true
			}
			if s.Namespace != "" && sc.Blocks > 0 {
				f["LoRA score > 0"] = true
			}
		}
	}
	for _, st := range out.State.Streams {
		c := st.Counters
		for name, v := range map[string]uint64{"malformed": c.Malformed, "decode_errors": c.DecodeErrors, "engines_refused": c.EnginesRefused, "held_overflow": c.HeldOverflow, "replays_failed": c.ReplaysFailed, "gaps": c.Gaps} {
			if v > 0 {
				f["counter "+name] = true
			}
		}
		if st.Replaying {
			f["ends replaying"] = true
		}
	}
	for _, e := range out.State.Engines {
		c := e.Counters
		for name, v := range map[string]uint64{"orphan_stores": c.OrphanStores, "unknown_removals": c.UnknownRemovals, "unknown_events": c.UnknownEvents, "cleared": c.Cleared, "refused": c.Refused} {
			if v > 0 {
				f["engine counter "+name] = true
			}
		}
		if e.Stale {
			f["stale engine"] = true
		}
		if e.DPRank > 0 {
			f["engine rank > 0"] = true
		}
		if e.Model != "" {
			f["engine with a model name"] = true
		}
		for _, p := range e.Pools {
			f["pool tier "+p.Tier] = true
			f[fmt.Sprintf("page size %d", p.PageSize)] = true
			if p.Group != 0 {
				f["pool group != 0"] = true
			}
			for _, pg := range p.Pages {
				if pg.Resident == 0 {
					f["hole"] = true
				}
				if pg.Resident > 1 {
					f["residency > 1"] = true
				}
				if len(pg.Bindings) > 1 {
					f["two hashes on one page"] = true
				}
				if pg.Namespace != "" {
					f["namespace "+pg.Namespace] = true
				}
				if pg.Depth >= 3 {
					f["depth >= 3"] = true
				}
				for _, b := range pg.Bindings {
					if b.Count == 0 {
						f["binding at 0"] = true
					}
					if b.Hash >= 1<<63 {
						f["hash >= 2^63"] = true
					}
				}
			}
		}
	}
	if len(out.State.Engines) > 1 {
		f["several engines"] = true
	}
	return f
}

// TestKVEvFleetCoverage runs ref on the first 600 generated scripts and
// requires each behaviour the issue lists to occur in at least 1% of them
// (the table printed with -v shows how often).
func TestKVEvFleetCoverage(t *testing.T) {
	const n = 600
	sp := KVEvApply()
	counts := map[string]int{}
	steps := 0
	for i := range n {
		in := sp.Valid.Example(i)
		out, err := ref.KVEvApply(spec.DefaultLimits(), in)
		if err != nil {
			t.Fatalf("valid/%d: %v", i, err)
		}
		steps += len(in.Steps)
		for k := range kvFeatures(in, out) {
			counts[k]++
		}
	}
	var keys []string
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%d scripts, %.1f steps on average\n", n, float64(steps)/n)
	for _, k := range keys {
		fmt.Fprintf(&b, "%5d  %s\n", counts[k], k)
	}
	t.Log(b.String())
	want := []string{"stream with replay", "stream without replay", "streams=2", "streams=3",
		"op live", "op replay", "op replay_failed", "op restart", "op score",
		"reply layout 3 frames", "reply layout 4 frames", "replay_failed timeout", "replay_failed protocol", "replay_failed unavailable",
		"replay requested", "replay requested from 0", "replay done", "lost run", "duplicate seq", "restart live", "restart restart", "held > 1",
		"one step applies several batches", "step error frame_count", "step error seq_width", "step error replay_protocol",
		"batch refused engine_owner", "event refused token_count", "event refused block_size_change", "event refused hash_conflict",
		"score > 0", "score > 1", "score of a stale engine", "CPU score > 0", "LoRA score > 0",
		"counter held_overflow", "counter decode_errors", "counter engines_refused", "batch refused engine_budget", "engine counter orphan_stores", "engine counter unknown_removals",
		"engine counter unknown_events", "engine counter cleared", "stale engine", "engine rank > 0", "engine with a model name",
		"pool tier CPU", "pool group != 0", "hole", "residency > 1", "two hashes on one page", "namespace #3", "namespace sql-lora",
		"depth >= 3", "hash >= 2^63", "several engines", "page size 1", "page size 2", "page size 4"}
	for _, k := range want {
		if counts[k] < n/100 {
			t.Errorf("%q in %d of %d scripts", k, counts[k], n)
		}
	}
}
