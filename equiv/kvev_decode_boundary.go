package equiv

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kvtwin/kvtwin/spec"
)

// kvev.decode's boundary table: §5.1's payloads as the spec lists them, the
// edges of every §1 rule (frames, seqs, batch shapes, event forms, hash
// shapes, field types, nesting) and A10's bounds of one message at and one
// past each bound.

// kvHex decodes spaced hex (docs/spec/kv-events.md §5's layout).
func kvHex(s string) []byte {
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		panic("equiv: bad hex literal: " + err.Error())
	}
	return b
}

// §5.1's payloads, as the spec lists them (the 00 after cb41da3054981000
// is ts's last byte).
var (
	kvE1 = kvHex(`92 cb41da3054981000 00 91 96 ab 426c6f636b53746f726564 92 cf1111111111111111 cff0e1d2c3b4a59687 c0
		98 01 02 03 04 cc80 ccff cd0100 ce00010000 04 c0`)
	kvE2 = kvHex(`93 cb41da3054981000 00 91 93 ac 426c6f636b52656d6f766564 91 cff0e1d2c3b4a59687 a3 475055 00`)
	kvE3 = kvHex(`93 cb41da3054981000 00 91 9c ab 426c6f636b53746f726564
		91 cff0e1d2c3b4a59687 cf1111111111111111 94 cc80 ccff cd0100 ce00010000 04
		c0 a3 475055 c0 91 c0 00 ae 66756c6c5f617474656e74696f6e c0 00`)
	kvE4 = kvHex(`93 cb41da3054981000 00 93
		89 a4 74797065 ab 426c6f636b53746f726564 ac 626c6f636b5f686173686573 91 cf1111111111111111
		b1 706172656e745f626c6f636b5f68617368 c0 a9 746f6b656e5f696473 94 01020304 aa 626c6f636b5f73697a65 04
		a7 6c6f72615f6964 c0 a6 6d656469756d a3 475055 a9 6c6f72615f6e616d65 c0 a9 67726f75705f696478 00
		83 a4 74797065 ac 426c6f636b52656d6f766564 ac 626c6f636b5f686173686573 91 cf1111111111111111 a6 6d656469756d a3 475055
		81 a4 74797065 b0 416c6c426c6f636b73436c6561726564 00`)
	kvE5 = kvHex(`93 cb41da3054981000 00 91 97 ab 426c6f636b53746f726564 91 ff c0 92 07 08 02 c0 a3 475055 c0`)
	kvE6 = kvHex(`93 cb41da3054981000 00 91 83 a4 74797065 ac 426c6f636b52656d6f766564
		ac 626c6f636b5f686173686573 91 c4 20 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
		a6 6d656469756d a3 475055 00`)
)

const kvTopic52 = "kv@10.0.0.7@llama"

func kvMsg(topic string, seq uint64, payload []byte) spec.KVEvDecodeInput {
	return spec.KVEvDecodeInput{Frames: []spec.HexBytes{[]byte(topic), seqFrame(seq), payload}}
}

// kvPayload encodes a hand-built batch.
func kvPayload(v *mpVal) []byte { return v.bytes() }

// kvDecodeBoundary is kvev.decode's boundary table, in this order: accepted
// edges, refusals, cut payloads, fields, and A10's bounds.
func kvDecodeBoundary() []Case[spec.KVEvDecodeInput] {
	return slices.Concat(kvDecodeAcceptedCases(), kvDecodeRejectedCases(), kvDecodeCutCases(), kvDecodeFieldCases(), kvBoundsBoundary())
}

// kvDecodeBuilders are the boundary table's builders: a timestamp, a
// BlockStored of the given fields, a batch [ts, events, rank 0], a batch
// removing one hash, and a message whose payload is spaced hex.
func kvDecodeBuilders() (ts *mpVal, stored func(vals ...*mpVal) *mpVal, batch func(evs ...*mpVal) []byte,
	hashOnly func(h *mpVal) []byte, raw func(payload string) spec.KVEvDecodeInput) {
	ts = mpF64(1757500000.25)
	stored = func(vals ...*mpVal) *mpVal { return mpA(append([]*mpVal{mpS(spec.EventStored)}, vals...)...) }
	batch = func(evs ...*mpVal) []byte { return kvPayload(mpA(ts, mpA(evs...), mpU(0))) }
	hashOnly = func(h *mpVal) []byte {
		return batch(mpA(mpS(spec.EventRemoved), mpA(h), mpS("GPU")))
	}
	// raw is a message whose payload is spaced hex.
	raw = func(payload string) spec.KVEvDecodeInput { return kvMsg("t", 0, kvHex(payload)) }
	return ts, stored, batch, hashOnly, raw
}

