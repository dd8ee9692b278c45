package fast

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// The payloads of docs/spec/kv-events.md §5.1, as hex laid out as the spec
// prints them (kvdHex drops the spaces).
const (
	kvdE1 = "92 cb41da3054981000 00 91 96 ab 426c6f636b53746f726564 " +
		"92 cf1111111111111111 cff0e1d2c3b4a59687 c0 " +
		"98 01 02 03 04 cc80 ccff cd0100 ce00010000 04 c0"
	kvdE2 = "93 cb41da3054981000 00 91 93 ac 426c6f636b52656d6f766564 91 cff0e1d2c3b4a59687 a3 475055 00"
	kvdE3 = "93 cb41da3054981000 00 91 9c ab 426c6f636b53746f726564 " +
		"91 cff0e1d2c3b4a59687 cf1111111111111111 " +
		"94 cc80 ccff cd0100 ce00010000 04 " +
		"c0 a3 475055 c0 " +
		"91 c0 00 ae 66756c6c5f617474656e74696f6e c0 " +
		"00"
	kvdE4 = "93 cb41da3054981000 00 93 " +
		"89 a4 74797065 ab 426c6f636b53746f726564 " +
		"ac 626c6f636b5f686173686573 91 cf1111111111111111 " +
		"b1 706172656e745f626c6f636b5f68617368 c0 " +
		"a9 746f6b656e5f696473 94 01020304 " +
		"aa 626c6f636b5f73697a65 04 " +
		"a7 6c6f72615f6964 c0  a6 6d656469756d a3 475055 " +
		"a9 6c6f72615f6e616d65 c0 " +
		"a9 67726f75705f696478 00 " +
		"83 a4 74797065 ac 426c6f636b52656d6f766564 " +
		"ac 626c6f636b5f686173686573 91 cf1111111111111111 a6 6d656469756d a3 475055 " +
		"81 a4 74797065 b0 416c6c426c6f636b73436c6561726564 " +
		"00"
	kvdE5 = "93 cb41da3054981000 00 91 97 ab 426c6f636b53746f726564 91 ff c0 92 07 08 02 c0 a3 475055 c0"
	kvdE6 = "93 cb41da3054981000 00 91 83 a4 74797065 ac 426c6f636b52656d6f766564 " +
		"ac 626c6f636b5f686173686573 91 c4 20 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f " +
		"a6 6d656469756d a3 475055 00"
	kvdTopic52 = "6b764031302e302e302e37406c6c616d61"
)

// kvdSpecPayloads are §5.1's payloads with their byte counts.
var kvdSpecPayloads = []struct {
	name string
	hex  string
	size int
}{
	{"E1", kvdE1, 63}, {"E2", kvdE2, 40}, {"E3", kvdE3, 83}, {"E4", kvdE4, 217}, {"E5", kvdE5, 37}, {"E6", kvdE6, 90},
}

func kvdHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func kvdMsgFrames(t testing.TB, payload string) [][]byte {
	return [][]byte{kvdHex(t, kvdTopic52), kvdHex(t, "0000000000000001"), kvdHex(t, payload)}
}

const kvdTS = 1757500000.25

func kvdI64(v int64) *int64            { return &v }
func kvdStr(v string) *string          { return &v }
func kvdHp(v spec.EvHash) *spec.EvHash { return &v }

const (
	kvdH1 = spec.EvHash(0x1111111111111111)
	kvdH2 = spec.EvHash(0xF0E1D2C3B4A59687)
)

