package fast

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// Differential smoke check: the fast and reference twins of kvev.apply on
// the same hand-built scripts, compared as canonical JSON. The richer
// randomized suite is equiv's.

func kxRefReady(t *testing.T) {
	t.Helper()
	if _, err := ref.NewKVEvIndex(spec.KVEvConfig{}, nil); err != nil {
		t.Skipf("reference index not ready: %v", err)
	}
}

type kxOut struct {
	Out spec.KVEvApplyOutput `json:"out"`
	Err *spec.ErrorObject    `json:"err,omitempty"`
}

func kxRunTwin(fn func(spec.Limits, spec.KVEvApplyInput) (spec.KVEvApplyOutput, error), in spec.KVEvApplyInput) kxOut {
	out, err := fn(spec.DefaultLimits(), in)
	o := kxOut{Out: out}
	if err != nil {
		o.Err = new(spec.ErrorObjectOf(err))
	}
	return o
}

// kxDiff runs both twins on in and reports a disagreement with the input.
func kxDiff(t *testing.T, name string, in spec.KVEvApplyInput) bool {
	t.Helper()
	want := kxRunTwin(ref.KVEvApply, in)
	got := kxRunTwin(KVEvApply, in)
	wb, err1 := json.Marshal(want)
	gb, err2 := json.Marshal(got)
	if err1 != nil || err2 != nil {
		t.Fatalf("%s: marshal: %v %v", name, err1, err2)
	}
	if bytes.Equal(wb, gb) {
		return true
	}
	ib, _ := json.Marshal(in)
	t.Errorf("%s: fast and ref differ (-ref +fast):\n%s\ninput: %s", name, cmp.Diff(want, got), ib)
	return false
}

func kxLive(stream, topic string, s uint64, payload []byte) spec.KVEvStep {
	return spec.KVEvStep{Op: spec.KVStepLive, Stream: stream, Frames: []spec.HexBytes{[]byte(topic), kxSeqFrame(s), payload}}
}

func kxReply(stream string, topic *string, s uint64, payload []byte) spec.KVEvStep {
	f := []spec.HexBytes{{}}
	if topic != nil {
		f = append(f, []byte(*topic))
	}
	f = append(f, kxSeqFrame(s), payload)
	return spec.KVEvStep{Op: spec.KVStepReplay, Stream: stream, Frames: f}
}

func kxScore(tokens []int64, exact bool) spec.KVEvStep {
	return spec.KVEvStep{Op: spec.KVStepScore, Tokens: tokens, Exact: exact}
}