// kvDecodeAcceptedCases are §5.1's payloads and §5.2's frames, then every
// accepted edge of §1: timestamps, batch shapes, ranks, hash shapes, token
// widths, event forms and their tolerated fields, unknown tags and A6's
// depth and UTF-8.
func kvDecodeAcceptedCases() []Case[spec.KVEvDecodeInput] {
	ts, stored, batch, hashOnly, _ := kvDecodeBuilders()
	return []Case[spec.KVEvDecodeInput]{
		{"e1-oldest-vllm-array-2-element-batch", kvMsg(kvTopic52, 0, kvE1)},
		{"e2-removed-with-medium-and-rank", kvMsg(kvTopic52, 1, kvE2)},
		{"e3-last-vllm-array-12-elements", kvMsg(kvTopic52, 2, kvE3)},
		{"e4-map-form-stored-removed-cleared", kvMsg(kvTopic52, 3, kvE4)},
		{"e5-sglang-negative-fixint-hash", kvMsg("", 0, kvE5)},
		{"e6-bin-hash-32-bytes", kvMsg(kvTopic52, 4, kvE6)},
		{"frames-5.2-topic-seq-1-payload-e2", kvMsg(kvTopic52, 1, kvE2)},
		{"seq-max-and-empty-topic", kvMsg("", math.MaxUint64, kvE2)},
		{"non-utf8-topic", kvMsg("\xff\xfekv@a@b", 7, kvE2)},
		// A6: every str the output carries is made valid UTF-8 (an unknown
		// tag, medium, lora_name, kv_cache_spec_kind), so any JSON encoder
		// writes the same bytes for it.
		{"non-utf8-strings", kvMsg("t", 0, batch(
			mpA(mpS("Heart\xc3beat")),
			mpA(mpS(spec.EventStored), mpA(mpU(1)), mpNil(), mpA(mpU(5)), mpU(1), mpNil(), mpS("G\xffPU"), mpS("sql-\xfelora"), mpNil(), mpNil(), mpS("full\x80attention")),
			mpM(mpS("type"), mpS(spec.EventRemoved), mpS("block_hashes"), mpA(mpU(1)), mpS("medium"), mpS("\xe2\x82"))))},
		{"empty-events-2-element-batch", kvMsg("t", 0, kvPayload(mpA(ts, mpA())))},
		{"ts-as-negative-int", kvMsg("t", 0, kvPayload(mpA(mpI(-5), mpA(), mpNil())))},
		{"ts-float32", kvMsg("t", 0, kvPayload(mpA(mpF32(1.5), mpA(), mpNil())))},
		{"batch-4-with-publisher-id", kvMsg("t", 0, kvPayload(mpA(ts, mpA(), mpU(1), mpB(kvHex("000102030405060708090a0b0c0d0e0f")))))},
		{"batch-6-elements-past-4-ignored", kvMsg("t", 0, kvPayload(mpA(ts, mpA(), mpNil(), mpNil(), mpS("x"), mpM(mpS("y"), mpA()))))},
		{"batch-rank-max-int64-uint64-width", kvMsg("t", 0, kvPayload(mpA(ts, mpA(), mpUW(math.MaxInt64, 8))))},
		{"batch-rank-signed-width", kvMsg("t", 0, kvPayload(mpA(ts, mpA(), mpIW(3, 8))))},
		{"map-shaped-batch", kvMsg("t", 0, kvPayload(mpM(mpS("events"), mpA(mpA(mpS(spec.EventCleared))), mpS("ts"), ts, mpS("data_parallel_rank"), mpU(2))))},
		{"map-shaped-batch-without-rank", kvMsg("t", 0, kvPayload(mpM(mpS("ts"), ts, mpS("events"), mpA())))},
		{"hash-zero-and-max-uint", kvMsg("t", 0, batch(mpA(mpS(spec.EventRemoved), mpA(mpU(0), mpU(math.MaxUint64), mpUW(5, 8)))))},
		{"hash-minus-one-every-width", kvMsg("t", 0, batch(mpA(mpS(spec.EventRemoved), mpA(mpI(-1), mpIW(-1, 1), mpIW(-1, 2), mpIW(-1, 4), mpIW(-1, 8), mpI(math.MinInt64)))))},
		{"hash-bin-1-byte", kvMsg("t", 0, hashOnly(mpB([]byte{0xab})))},
		{"hash-bin-7-bytes", kvMsg("t", 0, hashOnly(mpB(kvHex("01020304050607"))))},
		{"hash-bin-8-bytes", kvMsg("t", 0, hashOnly(mpB(kvHex("18191a1b1c1d1e1f"))))},
		{"hash-bin-64-bytes", kvMsg("t", 0, hashOnly(mpB(append(make([]byte, 56), kvHex("18191a1b1c1d1e1f")...))))},
		{"tokens-at-width-boundaries", kvMsg("t", 0, batch(stored(mpA(mpU(1), mpU(2)), mpNil(),
			mpA(mpU(0), mpU(127), mpU(128), mpU(255), mpU(256), mpU(65535), mpU(65536), mpU(math.MaxUint32)), mpU(4), mpNil())))},
		{"tokens-in-signed-and-wide-encodings", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(),
			mpA(mpIW(0, 1), mpIW(127, 1), mpIW(300, 2), mpUW(math.MaxUint32, 8)), mpUW(4, 8), mpNil())))},
		{"stored-array-5-without-lora-id", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(mpU(7)), mpU(1))))},
		{"stored-tokenless-cpu", kvMsg("t", 0, batch(stored(mpA(mpU(1), mpU(2)), mpNil(), mpA(), mpU(16), mpNil(), mpS("CPU"))))},
		{"sglang-salted-8th-element-map", kvMsg("t", 0, kvPayload(mpA(ts, mpA(stored(mpA(mpI(-7)), mpI(-8), mpA(mpU(1), mpU(2)), mpU(2), mpNil(), mpS("GPU"),
			mpM(mpS("cache_salt"), mpS("s3cr3t")))), mpNil())))},
		{"stored-array-14-trailing-fields-ignored", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(mpU(7)), mpU(1), mpI(-2), mpS("gpu"), mpS(""),
			mpA(mpA(mpS("salt"), mpM(mpS("k"), mpA()))), mpI(-1), mpS("sliding_window"), mpU(4096), mpS("local"), mpRawV([]byte{0xd6, 0xff, 0, 0, 0, 1}))))},
		{"map-form-unknown-keys-and-omitted-tolerated-fields", kvMsg("t", 0, batch(mpM(
			mpS("session_id"), mpS("s"), mpS("type"), mpS(spec.EventStored), mpS("token_ids"), mpA(mpU(3)), mpS("block_size"), mpU(1),
			mpS("block_hashes"), mpA(mpU(9)), mpS("locality"), mpNil(), mpS("ownership"), mpA(mpA()), mpS("cache_salt"), mpS("x"))))},
		{"removed-array-4-with-group", kvMsg("t", 0, batch(mpA(mpS(spec.EventRemoved), mpA(mpU(9)), mpNil(), mpU(1))))},
		// §1.4 rule 3's extra trailing positions after a BlockRemoved's four,
		// and unknown keys of a map-shaped batch (reach classes of issue 30).
		{"removed-array-6-trailing-ignored", kvMsg("t", 0, batch(mpA(mpS(spec.EventRemoved), mpA(mpU(9)), mpS("GPU"), mpU(1), mpS("x"), mpA(mpNil()))))},
		{"map-shaped-batch-unknown-keys-ignored", kvMsg("t", 0, kvPayload(mpM(mpS("heartbeat"), mpU(7), mpS("ts"), ts, mpS("x_origin"), mpM(mpS("k"), mpA()),
			mpS("events"), mpA(mpA(mpS(spec.EventCleared))))))},
		{"removed-map-omitting-medium", kvMsg("t", 0, batch(mpM(mpS("type"), mpS(spec.EventRemoved), mpS("block_hashes"), mpA(mpU(9)), mpS("locality"), mpS("x"))))},
		{"cleared-with-trailing-elements", kvMsg("t", 0, batch(mpA(mpS(spec.EventCleared), mpNil(), mpS("GPU")), mpM(mpS("type"), mpS(spec.EventCleared), mpS("medium"), mpS("GPU"))))},
		{"unknown-tags-skipped", kvMsg("t", 0, batch(mpA(mpS("BlockEvicted"), mpA(mpU(1)), mpM(mpU(1), mpU(2))), mpM(mpS("type"), mpS(""), mpS("x"), mpRawV([]byte{0xc7, 3, 1, 0xaa, 0xbb, 0xcc}))))},
		// A6's depth: the batch is at 1, events 2, an event 3, a field 4;
		// extra_keys (4) holding 28 nested arrays reaches 32, 29 reach 33.
		{"depth-32-in-extra-keys", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(mpU(7)), mpU(1), mpNil(), mpNil(), mpNil(), mpA(mpNest(28, mpU(1))))))},
		{"depth-32-past-batch-element-4", kvMsg("t", 0, kvPayload(mpA(ts, mpA(), mpNil(), mpNil(), mpNest(31, mpNil()))))},
		{"depth-24-in-extra-keys", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(mpU(7)), mpU(1), mpNil(), mpNil(), mpNil(), mpA(mpNest(24, mpU(1))))))},
	}
}