// TestKVEvDecodeSpecExamples decodes §5.1's payloads and §5.2's frames
// and compares the canonical JSON with the values the spec describes.
func TestKVEvDecodeSpecExamples(t *testing.T) {
	gpu := kvdStr("GPU")
	want := map[string]spec.KVBatch{
		"E1": {Form: "array", TS: kvdTS, Events: []spec.KVEvent{{
			Type: spec.EventStored, Form: "array", BlockHashes: []spec.EvHash{kvdH1, kvdH2},
			TokenIDs: []uint32{1, 2, 3, 4, 128, 255, 256, 65536}, BlockSize: 4,
		}}},
		"E2": {Form: "array", TS: kvdTS, DPRank: kvdI64(0), Events: []spec.KVEvent{{
			Type: spec.EventRemoved, Form: "array", BlockHashes: []spec.EvHash{kvdH2}, Medium: gpu,
		}}},
		"E3": {Form: "array", TS: kvdTS, DPRank: kvdI64(0), Events: []spec.KVEvent{{
			Type: spec.EventStored, Form: "array", BlockHashes: []spec.EvHash{kvdH2}, ParentBlockHash: kvdHp(kvdH1),
			TokenIDs: []uint32{128, 255, 256, 65536}, BlockSize: 4, Medium: gpu, GroupIdx: kvdI64(0),
			KVCacheSpecKind: kvdStr("full_attention"),
		}}},
		"E4": {Form: "array", TS: kvdTS, DPRank: kvdI64(0), Events: []spec.KVEvent{
			{Type: spec.EventStored, Form: "map", BlockHashes: []spec.EvHash{kvdH1}, TokenIDs: []uint32{1, 2, 3, 4},
				BlockSize: 4, Medium: gpu, GroupIdx: kvdI64(0)},
			{Type: spec.EventRemoved, Form: "map", BlockHashes: []spec.EvHash{kvdH1}, Medium: gpu},
			{Type: spec.EventCleared, Form: "map"},
		}},
		"E5": {Form: "array", TS: kvdTS, Events: []spec.KVEvent{{
			Type: spec.EventStored, Form: "array", BlockHashes: []spec.EvHash{0xffffffffffffffff},
			TokenIDs: []uint32{7, 8}, BlockSize: 2, Medium: gpu,
		}}},
		"E6": {Form: "array", TS: kvdTS, DPRank: kvdI64(0), Events: []spec.KVEvent{{
			Type: spec.EventRemoved, Form: "map", BlockHashes: []spec.EvHash{0x18191a1b1c1d1e1f}, Medium: gpu,
		}}},
	}
	for _, c := range kvdSpecPayloads {
		p := kvdHex(t, c.hex)
		if len(p) != c.size {
			t.Fatalf("%s: %d bytes, spec says %d", c.name, len(p), c.size)
		}
		got, err := DecodeKVBatch(p)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want[c.name])
		if string(gj) != string(wj) {
			t.Errorf("%s:\n got %s\nwant %s", c.name, gj, wj)
		}
	}
	// §5.2: topic kv@10.0.0.7@llama, seq 1, payload E2.
	in := spec.KVEvDecodeInput{Frames: []spec.HexBytes{kvdHex(t, kvdTopic52), kvdHex(t, "0000000000000001"), kvdHex(t, kvdE2)}}
	m, err := KVEvDecode(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	if m.Topic != "kv@10.0.0.7@llama" || m.Seq != 1 || len(m.Batch.Events) != 1 || m.Batch.Events[0].Type != spec.EventRemoved {
		t.Fatalf("§5.2: got %+v", m)
	}
}

// kvdBad is one bad input and the error it must give.
type kvdBad struct {
	name  string
	hex   string
	code  string
	field string
	value any
	bound string
}