func kxHandScripts() map[string]spec.KVEvApplyInput {
	one := []spec.KVEvStream{{Name: "s"}}
	rep := []spec.KVEvStream{{Name: "s", Replay: true}}
	pay := func(i int) []byte {
		return kxBatch(nil, kxEvStored([]uint64{uint64(100 + i)}, nil, []uint32{uint32(i)}, 1, kxEvOpt{}))
	}
	lora, cpu, ssd := "A", "cpu", "SSD"
	sentinel := func() spec.KVEvStep { return kxReply("s", new(""), 1<<64-1, []byte{}) }
	// catalog.KVEvApply's sample as committed: its E1 lacks the last byte
	// of ts (cb + 7 bytes), so the batch is refused by the decoder.
	catalogE1 := kxMustHexT(`92 cb41da3054981000 91 96 ab 426c6f636b53746f726564 92 cf1111111111111111
		cff0e1d2c3b4a59687 c0 98 01 02 03 04 cc80 ccff cd0100 ce00010000 04 c0`)
	out := map[string]spec.KVEvApplyInput{
		"catalog-sample": {Streams: []spec.KVEvStream{{Name: "vllm-0"}}, Steps: []spec.KVEvStep{
			kxLive("vllm-0", "kv@10.0.0.7@llama", 0, catalogE1), kxScore(kxE1Prompt, false),
			kxLive("vllm-0", "kv@10.0.0.7@llama", 1, ixE2), kxScore(kxE1Prompt, false),
		}},
		"e1-e2-e3": {Streams: []spec.KVEvStream{{Name: "vllm-0"}}, Steps: []spec.KVEvStep{
			kxLive("vllm-0", "kv@10.0.0.7@llama", 0, ixE1), kxScore(kxE1Prompt, false),
			kxLive("vllm-0", "kv@10.0.0.7@llama", 1, ixE2), kxScore(kxE1Prompt, true),
			kxLive("vllm-0", "kv@10.0.0.7@llama", 2, ixE3), kxScore(kxE1Prompt, false),
			kxLive("vllm-0", "kv@10.0.0.7@llama", 3, ixE4), kxLive("vllm-0", "kv@x@", 4, ixE5),
			{Op: spec.KVStepScore, Tokens: []int64{7, 8, 9}, Tier: "gpu"},
		}},
		"sequences-replay": {Streams: rep, Steps: []spec.KVEvStep{
			kxLive("s", "t", 0, pay(0)), kxLive("s", "t", 1, pay(1)), kxLive("s", "t", 2, pay(2)),
			kxLive("s", "t", 5, pay(5)), kxLive("s", "t", 6, pay(6)),
			kxReply("s", new("t"), 3, pay(3)), kxReply("s", nil, 4, pay(4)), kxReply("s", new("t"), 5, pay(5)),
			sentinel(),
			kxLive("s", "t", 2, pay(2)),
			{Op: spec.KVStepReplayFailed, Stream: "s", Reason: spec.ReplayReasonTimeout},
			kxLive("s", "t", 9, pay(9)), kxLive("s", "t", 10, pay(10)),
			kxReply("s", nil, 7, pay(7)), kxReply("s", nil, 6, pay(6)), sentinel(),
			kxScore([]int64{0, 1, 2, 3}, false),
		}},
		"sequences-no-replay": {Streams: one, Steps: []spec.KVEvStep{
			kxLive("s", "t", 0, pay(0)), kxLive("s", "t", 1, pay(1)), kxLive("s", "t", 2, pay(2)),
			kxLive("s", "t", 5, pay(5)), kxLive("s", "t", 5, pay(5)), kxLive("s", "t", 1<<64-1, pay(7)),
			kxLive("s", "t", 3, pay(3)), kxScore([]int64{3}, false),
			{Op: spec.KVStepRestart, Stream: "s"}, kxLive("s", "t", 1<<64-1, pay(7)), kxLive("s", "t", 1<<64-1, pay(7)),
		}},
		"replay-protocol": {Streams: rep, Steps: []spec.KVEvStep{
			kxReply("s", nil, 0, pay(0)),
			{Op: spec.KVStepReplayFailed, Stream: "s", Reason: spec.ReplayReasonUnavailable},
			kxLive("s", "t", 3, pay(3)),
			{Op: spec.KVStepReplay, Stream: "s", Frames: []spec.HexBytes{kxSeqFrame(0), pay(0)}},
			{Op: spec.KVStepReplay, Stream: "s", Frames: []spec.HexBytes{{1}, kxSeqFrame(0), pay(0)}},
			{Op: spec.KVStepReplay, Stream: "s", Frames: []spec.HexBytes{{}, {1, 2}, pay(0)}},
			{Op: spec.KVStepReplay, Stream: "s", Frames: []spec.HexBytes{{}, {}, {1}, pay(0)}},
			{Op: spec.KVStepLive, Stream: "s", Frames: []spec.HexBytes{{}, kxSeqFrame(4)}},
			{Op: spec.KVStepLive, Stream: "s", Frames: []spec.HexBytes{{}, {4}, {}}},
			kxLive("s", "t", 4, []byte{0x91}),
			kxReply("s", nil, 1, []byte{0xc1}), kxReply("s", nil, 1<<64-1, pay(9)),
			{Op: spec.KVStepReplayFailed, Stream: "s", Reason: spec.ReplayReasonProtocol},
			kxLive("s", "t", 8, pay(8)),
			{Op: spec.KVStepRestart, Stream: "s"},
		}},
		"held-overflow": {Config: spec.KVEvConfig{MaxHeld: 2}, Streams: rep, Steps: []spec.KVEvStep{
			kxLive("s", "t", 0, pay(0)), kxLive("s", "t", 3, pay(3)), kxLive("s", "t", 4, pay(4)),
			kxLive("s", "t", 5, pay(5)), kxLive("s", "t", 9, pay(9)),
			sentinel(), kxReply("s", nil, 5, pay(5)), sentinel(),
		}},
		"drain-restart": {Streams: rep, Steps: []spec.KVEvStep{
			kxLive("s", "t", 0, pay(0)), kxLive("s", "t", 3, pay(3)), kxLive("s", "t", 1, pay(1)),
			kxLive("s", "t", 0, pay(0)), kxLive("s", "t", 4, pay(4)),
			sentinel(), sentinel(),
		}},
		"holes": {Streams: one, Steps: []spec.KVEvStep{
			kxLive("s", "", 0, kxBatch(nil, kxEvStored([]uint64{1, 2, 3}, nil, kxSeqTokens(1, 12), 4, kxEvOpt{}))),
			kxLive("s", "", 1, kxBatch(nil, kxEvRemoved([]uint64{2}, kxEvOpt{}))),
			kxScore([]int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, false),
			kxLive("s", "", 2, kxBatch(nil, kxEvStored([]uint64{2}, kxU64p(1), kxSeqTokens(5, 4), 4, kxEvOpt{}),
				kxEvStored([]uint64{3}, kxU64p(2), kxSeqTokens(9, 4), 4, kxEvOpt{}))),
			kxLive("s", "", 3, kxBatch(nil, kxEvRemoved([]uint64{3, 2, 3, 3, 77}, kxEvOpt{}))),
			kxScore([]int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, true),
			kxLive("s", "", 4, kxBatch(nil, kxEvRemoved([]uint64{3, 2, 1}, kxEvOpt{}),
				kxEvStored([]uint64{9}, nil, []uint32{1, 2}, 2, kxEvOpt{}))),
		}},
		"refusals": {Config: spec.KVEvConfig{MaxTokensPerEngine: 10}, Streams: one, Steps: []spec.KVEvStep{
			kxLive("s", "", 0, kxBatch(nil,
				kxEvStored([]uint64{1, 2}, nil, kxSeqTokens(1, 3), 2, kxEvOpt{}),
				kxEvStored([]uint64{1, 2}, nil, kxSeqTokens(1, 4), 2, kxEvOpt{}),
				kxEvStored([]uint64{3}, kxU64p(1), kxSeqTokens(9, 3), 3, kxEvOpt{}),
				kxEvStored([]uint64{1}, nil, []uint32{7, 7}, 2, kxEvOpt{}),
				kxEvStored([]uint64{5, 1}, nil, []uint32{1, 2, 3, 4}, 2, kxEvOpt{}),
				kxEvStored([]uint64{6, 6}, nil, []uint32{1, 2, 1, 2}, 2, kxEvOpt{}),
				kxEvStored([]uint64{6}, nil, []uint32{3, 4}, 2, kxEvOpt{loraName: &lora}),
				kxEvStored([]uint64{7}, kxU64p(1), []uint32{3, 4}, 2, kxEvOpt{loraName: &lora}),
				kxEvStored([]uint64{8, 9, 10}, kxU64p(2), kxSeqTokens(20, 6), 2, kxEvOpt{}),
				kxEvStored([]uint64{8}, kxU64p(99), kxSeqTokens(20, 2), 2, kxEvOpt{}),
				kxEvStored([]uint64{11}, nil, kxSeqTokens(20, 2), 2, kxEvOpt{}),
			)),
		}},
		"chain-collision": {Streams: one, Steps: []spec.KVEvStep{
			kxLive("s", "", 0, kxBatch(nil,
				kxEvStored([]uint64{1}, nil, []uint32{1, 2}, 2, kxEvOpt{}),
				kxEvStored([]uint64{2}, kxU64p(1), []uint32{3, 4}, 2, kxEvOpt{loraName: &lora}),
				kxEvStored([]uint64{3, 4}, nil, []uint32{1, 2, 3, 4}, 2, kxEvOpt{loraName: &lora}),
				kxEvStored([]uint64{5}, nil, []uint32{1, 2}, 2, kxEvOpt{loraID: new(int64(7))}),
			)),
			{Op: spec.KVStepScore, Tokens: []int64{1, 2, 3, 4}, Namespace: "A"},
			{Op: spec.KVStepScore, Tokens: []int64{1, 2, 3, 4}, Namespace: "#7", Exact: true},
		}},
		"tokenless": {Streams: one, Steps: []spec.KVEvStep{
			kxLive("s", "", 0, kxBatch(nil,
				kxEvStored([]uint64{1, 2, 3}, nil, kxSeqTokens(1, 6), 2, kxEvOpt{}),
				kxEvStored([]uint64{3, 99}, kxU64p(2), nil, 2, kxEvOpt{medium: &cpu}),
				kxEvStored([]uint64{3}, nil, nil, 3, kxEvOpt{medium: &ssd}),
			)),
			kxLive("s", "", 1, kxBatch(nil,
				kxEvStored([]uint64{1}, nil, nil, 2, kxEvOpt{medium: &cpu}),
				kxEvStored([]uint64{2, 2}, nil, nil, 2, kxEvOpt{medium: &ssd}),
				kxEvRemoved([]uint64{1, 2, 3}, kxEvOpt{}),
				kxEvStored([]uint64{50}, nil, []uint32{9, 9, 9}, 3, kxEvOpt{medium: new("tape")}),
			)),
			kxLive("s", "", 2, kxBatch(nil,
				kxEvStored([]uint64{2}, nil, nil, 2, kxEvOpt{medium: &cpu}),
				kxEvStored([]uint64{50}, nil, nil, 2, kxEvOpt{medium: new("disk")}),
				kxEvStored([]uint64{1, 3}, nil, nil, 2, kxEvOpt{medium: new("disk")}),
			)),
			// Hash by hash: 60's conflict comes before 50's page size.
			kxLive("s", "", 3, kxBatch(nil,
				kxEvStored([]uint64{60}, nil, []uint32{9, 9}, 2, kxEvOpt{}),
				kxEvStored([]uint64{60}, nil, []uint32{8, 8}, 2, kxEvOpt{medium: &cpu}),
				kxEvStored([]uint64{60, 50}, nil, nil, 2, kxEvOpt{medium: &cpu}),
				kxEvStored([]uint64{50, 60}, nil, nil, 2, kxEvOpt{medium: &cpu}),
			)),
			{Op: spec.KVStepScore, Tokens: []int64{1, 2, 3, 4, 5, 6}, Tier: "cpu"},
			{Op: spec.KVStepScore, Tokens: []int64{1, 2, 3, 4, 5, 6}, Tier: "DISK", Exact: true},
		}},
		"engines": {Config: spec.KVEvConfig{MaxEngines: 2}, Streams: []spec.KVEvStream{{Name: "a"}, {Name: "b", Rank: 2}}, Steps: []spec.KVEvStep{
			kxLive("a", "kv@pod@m", 0, kxBatch(nil)),
			kxLive("b", "kv@pod@m", 0, kxBatch(nil)),
			kxLive("b", "kv@pod@m", 1, kxBatch(new(int64(1)))),
			kxLive("b", "", 2, kxBatch(nil)),
			kxLive("a", "kv@pod@m", 1, []byte{0x91}),
			kxLive("a", "kv@pod@m@x", 2, kxBatch(nil, kxEvStored([]uint64{1}, nil, []uint32{1}, 1, kxEvOpt{}))),
			kxLive("a", "kv@@m", 3, kxBatch(nil)),
			kxLive("a", "kv@pod2@", 4, kxBatch(new(int64(0)))),
			{Op: spec.KVStepRestart, Stream: "b"},
			kxLive("a", "kv@pod2@", 5, kxBatch(new(int64(0)))),
			kxLive("a", "kv@pod@m", 6, kxBatch(nil, kxEvCleared())),
			kxScore([]int64{1}, false),
		}},
	}
	return out
}

