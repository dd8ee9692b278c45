package equiv

import (
	"math"
	"slices"

	"github.com/kvtwin/kvtwin/spec"
)

// kvev.apply's boundary table: §5's worked examples and the corners of the
// cursor (§3, A7) and of the index (§2, A2-A10) a generated fleet reaches
// too rarely, each case named for what it pins. The cursor's and the
// index's stories are also told step by step, with both twins' output, in
// the scenario files testdata/kvev_*.txt.

// kvApplyBoundary is kvev.apply's boundary table, in this order: §5's
// worked examples, the cursor's corners, engines, pools, chains and
// copies, the hold queue's and one message's bounds, the scripts refused
// whole, and the reach classes' cases (kvev_apply_reach.go).
func kvApplyBoundary() []Case[spec.KVEvApplyInput] {
	return slices.Concat(kvWorkedExampleCases(), kvCursorCases(), kvEngineCases(), kvPoolCases(),
		kvChainAndCopyCases(), kvHoldAndMessageBoundCases(), kvScriptRejectCases(), kvReachCases())
}

// kvWorkedExampleCases are §5.1's payloads E1-E6 through the index, §5.2's
// topic and §5.4's cursor sequences.
func kvWorkedExampleCases() []Case[spec.KVEvApplyInput] {
	const v, s = "vllm-0", "sgl-0"
	e1req := kvScoreStep(1, 2, 3, 4, 128, 255, 256, 65536, 9)
	topic := "kv@10.0.0.7@llama"
	// §5.4: 0,1,2 applied; live 5 asks for 3; replay 3,4,5, sentinel; the
	// held live 5 is a duplicate.
	replay54 := append(kvChain(v, "", 0, 3), kvLive(v, "", 5, kvChainBatch(5)),
		kvReplayed(v, nil, 3, kvChainBatch(3)), kvReplayed(v, nil, 4, kvChainBatch(4)), kvReplayed(v, nil, 5, kvChainBatch(5)),
		kvSentinelStep(v, false), kvChainScore(6))
	restart54 := append(slices.Clone(replay54), kvLive(v, "", 2, kvChainBatch(2)),
		kvReplayed(v, nil, 0, kvChainBatch(0)), kvReplayed(v, nil, 1, kvChainBatch(1)), kvReplayed(v, nil, 2, kvChainBatch(2)),
		kvSentinelStep(v, false), kvChainScore(6))
	noReplay54 := append(kvChain(v, "", 0, 3), kvLive(v, "", 5, kvChainBatch(5)), kvChainScore(3))
	return []Case[spec.KVEvApplyInput]{
		{"5.1-e1-e2-score", kvScript(kvOne(v, false), kvLive(v, topic, 0, kvE1), e1req, kvLive(v, topic, 1, kvE2), e1req)},
		{"5.1-e3-restores-h2-under-h1", kvScript(kvOne(v, false), kvLive(v, topic, 0, kvE1), kvLive(v, topic, 1, kvE2), kvLive(v, topic, 2, kvE3), e1req)},
		{"5.1-e4-store-remove-clear-net-empty", kvScript(kvOne(v, false), kvLive(v, topic, 0, kvE4), kvScoreStep(1, 2, 3, 4))},
		{"5.1-e5-sglang-negative-hash-stream-rank", kvScript([]spec.KVEvStream{{Name: s, Rank: 2}}, kvLive(s, "", 0, kvE5), kvScoreStep(7, 8, 9))},
		{"5.1-e6-bin-hash-removes-the-int-stored-block", kvScript(kvOne(v, false),
			kvLive(v, topic, 0, kvB(0, kvSt([]uint64{0x18191a1b1c1d1e1f}, 0, toks(1, 2, 3, 4), 4, "GPU"))), kvLive(v, topic, 1, kvE6), kvScoreStep(1, 2, 3, 4))},
		{"5.2-topic-names-source-and-model", kvScript(kvOne(v, false), kvLive(v, topic, 0, kvE1))},
		{"5.4-replay-then-held-duplicate", kvScript(kvOne(v, true), replay54...)},
		{"5.4-seq-regression-restarts-and-replays-from-0", kvScript(kvOne(v, true), restart54...)},
		{"5.4-no-replay-gap-goes-stale", kvScript(kvOne(v, false), noReplay54...)},
	}
}