// kvdBadTable mirrors the error rules of §1.3-§1.5 and §2.10 A6.
var kvdBadTable = []kvdBad{
	{"empty payload", "", "batch_shape", "payload", spec.Truncated, spec.WantBatch},
	{"batch scalar", "05", "batch_shape", "payload", "uint", spec.WantBatch},
	{"batch of 1", "91c0", "batch_shape", "payload", "array", spec.WantBatch},
	{"batch length past end", "94cb41", "batch_shape", "payload", uint64(4), "a length the 2 bytes left can hold"},
	{"batch array16 header cut", "dc00", "batch_shape", "payload", spec.Truncated, spec.WantBatch},
	{"ts string", "92a13190", "batch_shape", "payload.ts", "str", spec.WantTS},
	{"ts nil", "92c090", "batch_shape", "payload.ts", "nil", spec.WantTS},
	{"ts cut", "92cb41da", "batch_shape", "payload.ts", spec.Truncated, spec.WantTS},
	{"events nil", "9200c0", "batch_shape", "payload.events", "nil", spec.WantEvents},
	{"events map", "920080", "batch_shape", "payload.events", "map", spec.WantEvents},
	{"events header cut", "9200dc00", "batch_shape", "payload.events", spec.Truncated, spec.WantEvents},
	{"events missing", "9200", "batch_shape", "payload", uint64(2), "a length the 1 bytes left can hold"},
	{"events length past end", "920093c0", "batch_shape", "payload.events", uint64(3), "a length the 1 bytes left can hold"},
	{"rank negative", "930090ff", "batch_shape", "payload.data_parallel_rank", int64(-1), spec.WantRank},
	{"rank huge", "930090cf8000000000000000", "batch_shape", "payload.data_parallel_rank", uint64(1 << 63), spec.WantRank},
	{"rank str", "930090a130", "batch_shape", "payload.data_parallel_rank", "str", spec.WantRank},
	{"publisher id str", "940090c0a130", "batch_shape", "payload.publisher_id", "str", spec.WantPubID},
	{"trailing", "920090c0c0", "trailing_bytes", "payload", 2, "no bytes after the batch"},
	{"map batch int key", "82a27473000190", "batch_shape", "payload", "uint", spec.WantKey},
	{"map batch dup key", "83a2747300a2747301a66576656e747390", "batch_shape", "payload", "ts", spec.WantKey},
	{"event scalar", "920091c3", "event_shape", "payload.events[0]", "bool", spec.WantEvent},
	{"event empty array", "92009190", "event_shape", "payload.events[0]", "array", spec.WantEvent},
	{"event tag int", "9200919105", "event_shape", "payload.events[0].type", "uint", spec.WantEvent},
	{"event tag cut", "92009191ab426c6f", "event_shape", "payload.events[0].type", spec.Truncated, spec.WantEvent},
	{"event map no type", "9200918101c0", "event_shape", "payload.events[0]", "uint", spec.WantKey},
	{"event map without type", "92009181a1610f", "event_shape", "payload.events[0]", "map", spec.WantEvent},
	{"event map type int", "92009181a47479706505", "event_shape", "payload.events[0].type", "uint", spec.WantEvent},
	{"event map dup type", "92009182a474797065a158a474797065a158", "event_shape", "payload.events[0]", "type", spec.WantKey},
	{"event map dup unknown", "92009183a474797065a158a1610fa1610f", "event_shape", "payload.events[0]", "a", spec.WantKey},
	{"event length past end", "92009195ab", "event_shape", "payload.events[0]", uint64(5), "a length the 1 bytes left can hold"},
	{"map event length past end", "92009185a4", "event_shape", "payload.events[0]", uint64(5), "a length the 1 bytes left can hold"},
	{"stored missing hashes", "92009191ab426c6f636b53746f726564", "missing_field", "payload.events[0].block_hashes", "absent", "present"},
	{"stored hashes nil", "92009192ab426c6f636b53746f726564c0", "field_type", "payload.events[0].block_hashes", "nil", spec.WantHashes},
	{"stored hashes empty", "92009192ab426c6f636b53746f72656490", "empty_hashes", "payload.events[0].block_hashes", 0, "at least 1 hash"},
	{"stored hash str", "92009192ab426c6f636b53746f7265649201a130", "hash_encoding", "payload.events[0].block_hashes[1]", "str", spec.WantHash},
	{"stored hash nil", "92009192ab426c6f636b53746f72656491c0", "hash_encoding", "payload.events[0].block_hashes[0]", "nil", spec.WantHash},
	{"stored hash empty bin", "92009192ab426c6f636b53746f72656491c400", "hash_encoding", "payload.events[0].block_hashes[0]", "bin", spec.WantHash},
	{"stored hash float", "92009192ab426c6f636b53746f72656491ca00000000", "hash_encoding", "payload.events[0].block_hashes[0]", "float32", spec.WantHash},
	{"stored hash cut", "92009192ab426c6f636b53746f72656491cf0102", "hash_encoding", "payload.events[0].block_hashes[0]", spec.Truncated, spec.WantHash},
	{"stored parent str", "92009193ab426c6f636b53746f7265649101a0", "hash_encoding", "payload.events[0].parent_block_hash", "str", spec.WantHash},
	{"stored missing tokens", "92009193ab426c6f636b53746f7265649101c0", "missing_field", "payload.events[0].token_ids", "absent", "present"},
	{"stored tokens str", "92009194ab426c6f636b53746f7265649101c0a0", "field_type", "payload.events[0].token_ids", "str", spec.WantTokens},
	{"stored token nil", "92009194ab426c6f636b53746f7265649101c091c0", "field_type", "payload.events[0].token_ids[0]", "nil", spec.WantToken},
	{"stored token negative", "92009194ab426c6f636b53746f7265649101c09201ff", "token_range", "payload.events[0].token_ids[1]", int64(-1), "in [0, 2^32)"},
	{"stored token 2^32", "92009194ab426c6f636b53746f7265649101c091cf0000000100000000", "token_range", "payload.events[0].token_ids[0]", uint64(1 << 32), "in [0, 2^32)"},
	{"stored token cut", "92009194ab426c6f636b53746f7265649101c092cd01", "field_type", "payload.events[0].token_ids[0]", spec.Truncated, spec.WantToken},
	{"stored tokens length past end", "92009194ab426c6f636b53746f7265649101c094", "field_type", "payload.events[0].token_ids", uint64(4), "a length the 0 bytes left can hold"},
	{"stored missing block size", "92009194ab426c6f636b53746f7265649101c090", "missing_field", "payload.events[0].block_size", "absent", "present"},
	{"stored block size 0", "92009195ab426c6f636b53746f7265649101c09000", "field_type", "payload.events[0].block_size", int64(0), spec.WantBlockSize},
	{"stored block size negative", "92009195ab426c6f636b53746f7265649101c090ff", "field_type", "payload.events[0].block_size", int64(-1), spec.WantBlockSize},
	{"stored block size nil", "92009195ab426c6f636b53746f7265649101c090c0", "field_type", "payload.events[0].block_size", "nil", spec.WantBlockSize},
	{"stored block size huge", "92009195ab426c6f636b53746f7265649101c090cf8000000000000000", "field_type", "payload.events[0].block_size", uint64(1 << 63), spec.WantBlockSize},
	{"stored lora id str", "92009196ab426c6f636b53746f7265649101c09004a0", "field_type", "payload.events[0].lora_id", "str", spec.WantIntOrNil},
	{"stored lora id huge", "92009196ab426c6f636b53746f7265649101c09004cf8000000000000000", "field_type", "payload.events[0].lora_id", uint64(1 << 63), spec.WantIntOrNil},
	{"stored medium int", "92009197ab426c6f636b53746f7265649101c09004c001", "field_type", "payload.events[0].medium", "uint", spec.WantStrOrNil},
	{"stored lora name bin", "92009198ab426c6f636b53746f7265649101c09004c0c0c400", "field_type", "payload.events[0].lora_name", "bin", spec.WantStrOrNil},
	{"stored group idx float", "9200919aab426c6f636b53746f7265649101c09004c0c0c0c0cb0000000000000000", "field_type", "payload.events[0].group_idx", "float64", spec.WantIntOrNil},
	{"stored spec kind int", "9200919bab426c6f636b53746f7265649101c09004c0c0c0c0c001", "field_type", "payload.events[0].kv_cache_spec_kind", "uint", spec.WantStrOrNil},
	{"removed medium int", "92009193ac426c6f636b52656d6f766564910101", "field_type", "payload.events[0].medium", "uint", spec.WantStrOrNil},
	{"map removed missing hashes", "92009181a474797065ac426c6f636b52656d6f766564", "missing_field", "payload.events[0].block_hashes", "absent", "present"},
	{"map stored missing tokens then size", "92009182a474797065ab426c6f636b53746f726564ac626c6f636b5f68617368657391cf1111111111111111", "missing_field", "payload.events[0].token_ids", "absent", "present"},
	{"map stored bad value before later dup", "92009183a474797065ab426c6f636b53746f726564aa626c6f636b5f73697a6500a474797065a0", "field_type", "payload.events[0].block_size", int64(0), spec.WantBlockSize},
	{"second event bad", "92009291a0c3", "event_shape", "payload.events[1]", "bool", spec.WantEvent},
	{"unknown event skipped, cut", "92009192a158dc0005", "field_type", "payload.events[0][1]", uint64(5), "a length the 0 bytes left can hold"},
	{"reserved byte skipped", "92009192a158c1", "field_type", "payload.events[0][1]", "reserved", spec.WantValue},
	{"stored position 12 cut", "9200919dab426c6f636b53746f7265649101c09004c0c0c0c0c0c0c0a3", "field_type", "payload.events[0][12]", spec.Truncated, spec.WantValue},
	{"stored extra_keys cut", "92009199ab426c6f636b53746f7265649101c09004c0c0c0d9", "field_type", "payload.events[0].extra_keys", spec.Truncated, spec.WantValue},
	{"map unknown key cut", "92009182a474797065a158a1" + "61cb00", "field_type", "payload.events[0].a", spec.Truncated, spec.WantValue},
	{"map empty key skipped, cut", "92009182a474797065a158a0" + "cb00", "field_type", "payload.events[0].", spec.Truncated, spec.WantValue},
	{"map dup before type", "92009183a16101a16102a474797065a158", "event_shape", "payload.events[0]", "a", spec.WantKey},
	{"map lora_name salt map refused", "92009182a474797065ab426c6f636b53746f726564a96c6f72615f6e616d6580", "field_type", "payload.events[0].lora_name", "map", spec.WantStrOrNil},
	{"batch element 4 cut", "950090c0c0cd00", "batch_shape", "payload[4]", spec.Truncated, spec.WantValue},
	{"map batch unknown key cut", "83a2747300a66576656e747390a178cd", "batch_shape", "payload.x", spec.Truncated, spec.WantValue},
	{"map batch without events", "81a2747300", "batch_shape", "payload", "map", spec.WantBatch},
}