// kvDecodeRejectedCases are §1's refusals, one per rule (kvDecodeRejects
// names each case's sentinel).
func kvDecodeRejectedCases() []Case[spec.KVEvDecodeInput] {
	ts, stored, batch, hashOnly, _ := kvDecodeBuilders()
	return []Case[spec.KVEvDecodeInput]{
		{"frame-count-2", spec.KVEvDecodeInput{Frames: []spec.HexBytes{[]byte("t"), seqFrame(0)}}},
		{"frame-count-4", spec.KVEvDecodeInput{Frames: []spec.HexBytes{[]byte("t"), seqFrame(0), kvE2, {}}}},
		{"seq-width-7", spec.KVEvDecodeInput{Frames: []spec.HexBytes{[]byte("t"), seqFrame(0)[1:], kvE2}}},
		{"trailing-nil-byte", kvMsg("t", 0, append(kvE2[:len(kvE2):len(kvE2)], 0xc0))},
		{"empty-payload", kvMsg("t", 0, []byte{})},
		{"batch-of-one-element", kvMsg("t", 0, kvPayload(mpA(ts)))},
		{"rank-negative", kvMsg("t", 0, kvPayload(mpA(ts, mpA(), mpI(-1))))},
		{"rank-2-pow-63", kvMsg("t", 0, kvPayload(mpA(ts, mpA(), mpU(1<<63))))},
		{"ts-as-string", kvMsg("t", 0, kvPayload(mpA(mpS("now"), mpA())))},
		{"event-without-string-tag", kvMsg("t", 0, batch(mpA(mpU(1), mpA(mpU(1)))))},
		{"event-map-duplicate-key", kvMsg("t", 0, batch(mpM(mpS("type"), mpS(spec.EventRemoved), mpS("block_hashes"), mpA(mpU(1)), mpS("block_hashes"), mpA(mpU(2)))))},
		{"event-map-duplicate-non-utf8-key", kvMsg("t", 0, batch(mpM(mpS("type"), mpS(spec.EventRemoved), mpS("\xffk"), mpU(1), mpS("\xffk"), mpU(2))))},
		{"event-map-int-key", kvMsg("t", 0, batch(mpM(mpS("type"), mpS(spec.EventCleared), mpU(1), mpU(2))))},
		{"stored-array-4-missing-block-size", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(mpU(7)))))},
		{"stored-empty-hashes", kvMsg("t", 0, batch(stored(mpA(), mpNil(), mpA(), mpU(1), mpNil())))},
		{"hash-empty-bin", kvMsg("t", 0, hashOnly(mpB([]byte{})))},
		{"hash-nil-in-list", kvMsg("t", 0, hashOnly(mpNil()))},
		{"hash-float", kvMsg("t", 0, hashOnly(mpF64(1)))},
		{"token-2-pow-32", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(mpU(1<<32)), mpU(1), mpNil())))},
		{"token-negative", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(mpI(-1)), mpU(1), mpNil())))},
		{"token-nil", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(mpNil()), mpU(1), mpNil())))},
		{"block-size-zero", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(), mpU(0), mpNil())))},
		{"medium-int", kvMsg("t", 0, batch(mpA(mpS(spec.EventRemoved), mpA(mpU(1)), mpU(1))))},
		{"depth-33-in-extra-keys", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(mpU(7)), mpU(1), mpNil(), mpNil(), mpNil(), mpA(mpNest(29, mpU(1))))))},
		{"depth-33-past-batch-element-4", kvMsg("t", 0, kvPayload(mpA(ts, mpA(), mpNil(), mpNil(), mpNest(32, mpNil()))))},
		{"depth-33-in-a-map-form-unknown-key", kvMsg("t", 0, batch(mpM(mpS("type"), mpS(spec.EventCleared), mpS("locality"), mpNest(30, mpNil()))))},
		{"ts-nan", kvMsg("t", 0, kvPayload(mpA(mpF64(math.NaN()), mpA())))},
		{"ts-float32-infinity", kvMsg("t", 0, kvPayload(mpA(mpF32(float32(math.Inf(-1))), mpA())))},
		{"depth-40-in-extra-keys", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(mpU(7)), mpU(1), mpNil(), mpNil(), mpNil(), mpA(mpNest(40, mpU(1))))))},
		{"depth-40-past-batch-element-4", kvMsg("t", 0, kvPayload(mpA(ts, mpA(), mpNil(), mpNil(), mpNest(40, mpNil()))))},
		{"token-ids-declared-past-end", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), &mpVal{k: mpKArr, declared: 1 << 30}, mpU(1), mpNil())))},
		{"events-declared-past-end", kvMsg("t", 0, kvPayload(mpA(ts, &mpVal{k: mpKArr, declared: 1<<32 - 1})))},
		{"hash-bin32-past-end", kvMsg("t", 0, append(kvE2[:len(kvE2)-14:len(kvE2)-14], mpStrPastEnd(true, []byte{1}).raw...))},
		{"e2-truncated-in-medium", kvMsg("t", 0, kvE2[:len(kvE2)-3])},
	}
}

