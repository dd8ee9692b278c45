package ref_test

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// Hex pieces of docs/spec/kv-events.md §5: ts, H1, H2 and the tags.
const (
	kvTS      = "cb 41da305498100000"
	kvH1      = "cf 1111111111111111"
	kvH2      = "cf f0e1d2c3b4a59687"
	kvStored  = "ab 426c6f636b53746f726564"
	kvRemoved = "ac 426c6f636b52656d6f766564"
	kvCleared = "b0 416c6c426c6f636b73436c6561726564"
	kvGPU     = "a3 475055"
)

// §5.1's payloads, spaces as in the spec.
var kvExamples = map[string]string{
	"E1": "92 cb41da3054981000 00 91 96 ab 426c6f636b53746f726564 92 cf1111111111111111 cff0e1d2c3b4a59687 c0 " +
		"98 01 02 03 04 cc80 ccff cd0100 ce00010000 04 c0",
	"E2": "93 cb41da3054981000 00 91 93 ac 426c6f636b52656d6f766564 91 cff0e1d2c3b4a59687 a3 475055 00",
	"E3": "93 cb41da3054981000 00 91 9c ab 426c6f636b53746f726564 91 cff0e1d2c3b4a59687 cf1111111111111111 " +
		"94 cc80 ccff cd0100 ce00010000 04 c0 a3 475055 c0 91 c0 00 ae 66756c6c5f617474656e74696f6e c0 00",
	"E4": "93 cb41da3054981000 00 93 " +
		"89 a4 74797065 ab 426c6f636b53746f726564 ac 626c6f636b5f686173686573 91 cf1111111111111111 " +
		"b1 706172656e745f626c6f636b5f68617368 c0 a9 746f6b656e5f696473 94 01020304 aa 626c6f636b5f73697a65 04 " +
		"a7 6c6f72615f6964 c0  a6 6d656469756d a3 475055 a9 6c6f72615f6e616d65 c0 a9 67726f75705f696478 00 " +
		"83 a4 74797065 ac 426c6f636b52656d6f766564 ac 626c6f636b5f686173686573 91 cf1111111111111111 a6 6d656469756d a3 475055 " +
		"81 a4 74797065 b0 416c6c426c6f636b73436c6561726564 00",
	"E5": "93 cb41da3054981000 00 91 97 ab 426c6f636b53746f726564 91 ff c0 92 07 08 02 c0 a3 475055 c0",
	"E6": "93 cb41da3054981000 00 91 83 a4 74797065 ac 426c6f636b52656d6f766564 " +
		"ac 626c6f636b5f686173686573 91 c4 20 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f " +
		"a6 6d656469756d a3 475055 00",
}

// kvHex decodes spaced hex pieces; a bad literal is a bug in the test.
func kvHex(t testing.TB, parts ...string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(strings.Join(parts, ""), " ", ""))
	if err != nil {
		t.Fatalf("bad hex literal: %v", err)
	}
	return b
}

// fs is the hex of s as a msgpack fixstr (len < 32).
func fs(s string) string { return fmt.Sprintf("%02x%x", 0xa0+len(s), s) }

// arr is the hex of a fixarray of the given element hexes (< 16).
func arr(elems ...string) string {
	return fmt.Sprintf("%02x", 0x90+len(elems)) + strings.Join(elems, "")
}

// fmap is the hex of a fixmap of alternating key and value hexes (< 16 entries).
func fmap(kv ...string) string { return fmt.Sprintf("%02x", 0x80+len(kv)/2) + strings.Join(kv, "") }

// batchOf is the hex of [ts, [events...]].
func batchOf(events ...string) string { return arr(kvTS, arr(events...)) }

// nested is n nested arrays around an empty one: n+1 containers.
func nested(n int) string { return strings.Repeat("91", n) + "90" }

// A minimal valid BlockStored in form A: one block of 4 tokens.
var storedFieldsA = []string{arr(kvH1), "c0", arr("01", "02", "03", "04"), "04"}

func storedA(fields ...string) string { return arr(append([]string{kvStored}, fields...)...) }

func ptr[T any](v T) *T { return &v }

func evh(v uint64) *spec.EvHash { h := spec.EvHash(v); return &h }

const (
	h1 spec.EvHash = 0x1111111111111111
	h2 spec.EvHash = 0xF0E1D2C3B4A59687
)

const kvTSValue = 1757500000.25

func decodeOK(t *testing.T, name string, payload []byte) spec.KVBatch {
	t.Helper()
	b, err := ref.DecodeKVBatch(payload)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b
}

// TestDecodeKVBatchDecodesWorkedExamplesE1ToE6 pins docs/spec/kv-events.md
// §5.1: byte counts and every decoded field of E1-E6.
func TestDecodeKVBatchDecodesWorkedExamplesE1ToE6(t *testing.T) {
	gpu := ptr("GPU")
	zero := ptr(int64(0))
	want := map[string]spec.KVBatch{
		"E1": {Form: "array", TS: kvTSValue, Events: []spec.KVEvent{{
			Type: spec.EventStored, Form: "array", BlockHashes: []spec.EvHash{h1, h2},
			TokenIDs: []uint32{1, 2, 3, 4, 128, 255, 256, 65536}, BlockSize: 4,
		}}},
		"E2": {Form: "array", TS: kvTSValue, DPRank: zero, Events: []spec.KVEvent{{
			Type: spec.EventRemoved, Form: "array", BlockHashes: []spec.EvHash{h2}, Medium: gpu,
		}}},
		"E3": {Form: "array", TS: kvTSValue, DPRank: zero, Events: []spec.KVEvent{{
			Type: spec.EventStored, Form: "array", BlockHashes: []spec.EvHash{h2}, ParentBlockHash: evh(uint64(h1)),
			TokenIDs: []uint32{128, 255, 256, 65536}, BlockSize: 4, Medium: gpu, GroupIdx: zero,
			KVCacheSpecKind: ptr("full_attention"),
		}}},
		"E4": {Form: "array", TS: kvTSValue, DPRank: zero, Events: []spec.KVEvent{
			{Type: spec.EventStored, Form: "map", BlockHashes: []spec.EvHash{h1}, TokenIDs: []uint32{1, 2, 3, 4},
				BlockSize: 4, Medium: gpu, GroupIdx: zero},
			{Type: spec.EventRemoved, Form: "map", BlockHashes: []spec.EvHash{h1}, Medium: gpu},
			{Type: spec.EventCleared, Form: "map"},
		}},
		"E5": {Form: "array", TS: kvTSValue, Events: []spec.KVEvent{{
			Type: spec.EventStored, Form: "array", BlockHashes: []spec.EvHash{0xffffffffffffffff},
			TokenIDs: []uint32{7, 8}, BlockSize: 2, Medium: gpu,
		}}},
		"E6": {Form: "array", TS: kvTSValue, DPRank: zero, Events: []spec.KVEvent{{
			Type: spec.EventRemoved, Form: "map", BlockHashes: []spec.EvHash{0x18191a1b1c1d1e1f}, Medium: gpu,
		}}},
	}
	sizes := map[string]int{"E1": 63, "E2": 40, "E3": 83, "E4": 217, "E5": 37, "E6": 90}
	for _, name := range []string{"E1", "E2", "E3", "E4", "E5", "E6"} {
		payload := kvHex(t, kvExamples[name])
		if len(payload) != sizes[name] {
			t.Errorf("%s: %d bytes, the spec says %d", name, len(payload), sizes[name])
		}
		got := decodeOK(t, name, payload)
		if d := cmp.Diff(want[name], got); d != "" {
			t.Errorf("%s (-want +got):\n%s", name, d)
		}
	}
}