func kvdCheckErr(t *testing.T, name string, err error, code, field string, value any, bound string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want %s at %s", name, code, field)
		return
	}
	got := spec.ErrorObjectOf(err)
	want := spec.ErrorObject{Code: code, Field: field, Value: value, Bound: bound}
	gj, _ := json.Marshal(spec.ErrorObject{Code: got.Code, Field: got.Field, Value: got.Value, Bound: got.Bound})
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Errorf("%s:\n got %s\nwant %s", name, gj, wj)
	}
}

// TestKVEvDecodeBadInputs runs the bad-input table.
func TestKVEvDecodeBadInputs(t *testing.T) {
	for _, c := range kvdBadTable {
		_, err := DecodeKVBatch(kvdHex(t, c.hex))
		kvdCheckErr(t, c.name, err, c.code, c.field, c.value, c.bound)
	}
	// Frames.
	_, err := DecodeKVMessage([][]byte{{}, {}})
	kvdCheckErr(t, "two frames", err, "frame_count", "frames", 2, "3 frames")
	_, err = DecodeKVMessage([][]byte{{}, {0, 1}, {}})
	kvdCheckErr(t, "short seq", err, "seq_width", "frames[1]", 2, "8 bytes")
}

// kvdNest is a batch whose one event is an unknown tag followed by n nested
// arrays around 0 (the outermost nested array at depth 4).
func kvdNest(n int) string {
	return "92009192a158" + strings.Repeat("91", n) + "00"
}