// kvCursorCases are the cursor's corners (§3.1, §3.2, A7): both reply
// layouts, a replay whose history expired or whose sentinel comes early,
// replays that fail or break, stray replies and replay failures, live
// messages held and drained or dropped past max_held, malformed frames
// during a replay, and operator restarts.
func kvCursorCases() []Case[spec.KVEvApplyInput] {
	const v = "vllm-0"
	topic := "kv@10.0.0.7@llama"
	withTopic := func(st ...spec.KVEvStep) []spec.KVEvStep { return st }
	held := func(n int) spec.KVEvConfig { return spec.KVEvConfig{MaxHeld: n} }
	return []Case[spec.KVEvApplyInput]{
		{"cold-start-replay-from-0-three-frame-layout", kvScript(kvOne(v, true), append(withTopic(kvLive(v, topic, 2, kvChainBatch(2)),
			kvReplayed(v, &topic, 0, kvChainBatch(0)), kvReplayed(v, &topic, 1, kvChainBatch(1)), kvReplayed(v, &topic, 2, kvChainBatch(2)), kvSentinelStep(v, true)), kvChainScore(3))...)},
		{"two-frame-replay-takes-the-trigger-topic", kvScript(kvOne(v, true), kvLive(v, topic, 1, kvChainBatch(1)),
			kvReplayed(v, nil, 0, kvChainBatch(0)), kvSentinelStep(v, false), kvChainScore(2))},
		{"replay-history-expired-first-seq-past-start", kvScript(kvOne(v, true), append(kvChain(v, "", 0, 2), kvLive(v, "", 6, kvChainBatch(6)),
			kvReplayed(v, nil, 4, kvChainBatch(4)), kvReplayed(v, nil, 5, kvChainBatch(5)), kvReplayed(v, nil, 6, kvChainBatch(6)), kvSentinelStep(v, false), kvChainScore(7))...)},
		{"replay-sentinel-before-the-trigger", kvScript(kvOne(v, true), append(kvChain(v, "", 0, 2), kvLive(v, "", 5, kvChainBatch(5)),
			kvReplayed(v, nil, 2, kvChainBatch(2)), kvSentinelStep(v, false), kvChainScore(6))...)},
		{"replay-failed-timeout", kvScript(kvOne(v, true), append(kvChain(v, "", 0, 2), kvLive(v, "", 4, kvChainBatch(4)), kvFailed(v, spec.ReplayReasonTimeout), kvChainScore(5))...)},
		{"replay-failed-unavailable", kvScript(kvOne(v, true), append(kvChain(v, "", 0, 2), kvLive(v, "", 4, kvChainBatch(4)),
			kvReplayed(v, nil, 2, kvChainBatch(2)), kvFailed(v, spec.ReplayReasonUnavailable), kvChainScore(5))...)},
		{"replay-malformed-then-failed-protocol", kvScript(kvOne(v, true), append(kvChain(v, "", 0, 2), kvLive(v, "", 4, kvChainBatch(4)),
			spec.KVEvStep{Op: spec.KVStepReplay, Stream: v, Frames: []spec.HexBytes{seqFrame(2), kvChainBatch(2)}},
			spec.KVEvStep{Op: spec.KVStepReplay, Stream: v, Frames: []spec.HexBytes{{}, seqFrame(2)[:7], kvChainBatch(2)}},
			kvFailed(v, spec.ReplayReasonProtocol), kvChainScore(5))...)},
		{"reply-while-not-replaying", kvScript(kvOne(v, true), kvLive(v, "", 0, kvChainBatch(0)), kvReplayed(v, nil, 1, kvChainBatch(1)), kvSentinelStep(v, true), kvChainScore(2))},
		{"live-during-replay-held-then-drained", kvScript(kvOne(v, true), kvLive(v, "", 0, kvChainBatch(0)), kvLive(v, "", 2, kvChainBatch(2)),
			kvLive(v, "", 3, kvChainBatch(3)), kvLive(v, "", 5, kvChainBatch(5)), kvReplayed(v, nil, 1, kvChainBatch(1)), kvSentinelStep(v, false),
			kvReplayed(v, nil, 4, kvChainBatch(4)), kvSentinelStep(v, false), kvChainScore(6))},
		{"held-overflow-at-max-held-2", spec.KVEvApplyInput{Config: held(2), Streams: kvOne(v, true), Steps: []spec.KVEvStep{
			kvLive(v, "", 0, kvChainBatch(0)), kvLive(v, "", 2, kvChainBatch(2)), kvLive(v, "", 3, kvChainBatch(3)), kvLive(v, "", 4, kvChainBatch(4)),
			kvLive(v, "", 5, kvChainBatch(5)), kvReplayed(v, nil, 1, kvChainBatch(1)), kvSentinelStep(v, false), kvChainScore(6)}}},
		{"malformed-live-during-replay-does-not-touch-the-cursor", kvScript(kvOne(v, true), kvLive(v, "", 1, kvChainBatch(1)),
			spec.KVEvStep{Op: spec.KVStepLive, Stream: v, Frames: []spec.HexBytes{{}, seqFrame(2)}},
			spec.KVEvStep{Op: spec.KVStepLive, Stream: v, Frames: []spec.HexBytes{{}, seqFrame(2)[:3], kvChainBatch(2)}},
			kvReplayed(v, nil, 0, kvChainBatch(0)), kvSentinelStep(v, false), kvLive(v, "", 2, kvChainBatch(2)), kvChainScore(3))},
		{"restart-step-while-replaying-drops-held", kvScript(kvOne(v, true), kvLive(v, "", 0, kvChainBatch(0)), kvLive(v, "", 3, kvChainBatch(3)),
			spec.KVEvStep{Op: spec.KVStepRestart, Stream: v}, kvReplayed(v, nil, 1, kvChainBatch(1)), kvLive(v, "", 0, kvChainBatch(0)), kvChainScore(4))},
		{"restart-step-then-first-message-zero", kvScript(kvOne(v, false), append(kvChain(v, "", 0, 3), spec.KVEvStep{Op: spec.KVStepRestart, Stream: v},
			kvLive(v, "", 0, kvChainBatch(0)), kvChainScore(3))...)},
		{"replay-failed-without-a-replay", kvScript(kvOne(v, true), kvLive(v, "", 0, kvChainBatch(0)), kvFailed(v, spec.ReplayReasonTimeout), kvLive(v, "", 1, kvChainBatch(1)), kvChainScore(2))},
		// A11: a removed stream's engines go with it; its publisher's next
		// batch is refused as an unknown stream's; added again, it starts new.
		{"remove-stream-drops-its-engines-then-add-starts-new", kvScript(kvOne(v, false), append(kvChain(v, "", 0, 3),
			spec.KVEvStep{Op: spec.KVStepRemoveStream, Stream: v}, kvChainScore(3), kvLive(v, "", 3, kvChainBatch(3)),
			spec.KVEvStep{Op: spec.KVStepAddStream, Config: &spec.KVEvStream{Name: v}}, kvLive(v, "", 4, kvChainBatch(0)), kvChainScore(3))...)},
		{"add-stream-refused-for-a-taken-name-or-no-share", spec.KVEvApplyInput{Config: spec.KVEvConfig{MaxEngines: 2}, Streams: kvOne(v, false), Steps: []spec.KVEvStep{
			{Op: spec.KVStepAddStream, Config: &spec.KVEvStream{Name: v, Rank: 1}},
			{Op: spec.KVStepAddStream, Config: &spec.KVEvStream{Name: "other"}}, kvLive(v, "", 0, kvChainBatch(0)), kvChainScore(1)}}},
	}
}

