package equiv

import (
	"math"
	"slices"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/spec"
)

// KVEvApply is the differential spec of kvev.apply (docs/spec/kv-events.md
// §2-§3, §2.10). Its valid generator is a simulated fleet (kvFleet): 1–3
// publisher streams, each an engine model that caches chained blocks the
// way vLLM (multi-block runs, interior evictions, duplicate copies,
// tokenless CPU stores, groups, LoRA namespaces) or SGLang (one page per
// store, leaf evictions, signed hashes) does, and a publisher model with a
// replay buffer, dropped and never-sent seqs, restarts and malformed
// frames; the subscriber's side is a cursor model (kvCursor) of §3.1 and
// A7 that knows when the index asks for a replay and answers it in both
// reply layouts, fails it, or breaks it. The step-by-step comparison of
// the twins is TestKVEvTwinsAgreeAfterEveryMessage.
//
// Its parts are in files by concept: the generator in kvev_fleet.go,
// kvev_engine.go and kvev_cursor.go, the tables in kvev_script.go and
// kvev_apply_boundary.go, the properties in kvev_apply_props.go and
// kvev_apply_invariants.go; the scenario files testdata/kvev_*.txt tell
// the cursor's and the index's stories step by step on both twins.
func KVEvApply() *Spec[spec.KVEvApplyInput, spec.KVEvApplyOutput] {
	valid, invalid := kvApplyGenerators(Coverage{})
	return &Spec[spec.KVEvApplyInput, spec.KVEvApplyOutput]{
		Op:          catalog.KVEvApply(),
		Valid:       valid,
		Invalid:     invalid,
		Vocabulary:  kvApplyVocabulary(),
		Boundary:    kvApplyBoundary(),
		Regressions: kvApplyRegressions(),
		Rejects:     kvApplyRejects,
		Script:      stepsOf(func(in *spec.KVEvApplyInput) *[]spec.KVEvStep { return &in.Steps }),
		Props: []Prop[spec.KVEvApplyInput, spec.KVEvApplyOutput]{
			{"state-invariants", kvStateInvariants},
			{"digest-is-a8", kvDigestIsA8},
			{"cursor-follows-3.1", kvCursorFollows},
			{"applied-at-most-once", kvAppliedAtMostOnce},
			{"score-stops-at-holes", kvScoreWalksState},
			{"refused-event-is-atomic", kvRefusedEventAtomic},
			{"decode-error-changes-no-pool", kvDecodeErrorChangesNothing},
			{"replayed-batch-twice-is-duplicate", kvReplayTwiceIsDuplicate},
			{"digest-independent-of-interleaving", kvDigestInterleaving},
			{"streams-are-independent", kvStreamsAreIndependent},
			{"hashed-score-equals-exact", kvHashedScoreIsExact},
		},
	}
}

// kvHashedScore is kvev.apply's option for scores by prefix hashes: a
// score step without exact.
const kvHashedScore = "hashed_score"

// kvApplyVocabulary is what an adapter may declare part of: the score
// steps and hashed scores. The cursor's four step kinds are required: the
// generator's publishers answer the replays the cursor asks for, so a
// stream without one of them is not a stream the spec describes.
func kvApplyVocabulary() *Vocabulary[spec.KVEvApplyInput] {
	kinds := []string{spec.KVStepLive, spec.KVStepReplay, spec.KVStepReplayFailed, spec.KVStepRestart, spec.KVStepScore,
		spec.KVStepAddStream, spec.KVStepRemoveStream}
	return &Vocabulary[spec.KVEvApplyInput]{
		Steps:    kinds,
		Required: kinds[:4],
		Options:  []Option{{Name: kvHashedScore, About: "score steps without exact (prefix-hash lookups, §2.8); off, every score is exact"}},
		Uses: func(in spec.KVEvApplyInput) (steps, options []string) {
			hashed := false
			steps = stepKinds(kinds, func(yield func(string) bool) {
				for _, s := range in.Steps {
					hashed = hashed || s.Op == spec.KVStepScore && !s.Exact
					if !yield(s.Op) {
						return
					}
				}
			})
			if hashed {
				options = []string{kvHashedScore}
			}
			return steps, options
		},
		Generate: kvApplyGenerators,
	}
}

// kvApplyGenerators are kvev.apply's generators under c.
func kvApplyGenerators(c Coverage) (*rapid.Generator[spec.KVEvApplyInput], *rapid.Generator[Bad[spec.KVEvApplyInput]]) {
	return rapid.Custom(func(t *rapid.T) spec.KVEvApplyInput { return kvEvFleet(t, 40, c) }),
		rapid.Custom(func(t *rapid.T) Bad[spec.KVEvApplyInput] { return kvApplyInvalid(t, c) })
}