// TestKVEvDecodeDepth: the payload is at depth 1 and only containers have
// a depth, so an unknown event's field (depth 4) can nest 29 arrays (the
// innermost at depth 32), not 30.
func TestKVEvDecodeDepth(t *testing.T) {
	if _, err := DecodeKVBatch(kvdHex(t, kvdNest(29))); err != nil {
		t.Fatalf("29 levels: %v", err)
	}
	_, err := DecodeKVBatch(kvdHex(t, kvdNest(30)))
	kvdCheckErr(t, "30 levels", err, "field_type", "payload.events[0][1]", "nesting deeper than 32", "nesting depth <= 32")
	// Outside events: a batch element past 4 (depth 2) nests 31 arrays at most.
	ok := "950090c0c0" + strings.Repeat("91", 31) + "00"
	if _, err := DecodeKVBatch(kvdHex(t, ok)); err != nil {
		t.Fatalf("batch element, 31 levels: %v", err)
	}
	bad := "950090c0c0" + strings.Repeat("91", 32) + "00"
	_, err = DecodeKVBatch(kvdHex(t, bad))
	kvdCheckErr(t, "batch element, 32 levels", err, "batch_shape", "payload[4]", "nesting deeper than 32", "nesting depth <= 32")
	// A truncated deep value is refused for depth first: the bound is
	// checked before the header and its declared length.
	_, err = DecodeKVBatch(kvdHex(t, "950090c0c0"+strings.Repeat("91", 32)))
	kvdCheckErr(t, "batch element, 32 levels, cut", err, "batch_shape", "payload[4]", "nesting deeper than 32", "nesting depth <= 32")
}