// kvEngineCases are engine identity and ownership across streams (A2) and
// the engine budget and shares (A5, A9).
func kvEngineCases() []Case[spec.KVEvApplyInput] {
	const v, s = "vllm-0", "sgl-0"
	two := []spec.KVEvStream{{Name: v, Replay: true}, {Name: s, Rank: 1}}
	twoPods := []spec.KVEvStream{{Name: v}, {Name: s}}
	return []Case[spec.KVEvApplyInput]{
		{"two-streams-interleaved-one-replays", kvScript(two, kvLive(v, "kv@a@m", 0, kvChainBatch(0)), kvLive(s, "kv@b@m", 0, kvE5),
			kvLive(v, "kv@a@m", 2, kvChainBatch(2)), kvLive(s, "kv@b@m", 1, kvB(-1, kvClr())), kvReplayed(v, nil, 1, kvChainBatch(1)),
			kvSentinelStep(v, false), kvChainScore(3))},
		{"engine-owner-two-streams-one-pod", kvScript(twoPods, kvLive(v, "kv@pod@m", 0, kvChainBatch(0)), kvLive(s, "kv@pod@m", 0, kvChainBatch(0)),
			kvLive(s, "kv@pod@m", 1, kvChainBatch(1)), kvChainScore(2))},
		{"empty-topics-keep-two-streams-apart", kvScript(twoPods, kvLive(v, "", 0, kvChainBatch(0)), kvLive(s, "", 0, kvChainBatch(0)), kvChainScore(1))},
		{"topic-forms-a2", kvScript([]spec.KVEvStream{{Name: "a"}, {Name: "b"}, {Name: "c"}},
			kvLive("a", "kv@x@m@n", 0, kvChainBatch(0)), kvLive("b", "kv@@m", 0, kvChainBatch(0)), kvLive("c", "kv@y@", 0, kvChainBatch(0)))},
		{"engine-budget-max-engines-1", spec.KVEvApplyInput{Config: spec.KVEvConfig{MaxEngines: 1}, Streams: kvOne(v, false), Steps: []spec.KVEvStep{
			kvLive(v, "", 0, kvChainBatch(0)), kvLive(v, "", 1, kvB(1, kvSt([]uint64{7}, 0, toks(1, 1), 2, "GPU"))),
			kvLive(v, "", 2, kvChainBatch(2)), kvChainScore(1)}}},
		{kvCaseFairShare, spec.KVEvApplyInput{Config: spec.KVEvConfig{MaxEngines: 4}, Streams: twoPods, Steps: kvRanks(v, s)}},
		{kvCaseShareRestart, spec.KVEvApplyInput{Config: spec.KVEvConfig{MaxEnginesPerStream: 1}, Streams: kvOne(v, false), Steps: []spec.KVEvStep{
			kvLive(v, "", 0, kvRankBatch(0)), kvLive(v, "", 1, kvRankBatch(1)), {Op: spec.KVStepRestart, Stream: v},
			kvLive(v, "", 0, kvRankBatch(1)), kvScoreStep(1, 2)}}},
	}
}