// kvApplyInvalid draws a fleet script and breaks it once in a way §2.10 A1
// refuses whole: an unknown op, a stream not configured, a bad replay
// failure reason, a score token outside [0, 2^32), a bad config, a bad
// stream list. Under a coverage without score steps, the bad score token
// is an unknown op instead.
func kvApplyInvalid(t *rapid.T, c Coverage) Bad[spec.KVEvApplyInput] {
	in := kvEvFleet(t, 12, c)
	at := rapid.IntRange(0, len(in.Steps)).Draw(t, "at")
	insert := func(s spec.KVEvStep) {
		in.Steps = slices.Insert(slices.Clone(in.Steps), at, s)
	}
	name := in.Streams[0].Name
	violation := uniform(t, 7, "violation")
	if violation == 3 && !c.Step(spec.KVStepScore) {
		violation = 0
	}
	switch violation {
	case 0:
		insert(spec.KVEvStep{Op: rapid.SampledFrom([]string{"", "Live", "snapshot", "replay_request", "scores"}).Draw(t, "bad_op"), Stream: name})
		return Bad[spec.KVEvApplyInput]{in, spec.ErrBadEnum}
	case 1:
		s := spec.KVEvStep{Op: rapid.SampledFrom([]string{spec.KVStepLive, spec.KVStepReplay, spec.KVStepReplayFailed, spec.KVStepRestart}).Draw(t, "op"),
			Stream: rapid.SampledFrom([]string{"", "vllm-9", "VLLM-0"}).Draw(t, "bad_stream"), Reason: spec.ReplayReasonTimeout}
		if s.Op == spec.KVStepLive {
			s.Frames = kvMsg("t", 0, kvE2).Frames
		}
		insert(s)
		return Bad[spec.KVEvApplyInput]{in, spec.ErrUnknownStream}
	case 2:
		insert(spec.KVEvStep{Op: spec.KVStepReplayFailed, Stream: name, Reason: rapid.SampledFrom([]string{"", "Timeout", "eof"}).Draw(t, "bad_reason")})
		return Bad[spec.KVEvApplyInput]{in, spec.ErrBadEnum}
	case 3:
		toks := []int64{1, 2}
		toks = slices.Insert(toks, rapid.IntRange(0, 2).Draw(t, "bad_tok_at"), rapid.SampledFrom([]int64{-1, 1 << 32, math.MaxInt64, math.MinInt64}).Draw(t, "bad_tok"))
		insert(spec.KVEvStep{Op: spec.KVStepScore, Tokens: toks, Exact: !c.Option(kvHashedScore)})
		return Bad[spec.KVEvApplyInput]{in, spec.ErrTokenRange}
	case 4:
		bad := rapid.SampledFrom([]int64{-1, -1 << 40}).Draw(t, "negative")
		n := len(in.Streams)
		switch rapid.IntRange(0, 15).Draw(t, "bad_config") {
		case 0:
			in.Config.MaxEngines = int(bad)
		case 1:
			in.Config.MaxEngines = spec.MaxKVEvEngines + 1
		case 2:
			in.Config.MaxTokensPerEngine = bad
		case 3:
			in.Config.MaxTokensPerEngine = spec.MaxKVEvTokensPerEngine + 1
		case 4:
			in.Config.MaxHeld = int(bad)
		case 5:
			in.Config.MaxHeld = spec.MaxKVEvHeld + 1
		case 6:
			in.Config.MaxEvents = int(bad)
		case 7:
			in.Config.MaxEvents = spec.MaxKVEvents + 1
		case 8:
			in.Config.MaxDecodeRatio = bad
		case 9:
			in.Config.MaxDecodeRatio = spec.MaxKVDecodeRatio + 1
		case 10:
			in.Config.MaxHeldBytes = bad
		case 11:
			in.Config.MaxHeldBytes = spec.MaxKVHeldBytes + 1
		case 12:
			in.Config.MaxEnginesPerStream = int(bad)
		case 13:
			in.Config.MaxEnginesPerStream = spec.MaxKVEvEngines + 1
		case 14:
			// A share of 3 past floor((3n-1) / n) = 2 (A5).
			in.Config.MaxEngines, in.Config.MaxEnginesPerStream = 3*n-1, 3
		default:
			// More streams than engines: some stream's share would be 0 (A5).
			in.Streams = append(slices.Clone(in.Streams), spec.KVEvStream{Name: "extra"})
			in.Config.MaxEngines, in.Config.MaxEnginesPerStream = n, 0
		}
		return Bad[spec.KVEvApplyInput]{in, spec.ErrTooLarge}
	case 5:
		in.Streams = slices.Clone(in.Streams)
		i := rapid.IntRange(0, len(in.Streams)-1).Draw(t, "bad_stream_at")
		in.Streams[i].Rank = rapid.SampledFrom([]int64{-1, math.MinInt64}).Draw(t, "bad_rank")
		return Bad[spec.KVEvApplyInput]{in, spec.ErrNegative}
	}
	in.Streams = slices.Clone(in.Streams)
	if rapid.Bool().Draw(t, "empty_name") || len(in.Streams) == 1 {
		in.Streams = append(in.Streams, spec.KVEvStream{Name: ""})
	} else {
		in.Streams[len(in.Streams)-1].Name = in.Streams[0].Name
	}
	return Bad[spec.KVEvApplyInput]{in, spec.ErrBadEnum}
}