// TestKVEvDecodeSGLangSalt: a form-A BlockStored with SGLang's salt map in
// position 7 decodes with lora_name nil.
func TestKVEvDecodeSGLangSalt(t *testing.T) {
	// E5 with an 8th element {"cache_salt": "s"}.
	p := "93cb41da3054981000009198ab426c6f636b53746f72656491ffc092070802c0a3475055" + "81aa63616368655f73616c74a173" + "c0"
	b, err := DecodeKVBatch(kvdHex(t, p))
	if err != nil {
		t.Fatal(err)
	}
	if ev := b.Events[0]; ev.LoraName != nil || ev.BlockSize != 2 || *ev.Medium != "GPU" {
		t.Fatalf("got %+v", ev)
	}
}

// TestKVEvDecodeFaults: the two hash switches refuse what production takes.
func TestKVEvDecodeFaults(t *testing.T) {
	// E5's hash is -1 (negative fixint): production takes it, Dynamo's
	// u64-only decoder does not.
	if _, err := decodeKVMessage(kvdMsgFrames(t, kvdE5), fault.KVEv{}, spec.KVDecodeLimits{}); err != nil {
		t.Fatal(err)
	}
	_, err := decodeKVMessage(kvdMsgFrames(t, kvdE5), fault.KVEv{UnsignedHashesOnly: true}, spec.KVDecodeLimits{})
	kvdCheckErr(t, "unsigned only, E5", err, "hash_encoding", "payload.events[0].block_hashes[0]", "int", spec.WantHash)
	if _, err := decodeKVMessage(kvdMsgFrames(t, kvdE1), fault.KVEv{UnsignedHashesOnly: true}, spec.KVDecodeLimits{}); err != nil {
		t.Fatalf("unsigned only, E1: %v", err)
	}
	// E1's H2 is >= 2^63: a signed-only decoder refuses it.
	_, err = decodeKVMessage(kvdMsgFrames(t, kvdE1), fault.KVEv{SignedHashesOnly: true}, spec.KVDecodeLimits{})
	kvdCheckErr(t, "signed only, E1", err, "hash_encoding", "payload.events[0].block_hashes[1]", uint64(kvdH2), spec.WantHash)
	if _, err := decodeKVMessage(kvdMsgFrames(t, kvdE5), fault.KVEv{SignedHashesOnly: true}, spec.KVDecodeLimits{}); err != nil {
		t.Fatalf("signed only, E5: %v", err)
	}
	// E3's parent H1 < 2^63 passes, its block hash H2 does not.
	_, err = decodeKVMessage(kvdMsgFrames(t, kvdE3), fault.KVEv{SignedHashesOnly: true}, spec.KVDecodeLimits{})
	kvdCheckErr(t, "signed only, E3", err, "hash_encoding", "payload.events[0].block_hashes[0]", uint64(kvdH2), spec.WantHash)
	// The hook with the zero value is production.
	in := spec.KVEvDecodeInput{Frames: []spec.HexBytes{nil, kvdHex(t, "0000000000000000"), kvdHex(t, kvdE1)}}
	if _, err := kvevDecodeWithFaults(spec.DefaultLimits(), in, fault.KVEv{}); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(func() error {
		_, err := kvevDecodeWithFaults(spec.DefaultLimits(), in, fault.KVEv{SignedHashesOnly: true})
		return err
	}(), spec.ErrHashEncoding) {
		t.Fatal("signed only through the hook: want hash_encoding")
	}
}

// TestKVEvDecodeFastPath shows the one-pass path is taken: decoding E1
// allocates only the output (topic, events, hashes, tokens); E3 adds the
// batch's rank and one box for all its event's optional fields, E4 the rank
// and a box for each of its two events with optional fields; nothing is
// built generically.
func TestKVEvDecodeFastPath(t *testing.T) {
	for _, c := range []struct {
		name, payload string
		allocs        float64
	}{{"E1", kvdE1, 4}, {"E3", kvdE3, 6}, {"E4", kvdE4, 8}} {
		frames := kvdMsgFrames(t, c.payload)
		n := testing.AllocsPerRun(200, func() {
			if _, err := DecodeKVMessage(frames); err != nil {
				t.Fatal(err)
			}
		})
		if n != c.allocs {
			t.Errorf("%s: %v allocations, want %v", c.name, n, c.allocs)
		}
	}
}