func TestKVEvDiffHandScripts(t *testing.T) {
	kxRefReady(t)
	for name, in := range kxHandScripts() {
		kxDiff(t, name, in)
	}
}

// kxRandomScript draws a small script: a few streams, short event lists
// over a tiny token alphabet (so prefixes are shared and hashes collide
// with pages), seq perturbations (gaps, duplicates, restarts), replies and
// scores.
func kxRandomScript(r *rand.Rand) spec.KVEvApplyInput {
	nStreams := 1 + r.IntN(2)
	in := spec.KVEvApplyInput{Config: spec.KVEvConfig{MaxHeld: 1 + r.IntN(3), MaxTokensPerEngine: int64(8 + r.IntN(60))}}
	switch r.IntN(6) {
	case 0, 1:
		in.Config.MaxEngines = nStreams + r.IntN(2) // a share of 1 or 2 (A5)
	case 2:
		in.Config.MaxEnginesPerStream = 1
	}
	for i := range nStreams {
		in.Streams = append(in.Streams, spec.KVEvStream{Name: fmt.Sprintf("s%d", i), Replay: r.IntN(2) == 0, Rank: int64(r.IntN(2))})
	}
	tiers := []*string{nil, new("GPU"), new("cpu"), new("")}
	loras := []*string{nil, new("A"), new("")}
	bs := int64(1 + r.IntN(2))
	var lastHash uint64
	nextHash := uint64(1)
	var stored [][]uint32
	event := func() kxMp {
		o := kxEvOpt{}
		if r.IntN(2) == 0 {
			o = kxEvOpt{medium: tiers[r.IntN(len(tiers))], loraName: loras[r.IntN(len(loras))]}
		}
		if r.IntN(8) == 0 {
			o.loraID = new(int64(r.IntN(2)))
		}
		if r.IntN(8) == 0 {
			o.group = new(int64(1))
		}
		switch k := r.IntN(10); {
		case k < 5:
			n := 1 + r.IntN(3)
			hs := make([]uint64, n)
			for i := range hs {
				if r.IntN(5) == 0 {
					hs[i] = uint64(r.IntN(int(nextHash)))
				} else {
					hs[i] = nextHash
					nextHash++
				}
			}
			var par *uint64
			switch r.IntN(5) {
			case 0, 1:
				par = new(lastHash)
			case 2:
				par = new(uint64(r.IntN(int(nextHash))))
			}
			lastHash = hs[n-1]
			b := bs
			if r.IntN(10) == 0 {
				b = 3
			}
			var toks []uint32
			if r.IntN(6) != 0 {
				toks = make([]uint32, int64(n)*b)
				for i := range toks {
					toks[i] = uint32(r.IntN(3))
				}
				if r.IntN(15) == 0 {
					toks = toks[1:]
				}
				stored = append(stored, toks)
			}
			return kxEvStored(hs, par, toks, b, o)
		case k < 8:
			n := 1 + r.IntN(3)
			hs := make([]uint64, n)
			for i := range hs {
				hs[i] = uint64(r.IntN(int(nextHash)))
			}
			return kxEvRemoved(hs, o)
		case k < 9:
			return kxEvCleared()
		default:
			return kxMArr(kxMStr("Other"), kxMNil)
		}
	}
	seqs := make([]uint64, nStreams)
	for range 10 + r.IntN(30) {
		si := r.IntN(nStreams)
		name := in.Streams[si].Name
		topics := []string{"", "kv@p" + fmt.Sprint(si) + "@m", "kv@shared@m"}
		topic := topics[r.IntN(len(topics))]
		switch k := r.IntN(20); {
		case k < 12:
			s := seqs[si]
			switch r.IntN(10) {
			case 0:
				s += uint64(1 + r.IntN(3))
			case 1:
				if s > 0 {
					s -= uint64(1 + r.IntN(int(min(s, 3))))
				}
			}
			seqs[si] = s + 1
			evs := make([]kxMp, r.IntN(4))
			for i := range evs {
				evs[i] = event()
			}
			var rank *int64
			if r.IntN(4) == 0 {
				rank = new(int64(r.IntN(3)))
			}
			payload := kxBatch(rank, evs...)
			if r.IntN(25) == 0 {
				payload = payload[:len(payload)-1]
			}
			in.Steps = append(in.Steps, kxLive(name, topic, s, payload))
		case k < 15:
			s := uint64(r.IntN(int(seqs[si] + 1)))
			evs := make([]kxMp, r.IntN(3))
			for i := range evs {
				evs[i] = event()
			}
			var tp *string
			if r.IntN(2) == 0 {
				tp = &topic
			}
			in.Steps = append(in.Steps, kxReply(name, tp, s, kxBatch(nil, evs...)))
		case k < 17:
			in.Steps = append(in.Steps, kxReply(name, nil, 1<<64-1, []byte{}))
		case k < 18:
			reasons := []string{spec.ReplayReasonTimeout, spec.ReplayReasonProtocol, spec.ReplayReasonUnavailable}
			in.Steps = append(in.Steps, spec.KVEvStep{Op: spec.KVStepReplayFailed, Stream: name, Reason: reasons[r.IntN(3)]})
		case k < 19:
			if r.IntN(3) == 0 {
				in.Steps = append(in.Steps, spec.KVEvStep{Op: spec.KVStepRestart, Stream: name})
			} else {
				in.Steps = append(in.Steps, spec.KVEvStep{Op: spec.KVStepLive, Stream: name, Frames: []spec.HexBytes{{}, {1}}})
			}
		default:
			toks := make([]int64, r.IntN(8))
			for i := range toks {
				toks[i] = int64(r.IntN(3))
			}
			if len(stored) > 0 && r.IntN(2) == 0 {
				toks = toks[:0]
				for _, x := range stored[r.IntN(len(stored))] {
					toks = append(toks, int64(x))
				}
				if r.IntN(2) == 0 && len(stored) > 1 {
					for _, x := range stored[r.IntN(len(stored))] {
						toks = append(toks, int64(x))
					}
				}
			}
			q := spec.KVEvStep{Op: spec.KVStepScore, Tokens: toks, Exact: r.IntN(2) == 0}
			if r.IntN(2) == 0 {
				q.Namespace = []string{"", "A", "#0"}[r.IntN(3)]
				q.Tier = []string{"", "gpu", "CPU"}[r.IntN(3)]
				q.Group = int64(r.IntN(2))
			}
			in.Steps = append(in.Steps, q)
		}
	}
	return in
}

