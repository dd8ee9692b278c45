package equiv

import (
	"github.com/kvtwin/kvtwin/spec"
)

// Script builders for kvev.apply's tables (the boundary table, the
// regressions, the scenario files' interpreter): steps, batches and events
// written by hand, and the tables' hashes.

func kvLive(stream, topic string, seq uint64, payload []byte) spec.KVEvStep {
	return spec.KVEvStep{Op: spec.KVStepLive, Stream: stream, Frames: []spec.HexBytes{[]byte(topic), seqFrame(seq), payload}}
}

// kvReplayed is one replayed batch, with the topic frame (vLLM after
// #45177) or without it (topic nil).
func kvReplayed(stream string, topic *string, seq uint64, payload []byte) spec.KVEvStep {
	fr := []spec.HexBytes{{}, seqFrame(seq), payload}
	if topic != nil {
		fr = []spec.HexBytes{{}, []byte(*topic), seqFrame(seq), payload}
	}
	return spec.KVEvStep{Op: spec.KVStepReplay, Stream: stream, Frames: fr}
}

func kvSentinelStep(stream string, layout3 bool) spec.KVEvStep {
	p := &kvPub{cfg: spec.KVEvStream{Name: stream}, layout3: layout3}
	return spec.KVEvStep{Op: spec.KVStepReplay, Stream: stream, Frames: p.sentinel()}
}

func kvFailed(stream, reason string) spec.KVEvStep {
	return spec.KVEvStep{Op: spec.KVStepReplayFailed, Stream: stream, Reason: reason}
}

func kvScoreStep(tokens ...int64) spec.KVEvStep {
	return spec.KVEvStep{Op: spec.KVStepScore, Tokens: tokens}
}

// kvB is a batch [ts, events, rank] (rank nil when rank < 0).
func kvB(rank int64, evs ...*mpVal) []byte {
	r := mpNil()
	if rank >= 0 {
		r = mpI(rank)
	}
	return mpA(mpF64(1757500000.25), mpA(evs...), r).bytes()
}

// kvSt is a 7-element BlockStored (vLLM with medium, §1.4): hashes,
// parent (0: none), tokens, block size, medium.
func kvSt(hashes []uint64, parent uint64, tokens []uint32, bs int, medium string) *mpVal {
	hv := make([]*mpVal, len(hashes))
	for i, h := range hashes {
		hv[i] = mpU(h)
	}
	p := mpNil()
	if parent != 0 {
		p = mpU(parent)
	}
	tv := make([]*mpVal, len(tokens))
	for i, tok := range tokens {
		tv[i] = mpU(uint64(tok))
	}
	return mpA(mpS(spec.EventStored), mpA(hv...), p, mpA(tv...), mpU(uint64(bs)), mpNil(), mpS(medium))
}

// kvStX is kvSt with group, lora name and lora id (12 elements).
func kvStX(hashes []uint64, parent uint64, tokens []uint32, bs int, medium string, group int64, loraName string, loraID int64) *mpVal {
	v := kvSt(hashes, parent, tokens, bs, medium)
	lid, ln := mpNil(), mpNil()
	if loraID >= 0 {
		lid = mpI(loraID)
	}
	if loraName != "" {
		ln = mpS(loraName)
	}
	v.elems[5] = lid
	v.elems = append(v.elems, ln, mpNil(), mpI(group), mpNil(), mpNil())
	return v
}

func kvRm(medium string, hashes ...uint64) *mpVal {
	hv := make([]*mpVal, len(hashes))
	for i, h := range hashes {
		hv[i] = mpU(h)
	}
	return mpA(mpS(spec.EventRemoved), mpA(hv...), mpS(medium))
}

func kvClr() *mpVal { return mpA(mpS(spec.EventCleared)) }

// kvEmpty is the 3-byte batch [0, []] (§1.3: ts 0, no events).
var kvEmpty = []byte{0x92, 0x00, 0x90}

func kvScript(streams []spec.KVEvStream, steps ...spec.KVEvStep) spec.KVEvApplyInput {
	return spec.KVEvApplyInput{Streams: streams, Steps: steps}
}

func kvOne(name string, replay bool) []spec.KVEvStream {
	return []spec.KVEvStream{{Name: name, Replay: replay}}
}

// Hashes of the tables.
const (
	kvH1 = 0x1111111111111111
	kvH2 = 0xF0E1D2C3B4A59687
	kvHA = 0xA1
	kvHB = 0xB2
	kvHC = 0xC3
)

func toks(ts ...uint32) []uint32 { return ts }

// kvChain is live seqs from..to-1 of stream s, each storing one page of
// page size 2 under the previous one (hashes 0x100+seq).
func kvChain(s, topic string, from, to uint64) []spec.KVEvStep {
	var st []spec.KVEvStep
	for q := from; q < to; q++ {
		st = append(st, kvLive(s, topic, q, kvChainBatch(q)))
	}
	return st
}

func kvChainBatch(q uint64) []byte {
	var parent uint64
	if q > 0 {
		parent = 0x100 + q - 1
	}
	return kvB(0, kvSt([]uint64{0x100 + q}, parent, toks(uint32(q+1), uint32(q+1)), 2, "GPU"))
}

func kvChainScore(n uint64) spec.KVEvStep {
	var ts []int64
	for q := range n {
		ts = append(ts, int64(q+1), int64(q+1))
	}
	return kvScoreStep(ts...)
}