// kvDecodeCutCases are payloads cut or overdeclared at every value of the
// batch and its events, each refused at that value's place (A6).
func kvDecodeCutCases() []Case[spec.KVEvDecodeInput] {
	ts, _, batch, _, raw := kvDecodeBuilders()
	return []Case[spec.KVEvDecodeInput]{
		// The batch's elements one by one (A6: a payload that ends inside
		// a value is refused at that value's place, truncated). ts is a
		// float64 (cb + 8 bytes) where the batch's declared length needs
		// the bytes to pass its check.
		{"publisher-id-str", raw(`94 00 90 c0 a1 78`)},
		{"publisher-id-missing-at-end", raw(`94 cb 0000000000000000 90 c0`)},
		{"publisher-id-bin8-header-cut", raw(`94 cb 0000000000000000 90 c0 c4`)},
		{"publisher-id-bin16-header-cut", raw(`94 cb 0000000000000000 90 c0 c5 00`)},
		{"publisher-id-bin32-header-cut", raw(`94 cb 0000000000000000 90 c0 c6 00 00`)},
		{"batch-ends-after-ts", raw(`92 cb 0000000000000000`)},
		{"batch-3-ends-after-ts-events-missing", raw(`93 cb 0000000000000000`)},
		{"ts-float32-cut", raw(`92 ca 00 00`)},
		{"events-nil", kvMsg("t", 0, kvPayload(mpA(ts, mpNil())))},
		{"events-array16-header-cut", raw(`92 cb 0000000000000000 dc 00`)},
		{"events-array32-header-cut", raw(`92 cb 0000000000000000 dd 00 00`)},
		{"rank-missing-at-end", raw(`93 cb 0000000000000000 90`)},
		{"rank-uint8-cut", raw(`93 cb 0000000000000000 90 cc`)},
		{"rank-uint16-cut", raw(`93 cb 0000000000000000 90 cd 00`)},
		{"rank-uint32-cut", raw(`93 cb 0000000000000000 90 ce 00 00`)},
		{"batch-element-4-missing-at-end", raw(`95 cb 0000000000000000 90 c0 c0`)},
		{"batch-element-4-reserved-byte", kvMsg("t", 0, kvPayload(mpA(ts, mpA(), mpNil(), mpNil(), mpRawV([]byte{0xc1}))))},
		{"batch-element-4-ext32-skipped", kvMsg("t", 0, kvPayload(mpA(ts, mpA(), mpNil(), mpNil(), mpRawV(kvHex(`c9 00000002 05 aabb`)))))},
		{"batch-element-4-array16-header-cut", raw(`95 cb 0000000000000000 90 c0 c0 dc 00`)},
		{"batch-element-4-fixmap-15-past-end", raw(`95 cb 0000000000000000 90 c0 c0 8f`)},
		{"batch-element-4-fixarray-15-past-end", raw(`95 cb 0000000000000000 90 c0 c0 9f`)},
		// The payload's own header.
		{"payload-array16-header-cut", raw(`dc 00`)},
		{"payload-fixmap-15-past-end", raw(`8f`)},
		{"payload-map16-header-cut", raw(`de 00`)},
		{"payload-map32-header-cut", raw(`df 00 00`)},
		// The map-shaped batch (§1.3): its keys are checked, ts and events
		// required.
		{"map-batch-ts-twice", kvMsg("t", 0, kvPayload(mpM(mpS("ts"), ts, mpS("ts"), ts, mpS("events"), mpA())))},
		{"map-batch-without-events", kvMsg("t", 0, kvPayload(mpM(mpS("ts"), ts)))},
		{"map-batch-ends-after-ts-key", raw(`81 a2 7473`)},
		{"map-batch-key-missing-at-end", raw(`82 a2 7473 00`)},
		{"map-batch-key-str8-header-cut", raw(`82 a2 7473 00 d9`)},
		{"map-batch-key-str16-header-cut", raw(`82 a2 7473 00 da 00`)},
		{"map-batch-key-str32-header-cut", raw(`82 a2 7473 00 db 00 00`)},
		// Events: the first event ["x"] is an unknown tag's, skipped.
		{"event-missing-at-end", raw(`92 cb 0000000000000000 92 91 a1 78`)},
		{"event-fixarray-15-past-end", raw(`92 cb 0000000000000000 91 9f a1 78`)},
		{"event-empty-array", kvMsg("t", 0, batch(mpA()))},
		{"event-array16-header-cut", raw(`92 cb 0000000000000000 91 dc 00`)},
		{"event-map16-header-cut", raw(`92 cb 0000000000000000 91 de 00`)},
		// Form B with entries before "type": form detection checks their
		// keys and skips their values first.
		{"event-map-int-key-before-type", kvMsg("t", 0, batch(mpM(mpU(1), mpU(2), mpS("type"), mpS(spec.EventCleared))))},
		{"event-map-repeated-key-before-type", kvMsg("t", 0, batch(mpM(mpS("x"), mpU(1), mpS("x"), mpU(2), mpS("type"), mpS(spec.EventCleared))))},
		{"event-map-type-not-str-after-a-key", kvMsg("t", 0, batch(mpM(mpS("x"), mpU(1), mpS("type"), mpU(1))))},
		{"event-map-reserved-byte-before-type", kvMsg("t", 0, batch(mpM(mpS("x"), mpRawV([]byte{0xc1}), mpS("type"), mpS(spec.EventCleared))))},
		// 17 distinct unknown keys, then the 4th again: the fast decoder
		// keeps 16 keys in place and the rest in a set.
		{"event-map-key-repeated-after-17-keys", kvMsg("t", 0, batch(kvManyKeys(17, "k03")))},
	}
}