// TestKVEvDecodeDoesNotAlias: the result outlives the frames.
func TestKVEvDecodeDoesNotAlias(t *testing.T) {
	frames := kvdMsgFrames(t, kvdE1)
	m, err := DecodeKVMessage(frames)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := json.Marshal(m)
	for _, f := range frames {
		for i := range f {
			f[i] = 0
		}
	}
	after, _ := json.Marshal(m)
	if string(before) != string(after) {
		t.Fatal("decoded message aliases its frames")
	}
}

// kvdCanon is the canonical form of a decode: the message's JSON, or the
// error object's.
func kvdCanon(m spec.KVMessage, err error) string {
	var b []byte
	if err != nil {
		b, _ = json.Marshal(spec.ErrorObjectOf(err))
		return "error " + string(b)
	}
	b, jerr := json.Marshal(m)
	if jerr != nil { // a NaN or infinite ts, which both twins keep
		ts := m.Batch.TS
		m.Batch.TS = 0
		b, _ = json.Marshal(m)
		return fmt.Sprintf("ts %v (%v), %s", ts, jerr, b)
	}
	return string(b)
}

// kvdDiffPayloads are the differential test's inputs: §5's payloads, the
// bad-input table, and mutations of §5's payloads (every truncation, every
// byte replaced by format bytes that change a value's type or length,
// deletions, insertions and seeded random multi-byte flips).
func kvdDiffPayloads(t testing.TB) [][]byte {
	var out [][]byte
	var seeds [][]byte
	for _, c := range kvdSpecPayloads {
		seeds = append(seeds, kvdHex(t, c.hex))
	}
	seeds = append(seeds,
		kvdHex(t, "93cb41da3054981000009198ab426c6f636b53746f72656491ffc092070802c0a3475055"+"81aa63616368655f73616c74a173"+"c0"),
		kvdHex(t, "83a2747300a66576656e747391"+"91a158"+"a178c0"),
		kvdHex(t, "92cb7ff800000000000090"), // ts NaN
		// Form B with "type" last and an unknown key first.
		kvdHex(t, "92009183a16101ac626c6f636b5f686173686573910fa474797065ac426c6f636b52656d6f766564"),
	)
	out = append(out, seeds...)
	for _, c := range kvdBadTable {
		out = append(out, kvdHex(t, c.hex))
	}
	out = append(out, kvdHex(t, kvdNest(29)), kvdHex(t, kvdNest(30)), kvdHex(t, "950090c0c0"+strings.Repeat("91", 32)))
	special := []byte{0x00, 0x01, 0x7f, 0x80, 0x81, 0x8f, 0x90, 0x91, 0x9f, 0xa0, 0xa4, 0xbf, 0xc0, 0xc1, 0xc2,
		0xc4, 0xc5, 0xc6, 0xc7, 0xc9, 0xca, 0xcb, 0xcc, 0xcd, 0xce, 0xcf, 0xd0, 0xd3, 0xd4, 0xd8, 0xd9, 0xdb,
		0xdc, 0xdd, 0xde, 0xdf, 0xe0, 0xff}
	for _, s := range seeds {
		for n := 0; n < len(s); n++ {
			out = append(out, s[:n])
		}
		for i := range s {
			for _, c := range special {
				m := append([]byte(nil), s...)
				m[i] = c
				out = append(out, m)
			}
			out = append(out, append(append([]byte(nil), s[:i]...), s[i+1:]...))
			out = append(out, append(append(append([]byte(nil), s[:i]...), 0xc0), s[i:]...))
		}
	}
	r := rand.New(rand.NewPCG(7, 11))
	for range 2000 {
		s := seeds[r.IntN(len(seeds))]
		m := append([]byte(nil), s...)
		for range 1 + r.IntN(4) {
			m[r.IntN(len(m))] = byte(r.Uint32())
		}
		if r.IntN(3) == 0 {
			m = m[:r.IntN(len(m)+1)]
		}
		out = append(out, m)
	}
	return out
}