// kvPoolCases are the pools' rules (§2.3-§2.8): the token budget, DP ranks,
// refused events, holes and restores, bindings and residency counts,
// tokenless stores, groups and namespaces, page sizes, stale marking and
// what clears it, decode errors, unknown events and short prompts.
func kvPoolCases() []Case[spec.KVEvApplyInput] {
	const v, s = "vllm-0", "sgl-0"
	twoPods := []spec.KVEvStream{{Name: v}, {Name: s}}
	return []Case[spec.KVEvApplyInput]{
		{"pool-budget-refuses-a-store", spec.KVEvApplyInput{Config: spec.KVEvConfig{MaxTokensPerEngine: 4}, Streams: kvOne(v, false), Steps: []spec.KVEvStep{
			kvLive(v, "", 0, kvB(0, kvSt([]uint64{1, 2}, 0, toks(1, 1, 2, 2), 2, "GPU"), kvSt([]uint64{3}, 2, toks(3, 3), 2, "GPU"))), kvScoreStep(1, 1, 2, 2, 3, 3)}}},
		{"dp-rank-from-the-batch-and-nil-rank-from-the-stream", kvScript([]spec.KVEvStream{{Name: v, Rank: 3}},
			kvLive(v, "", 0, kvB(1, kvSt([]uint64{1}, 0, toks(1), 1, "GPU"))), kvLive(v, "", 1, kvB(-1, kvSt([]uint64{1}, 0, toks(1), 1, "GPU"))), kvScoreStep(1))},
		{"token-count-refused-the-rest-applies", kvScript(kvOne(v, false), kvLive(v, "", 0, kvB(0,
			kvSt([]uint64{kvHA}, 0, toks(1, 2), 2, "GPU"), kvSt([]uint64{kvHB}, kvHA, toks(3, 4, 5), 2, "GPU"), kvSt([]uint64{kvHC}, kvHA, toks(3, 4), 2, "GPU"))), kvScoreStep(1, 2, 3, 4))},
		{"block-size-change-refused", kvScript(kvOne(v, false), kvLive(v, "", 0, kvB(0,
			kvSt([]uint64{kvHA}, 0, toks(1, 2), 2, "GPU"), kvSt([]uint64{kvHB}, 0, toks(1, 2, 3, 4), 4, "GPU"), kvSt([]uint64{kvHC}, 0, toks(5, 6, 7, 8), 4, "CPU"))), kvScoreStep(1, 2), spec.KVEvStep{Op: spec.KVStepScore, Tokens: []int64{5, 6, 7, 8}, Tier: "cpu"})},
		{"hash-conflict-refused-whole", kvScript(kvOne(v, false), kvLive(v, "", 0, kvB(0,
			kvSt([]uint64{kvHA, kvHB}, 0, toks(1, 2, 3, 4), 2, "GPU"), kvSt([]uint64{kvHC, kvHA}, 0, toks(9, 9, 8, 8), 2, "GPU"))), kvScoreStep(9, 9), kvScoreStep(1, 2, 3, 4))},
		{"interior-eviction-hole-then-restore-reconnects", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvSt([]uint64{kvHA, kvHB, kvHC}, 0, toks(1, 1, 2, 2, 3, 3), 2, "GPU"))), kvLive(v, "", 1, kvB(0, kvRm("GPU", kvHB))),
			kvScoreStep(1, 1, 2, 2, 3, 3), kvLive(v, "", 2, kvB(0, kvSt([]uint64{kvHB}, kvHA, toks(2, 2), 2, "GPU"))), kvScoreStep(1, 1, 2, 2, 3, 3),
			kvLive(v, "", 3, kvB(0, kvRm("GPU", kvHC, kvHB))), kvScoreStep(1, 1, 2, 2, 3, 3))},
		{"two-hashes-bind-one-page", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvSt([]uint64{kvH1}, 0, toks(1, 2), 2, "GPU"), kvSt([]uint64{kvH2}, 0, toks(1, 2), 2, "GPU"))),
			kvLive(v, "", 1, kvB(0, kvRm("GPU", kvH1))), kvScoreStep(1, 2), kvLive(v, "", 2, kvB(0, kvRm("GPU", kvH2))), kvScoreStep(1, 2))},
		{"removal-never-below-zero", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvSt([]uint64{kvHA, kvHB}, 0, toks(1, 1, 2, 2), 2, "GPU"))),
			kvLive(v, "", 1, kvB(0, kvRm("GPU", kvHA, kvHA, 0xdead))), kvLive(v, "", 2, kvB(0, kvSt([]uint64{kvHA}, 0, toks(1, 1), 2, "GPU"))), kvScoreStep(1, 1, 2, 2))},
		{"duplicate-copies-count", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvSt([]uint64{kvHA, kvHB}, 0, toks(1, 1, 2, 2), 2, "GPU"), kvSt([]uint64{kvHA}, 0, toks(1, 1), 2, "GPU"))),
			kvLive(v, "", 1, kvB(0, kvRm("GPU", kvHA, kvHB))), kvScoreStep(1, 1, 2, 2))},
		{"tokenless-cpu-store-copies-the-path", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvSt([]uint64{kvHA, kvHB, kvHC}, 0, toks(1, 1, 2, 2, 3, 3), 2, "GPU"))),
			kvLive(v, "", 1, kvB(0, kvSt([]uint64{kvHC}, 0, nil, 2, "CPU"), kvSt([]uint64{0xbad}, 0, nil, 2, "cpu"))),
			spec.KVEvStep{Op: spec.KVStepScore, Tokens: []int64{1, 1, 2, 2, 3, 3}, Tier: "CPU"},
			kvLive(v, "", 2, kvB(0, kvSt([]uint64{kvHA}, 0, nil, 2, "CPU"))),
			spec.KVEvStep{Op: spec.KVStepScore, Tokens: []int64{1, 1, 2, 2, 3, 3}, Tier: "CPU", Exact: true},
			kvLive(v, "", 3, kvB(0, kvRm("CPU", kvHC))), spec.KVEvStep{Op: spec.KVStepScore, Tokens: []int64{1, 1, 2, 2, 3, 3}, Tier: "CPU"})},
		{"groups-and-namespaces-are-separate", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvStX([]uint64{1}, 0, toks(1, 2), 2, "GPU", 1, "", -1), kvStX([]uint64{2}, 0, toks(1, 2), 2, "GPU", 0, "sql-lora", 3),
				kvStX([]uint64{3}, 0, toks(1, 2), 2, "GPU", 0, "", 3), kvStX([]uint64{4}, 0, toks(1, 2), 2, "GPU", 0, "", -1))),
			kvScoreStep(1, 2), spec.KVEvStep{Op: spec.KVStepScore, Tokens: []int64{1, 2}, Group: 1},
			spec.KVEvStep{Op: spec.KVStepScore, Tokens: []int64{1, 2}, Namespace: "sql-lora"}, spec.KVEvStep{Op: spec.KVStepScore, Tokens: []int64{1, 2}, Namespace: "#3"},
			spec.KVEvStep{Op: spec.KVStepScore, Tokens: []int64{1, 2}, Namespace: "#4", Exact: true})},
		{"page-sizes-differ-per-engine", kvScript(twoPods, kvLive(v, "", 0, kvB(0, kvSt([]uint64{1, 2}, 0, toks(1, 2, 3, 4), 2, "GPU"))),
			kvLive(s, "", 0, kvB(0, kvSt([]uint64{1}, 0, toks(1, 2, 3, 4), 4, "GPU"))), kvScoreStep(1, 2, 3, 4, 5), kvScoreStep(1, 2, 3))},
		{"orphan-marks-stale-clear-unmarks", kvScript(kvOne(v, false), kvLive(v, "", 0, kvB(0, kvSt([]uint64{kvHB}, kvHA, toks(1, 1), 2, "GPU"))),
			kvScoreStep(1, 1), kvLive(v, "", 1, kvB(0, kvClr(), kvSt([]uint64{kvHA}, 0, toks(1, 1), 2, "GPU"))), kvScoreStep(1, 1))},
		{"decode-error-marks-stale-and-counts", kvScript(kvOne(v, false), kvLive(v, "", 0, kvChainBatch(0)),
			kvLive(v, "", 1, kvB(0, kvSt([]uint64{9}, 0, toks(9, 9), 2, "GPU"), mpA(mpS(spec.EventRemoved), mpA()))), kvLive(v, "", 2, kvB(0, kvClr())), kvChainScore(1))},
		{"unknown-events-skipped-and-counted", kvScript(kvOne(v, false), kvLive(v, "", 0, kvB(0, mpA(mpS("BlockEvicted"), mpU(1)), kvSt([]uint64{1}, 0, toks(1), 1, "GPU"))), kvScoreStep(1))},
		{"empty-prompt-and-short-prompt-score-zero", kvScript(kvOne(v, false), kvLive(v, "", 0, kvChainBatch(0)), kvScoreStep(), kvScoreStep(1))},
		{"seq-max-live-first-message-no-replay", kvScript(kvOne(v, false), kvLive(v, "", math.MaxUint64, kvChainBatch(0)), kvChainScore(1))},
	}
}