// kvDecodeFieldCases are an event's fields cut, out of range or of the
// wrong type, each refused naming its field.
func kvDecodeFieldCases() []Case[spec.KVEvDecodeInput] {
	_, stored, batch, hashOnly, raw := kvDecodeBuilders()
	return []Case[spec.KVEvDecodeInput]{
		// An event's fields.
		{"hashes-array16-header-cut", kvMsg("t", 0, kvPayload(mpA(mpU(0), mpA(mpA(mpS(spec.EventRemoved), mpRawV(kvHex(`dc 00`)))))))},
		{"hashes-fixarray-15-past-end", kvMsg("t", 0, kvPayload(mpA(mpU(0), mpA(mpA(mpS(spec.EventRemoved), mpRawV(kvHex(`9f 01`)))))))},
		{"tokens-array16-header-cut", kvMsg("t", 0, kvPayload(mpA(mpU(0), mpA(stored(mpA(mpU(1)), mpNil(), mpRawV(kvHex(`dc 00`)))))))},
		{"tokens-end-after-first-of-two", kvMsg("t", 0, kvPayload(mpA(mpU(0), mpA(stored(mpA(mpU(1)), mpNil(), mpRawV(kvHex(`92 cd 0100`)))))))},
		// A stored event of 5 positions whose block_size is missing, then
		// one whose block_size ends inside its uint16.
		{"block-size-missing-at-end", raw(`92 00 91 95 ab 426c6f636b53746f726564 91 01 c0 91 07`)},
		{"block-size-uint16-cut", raw(`92 00 91 95 ab 426c6f636b53746f726564 91 01 c0 91 07 cd 00`)},
		{"block-size-past-int64", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(mpU(7)), mpU(1<<63), mpNil())))},
		{"block-size-str", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(mpU(7)), mpS("1"), mpNil())))},
		{"medium-negative-fixint", kvMsg("t", 0, batch(mpA(mpS(spec.EventRemoved), mpA(mpU(1)), mpI(-1))))},
		{"sglang-salt-map-reserved-byte", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(mpU(7)), mpU(1), mpNil(), mpNil(),
			mpM(mpS("s"), mpRawV([]byte{0xc1})))))},
		// extra_keys (4) holding 28 nested arrays (5..32), then a map at 33.
		{"depth-33-map-in-extra-keys", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(mpU(7)), mpU(1), mpNil(), mpNil(), mpNil(), mpA(mpNest(28, mpM())))))},
		// A wrong type names its msgpack family (MsgpackTypeName).
		{"hash-float32", kvMsg("t", 0, hashOnly(mpF32(1)))},
		{"hash-reserved-byte", kvMsg("t", 0, hashOnly(mpRawV([]byte{0xc1})))},
		{"hash-fixext1", kvMsg("t", 0, hashOnly(mpRawV(kvHex(`d4 01 aa`))))},
	}
}