// TestKVEvDecodeMatchesRef compares the fast decoder with ref's, output
// and first error, on §5's payloads and their mutations.
func TestKVEvDecodeMatchesRef(t *testing.T) {
	topic, seq := kvdHex(t, kvdTopic52), kvdHex(t, "0000000000000001")
	bad := 0
	codes := map[string]int{}
	payloads := kvdDiffPayloads(t)
	for _, p := range payloads {
		frames := [][]byte{topic, seq, p}
		m, err := ref.DecodeKVMessage(frames)
		want := kvdCanon(m, err)
		code := "ok"
		if err != nil {
			code = spec.ErrorObjectOf(err).Code
		}
		codes[code]++
		got := kvdCanon(DecodeKVMessage(frames))
		if got != want {
			if bad++; bad <= 20 {
				t.Errorf("payload %x:\n fast %s\n  ref %s", p, got, want)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d payloads disagree", bad)
	}
	t.Logf("%d payloads, by ref's outcome: %v", len(payloads), codes)
	for _, frames := range [][][]byte{nil, {topic}, {topic, seq}, {topic, seq, nil, nil}, {topic, seq[:7], nil}, {nil, make([]byte, 9), nil}} {
		if got, want := kvdCanon(DecodeKVMessage(frames)), kvdCanon(ref.DecodeKVMessage(frames)); got != want {
			t.Errorf("frames %x:\n fast %s\n  ref %s", frames, got, want)
		}
	}
}

// FuzzKVEvDecodeMatchesRef: fast and ref agree (output and first error) on
// any payload; the seeds are §5's payloads and the bad-input table.
func FuzzKVEvDecodeMatchesRef(f *testing.F) {
	for _, c := range kvdSpecPayloads {
		f.Add(kvdHex(f, c.hex))
	}
	for _, c := range kvdBadTable {
		f.Add(kvdHex(f, c.hex))
	}
	f.Add(kvdHex(f, "92009183a16101ac626c6f636b5f686173686573910fa474797065ac426c6f636b52656d6f766564"))
	f.Add(kvdHex(f, "93cb41da3054981000009198ab426c6f636b53746f72656491ffc092070802c0a3475055"+"81aa63616368655f73616c74a173"+"c0"))
	f.Fuzz(func(t *testing.T, p []byte) {
		in := append([]byte(nil), p...)
		want := kvdCanon(ref.DecodeKVMessage([][]byte{nil, make([]byte, 8), p}))
		got := kvdCanon(DecodeKVMessage([][]byte{nil, make([]byte, 8), p}))
		if got != want {
			t.Fatalf("payload %x:\n fast %s\n  ref %s", p, got, want)
		}
		if string(in) != string(p) {
			t.Fatal("a decoder wrote to its input")
		}
	})
}

// TestKVEvDecodeIntoTheScratchMatchesDecodeKVBatch decodes the payloads of
// TestKVEvDecodeMatchesRef one after another into one reused scratch, the
// index's decode, with a large batch (past what a scratch keeps) among
// them: each result, read before the next decode, must be the allocating
// decoder's, output and first error.
func TestKVEvDecodeIntoTheScratchMatchesDecodeKVBatch(t *testing.T) {
	topic := kvdHex(t, kvdTopic52)
	payloads := kvdDiffPayloads(t)
	big, _ := kxStoredRing(1)
	hs := make([]uint64, 3000)
	for i := range hs {
		hs[i] = uint64(i + 1)
	}
	large := kxBatch(nil, kxEvStored(hs, nil, kxSeqTokens(0, 16*len(hs)), 16, kxEvOpt{}), kxEvRemoved(hs, kxEvOpt{}))
	payloads = slices.Insert(payloads, len(payloads)/2, append(big, large)...)
	payloads = append(payloads, big...)
	var sc kvDecScratch
	for _, p := range payloads {
		b, err := DecodeKVBatchWithin(p, spec.KVDecodeLimits{})
		want := kvdCanon(ref.KVMessageOf(topic, 1, b), err)
		b, err = decodeKVBatchScratch(p, fault.KVEv{}, spec.KVDecodeLimits{}, &sc)
		if got := kvdCanon(ref.KVMessageOf(topic, 1, b), err); got != want {
			t.Fatalf("payload %x:\n scratch %s\n    want %s", p, got, want)
		}
	}
	if n := uintptr(cap(sc.tokens)) * unsafe.Sizeof(uint32(0)); n > kvScratchKeepBytes {
		t.Errorf("the scratch kept %d bytes of tokens", n)
	}
}