// kvChainAndCopyCases are A4's prefix chains across namespaces, §2.3 step
// 6's tokenless copies between tiers, a count undone by a refusal, and a
// page past fast's token slab.
func kvChainAndCopyCases() []Case[spec.KVEvApplyInput] {
	const v = "vllm-0"
	// One page of 4097 tokens (fast keeps pages of more than 4096 tokens
	// outside its token slab), and a prompt of it and one more token.
	var big []uint32
	var bigPrompt []int64
	for t := range uint32(4097) {
		big = append(big, t%1000)
		bigPrompt = append(bigPrompt, int64(t%1000))
	}
	bigPrompt = append(bigPrompt, 1)
	return []Case[spec.KVEvApplyInput]{
		// A4 as amended by A14: a page under a parent of another
		// namespace chains its namespace's seed over its parent's prefix
		// hash, then its tokens. [10] (LoRA 7 under the base model's [1])
		// and [11] (LoRA 7 under LoRA 3's [2]) have the same tokens 1 2 3 4
		// along their paths but different parents' hashes, so both hold
		// (A4's first form gave them one chain and refused [11]).
		{"lora-7-under-two-namespaces-two-chains", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvStX([]uint64{1}, 0, toks(1, 2), 2, "GPU", 0, "", -1), kvStX([]uint64{2}, 0, toks(1, 2), 2, "GPU", 0, "", 3),
				kvStX([]uint64{10}, 1, toks(3, 4), 2, "GPU", 0, "", 7), kvStX([]uint64{11}, 2, toks(3, 4), 2, "GPU", 0, "", 7))),
			spec.KVEvStep{Op: spec.KVStepScore, Tokens: []int64{1, 2, 3, 4}, Namespace: "#7"},
			spec.KVEvStep{Op: spec.KVStepScore, Tokens: []int64{1, 2}, Namespace: "#3"})},
		// §2.3 step 6: tokenless stores copy pages from another tier.
		{"tokenless-cpu-store-block-size-differs-from-gpu", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvSt([]uint64{kvHA, kvHB}, 0, toks(1, 1, 2, 2), 2, "GPU"))),
			kvLive(v, "", 1, kvB(0, kvSt([]uint64{kvHB}, 0, nil, 4, "CPU"))),
			spec.KVEvStep{Op: spec.KVStepScore, Tokens: []int64{1, 1, 2, 2}, Tier: "CPU"})},
		{"tokenless-cpu-store-of-a-hash-cpu-binds-to-other-tokens", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvSt([]uint64{kvHA}, 0, toks(1, 1), 2, "GPU"), kvSt([]uint64{kvHA}, 0, toks(5, 5), 2, "CPU"))),
			kvLive(v, "", 1, kvB(0, kvSt([]uint64{kvHA}, 0, nil, 2, "CPU"))),
			spec.KVEvStep{Op: spec.KVStepScore, Tokens: []int64{1, 1}, Tier: "CPU"}, spec.KVEvStep{Op: spec.KVStepScore, Tokens: []int64{5, 5}, Tier: "CPU"})},
		// The copy of GPU's [10] (LoRA 7's 3 4 under a base-model page)
		// and CPU's [11] (LoRA 7's 3 4 under a LoRA-3 page, the same
		// tokens along the path) have different chains (A14): the copy
		// holds beside [11] (A4's first form refused it).
		{"tokenless-copy-beside-a-cpu-page-of-the-same-tokens", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvStX([]uint64{1}, 0, toks(1, 2), 2, "GPU", 0, "", -1), kvStX([]uint64{10}, 1, toks(3, 4), 2, "GPU", 0, "", 7),
				kvStX([]uint64{2}, 0, toks(1, 2), 2, "CPU", 0, "", 3), kvStX([]uint64{11}, 2, toks(3, 4), 2, "CPU", 0, "", 7))),
			kvLive(v, "", 1, kvB(0, kvSt([]uint64{10}, 0, nil, 2, "CPU"))),
			spec.KVEvStep{Op: spec.KVStepScore, Tokens: []int64{1, 2, 3, 4}, Tier: "CPU", Namespace: "#7"})},
		// Two LoRA-7 pages under one base-model page: the second copy's
		// chain in namespace #7 starts from the copied parent's.
		{"tokenless-copy-two-lora-7-pages-under-a-base-page", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvStX([]uint64{1}, 0, toks(1, 2), 2, "GPU", 0, "", -1), kvStX([]uint64{10}, 1, toks(3, 4), 2, "GPU", 0, "", 7),
				kvStX([]uint64{11}, 1, toks(5, 6), 2, "GPU", 0, "", 7))),
			kvLive(v, "", 1, kvB(0, kvSt([]uint64{10, 11}, 0, nil, 2, "CPU"))),
			spec.KVEvStep{Op: spec.KVStepScore, Tokens: []int64{1, 2, 3, 4}, Tier: "CPU", Namespace: "#7"},
			spec.KVEvStep{Op: spec.KVStepScore, Tokens: []int64{1, 2, 5, 6}, Tier: "CPU", Namespace: "#7"})},
		// A tokenless copy of a page the CPU tier already holds on the same
		// path adds a copy (the removal then leaves one).
		{"tokenless-copy-again-counts", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvSt([]uint64{kvHA, kvHB}, 0, toks(1, 1, 2, 2), 2, "GPU"))),
			kvLive(v, "", 1, kvB(0, kvSt([]uint64{kvHB}, 0, nil, 2, "CPU"), kvSt([]uint64{kvHB}, 0, nil, 2, "CPU"))),
			kvLive(v, "", 2, kvB(0, kvRm("CPU", kvHB))), spec.KVEvStep{Op: spec.KVStepScore, Tokens: []int64{1, 1, 2, 2}, Tier: "CPU", Exact: true})},
		// A tokenless SSD store searches the other tiers, GPU first (none
		// here), then CPU before DISK: the hash is in both, CPU's page wins.
		{"tokenless-store-searches-non-gpu-tiers-by-name", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvSt([]uint64{kvHA}, 0, toks(7, 7), 2, "DISK"), kvSt([]uint64{kvHA}, 0, toks(1, 1), 2, "CPU"))),
			kvLive(v, "", 1, kvB(0, kvSt([]uint64{kvHA}, 0, nil, 2, "ssd"))),
			spec.KVEvStep{Op: spec.KVStepScore, Tokens: []int64{1, 1}, Tier: "SSD"}, spec.KVEvStep{Op: spec.KVStepScore, Tokens: []int64{7, 7}, Tier: "SSD"})},
		// [HA] is held and counted again, then [HB] conflicts (bound under
		// HA to 2 2): the refusal undoes HA's second copy, so the removal
		// of HA evicts it.
		{"restore-then-refused-undoes-the-count", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvSt([]uint64{kvHA, kvHB}, 0, toks(1, 1, 2, 2), 2, "GPU"))),
			kvLive(v, "", 1, kvB(0, kvSt([]uint64{kvHA, kvHB}, 0, toks(1, 1, 9, 9), 2, "GPU"))),
			kvLive(v, "", 2, kvB(0, kvRm("GPU", kvHA))), kvScoreStep(1, 1, 2, 2))},
		// A14: a tokenless update creates at most KVEvMaxCopyWalk (64)
		// pages for one hash, the named page and its ancestors without a
		// copy in the tier. GPU holds a chain of 65 one-token pages
		// (hashes 1..65, tokens 1..65). The CPU copy of page 64 creates
		// pages 1..64 (63 holes, page 64 bound): the bound exactly.
		{"tokenless-copy-of-64-pages-for-one-hash", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvSt(kvSeq(1, 65), 0, kvSeqToks(1, 65), 1, "GPU"))),
			kvLive(v, "", 1, kvB(0, kvSt([]uint64{64}, 0, nil, 1, "CPU"))),
			spec.KVEvStep{Op: spec.KVStepScore, Tokens: kvSeqPrompt(1, 64), Tier: "CPU", Exact: true})},
		// The copy of page 65 would create 65 pages: the hash is an orphan
		// (orphan_stores 1, no CPU pool, the engine not stale). Once page
		// 1 has its CPU copy, page 65 needs 64 pages (65 down to 2) and is
		// copied.
		{"tokenless-copy-of-65-pages-is-an-orphan", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvSt(kvSeq(1, 65), 0, kvSeqToks(1, 65), 1, "GPU"))),
			kvLive(v, "", 1, kvB(0, kvSt([]uint64{65}, 0, nil, 1, "CPU"))),
			kvLive(v, "", 2, kvB(0, kvSt([]uint64{1, 65}, 0, nil, 1, "CPU"))),
			spec.KVEvStep{Op: spec.KVStepScore, Tokens: kvSeqPrompt(1, 65), Tier: "CPU", Exact: true})},
		{"store-block-size-4097", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvSt([]uint64{1}, 0, big, 4097, "GPU"))), kvScoreStep(bigPrompt...))},
	}
}