// kvBoundsBoundary are A10's bounds of one message at and one past each
// bound, their expectations derived from the spec's text in the comments
// (cost: 256 per event, 8 per hash, 4 per token; bound: ratio × payload
// bytes + 65,536).
func kvBoundsBoundary() []Case[spec.KVEvDecodeInput] {
	msg := func(payload []byte, lim spec.KVDecodeLimits) spec.KVEvDecodeInput {
		in := kvMsg("t", 0, payload)
		in.Limits = lim
		return in
	}
	ratio1 := spec.KVDecodeLimits{MaxDecodeRatio: 1}
	return []Case[spec.KVEvDecodeInput]{
		// max_events 4: [ts, [4 or 5 × ["x"]], 0].
		{"a10-max-events-4-holds-4", msg(kvEmptyTags(0, 4, "x", nil), spec.KVDecodeLimits{MaxEvents: 4})},
		{"a10-max-events-4-refuses-5", msg(kvEmptyTags(0, 5, "x", nil), spec.KVDecodeLimits{MaxEvents: 4})},
		// Events, ratio 1: n × [""] is 2n + 14 bytes and costs 256n; 258
		// costs 66,048 <= 66,066, 259 costs 66,304 > 66,068.
		{"a10-ratio-1-events-258-hold", msg(kvEmptyTags(0, 258, "", nil), ratio1)},
		{"a10-ratio-1-events-259-refused", msg(kvEmptyTags(0, 259, "", nil), ratio1)},
		// Hashes, ratio 1: 256 × [""] then ["BlockRemoved", [k × 1]]:
		// 543 + k bytes, cost 65,792 + 8k; k = 41 is exactly at the bound
		// (66,120), k = 42 one hash past it (66,128 > 66,121).
		{"a10-ratio-1-hashes-41-exactly-at-the-bound", msg(kvEmptyTags(256, 0, "", kvRemovedFixints(41)), ratio1)},
		{"a10-ratio-1-hashes-42-refused", msg(kvEmptyTags(256, 0, "", kvRemovedFixints(42)), ratio1)},
		// Tokens, ratio 1: 256 × [""] then ["BlockStored", [1], nil, [T × 1],
		// T]: 546 + T bytes, cost 65,800 + 4T; T = 94 is exactly at the
		// bound (66,176), T = 95 one token past it (66,180 > 66,177).
		{"a10-ratio-1-tokens-94-exactly-at-the-bound", msg(kvEmptyTags(256, 0, "", kvStoredFixints(94)), ratio1)},
		{"a10-ratio-1-tokens-95-refused", msg(kvEmptyTags(256, 0, "", kvStoredFixints(95)), ratio1)},
		// Skipped values charge nothing: an unknown event holding 600
		// empty arrays (153,600 bytes were they charged as events) decodes
		// under ratio 1.
		{"a10-skipped-arrays-charge-nothing", msg(kvPayload(mpA(mpF64(1757500000.25), mpA(mpA(mpS("Later"), mpA(slices.Repeat([]*mpVal{mpA()}, 600)...))), mpU(0))), ratio1)},
		// The declared-length check (A6) comes first: 20 events declared
		// with 9 bytes left.
		{"a10-declared-length-before-max-events", msg(kvHex(`93 cb41da3054981000 00 dc0014 91a178 91a178 91a178`), spec.KVDecodeLimits{MaxEvents: 1})},
		// Limits past their caps are refused up front (ErrTooLarge).
		{"a10-limits-max-events-past-cap", msg(kvE2, spec.KVDecodeLimits{MaxEvents: spec.MaxKVEvents + 1})},
		{"a10-limits-ratio-negative", msg(kvE2, spec.KVDecodeLimits{MaxDecodeRatio: -1})},
		{"a10-limits-at-their-caps", msg(kvE2, spec.KVDecodeLimits{MaxEvents: spec.MaxKVEvents, MaxDecodeRatio: spec.MaxKVDecodeRatio})},
	}
}