var kvApplyRejects = map[string]*spec.Sentinel{
	"script-unknown-op":                          spec.ErrBadEnum,
	"script-unknown-stream":                      spec.ErrUnknownStream,
	"script-bad-replay-failed-reason":            spec.ErrBadEnum,
	"script-score-token-2-pow-32":                spec.ErrTokenRange,
	"script-max-held-past-the-cap":               spec.ErrTooLarge,
	"script-duplicate-stream-name":               spec.ErrBadEnum,
	"script-negative-stream-rank":                spec.ErrNegative,
	"script-more-streams-than-max-engines":       spec.ErrTooLarge,
	"script-engine-share-past-the-fair-share":    spec.ErrTooLarge,
	"script-max-engines-per-stream-past-the-cap": spec.ErrTooLarge,
	"script-max-held-bytes-past-the-cap":         spec.ErrTooLarge,
	"script-max-events-negative":                 spec.ErrTooLarge,
	"script-max-decode-ratio-past-the-cap":       spec.ErrTooLarge,
}

// kvApplyRegressions are the bug zoo's minimal scenarios, one per mutant
// (equiv/mutants/kvev_apply.go), each narrated: what the historic
// consumer did and what a router reading its index would have seen.
func kvApplyRegressions() []Case[spec.KVEvApplyInput] {
	const v = "vllm-0"
	return []Case[spec.KVEvApplyInput]{
		// §2.3 step 3 (llm-d #372 and its later fallback): the consumer
		// restarted without replay and its first message stores [5 6 7 8]
		// under a parent it never saw. llm-d attached the block at the
		// root, so a prompt starting 5 6 7 8 scored 1 block on an engine
		// that holds it only after some unknown prefix — a false prefix
		// hit, served as fresh. Fixed: an orphan, score 0, engine stale.
		{"orphan-store-at-root", kvScript(kvOne(v, false),
			kvLive(v, "kv@pod-a@llama", 0, kvB(0, kvSt([]uint64{kvH2}, kvH1, toks(5, 6, 7, 8), 4, "GPU"))),
			kvScoreStep(5, 6, 7, 8))},
		// §3.2 (AIBrix's client, Mooncake's conductor before its PR #3616):
		// on a cold start at seq 3 the subscriber sent the bare 8-byte start
		// without the empty delimiter frame; vLLM's ROUTER saw 2 frames and
		// never answered, the subscriber timed out, and the router's index
		// lacked batches 0-2 for as long as the engine lived. Fixed: the
		// request is [empty, start].
		{"replay-without-delimiter", kvScript(kvOne(v, true),
			kvLive(v, "", 3, kvChainBatch(3)), kvFailed(v, spec.ReplayReasonTimeout), kvChainScore(4))},
		// §3.1, §3.3: batch 1 (say, the removal of block 1 1) was dropped
		// by the PUB socket; the consumer logged the gap and went on, so the
		// router kept sending prompts 1 1 … to the engine on an index it
		// knew to be incomplete, with no stale flag. Fixed: [1, 2) is lost
		// and the engine stale (score 1, stale).
		{"gaps-only-logged", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvChainBatch(0)), kvLive(v, "", 2, kvB(0, kvSt([]uint64{0x300}, 0, toks(3, 3), 2, "GPU"))), kvChainScore(1))},
		// §2.6 (llm-d only logged AllBlocksCleared): after vLLM's
		// reset_prefix_cache the index kept the engine's blocks, and the
		// router sent a prompt 1 1 to an engine that had dropped them.
		// Fixed: the clear empties the engine, score 0.
		{"all-blocks-cleared-ignored", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvChainBatch(0)), kvLive(v, "", 1, kvB(0, kvClr())), kvChainScore(1))},
		// §2.5: two requests filled the same block (hash HA) on their own
		// and vLLM announced both copies, then evicted one. A set-based
		// index dropped the block, so the router stopped sending the
		// prefix 1 1 to the engine that still holds the other copy. Fixed:
		// counts 2 then 1, score 1.
		{"residency-as-set", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvSt([]uint64{kvHA}, 0, toks(1, 1), 2, "GPU"))),
			kvLive(v, "", 1, kvB(0, kvSt([]uint64{kvHA}, 0, toks(1, 1), 2, "GPU"))),
			kvLive(v, "", 2, kvB(0, kvRm("GPU", kvHA))), kvScoreStep(1, 1))},
		// §1.5 through the index: an SGLang stream (E5, hash -1) fed to a
		// u64-only decoder refused every batch, so the router saw the
		// SGLang engine with no blocks (and stale). Fixed: score 1.
		{"unsigned-hashes-only-index", kvScript([]spec.KVEvStream{{Name: "sgl-0"}},
			kvLive("sgl-0", "", 0, kvE5), kvScoreStep(7, 8))},
		// §1.5 through the index: vLLM's int hashes >= 2^63 (E1's H2) fed
		// to an i64-only decoder: the batch refused, the engine empty and
		// stale, score 0 instead of 2.
		{"signed-hashes-only-index", kvScript(kvOne(v, false),
			kvLive(v, "kv@10.0.0.7@llama", 0, kvE1), kvScoreStep(1, 2, 3, 4, 128, 255, 256, 65536))},
	}
}