// kvHoldAndMessageBoundCases are a replay reply delivered twice, A7's
// byte bound on the hold queue and A10's bounds of one message.
func kvHoldAndMessageBoundCases() []Case[spec.KVEvApplyInput] {
	const v = "vllm-0"
	return []Case[spec.KVEvApplyInput]{
		// The same reply twice: the second is below next, a duplicate.
		{"replay-reply-delivered-twice", kvScript(kvOne(v, true), kvLive(v, "", 0, kvChainBatch(0)), kvLive(v, "", 2, kvChainBatch(2)),
			kvReplayed(v, nil, 1, kvChainBatch(1)), kvReplayed(v, nil, 1, kvChainBatch(1)), kvSentinelStep(v, false), kvChainScore(3))},
		// A7's byte bound: [topic "", seq, 92 00 90] is 0 + 8 + 3 = 11
		// bytes; under max_held_bytes 22 the trigger (2) and 3 fill the
		// queue exactly, 4 is dropped (held_overflow, stale at 4), and the
		// replay then fills 1; the drain applies 2 and 3.
		{"a7-held-bytes-22-holds-two-11-byte-messages", spec.KVEvApplyInput{Config: spec.KVEvConfig{MaxHeldBytes: 22}, Streams: kvOne(v, true), Steps: []spec.KVEvStep{
			kvLive(v, "", 0, kvEmpty), kvLive(v, "", 2, kvEmpty), kvLive(v, "", 3, kvEmpty), kvLive(v, "", 4, kvEmpty),
			kvReplayed(v, nil, 1, kvEmpty), kvSentinelStep(v, false), kvLive(v, "", 5, kvEmpty)}}},
		// A trigger past max_held_bytes is held all the same; the next
		// live message is not.
		{"a7-trigger-past-max-held-bytes-is-held", spec.KVEvApplyInput{Config: spec.KVEvConfig{MaxHeldBytes: 1}, Streams: kvOne(v, true), Steps: []spec.KVEvStep{
			kvLive(v, "", 1, kvChainBatch(1)), kvLive(v, "", 2, kvChainBatch(2)), kvReplayed(v, nil, 0, kvChainBatch(0)), kvSentinelStep(v, false), kvChainScore(3)}}},
		// A10's max_events 2: a batch of 3 events is refused whole (a
		// decode error, stale at its seq), the next one of 2 applies.
		{"a10-max-events-2-refuses-a-batch-of-3", spec.KVEvApplyInput{Config: spec.KVEvConfig{MaxEvents: 2}, Streams: kvOne(v, false), Steps: []spec.KVEvStep{
			kvLive(v, "", 0, kvB(0, kvSt([]uint64{kvHA}, 0, toks(1, 1), 2, "GPU"), kvClr(), kvSt([]uint64{kvHB}, 0, toks(2, 2), 2, "GPU"))),
			kvLive(v, "", 1, kvB(0, kvSt([]uint64{kvHA}, 0, toks(1, 1), 2, "GPU"), kvSt([]uint64{kvHB}, kvHA, toks(2, 2), 2, "GPU"))),
			kvScoreStep(1, 1, 2, 2)}}},
		// A10's decoded cost at max_decode_ratio 1: 258 × [""] (530 bytes,
		// 66,048 <= 66,066) applies as 258 unknown events, 259 (532 bytes,
		// 66,304 > 66,068) is refused whole.
		{"a10-ratio-1-258-events-apply-259-refused", spec.KVEvApplyInput{Config: spec.KVEvConfig{MaxDecodeRatio: 1}, Streams: kvOne(v, false), Steps: []spec.KVEvStep{
			kvLive(v, "", 0, kvEmptyTags(0, 258, "", nil)), kvLive(v, "", 1, kvEmptyTags(0, 259, "", nil))}}},
	}
}