// TestDecodeKVMessageReadsTopicAndBigEndianSeq pins §5.2's frames and
// §1.2's seq byte order.
func TestDecodeKVMessageReadsTopicAndBigEndianSeq(t *testing.T) {
	e2 := kvHex(t, kvExamples["E2"])
	frames := [][]byte{kvHex(t, "6b764031302e302e302e37406c6c616d61"), kvHex(t, "0000000000000001"), e2}
	msg, err := ref.DecodeKVMessage(frames)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Topic != "kv@10.0.0.7@llama" || msg.Seq != 1 {
		t.Errorf("topic %q seq %d, want kv@10.0.0.7@llama and 1", msg.Topic, msg.Seq)
	}
	if d := cmp.Diff(decodeOK(t, "E2", e2), msg.Batch); d != "" {
		t.Errorf("batch (-want +got):\n%s", d)
	}
	frames[0], frames[1] = nil, kvHex(t, "0102030405060708")
	msg, err = ref.DecodeKVMessage(frames)
	if err != nil || msg.Topic != "" || msg.Seq != 0x0102030405060708 {
		t.Errorf("empty topic, seq 0102030405060708: got %q %#x %v", msg.Topic, msg.Seq, err)
	}
}

// TestKVEvDecodeIsDecodeKVMessageOfTheFrames pins the op's reference twin
// on §5.2's message.
func TestKVEvDecodeIsDecodeKVMessageOfTheFrames(t *testing.T) {
	in := spec.KVEvDecodeInput{Frames: []spec.HexBytes{[]byte("kv@10.0.0.7@llama"), {0, 0, 0, 0, 0, 0, 0, 1}, kvHex(t, kvExamples["E2"])}}
	got, err := ref.KVEvDecode(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ref.DecodeKVMessage(in.FrameBytes())
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if _, err := ref.KVEvDecode(spec.DefaultLimits(), spec.KVEvDecodeInput{}); !errors.Is(err, spec.ErrFrameCount) {
		t.Errorf("no frames: got %v, want ErrFrameCount", err)
	}
}

// TestDecodeNormalisesNegativeSGLangHashes pins §1.5: an int in [-2^63, 0)
// is its two's complement, whatever its msgpack width.
func TestDecodeNormalisesNegativeSGLangHashes(t *testing.T) {
	cases := []struct {
		hash string
		want spec.EvHash
	}{
		{"ff", 0xffffffffffffffff},                  // -1, negative fixint (E5)
		{"e0", 0xffffffffffffffe0},                  // -32
		{"d0 80", 0xffffffffffffff80},               // int8 -128
		{"d1 8000", 0xffffffffffff8000},             // int16 min
		{"d2 80000000", 0xffffffff80000000},         // int32 min
		{"d3 8000000000000000", 0x8000000000000000}, // int64 min
		{"d3 f0e1d2c3b4a59687", 0xf0e1d2c3b4a59687}, // SGLang's signed form of H2
		{"d3 1111111111111111", 0x1111111111111111}, // positive int64
		{"cf f0e1d2c3b4a59687", 0xf0e1d2c3b4a59687}, // vLLM's uint64 form of H2
		{"00", 0},                   // zero
		{"cc ff", 0xff},             // uint8
		{"cd 0100", 0x100},          // uint16
		{"ce ffffffff", 0xffffffff}, // uint32
		{"cf ffffffffffffffff", 0xffffffffffffffff},        // uint64 max
		{"d3 ffffffffffffffff", 0xffffffffffffffff},        // int64 -1
		{"d2 ffffffff", 0xffffffffffffffff},                // int32 -1
		{"d3 7fffffffffffffff", 0x7fffffffffffffff},        // int64 max
		{"c4 01 2a", 0x2a},                                 // 1-byte bin, left-padded
		{"c4 08 0102030405060708", 0x0102030405060708},     // 8-byte bin
		{"c5 0009 ff0102030405060708", 0x0102030405060708}, // bin16, last 8 bytes
	}
	for _, c := range cases {
		payload := kvHex(t, batchOf(storedA(arr(c.hash), c.hash, arr(), "04")))
		b := decodeOK(t, c.hash, payload)
		ev := b.Events[0]
		if len(ev.BlockHashes) != 1 || ev.BlockHashes[0] != c.want || ev.ParentBlockHash == nil || *ev.ParentBlockHash != c.want {
			t.Errorf("%s: hashes %v parent %v, want %#x", c.hash, ev.BlockHashes, ev.ParentBlockHash, uint64(c.want))
		}
	}
}

// TestDecodeNormalisesBinHashesToTheirLastEightBytes pins §1.5 and E6: a
// 32-byte digest as bin gives what vLLM's int mode sends for it.
func TestDecodeNormalisesBinHashesToTheirLastEightBytes(t *testing.T) {
	b := decodeOK(t, "E6", kvHex(t, kvExamples["E6"]))
	if got := b.Events[0].BlockHashes[0]; got != 0x18191a1b1c1d1e1f {
		t.Errorf("E6 hash %#x, want 0x18191a1b1c1d1e1f", uint64(got))
	}
	short := decodeOK(t, "3-byte bin", kvHex(t, batchOf(arr(kvRemoved, arr("c4 03 010203")))))
	if got := short.Events[0].BlockHashes[0]; got != 0x010203 {
		t.Errorf("3-byte bin %#x, want 0x010203", uint64(got))
	}
}

// TestDecodeReadsIntsAndTimestampsOfEveryWidth pins A6: ints are read
// whatever their width; ts is any number, kept as float64.
func TestDecodeReadsIntsAndTimestampsOfEveryWidth(t *testing.T) {
	tokens := arr("00", "7f", "cc ff", "cd ffff", "ce ffffffff", "cf 00000000ffffffff", "d0 7f", "d1 0100", "d2 00010000", "d3 00000000ffffffff")
	b := decodeOK(t, "tokens", kvHex(t, batchOf(storedA(arr(kvH1, kvH1), "c0", tokens, "cd 0005", "d3 ffffffffffffffff", "c0", "c0", "c0", "d0 fe"))))
	ev := b.Events[0]
	wantTokens := []uint32{0, 127, 255, 65535, math.MaxUint32, math.MaxUint32, 127, 256, 65536, math.MaxUint32}
	if d := cmp.Diff(wantTokens, ev.TokenIDs); d != "" {
		t.Errorf("tokens (-want +got):\n%s", d)
	}
	if ev.BlockSize != 5 || ev.LoraID == nil || *ev.LoraID != -1 || ev.GroupIdx == nil || *ev.GroupIdx != -2 {
		t.Errorf("block_size %d lora_id %v group_idx %v, want 5, -1, -2", ev.BlockSize, ev.LoraID, ev.GroupIdx)
	}
	cases := []struct {
		ts   string
		want float64
	}{
		{"00", 0},
		{"ff", -1},
		{"ce 68c2b0e0", 1757589728},
		{"cf ffffffffffffffff", float64(uint64(math.MaxUint64))},
		{"d3 8000000000000000", math.MinInt64},
		{"ca 3fc00000", 1.5},
		{"cb 41da305498100000", kvTSValue},
	}
	for _, c := range cases {
		b := decodeOK(t, c.ts, kvHex(t, arr(c.ts, arr())))
		if b.TS != c.want || b.Events == nil || len(b.Events) != 0 {
			t.Errorf("ts %s: %v events %#v, want %v and an empty non-nil list", c.ts, b.TS, b.Events, c.want)
		}
	}
	r := decodeOK(t, "rank", kvHex(t, arr("00", arr(), "cf 7fffffffffffffff")))
	if r.DPRank == nil || *r.DPRank != math.MaxInt64 {
		t.Errorf("rank 2^63-1 as uint64: got %v", r.DPRank)
	}
}

// TestDecodeAcceptsMapShapedBatch pins §1.3's tolerated map-shaped batch:
// keys in any order, unknown keys skipped, rank and publisher id optional.
func TestDecodeAcceptsMapShapedBatch(t *testing.T) {
	payload := kvHex(t, fmap(
		fs("events"), arr(arr(kvCleared)),
		fs("future"), fmap(fs("x"), arr("01", "02")),
		fs("data_parallel_rank"), "03",
		fs("publisher_id"), "c4 10 000102030405060708090a0b0c0d0e0f",
		fs("ts"), kvTS,
	))
	got := decodeOK(t, "map batch", payload)
	want := spec.KVBatch{Form: "map", TS: kvTSValue, DPRank: ptr(int64(3)),
		PublisherID: kvHex(t, "000102030405060708090a0b0c0d0e0f"),
		Events:      []spec.KVEvent{{Type: spec.EventCleared, Form: "array"}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	min := decodeOK(t, "ts and events only", kvHex(t, fmap(fs("ts"), "00", fs("events"), arr(), fs("data_parallel_rank"), "c0")))
	if min.Form != "map" || min.DPRank != nil || min.PublisherID != nil || min.Events == nil {
		t.Errorf("minimal map batch: %+v", min)
	}
}

// TestDecodeKeepsPublisherIDAndIgnoresElementsPastFour pins §1.3: element
// 3 is the publisher id (nil or bin), elements past 4 are skipped.
func TestDecodeKeepsPublisherIDAndIgnoresElementsPastFour(t *testing.T) {
	b := decodeOK(t, "5 elements", kvHex(t, arr(kvTS, arr(), "c0", "c4 02 abcd", fmap(fs("k"), arr("c0")), "c0")))
	if b.DPRank != nil || string(b.PublisherID) != "\xab\xcd" {
		t.Errorf("rank %v publisher id %x", b.DPRank, b.PublisherID)
	}
	empty := decodeOK(t, "empty bin id", kvHex(t, arr(kvTS, arr(), "00", "c4 00")))
	if empty.PublisherID == nil || len(empty.PublisherID) != 0 {
		t.Errorf("empty publisher id bin: %#v, want a non-nil empty HexBytes", empty.PublisherID)
	}
	nilID := decodeOK(t, "nil id", kvHex(t, arr(kvTS, arr(), "00", "c0")))
	if nilID.PublisherID != nil {
		t.Errorf("nil publisher id: %#v", nilID.PublisherID)
	}
}

// TestDecodeKeepsUnknownTagsAsUnknownEvents pins §1.4 rule 2 in both
// forms: the rest of the event is skipped, unchecked but depth-bounded.
func TestDecodeKeepsUnknownTagsAsUnknownEvents(t *testing.T) {
	payload := kvHex(t, batchOf(
		arr(fs("BlockMoved"), "c2", fmap(fs("a"), "c0"), "cb 0000000000000000"),
		fmap(fs("type"), fs("Heartbeat"), fs("block_hashes"), fs("not checked")),
		arr(fs("")),
		arr(fs("Unknown")),
	))
	got := decodeOK(t, "unknown tags", payload)
	want := []spec.KVEvent{
		{Type: spec.EventUnknown, Tag: "BlockMoved", Form: "array"},
		{Type: spec.EventUnknown, Tag: "Heartbeat", Form: "map"},
		{Type: spec.EventUnknown, Tag: "", Form: "array"},
		{Type: spec.EventUnknown, Tag: "Unknown", Form: "array"},
	}
	if d := cmp.Diff(want, got.Events); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestDecodeIgnoresExtraPositionsAndUnknownKeys pins §1.4 rule 3: a newer
// publisher's extra positions and keys are skipped, extra_keys and
// kv_cache_spec_sliding_window included.
func TestDecodeIgnoresExtraPositionsAndUnknownKeys(t *testing.T) {
	a := storedA(append(append([]string{}, storedFieldsA...), "c0", kvGPU, "c0",
		arr(arr("01", fs("salt")), "c0"), "01", fs("sliding_window"), "cd 1000", fs("locality"), fmap())...)
	m := fmap(fs("type"), kvRemoved, fs("block_hashes"), arr(kvH2), fs("locality"), fs("remote"),
		fs("ownership"), arr(), fs("medium"), fs("CPU"))
	r := arr(kvRemoved, arr(kvH2), "c0", "07", fs("extra"), "c3")
	got := decodeOK(t, "extras", kvHex(t, batchOf(a, m, r, arr(kvCleared, "01", "02"))))
	want := []spec.KVEvent{
		{Type: spec.EventStored, Form: "array", BlockHashes: []spec.EvHash{h1}, TokenIDs: []uint32{1, 2, 3, 4}, BlockSize: 4,
			Medium: ptr("GPU"), GroupIdx: ptr(int64(1)), KVCacheSpecKind: ptr("sliding_window")},
		{Type: spec.EventRemoved, Form: "map", BlockHashes: []spec.EvHash{h2}, Medium: ptr("CPU")},
		{Type: spec.EventRemoved, Form: "array", BlockHashes: []spec.EvHash{h2}, GroupIdx: ptr(int64(7))},
		{Type: spec.EventCleared, Form: "array"},
	}
	if d := cmp.Diff(want, got.Events); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestDecodeTreatsMissingOptionalFieldsAsNil pins §1.4 rule 3's exceptions:
// parent_block_hash, lora_id, medium and lora_name missing are nil, and so
// is every field with a default; an old SGLang store (6 elements) decodes.
func TestDecodeTreatsMissingOptionalFieldsAsNil(t *testing.T) {
	m := fmap(fs("type"), kvStored, fs("block_hashes"), arr(kvH1), fs("token_ids"), arr(), fs("block_size"), "10")
	got := decodeOK(t, "minimal", kvHex(t, batchOf(storedA(storedFieldsA...), m, arr(kvRemoved, arr(kvH1)))))
	want := []spec.KVEvent{
		{Type: spec.EventStored, Form: "array", BlockHashes: []spec.EvHash{h1}, TokenIDs: []uint32{1, 2, 3, 4}, BlockSize: 4},
		{Type: spec.EventStored, Form: "map", BlockHashes: []spec.EvHash{h1}, TokenIDs: []uint32{}, BlockSize: 16},
		{Type: spec.EventRemoved, Form: "array", BlockHashes: []spec.EvHash{h1}},
	}
	if d := cmp.Diff(want, got.Events); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if got.Events[1].TokenIDs == nil {
		t.Error("a tokenless store's token_ids must be a non-nil empty slice")
	}
}

// TestDecodeSkipsSGLangSaltMapAtLoraNamePosition pins the reading of §1.4
// that a salted SGLang array store's 8th element, a map, is SGLang's salt
// (ignored), not a lora_name of the wrong type; a str there is lora_name.
func TestDecodeSkipsSGLangSaltMapAtLoraNamePosition(t *testing.T) {
	salted := storedA(append(append([]string{}, storedFieldsA...), "c0", kvGPU, fmap(fs("cache_salt"), fs("s3cr3t")))...)
	named := storedA(append(append([]string{}, storedFieldsA...), "05", kvGPU, fs("adapter"))...)
	got := decodeOK(t, "salted", kvHex(t, arr(kvTS, arr(salted, named), "c0")))
	if e := got.Events[0]; e.LoraName != nil || e.Medium == nil || *e.Medium != "GPU" {
		t.Errorf("salted store: lora_name %v medium %v", e.LoraName, e.Medium)
	}
	if e := got.Events[1]; e.LoraName == nil || *e.LoraName != "adapter" || e.LoraID == nil || *e.LoraID != 5 {
		t.Errorf("named store: lora_name %v lora_id %v", e.LoraName, e.LoraID)
	}
	// In the map form lora_name is checked: a map there is the wrong type.
	m := fmap(fs("type"), kvRemoved, fs("block_hashes"), arr(kvH1))
	bad := fmap(fs("type"), kvStored, fs("block_hashes"), arr(kvH1), fs("token_ids"), arr(), fs("block_size"), "01", fs("lora_name"), fmap())
	_, err := ref.DecodeKVBatch(kvHex(t, batchOf(m, bad)))
	checkKVErr(t, "map lora_name", err, spec.ErrFieldType, "payload.events[1].lora_name", "map", spec.WantStrOrNil)
}

// TestDecodeFindsTypeKeyAnywhereInMapEvent pins §1.4 (B): fields are
// selected by name, so "type" need not be the first key.
func TestDecodeFindsTypeKeyAnywhereInMapEvent(t *testing.T) {
	m := fmap(fs("medium"), fs("CPU"), fs("block_hashes"), arr(kvH2), fs("cache_salt"), fs("x"), fs("type"), kvRemoved)
	got := decodeOK(t, "type last", kvHex(t, batchOf(m)))
	want := []spec.KVEvent{{Type: spec.EventRemoved, Form: "map", BlockHashes: []spec.EvHash{h2}, Medium: ptr("CPU")}}
	if d := cmp.Diff(want, got.Events); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	// A field before "type" is still checked against the tag's table...
	_, err := ref.DecodeKVBatch(kvHex(t, batchOf(fmap(fs("block_hashes"), arr(), fs("type"), kvRemoved))))
	if !errors.Is(err, spec.ErrEmptyHashes) {
		t.Errorf("empty hashes before type: %v", err)
	}
	// ...and a key the tag does not declare is skipped wherever it is.
	got = decodeOK(t, "token_ids on a removal", kvHex(t, batchOf(fmap(fs("token_ids"), "c3", fs("type"), kvRemoved, fs("block_hashes"), arr("01")))))
	if got.Events[0].TokenIDs != nil {
		t.Errorf("token_ids of a removal: %v", got.Events[0].TokenIDs)
	}
}

// TestDecodeBoundsNestingAt32 pins A6: a container at depth 32 is walked,
// one at depth 33 is refused at the place of the value that holds it,
// inside ignored values too. The batch is depth 1, an event 3, a field 4.
func TestDecodeBoundsNestingAt32(t *testing.T) {
	withExtra := func(extra string) string {
		return batchOf(storedA(append(append([]string{}, storedFieldsA...), "c0", kvGPU, "c0", extra)...))
	}
	decodeOK(t, "depth 32 in extra_keys", kvHex(t, withExtra(nested(28))))
	_, err := ref.DecodeKVBatch(kvHex(t, withExtra(nested(29))))
	checkKVErr(t, "depth 33 in extra_keys", err, spec.ErrFieldType, "payload.events[0].extra_keys", "nesting deeper than 32", "nesting depth <= 32")

	// Past 4 batch elements: the element is at depth 2.
	decodeOK(t, "depth 32 past element 4", kvHex(t, arr(kvTS, arr(), "c0", "c0", nested(30))))
	_, err = ref.DecodeKVBatch(kvHex(t, arr(kvTS, arr(), "c0", "c0", nested(31))))
	checkKVErr(t, "depth 33 past element 4", err, spec.ErrBatchShape, "payload[4]", "nesting deeper than 32", "nesting depth <= 32")

	// In a map (key and value both walked): an unknown key of a map event.
	deepMap := strings.Repeat("81a0", 29) + "80" // 30 maps from depth 4 to 33
	_, err = ref.DecodeKVBatch(kvHex(t, batchOf(fmap(fs("type"), kvCleared, fs("future"), deepMap))))
	checkKVErr(t, "depth 33 under an unknown key", err, spec.ErrFieldType, "payload.events[0].future", "nesting deeper than 32", "nesting depth <= 32")

	// An unknown tag's element.
	_, err = ref.DecodeKVBatch(kvHex(t, batchOf(arr(fs("Later"), nested(29)))))
	checkKVErr(t, "depth 33 in an unknown event", err, spec.ErrFieldType, "payload.events[0][1]", "nesting deeper than 32", "nesting depth <= 32")

	// A map-shaped batch's unknown key: its value is at depth 2.
	_, err = ref.DecodeKVBatch(kvHex(t, fmap(fs("ts"), "00", fs("events"), arr(), fs("x"), nested(31))))
	checkKVErr(t, "depth 33 in a batch key", err, spec.ErrBatchShape, "payload.x", "nesting deeper than 32", "nesting depth <= 32")
}

// checkKVErr asserts err's sentinel, field, value and (when want is not "")
// bound.
func checkKVErr(t *testing.T, name string, err error, s *spec.Sentinel, field string, value any, bound string) {
	t.Helper()
	ie, ok := spec.AsInputError(err)
	if !ok || !errors.Is(err, s) {
		t.Errorf("%s: got %v, want %s", name, err, s.Code())
		return
	}
	if ie.Field != field || !cmp.Equal(ie.Value, value) || (bound != "" && ie.Bound != bound) || ie.Bound == "" {
		t.Errorf("%s: got %s = %#v (bound %q), want %s = %#v (bound %q)", name, ie.Field, ie.Value, ie.Bound, field, value, bound)
	}
}

// TestDecodeRejectsBadInputNamingFieldAndValue pins §1.2-§1.5 and A6: the
// sentinel, the field path, the value and the bound of every decoding error.
func TestDecodeRejectsBadInputNamingFieldAndValue(t *testing.T) {
	e1 := strings.ReplaceAll(kvExamples["E1"], " ", "")
	e2 := strings.ReplaceAll(kvExamples["E2"], " ", "")
	e4 := strings.ReplaceAll(kvExamples["E4"], " ", "")
	cut := func(h string, n int) string { return h[:2*n] }
	ev := func(e string) string { return batchOf(e) }
	removedMap := func(kv ...string) string {
		return ev(fmap(append([]string{fs("type"), kvRemoved, fs("block_hashes"), arr(kvH1)}, kv...)...))
	}
	storedWith := func(pos int, v string) string {
		f := append([]string{}, storedFieldsA...)
		for len(f) < pos {
			f = append(f, "c0")
		}
		f[pos-1] = v
		return ev(storedA(f...))
	}
	trunc := spec.Truncated
	cases := []struct {
		name    string
		frames  []string // nil: the message is ("t", seq 0, payload)
		payload string
		want    *spec.Sentinel
		field   string
		value   any
		bound   string
	}{
		// §1.2 frames.
		{name: "two frames", frames: []string{"74", "0000000000000000"}, want: spec.ErrFrameCount, field: "frames", value: 2, bound: "3 frames"},
		{name: "four frames", frames: []string{"74", "0000000000000000", e2, ""}, want: spec.ErrFrameCount, field: "frames", value: 4},
		{name: "no frames", frames: []string{}, want: spec.ErrFrameCount, field: "frames", value: 0},
		{name: "7-byte seq", frames: []string{"74", "00000000000001", e2}, want: spec.ErrSeqWidth, field: "frames[1]", value: 7, bound: "8 bytes"},
		{name: "seq before payload", frames: []string{"74", "000000000000000001", "c1"}, want: spec.ErrSeqWidth, field: "frames[1]", value: 9},
		// §1.3 trailing bytes.
		{name: "one trailing byte", payload: e2 + "00", want: spec.ErrTrailingBytes, field: "payload", value: 1, bound: "no bytes after the batch"},
		{name: "second value", payload: e2 + e2, want: spec.ErrTrailingBytes, field: "payload", value: 40},
		// §1.3 batch shape.
		{name: "empty payload", payload: "", want: spec.ErrBatchShape, field: "payload", value: trunc, bound: spec.WantBatch},
		{name: "nil batch", payload: "c0", want: spec.ErrBatchShape, field: "payload", value: "nil", bound: spec.WantBatch},
		{name: "str batch", payload: fs("x"), want: spec.ErrBatchShape, field: "payload", value: "str"},
		{name: "reserved byte", payload: "c1", want: spec.ErrBatchShape, field: "payload", value: "reserved"},
		{name: "1-element batch", payload: arr(kvTS), want: spec.ErrBatchShape, field: "payload", value: "array", bound: spec.WantBatch},
		{name: "empty batch", payload: "90", want: spec.ErrBatchShape, field: "payload", value: "array"},
		{name: "ts str", payload: arr(fs("now"), arr()), want: spec.ErrBatchShape, field: "payload.ts", value: "str", bound: spec.WantTS},
		{name: "ts nil", payload: arr("c0", arr()), want: spec.ErrBatchShape, field: "payload.ts", value: "nil"},
		{name: "ts bool", payload: arr("c3", arr()), want: spec.ErrBatchShape, field: "payload.ts", value: "bool"},
		{name: "events nil", payload: arr(kvTS, "c0"), want: spec.ErrBatchShape, field: "payload.events", value: "nil", bound: spec.WantEvents},
		{name: "events map", payload: arr(kvTS, fmap()), want: spec.ErrBatchShape, field: "payload.events", value: "map"},
		{name: "rank negative", payload: arr(kvTS, arr(), "ff"), want: spec.ErrBatchShape, field: "payload.data_parallel_rank", value: int64(-1), bound: spec.WantRank},
		{name: "rank int64 min", payload: arr(kvTS, arr(), "d3 8000000000000000"), want: spec.ErrBatchShape, field: "payload.data_parallel_rank", value: int64(math.MinInt64)},
		{name: "rank 2^63", payload: arr(kvTS, arr(), "cf 8000000000000000"), want: spec.ErrBatchShape, field: "payload.data_parallel_rank", value: uint64(1 << 63), bound: spec.WantRank},
		{name: "rank str", payload: arr(kvTS, arr(), fs("0")), want: spec.ErrBatchShape, field: "payload.data_parallel_rank", value: "str", bound: spec.WantRank},
		{name: "rank float", payload: arr(kvTS, arr(), "cb 0000000000000000"), want: spec.ErrBatchShape, field: "payload.data_parallel_rank", value: "float64"},
		{name: "publisher id str", payload: arr(kvTS, arr(), "c0", fs("id")), want: spec.ErrBatchShape, field: "payload.publisher_id", value: "str", bound: spec.WantPubID},
		{name: "publisher id int", payload: arr(kvTS, arr(), "c0", "07"), want: spec.ErrBatchShape, field: "payload.publisher_id", value: "uint"},
		{name: "reserved past element 4", payload: arr(kvTS, arr(), "c0", "c0", "c1"), want: spec.ErrBatchShape, field: "payload[4]", value: "reserved", bound: spec.WantValue},
		{name: "map batch without events", payload: fmap(fs("ts"), "00"), want: spec.ErrBatchShape, field: "payload", value: "map", bound: spec.WantBatch},
		{name: "map batch without ts", payload: fmap(fs("events"), arr()), want: spec.ErrBatchShape, field: "payload", value: "map"},
		{name: "map batch int key", payload: fmap("00", "00", fs("events"), arr()), want: spec.ErrBatchShape, field: "payload", value: "uint", bound: spec.WantKey},
		{name: "map batch repeated key", payload: fmap(fs("ts"), "00", fs("events"), arr(), fs("ts"), "01"), want: spec.ErrBatchShape, field: "payload", value: "ts", bound: spec.WantKey},
		{name: "map batch bad rank", payload: fmap(fs("ts"), "00", fs("events"), arr(), fs("data_parallel_rank"), "ff"), want: spec.ErrBatchShape, field: "payload.data_parallel_rank", value: int64(-1)},
		{name: "map batch events checked when met", payload: fmap(fs("events"), arr("05"), fs("ts"), fs("late")), want: spec.ErrEventShape, field: "payload.events[0]", value: "uint"},
		// §1.4 rule 1 event shape.
		{name: "scalar event", payload: ev("05"), want: spec.ErrEventShape, field: "payload.events[0]", value: "uint", bound: spec.WantEvent},
		{name: "nil event", payload: batchOf(arr(kvCleared), "c0"), want: spec.ErrEventShape, field: "payload.events[1]", value: "nil"},
		{name: "empty array event", payload: ev("90"), want: spec.ErrEventShape, field: "payload.events[0]", value: "array", bound: spec.WantEvent},
		{name: "array tag not str", payload: ev(arr("05", arr(kvH1))), want: spec.ErrEventShape, field: "payload.events[0].type", value: "uint", bound: spec.WantEvent},
		{name: "array tag bin", payload: ev(arr("c4 01 41")), want: spec.ErrEventShape, field: "payload.events[0].type", value: "bin"},
		{name: "map without type", payload: ev(fmap(fs("block_hashes"), arr(kvH1))), want: spec.ErrEventShape, field: "payload.events[0]", value: "map", bound: spec.WantEvent},
		{name: "empty map event", payload: ev("80"), want: spec.ErrEventShape, field: "payload.events[0]", value: "map"},
		{name: "map type not str", payload: ev(fmap(fs("type"), "05")), want: spec.ErrEventShape, field: "payload.events[0].type", value: "uint", bound: spec.WantEvent},
		{name: "map type nil", payload: ev(fmap(fs("type"), "c0")), want: spec.ErrEventShape, field: "payload.events[0].type", value: "nil"},
		{name: "map int key", payload: ev(fmap(fs("type"), kvCleared, "01", "02")), want: spec.ErrEventShape, field: "payload.events[0]", value: "uint", bound: spec.WantKey},
		{name: "map int key before type", payload: ev(fmap("01", "02", fs("type"), kvCleared)), want: spec.ErrEventShape, field: "payload.events[0]", value: "uint", bound: spec.WantKey},
		{name: "repeated type", payload: ev(fmap(fs("type"), kvCleared, fs("type"), kvCleared)), want: spec.ErrEventShape, field: "payload.events[0]", value: "type", bound: spec.WantKey},
		{name: "repeated field", payload: removedMap(fs("medium"), kvGPU, fs("medium"), kvGPU), want: spec.ErrEventShape, field: "payload.events[0]", value: "medium"},
		{name: "repeated unknown key", payload: removedMap(fs("x"), "c0", fs("x"), "c0"), want: spec.ErrEventShape, field: "payload.events[0]", value: "x"},
		{name: "repeated key before type", payload: ev(fmap(fs("x"), "c0", fs("x"), "c0", fs("type"), kvCleared)), want: spec.ErrEventShape, field: "payload.events[0]", value: "x"},
		// §1.4 rule 3 missing fields.
		{name: "stored without token_ids", payload: ev(storedA(arr(kvH1))), want: spec.ErrMissingField, field: "payload.events[0].token_ids", value: "absent", bound: "present"},
		{name: "stored without block_size", payload: ev(storedA(arr(kvH1), "c0", arr())), want: spec.ErrMissingField, field: "payload.events[0].block_size", value: "absent"},
		{name: "stored tag only", payload: ev(storedA()), want: spec.ErrMissingField, field: "payload.events[0].block_hashes", value: "absent"},
		{name: "removed tag only", payload: ev(arr(kvRemoved)), want: spec.ErrMissingField, field: "payload.events[0].block_hashes", value: "absent"},
		{name: "map stored without block_hashes", payload: ev(fmap(fs("type"), kvStored, fs("token_ids"), arr(), fs("block_size"), "04")), want: spec.ErrMissingField, field: "payload.events[0].block_hashes", value: "absent"},
		{name: "map stored without block_size", payload: ev(fmap(fs("type"), kvStored, fs("block_hashes"), arr(kvH1), fs("token_ids"), arr())), want: spec.ErrMissingField, field: "payload.events[0].block_size", value: "absent"},
		{name: "map removed without block_hashes", payload: ev(fmap(fs("type"), kvRemoved, fs("medium"), kvGPU)), want: spec.ErrMissingField, field: "payload.events[0].block_hashes", value: "absent"},
		{name: "missing after a present field's error", payload: ev(storedA(arr(kvH1), fs("p"))), want: spec.ErrHashEncoding, field: "payload.events[0].parent_block_hash", value: "str"},
		// §1.4 rule 4 field types.
		{name: "block_hashes nil", payload: ev(storedA("c0", "c0", arr(), "04")), want: spec.ErrFieldType, field: "payload.events[0].block_hashes", value: "nil", bound: spec.WantHashes},
		{name: "block_hashes int", payload: ev(arr(kvRemoved, kvH1)), want: spec.ErrFieldType, field: "payload.events[0].block_hashes", value: "uint"},
		{name: "block_hashes empty", payload: ev(arr(kvRemoved, "90")), want: spec.ErrEmptyHashes, field: "payload.events[0].block_hashes", value: 0, bound: "at least 1 hash"},
		{name: "map block_hashes empty", payload: ev(fmap(fs("type"), kvRemoved, fs("block_hashes"), "90")), want: spec.ErrEmptyHashes, field: "payload.events[0].block_hashes", value: 0},
		{name: "token_ids map", payload: storedWith(3, fmap()), want: spec.ErrFieldType, field: "payload.events[0].token_ids", value: "map", bound: spec.WantTokens},
		{name: "token_ids nil", payload: storedWith(3, "c0"), want: spec.ErrFieldType, field: "payload.events[0].token_ids", value: "nil"},
		{name: "token nil", payload: storedWith(3, arr("01", "c0")), want: spec.ErrFieldType, field: "payload.events[0].token_ids[1]", value: "nil", bound: spec.WantToken},
		{name: "token float", payload: storedWith(3, arr("ca 3f800000")), want: spec.ErrFieldType, field: "payload.events[0].token_ids[0]", value: "float32"},
		{name: "token str", payload: storedWith(3, arr(fs("1"))), want: spec.ErrFieldType, field: "payload.events[0].token_ids[0]", value: "str"},
		{name: "token -1", payload: storedWith(3, arr("01", "02", "ff")), want: spec.ErrTokenRange, field: "payload.events[0].token_ids[2]", value: int64(-1), bound: "in [0, 2^32)"},
		{name: "token int64 min", payload: storedWith(3, arr("d3 8000000000000000")), want: spec.ErrTokenRange, field: "payload.events[0].token_ids[0]", value: int64(math.MinInt64)},
		{name: "token 2^32", payload: storedWith(3, arr("cf 0000000100000000")), want: spec.ErrTokenRange, field: "payload.events[0].token_ids[0]", value: uint64(1 << 32)},
		{name: "token 2^32 as int64", payload: storedWith(3, arr("d3 0000000100000000")), want: spec.ErrTokenRange, field: "payload.events[0].token_ids[0]", value: uint64(1 << 32)},
		{name: "token 2^64-1", payload: storedWith(3, arr("cf ffffffffffffffff")), want: spec.ErrTokenRange, field: "payload.events[0].token_ids[0]", value: uint64(math.MaxUint64)},
		{name: "block_size 0", payload: storedWith(4, "00"), want: spec.ErrFieldType, field: "payload.events[0].block_size", value: uint64(0), bound: spec.WantBlockSize},
		{name: "block_size -1", payload: storedWith(4, "ff"), want: spec.ErrFieldType, field: "payload.events[0].block_size", value: int64(-1)},
		{name: "block_size 2^63", payload: storedWith(4, "cf 8000000000000000"), want: spec.ErrFieldType, field: "payload.events[0].block_size", value: uint64(1 << 63)},
		{name: "block_size nil", payload: storedWith(4, "c0"), want: spec.ErrFieldType, field: "payload.events[0].block_size", value: "nil", bound: spec.WantBlockSize},
		{name: "block_size float", payload: storedWith(4, "cb 4010000000000000"), want: spec.ErrFieldType, field: "payload.events[0].block_size", value: "float64"},
		{name: "lora_id str", payload: storedWith(5, fs("1")), want: spec.ErrFieldType, field: "payload.events[0].lora_id", value: "str", bound: spec.WantIntOrNil},
		{name: "lora_id 2^63", payload: storedWith(5, "cf 8000000000000000"), want: spec.ErrFieldType, field: "payload.events[0].lora_id", value: uint64(1 << 63), bound: spec.WantIntOrNil},
		{name: "medium int", payload: storedWith(6, "01"), want: spec.ErrFieldType, field: "payload.events[0].medium", value: "uint", bound: spec.WantStrOrNil},
		{name: "medium bin", payload: ev(arr(kvRemoved, arr(kvH1), "c4 03 475055")), want: spec.ErrFieldType, field: "payload.events[0].medium", value: "bin"},
		{name: "map medium int", payload: removedMap(fs("medium"), "01"), want: spec.ErrFieldType, field: "payload.events[0].medium", value: "uint"},
		{name: "lora_name int", payload: storedWith(7, "01"), want: spec.ErrFieldType, field: "payload.events[0].lora_name", value: "uint", bound: spec.WantStrOrNil},
		{name: "group_idx str", payload: storedWith(9, fs("0")), want: spec.ErrFieldType, field: "payload.events[0].group_idx", value: "str", bound: spec.WantIntOrNil},
		{name: "removed group_idx float", payload: ev(arr(kvRemoved, arr(kvH1), "c0", "ca 00000000")), want: spec.ErrFieldType, field: "payload.events[0].group_idx", value: "float32"},
		{name: "map group_idx 2^64-1", payload: removedMap(fs("group_idx"), "cf ffffffffffffffff"), want: spec.ErrFieldType, field: "payload.events[0].group_idx", value: uint64(math.MaxUint64)},
		{name: "kv_cache_spec_kind int", payload: storedWith(10, "01"), want: spec.ErrFieldType, field: "payload.events[0].kv_cache_spec_kind", value: "uint", bound: spec.WantStrOrNil},
		{name: "reserved in extra_keys", payload: storedWith(8, arr("c1")), want: spec.ErrFieldType, field: "payload.events[0].extra_keys", value: "reserved", bound: spec.WantValue},
		{name: "reserved past the table", payload: ev(arr(kvRemoved, arr(kvH1), "c0", "c0", "c1")), want: spec.ErrFieldType, field: "payload.events[0][4]", value: "reserved", bound: spec.WantValue},
		// §1.5 hash encodings.
		{name: "hash str", payload: ev(arr(kvRemoved, arr(kvH1, fs("abc")))), want: spec.ErrHashEncoding, field: "payload.events[0].block_hashes[1]", value: "str", bound: spec.WantHash},
		{name: "hash float", payload: ev(arr(kvRemoved, arr("cb 3ff0000000000000"))), want: spec.ErrHashEncoding, field: "payload.events[0].block_hashes[0]", value: "float64"},
		{name: "hash nil", payload: ev(arr(kvRemoved, arr(kvH1, "c0"))), want: spec.ErrHashEncoding, field: "payload.events[0].block_hashes[1]", value: "nil"},
		{name: "hash empty bin", payload: ev(arr(kvRemoved, arr("c4 00"))), want: spec.ErrHashEncoding, field: "payload.events[0].block_hashes[0]", value: "bin", bound: spec.WantHash},
		{name: "hash empty bin32", payload: ev(arr(kvRemoved, arr("c6 00000000"))), want: spec.ErrHashEncoding, field: "payload.events[0].block_hashes[0]", value: "bin"},
		{name: "hash array", payload: ev(arr(kvRemoved, arr(arr(kvH1)))), want: spec.ErrHashEncoding, field: "payload.events[0].block_hashes[0]", value: "array"},
		{name: "hash ext", payload: ev(arr(kvRemoved, arr("d4 01 02"))), want: spec.ErrHashEncoding, field: "payload.events[0].block_hashes[0]", value: "ext"},
		{name: "parent str", payload: storedWith(2, fs("h")), want: spec.ErrHashEncoding, field: "payload.events[0].parent_block_hash", value: "str", bound: spec.WantHash},
		{name: "parent empty bin", payload: storedWith(2, "c4 00"), want: spec.ErrHashEncoding, field: "payload.events[0].parent_block_hash", value: "bin"},
		{name: "map hash bool", payload: ev(fmap(fs("type"), kvRemoved, fs("block_hashes"), arr("c2"))), want: spec.ErrHashEncoding, field: "payload.events[0].block_hashes[0]", value: "bool"},
		// A6 declared lengths: refused at the container before any element.
		{name: "batch array32 of 2^32-1", payload: "dd ffffffff" + kvTS, want: spec.ErrBatchShape, field: "payload", value: uint64(math.MaxUint32), bound: "a length the 9 bytes left can hold"},
		{name: "batch map16 of 5 entries in 9 bytes", payload: "de 0005" + kvTS, want: spec.ErrBatchShape, field: "payload", value: uint64(5), bound: "a length the 9 bytes left can hold"},
		{name: "1-element batch with nothing after", payload: "91", want: spec.ErrBatchShape, field: "payload", value: uint64(1), bound: "a length the 0 bytes left can hold"},
		{name: "events array16 of 3 in 2 bytes", payload: arr(kvTS, "dc 0003 9090"), want: spec.ErrBatchShape, field: "payload.events", value: uint64(3), bound: "a length the 2 bytes left can hold"},
		{name: "event array of 6 in 5 bytes", payload: ev("96 a1 41 00 00 00"), want: spec.ErrEventShape, field: "payload.events[0]", value: uint64(6), bound: "a length the 5 bytes left can hold"},
		{name: "event map of 3 in 5 bytes", payload: ev("83 a1 41 00 00 00"), want: spec.ErrEventShape, field: "payload.events[0]", value: uint64(3), bound: "a length the 5 bytes left can hold"},
		{name: "block_hashes array32 of 2^32-1", payload: ev(arr(kvRemoved, "dd ffffffff"+kvH1)), want: spec.ErrFieldType, field: "payload.events[0].block_hashes", value: uint64(math.MaxUint32), bound: "a length the 9 bytes left can hold"},
		{name: "token_ids longer than the rest", payload: ev(storedA(arr(kvH1), "c0", "dc 0010 01 02 03 04")), want: spec.ErrFieldType, field: "payload.events[0].token_ids", value: uint64(16), bound: "a length the 4 bytes left can hold"},
		{name: "map32 in extra_keys", payload: storedWith(8, "df 7fffffff 00 00"), want: spec.ErrFieldType, field: "payload.events[0].extra_keys", value: uint64(0x7fffffff), bound: "a length the 2 bytes left can hold"},
		{name: "array past element 4", payload: arr(kvTS, arr(), "c0", "c0", "dd 00010000"), want: spec.ErrBatchShape, field: "payload[4]", value: uint64(0x10000), bound: "a length the 0 bytes left can hold"},
		// A6 truncation: the value whose bytes ran out.
		{name: "cut in ts", payload: cut(e1, 5), want: spec.ErrBatchShape, field: "payload.ts", value: trunc, bound: spec.WantTS},
		{name: "cut after ts", payload: cut(e1, 10), want: spec.ErrBatchShape, field: "payload.events", value: trunc, bound: spec.WantEvents},
		{name: "cut after events header", payload: cut(e1, 11), want: spec.ErrBatchShape, field: "payload.events", value: uint64(1), bound: "a length the 0 bytes left can hold"},
		{name: "cut after event header", payload: cut(e1, 12), want: spec.ErrEventShape, field: "payload.events[0]", value: uint64(6), bound: "a length the 0 bytes left can hold"},
		{name: "cut in tag", payload: cut(e1, 18), want: spec.ErrEventShape, field: "payload.events[0].type", value: trunc, bound: spec.WantEvent},
		{name: "cut in second hash", payload: cut(e1, 38), want: spec.ErrHashEncoding, field: "payload.events[0].block_hashes[1]", value: trunc, bound: spec.WantHash},
		{name: "cut before parent", payload: cut(e1, 43), want: spec.ErrHashEncoding, field: "payload.events[0].parent_block_hash", value: trunc},
		{name: "cut in uint32 token", payload: cut(e1, 58), want: spec.ErrFieldType, field: "payload.events[0].token_ids[7]", value: trunc, bound: spec.WantToken},
		{name: "cut before block_size", payload: cut(e1, 61), want: spec.ErrFieldType, field: "payload.events[0].block_size", value: trunc, bound: spec.WantBlockSize},
		{name: "cut before lora_id", payload: cut(e1, 62), want: spec.ErrFieldType, field: "payload.events[0].lora_id", value: trunc, bound: spec.WantIntOrNil},
		{name: "cut before rank", payload: cut(e2, 39), want: spec.ErrBatchShape, field: "payload.data_parallel_rank", value: trunc, bound: spec.WantRank},
		{name: "cut in medium", payload: cut(e2, 38), want: spec.ErrFieldType, field: "payload.events[0].medium", value: trunc, bound: spec.WantStrOrNil},
		{name: "cut in map key", payload: cut(e4, 35), want: spec.ErrEventShape, field: "payload.events[0]", value: trunc, bound: spec.WantKey},
		{name: "cut in array16 header", payload: arr(kvTS, "dc 00"), want: spec.ErrBatchShape, field: "payload.events", value: trunc},
		{name: "cut in uint16 rank", payload: arr(kvTS, arr(), "cd 00"), want: spec.ErrBatchShape, field: "payload.data_parallel_rank", value: trunc},
		{name: "cut in publisher id", payload: arr(kvTS, arr(), "c0", "c4 10 0102"), want: spec.ErrBatchShape, field: "payload.publisher_id", value: trunc, bound: spec.WantPubID},
		{name: "str32 longer than the rest in lora_name", payload: storedWith(7, "db ffffffff 41"), want: spec.ErrFieldType, field: "payload.events[0].lora_name", value: trunc},
		{name: "bin longer than the rest in a hash", payload: ev(arr(kvRemoved, arr("c4 20 0001"))), want: spec.ErrHashEncoding, field: "payload.events[0].block_hashes[0]", value: trunc},
		{name: "ext longer than the rest in extra_keys", payload: storedWith(8, "c9 ffffffff 01"), want: spec.ErrFieldType, field: "payload.events[0].extra_keys", value: trunc, bound: spec.WantValue},
		{name: "cut in an unknown key's value before type", payload: ev(fmap(fs("x"), "cb 00", fs("type"))), want: spec.ErrFieldType, field: "payload.events[0].x", value: trunc, bound: spec.WantValue},
	}
	for _, c := range cases {
		frames := [][]byte{{'t'}, make([]byte, 8), kvHex(t, c.payload)}
		if c.frames != nil {
			frames = nil
			for _, f := range c.frames {
				frames = append(frames, kvHex(t, f))
			}
		}
		_, err := ref.DecodeKVMessage(frames)
		checkKVErr(t, c.name, err, c.want, c.field, c.value, c.bound)
	}
}

// TestDecodeRefusesEveryStrictPrefixOfTheExamples pins A6 on every cut of
// §5.1's payloads: each strict prefix is refused as truncated or as a
// declared length the bytes left cannot hold, never decoded, never a panic.
func TestDecodeRefusesEveryStrictPrefixOfTheExamples(t *testing.T) {
	for name, h := range kvExamples {
		full := kvHex(t, h)
		for n := 0; n < len(full); n++ {
			_, err := ref.DecodeKVBatch(full[:n])
			ie, ok := spec.AsInputError(err)
			if !ok {
				t.Errorf("%s[:%d]: got %v, want an input error", name, n, err)
				continue
			}
			_, isLen := ie.Value.(uint64)
			if ie.Value != spec.Truncated && !isLen {
				t.Errorf("%s[:%d]: got %v, want truncated or a declared length", name, n, err)
			}
		}
	}
}

// TestDecodeNeverAllocatesFromDeclaredLength pins A6: headers that declare
// 2^32-1 elements or bytes are refused without sizing an allocation by them.
func TestDecodeNeverAllocatesFromDeclaredLength(t *testing.T) {
	hostile := []string{
		"dd ffffffff 00",
		"df ffffffff 00",
		arr(kvTS, "dd ffffffff 00"),
		batchOf("dd ffffffff 00"),
		batchOf(arr(kvRemoved, "dd ffffffff 00")),
		batchOf(arr(kvRemoved, arr("c6 ffffffff 00"))),
		batchOf(arr("db ffffffff 00")),
		batchOf(fmap("db ffffffff 00")),
		batchOf(storedA(append(append([]string{}, storedFieldsA...), "c0", kvGPU, "c0", "c9 ffffffff 01 00")...)),
		arr(kvTS, arr(), "c0", "c6 ffffffff 00"),
	}
	for _, h := range hostile {
		payload := kvHex(t, h)
		var err error
		allocs := testing.AllocsPerRun(10, func() { _, err = ref.DecodeKVBatch(payload) })
		if err == nil {
			t.Errorf("%s: decoded", h)
		}
		var before, after runtimeMem
		before.read()
		_, _ = ref.DecodeKVBatch(payload)
		after.read()
		if allocs > 64 || after.total-before.total > 1<<16 {
			t.Errorf("%s: %v allocations, %d bytes", h, allocs, after.total-before.total)
		}
	}
}

// runtimeMem reads the bytes allocated so far.
type runtimeMem struct{ total uint64 }

func (m *runtimeMem) read() {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.total = s.TotalAlloc
}

// FuzzDecodeKVBatchRefusesOrDecodes: every payload either decodes or is
// refused with an input error of one of §2.9's decoding sentinels; the
// examples and their cuts seed it.
func FuzzDecodeKVBatchRefusesOrDecodes(f *testing.F) {
	for _, h := range kvExamples {
		full := kvHex(f, h)
		f.Add(full)
		f.Add(full[:len(full)/2])
	}
	decoding := []*spec.Sentinel{spec.ErrTrailingBytes, spec.ErrBatchShape, spec.ErrEventShape, spec.ErrMissingField,
		spec.ErrFieldType, spec.ErrEmptyHashes, spec.ErrHashEncoding, spec.ErrTokenRange}
	f.Fuzz(func(t *testing.T, payload []byte) {
		b, err := ref.DecodeKVBatch(payload)
		if err == nil {
			if b.Events == nil || (b.Form != "array" && b.Form != "map") {
				t.Fatalf("decoded batch without events or form: %+v", b)
			}
			return
		}
		ie, ok := spec.AsInputError(err)
		if !ok {
			t.Fatalf("not an input error: %v", err)
		}
		for _, s := range decoding {
			if ie.Err == s {
				return
			}
		}
		t.Fatalf("not a decoding sentinel: %v", err)
	})
}

// TestDecodeRefusesANonFiniteTimestamp: a float ts of NaN or ±Inf decodes
// as a number but has no canonical JSON form, so it is ErrBatchShape
// (§2.10 A6) rather than an output nobody can encode.
func TestDecodeRefusesANonFiniteTimestamp(t *testing.T) {
	for _, tc := range []struct{ hex, value string }{
		{"92cb7ff800000000000090", "NaN"},
		{"92cb7ff000000000000090", "+Inf"},
		{"92caff80000090", "-Inf"},
	} {
		b, _ := hex.DecodeString(tc.hex)
		_, err := ref.DecodeKVBatch(b)
		ie, ok := spec.AsInputError(err)
		if !errors.Is(err, spec.ErrBatchShape) || !ok || ie.Field != "payload.ts" || ie.Value != tc.value {
			t.Errorf("%s: got %v, want ErrBatchShape at payload.ts with value %s", tc.hex, err, tc.value)
		}
	}
}
