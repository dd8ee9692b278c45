package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// KVEvApply registers kvev.apply (docs/spec/kv-events.md §2-§3): what a
// subscriber observed on its sockets, applied to the per-engine pools,
// with the trace and the final index.
func KVEvApply() *Op[spec.KVEvApplyInput, spec.KVEvApplyOutput] {
	return &Op[spec.KVEvApplyInput, spec.KVEvApplyOutput]{
		OpName:  "kvev.apply",
		SpecRef: "kv-events.md §2",
		Summary: "event-fed prefix index: live and replayed KV-event messages through the per-stream cursor into per-engine pools; scores, stale flags, digest",
		Ref:     ref.KVEvApply,
		Fast:    fast.KVEvApply,
		Work:    Cost{PerInputByte: 160, PerOutputByte: 8, Fixed: 4 << 20},
		// §5.1 E1 as seq 0, E2 as seq 1, then the score of §5.1.
		Sample: spec.KVEvApplyInput{
			Streams: []spec.KVEvStream{{Name: "vllm-0"}},
			Steps: []spec.KVEvStep{
				{Op: spec.KVStepLive, Stream: "vllm-0", Frames: []spec.HexBytes{[]byte("kv@10.0.0.7@llama"), {0, 0, 0, 0, 0, 0, 0, 0},
					mustHex("92 cb41da3054981000 00 91 96 ab 426c6f636b53746f726564 92 cf1111111111111111 cff0e1d2c3b4a59687 c0 98 01 02 03 04 cc80 ccff cd0100 ce00010000 04 c0")}},
				{Op: spec.KVStepScore, Tokens: []int64{1, 2, 3, 4, 128, 255, 256, 65536, 9}},
				{Op: spec.KVStepLive, Stream: "vllm-0", Frames: []spec.HexBytes{[]byte("kv@10.0.0.7@llama"), {0, 0, 0, 0, 0, 0, 0, 1},
					mustHex("93 cb41da3054981000 00 91 93 ac 426c6f636b52656d6f766564 91 cff0e1d2c3b4a59687 a3 475055 00")}},
				{Op: spec.KVStepScore, Tokens: []int64{1, 2, 3, 4, 128, 255, 256, 65536, 9}},
			},
		},
		Shapes: []Shape[spec.KVEvApplyInput]{
			// Ingest: 64 requests of 64 16-token blocks stored 8 blocks a
			// batch, each request removed four requests later (a bounded
			// cache), 4,096 blocks through decode, cursor and pools.
			{Name: "ingest-4096-blocks-8-per-batch-with-removals", Make: func() spec.KVEvApplyInput { return kvevIngestScript(64, 64, 8, 4) }},
			// Scores: one engine holding a 16K-token prompt, scored 64 times.
			{Name: "score-16K-token-prompt-64-times", Make: func() spec.KVEvApplyInput { return kvevScoreScript(1024, 64) }},
		},
	}
}

// kvevIngestScript stores requests requests of blocks 16-token blocks,
// perBatch blocks a live message, and removes each request lag requests
// later.
func kvevIngestScript(requests, blocks, perBatch, lag int) spec.KVEvApplyInput {
	in := spec.KVEvApplyInput{Streams: []spec.KVEvStream{{Name: "vllm-0"}}}
	var seq uint64
	live := func(p []byte) {
		in.Steps = append(in.Steps, spec.KVEvStep{Op: spec.KVStepLive, Stream: "vllm-0", Frames: kvevFrames(seq, p)})
		seq++
	}
	hash := func(req, blk int) uint64 { return uint64(req)<<32 | uint64(blk) }
	for req := range requests {
		for m := 0; m < blocks; m += perBatch {
			var parent *uint64
			if m > 0 {
				parent = new(hash(req, m-1))
			}
			live(kvevStored(hash(req, m), parent, perBatch, 16, uint32(req)))
		}
		if req >= lag {
			live(kvevRemoved(hash(req-lag, 0), blocks))
		}
	}
	return in
}

// kvevScoreScript stores one blocks-block prompt and scores it times times.
func kvevScoreScript(blocks, times int) spec.KVEvApplyInput {
	p := kvevStored(1, nil, blocks, 16, 7)
	in := spec.KVEvApplyInput{Streams: []spec.KVEvStream{{Name: "vllm-0"}},
		Steps: []spec.KVEvStep{{Op: spec.KVStepLive, Stream: "vllm-0", Frames: kvevFrames(0, p)}}}
	prompt := make([]int64, blocks*16)
	for i := range prompt {
		prompt[i] = int64((uint32(i)*2654435761 + 7) % 151936)
	}
	for range times {
		in.Steps = append(in.Steps, spec.KVEvStep{Op: spec.KVStepScore, Tokens: prompt})
	}
	return in
}