// kvScriptRejectCases are scripts §2.10 A1 refuses whole (kvApplyRejects).
func kvScriptRejectCases() []Case[spec.KVEvApplyInput] {
	const v, s = "vllm-0", "sgl-0"
	held := func(n int) spec.KVEvConfig { return spec.KVEvConfig{MaxHeld: n} }
	twoPods := []spec.KVEvStream{{Name: v}, {Name: s}}
	return []Case[spec.KVEvApplyInput]{
		{"script-unknown-op", kvScript(kvOne(v, false), spec.KVEvStep{Op: "snapshot", Stream: v})},
		{"script-unknown-stream", kvScript(kvOne(v, false), kvLive("vllm-9", "", 0, kvE2))},
		{"script-bad-replay-failed-reason", kvScript(kvOne(v, true), kvFailed(v, "eof"))},
		{"script-score-token-2-pow-32", kvScript(kvOne(v, false), kvScoreStep(1, 1<<32))},
		{"script-max-held-past-the-cap", spec.KVEvApplyInput{Config: held(spec.MaxKVEvHeld + 1), Streams: kvOne(v, false)}},
		{"script-max-held-bytes-past-the-cap", spec.KVEvApplyInput{Config: spec.KVEvConfig{MaxHeldBytes: spec.MaxKVHeldBytes + 1}, Streams: kvOne(v, false)}},
		{"script-max-events-negative", spec.KVEvApplyInput{Config: spec.KVEvConfig{MaxEvents: -1}, Streams: kvOne(v, false)}},
		{"script-max-decode-ratio-past-the-cap", spec.KVEvApplyInput{Config: spec.KVEvConfig{MaxDecodeRatio: spec.MaxKVDecodeRatio + 1}, Streams: kvOne(v, false)}},
		{"script-duplicate-stream-name", kvScript([]spec.KVEvStream{{Name: v}, {Name: v}})},
		{"script-negative-stream-rank", kvScript([]spec.KVEvStream{{Name: v, Rank: -1}})},
		{"script-more-streams-than-max-engines", spec.KVEvApplyInput{Config: spec.KVEvConfig{MaxEngines: 1}, Streams: twoPods}},
		{"script-engine-share-past-the-fair-share", spec.KVEvApplyInput{Config: spec.KVEvConfig{MaxEngines: 8, MaxEnginesPerStream: 3},
			Streams: []spec.KVEvStream{{Name: "a"}, {Name: "b"}, {Name: "c"}}}},
		{"script-max-engines-per-stream-past-the-cap", spec.KVEvApplyInput{Config: spec.KVEvConfig{MaxEnginesPerStream: spec.MaxKVEvEngines + 1}, Streams: kvOne(v, false)}},
	}
}