// kvEmptyTags is [ts, [lead × [""], n × [tag], last?], 0] with an array16
// (or array32 past 65,535) events header: the events of A10's cases.
func kvEmptyTags(lead, n int, tag string, last []byte) []byte {
	total := lead + n
	if last != nil {
		total++
	}
	b := kvHex(`93 cb41da3054981000 00`)
	if total < 1<<16 {
		b = binary.BigEndian.AppendUint16(append(b, 0xdc), uint16(total))
	} else {
		b = binary.BigEndian.AppendUint32(append(b, 0xdd), uint32(total))
	}
	b = append(b, bytes.Repeat([]byte{0x91, 0xa0}, lead)...)
	b = append(b, bytes.Repeat(append([]byte{0x91, 0xa0 + byte(len(tag))}, tag...), n)...)
	return append(append(b, last...), 0x00)
}

// kvRemovedFixints is ["BlockRemoved", [k × 1]] with an array16 list:
// 1 + 13 + 3 + k bytes.
func kvRemovedFixints(k int) []byte {
	b := append([]byte{0x92, 0xac}, spec.EventRemoved...)
	b = binary.BigEndian.AppendUint16(append(b, 0xdc), uint16(k))
	return append(b, bytes.Repeat([]byte{0x01}, k)...)
}

// kvStoredFixints is ["BlockStored", [1], nil, [t × 1], t] (t < 128) with
// an array16 token list: 1 + 12 + 2 + 1 + 3 + t + 1 bytes.
func kvStoredFixints(t int) []byte {
	b := append([]byte{0x95, 0xab}, spec.EventStored...)
	b = binary.BigEndian.AppendUint16(append(b, 0x91, 0x01, 0xc0, 0xdc), uint16(t))
	return append(append(b, bytes.Repeat([]byte{0x01}, t)...), byte(t))
}

// kvManyKeys is a form-B AllBlocksCleared with n distinct unknown keys
// k00, k01, … after "type", then the key again (n null values, then 1).
func kvManyKeys(n int, again string) *mpVal {
	kvs := []*mpVal{mpS("type"), mpS(spec.EventCleared)}
	for k := range n {
		kvs = append(kvs, mpS(fmt.Sprintf("k%02d", k)), mpNil())
	}
	return mpM(append(kvs, mpS(again), mpU(1))...)
}