func TestKVEvDiffRandomSmoke(t *testing.T) {
	kxRefReady(t)
	n := 3000
	if testing.Short() {
		n = 300
	}
	fails := 0
	for i := range n {
		r := rand.New(rand.NewPCG(uint64(i), 0x6b766576))
		in := kxRandomScript(r)
		if !kxDiff(t, fmt.Sprintf("random-%d", i), in) {
			if fails++; fails >= 3 {
				t.Fatal("stopping after 3 disagreements")
			}
		}
		// The fast index's own bookkeeping after the same script.
		ix, err := newKVIndex(in.Config, in.Streams, fault.KVEv{})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range in.Steps {
			kxStep(ix, s)
		}
		checkKVInvariantsNamed(t, ix, fmt.Sprintf("random-%d", i))
	}
}

func kxStep(ix *kvIndex, s spec.KVEvStep) {
	fr := make([][]byte, len(s.Frames))
	for i, f := range s.Frames {
		fr[i] = f
	}
	switch s.Op {
	case spec.KVStepLive:
		ix.Live(s.Stream, fr)
	case spec.KVStepReplay:
		ix.Replay(s.Stream, fr)
	case spec.KVStepReplayFailed:
		ix.ReplayFailed(s.Stream, s.Reason)
	case spec.KVStepRestart:
		ix.Restart(s.Stream)
	default:
		ix.Score(spec.KVEvScoreQuery{Tokens: s.Tokens, Namespace: s.Namespace, Group: s.Group, Tier: s.Tier, Exact: s.Exact})
	}
}

func checkKVInvariantsNamed(t *testing.T, ix *kvIndex, name string) {
	t.Helper()
	t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) { kxCheckKVInvariants(t, ix) })
}