// The engine-share cases of the boundary table (§2.10 A2, A5, A9), whose
// outcome TestKVEvEngineShareCasesGiveTheSpecsNumbersOnBothTwins pins by
// hand.
const (
	// kvCaseFairShare: max_engines 4 over two streams is a share of 2
	// each; the first stream sends ranks 0-3, the second then 0-2.
	kvCaseFairShare = "engine-share-fair-share-of-max-engines-4-over-two-streams"
	// kvCaseShareRestart: a share of 1; rank 1 is refused until the
	// stream's restart drops rank 0.
	kvCaseShareRestart = "engine-share-of-1-given-back-by-a-restart"
)

// kvRankBatch is a batch of DP rank r storing one page [1, 2] under hash
// 0x10+r.
func kvRankBatch(r int64) []byte {
	return kvB(r, kvSt([]uint64{0x10 + uint64(r)}, 0, toks(1, 2), 2, "GPU"))
}

// kvRanks is kvCaseFairShare's steps: stream a sends ranks 0-3 (seqs
// 0-3), stream b ranks 0-2 (seqs 0-2), then a score of [1, 2].
func kvRanks(a, b string) []spec.KVEvStep {
	var st []spec.KVEvStep
	for r := range int64(4) {
		st = append(st, kvLive(a, "", uint64(r), kvRankBatch(r)))
	}
	for r := range int64(3) {
		st = append(st, kvLive(b, "", uint64(r), kvRankBatch(r)))
	}
	return append(st, kvScoreStep(1, 2))
}

// kvSeq is the hashes from, from+1, …, to.
func kvSeq(from, to uint64) []uint64 {
	var out []uint64
	for h := from; h <= to; h++ {
		out = append(out, h)
	}
	return out
}

// kvSeqToks is the tokens from, from+1, …, to.
func kvSeqToks(from, to uint32) []uint32 {
	var out []uint32
	for t := from; t <= to; t++ {
		out = append(out, t)
	}
	return out
}

// kvSeqPrompt is the prompt from, from+1, …, to.
func kvSeqPrompt(from, to int64) []int64 {
	var out []int64
	for t := from; t <= to; t++ {
		out = append(out, t)
	}
	return out
}
