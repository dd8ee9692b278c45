package ref_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// Tests of docs/spec/kv-events.md §2.10 A10 (the bounds of one message) on
// the reference decoder. Every expectation is derived by hand from the
// spec's text: the payload's length is counted byte by byte, the cost is
// 256 per event, 8 per hash and 4 per token, the bound ratio × length +
// 65,536.

// unknownEvents is [ts, [n × ["x"]], 0]: issue 27's finding-1 payload,
// 93 cb <ts> dd <n> (91 a1 78)×n 00, of 1 + 9 + 5 + 3n + 1 = 3n + 16 bytes.
func unknownEvents(n int) []byte {
	b := append([]byte{0x93}, kvHexNoT(kvTS)...)
	b = binary.BigEndian.AppendUint32(append(b, 0xdd), uint32(n))
	b = append(b, bytes.Repeat([]byte{0x91, 0xa1, 'x'}, n)...)
	return append(b, 0x00)
}

// emptyTagEvents is [ts, [n × [""]], 0] with an array16 header (n <
// 65,536): 1 + 9 + 3 + 2n + 1 = 2n + 14 bytes.
func emptyTagEvents(n int) []byte {
	b := append([]byte{0x93}, kvHexNoT(kvTS)...)
	b = binary.BigEndian.AppendUint16(append(b, 0xdc), uint16(n))
	b = append(b, bytes.Repeat([]byte{0x91, 0xa0}, n)...)
	return append(b, 0x00)
}

// removedFixintHashes is [ts, [["BlockRemoved", [k × 1]]], 0] with an
// array16 hash list: 1 + 9 + 1 + 1 + 13 + 3 + k + 1 = k + 29 bytes.
func removedFixintHashes(k int) []byte {
	b := append([]byte{0x93}, kvHexNoT(kvTS)...)
	b = append(b, 0x91, 0x92)
	b = append(b, kvHexNoT(kvRemoved)...)
	b = binary.BigEndian.AppendUint16(append(b, 0xdc), uint16(k))
	b = append(b, bytes.Repeat([]byte{0x01}, k)...)
	return append(b, 0x00)
}

// storedFixintTokens is [ts, [["BlockStored", [1], nil, [T × 1], T]], 0]
// with array16 tokens and a uint16 block size: 1 + 9 + 1 + 1 + 12 + 2 + 1
// + 3 + T + 3 + 1 = T + 34 bytes.
func storedFixintTokens(tokens int) []byte {
	b := append([]byte{0x93}, kvHexNoT(kvTS)...)
	b = append(b, 0x91, 0x95)
	b = append(b, kvHexNoT(kvStored)...)
	b = append(b, 0x91, 0x01, 0xc0)
	b = binary.BigEndian.AppendUint16(append(b, 0xdc), uint16(tokens))
	b = append(b, bytes.Repeat([]byte{0x01}, tokens)...)
	b = binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(tokens))
	return append(b, 0x00)
}

func kvHexNoT(s string) []byte {
	var out []byte
	for _, f := range strings.Fields(s) {
		var b []byte
		if _, err := fmt.Sscanf(f, "%x", &b); err != nil {
			panic(err)
		}
		out = append(out, b...)
	}
	return out
}

// TestKVBoundsPayloadBuildersHaveTheLengthsTheirCommentsSay keeps the
// hand-counted lengths below honest.
func TestKVBoundsPayloadBuildersHaveTheLengthsTheirCommentsSay(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"unknown 5", len(unknownEvents(5)), 3*5 + 16},
		{"empty tag 258", len(emptyTagEvents(258)), 2*258 + 14},
		{"hashes 9329", len(removedFixintHashes(9329)), 9329 + 29},
		{"tokens 21768", len(storedFixintTokens(21768)), 21768 + 34},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d bytes, want %d", c.name, c.got, c.want)
		}
	}
	if _, err := ref.DecodeKVBatch(unknownEvents(5)); err != nil {
		t.Fatal(err)
	}
}

// TestDecodeRefusesFindingOneAtTheEventsHeaderWithoutAllocating is issue
// 27's finding 1 on the decoder: 5,600,000 three-byte unknown events
// (16.8 MB) are refused at payload.events by max_events (2^18), before any
// event is read: the decode allocates almost nothing.
func TestDecodeRefusesFindingOneAtTheEventsHeaderWithoutAllocating(t *testing.T) {
	payload := unknownEvents(5_600_000)
	if len(payload) != 16_800_016 {
		t.Fatalf("payload of %d bytes", len(payload))
	}
	var before, after runtimeMem
	before.read()
	_, err := ref.DecodeKVBatch(payload)
	after.read()
	checkKVErr(t, "finding 1", err, spec.ErrMessageBudget, "payload.events", uint64(5_600_000), "at most 262144 events (max_events)")
	if got := after.total - before.total; got > 1<<16 {
		t.Errorf("refusing it allocated %d bytes", got)
	}
	// With max_events at its cap the decoded cost refuses it at the same
	// place: 5,600,000 × 256 = 1,433,600,000 > 16 × 16,800,016 + 65,536 = 268,865,792.
	_, err = ref.DecodeKVBatchWithin(payload, spec.KVDecodeLimits{MaxEvents: spec.MaxKVEvents})
	checkKVErr(t, "finding 1 by cost", err, spec.ErrMessageBudget, "payload.events", int64(1_433_600_000),
		"a decoded cost of at most 268865792 bytes: 16 × 16800016 payload bytes + 65536 (max_decode_ratio)")
}

// TestDecodeMaxEventsIsInclusive: max_events events decode, one more does not.
func TestDecodeMaxEventsIsInclusive(t *testing.T) {
	lim := spec.KVDecodeLimits{MaxEvents: 4}
	b, err := ref.DecodeKVBatchWithin(unknownEvents(4), lim)
	if err != nil || len(b.Events) != 4 {
		t.Fatalf("4 events: %d, %v", len(b.Events), err)
	}
	_, err = ref.DecodeKVBatchWithin(unknownEvents(5), lim)
	checkKVErr(t, "5 events", err, spec.ErrMessageBudget, "payload.events", uint64(5), "at most 4 events (max_events)")
}

// TestDecodeCostBoundIsInclusiveAtEachArray pins the three charges at and
// one past the bound, with max_decode_ratio 1 (bound = length + 65,536).
func TestDecodeCostBoundIsInclusiveAtEachArray(t *testing.T) {
	lim := spec.KVDecodeLimits{MaxDecodeRatio: 1}
	// Events: 256n <= 2n + 14 + 65,536 holds up to n = 258 (66,048 <=
	// 66,066); n = 259 costs 66,304 against 66,068.
	if _, err := ref.DecodeKVBatchWithin(emptyTagEvents(258), lim); err != nil {
		t.Fatalf("258 events: %v", err)
	}
	_, err := ref.DecodeKVBatchWithin(emptyTagEvents(259), lim)
	checkKVErr(t, "259 events", err, spec.ErrMessageBudget, "payload.events", int64(66304),
		"a decoded cost of at most 66068 bytes: 1 × 532 payload bytes + 65536 (max_decode_ratio)")
	// Hashes: 256 + 8k <= k + 29 + 65,536 holds up to k = 9,329; k = 9,330
	// costs 74,896 against 74,895.
	if _, err := ref.DecodeKVBatchWithin(removedFixintHashes(9329), lim); err != nil {
		t.Fatalf("9329 hashes: %v", err)
	}
	_, err = ref.DecodeKVBatchWithin(removedFixintHashes(9330), lim)
	checkKVErr(t, "9330 hashes", err, spec.ErrMessageBudget, "payload.events[0].block_hashes", int64(74896),
		"a decoded cost of at most 74895 bytes: 1 × 9359 payload bytes + 65536 (max_decode_ratio)")
	// Tokens: 256 + 8 + 4T <= T + 34 + 65,536 holds up to T = 21,768; T =
	// 21,769 costs 87,340 against 87,339.
	if _, err := ref.DecodeKVBatchWithin(storedFixintTokens(21768), lim); err != nil {
		t.Fatalf("21768 tokens: %v", err)
	}
	_, err = ref.DecodeKVBatchWithin(storedFixintTokens(21769), lim)
	checkKVErr(t, "21769 tokens", err, spec.ErrMessageBudget, "payload.events[0].token_ids", int64(87340),
		"a decoded cost of at most 87339 bytes: 1 × 21803 payload bytes + 65536 (max_decode_ratio)")
}

// TestDecodeChecksTheDeclaredLengthBeforeTheBounds pins A10's place in A6's
// order: a header declaring more elements than bytes follow is A6's
// KVLengthError even when it is also past max_events.
func TestDecodeChecksTheDeclaredLengthBeforeTheBounds(t *testing.T) {
	_, err := ref.DecodeKVBatchWithin(kvHex(t, arr(kvTS, "dc 0014 91a178 91a178 91a178")), spec.KVDecodeLimits{MaxEvents: 1})
	checkKVErr(t, "20 declared, 9 bytes left", err, spec.ErrBatchShape, "payload.events", uint64(20), "a length the 9 bytes left can hold")
	// With the bytes there, the same header is past max_events.
	_, err = ref.DecodeKVBatchWithin(kvHex(t, arr(kvTS, "dc 0003 91a178 91a178 91a178")), spec.KVDecodeLimits{MaxEvents: 1})
	checkKVErr(t, "3 declared and present", err, spec.ErrMessageBudget, "payload.events", uint64(3), "at most 1 events (max_events)")
	// Skipped values build nothing: an unknown event's array of 1,000
	// elements costs nothing.
	junk := "dc 03e8" + strings.Repeat("00", 1000)
	if _, err := ref.DecodeKVBatchWithin(kvHex(t, batchOf(arr(fs("Later"), junk))), spec.KVDecodeLimits{MaxDecodeRatio: 1}); err != nil {
		t.Fatalf("skipped array charged: %v", err)
	}
}

// TestKVEvDecodeValidatesItsLimits: kvev.decode refuses limits past their
// caps up front, naming limits.<field>, and treats zero as the default.
func TestKVEvDecodeValidatesItsLimits(t *testing.T) {
	frames := []spec.HexBytes{[]byte("t"), make([]byte, 8), unknownEvents(3)}
	for _, c := range []struct {
		lim   spec.KVDecodeLimits
		field string
		value any
	}{
		{spec.KVDecodeLimits{MaxEvents: -1}, "limits.max_events", -1},
		{spec.KVDecodeLimits{MaxEvents: 1<<24 + 1}, "limits.max_events", 1<<24 + 1},
		{spec.KVDecodeLimits{MaxDecodeRatio: -1}, "limits.max_decode_ratio", int64(-1)},
		{spec.KVDecodeLimits{MaxDecodeRatio: 1025}, "limits.max_decode_ratio", int64(1025)},
	} {
		_, err := ref.KVEvDecode(spec.DefaultLimits(), spec.KVEvDecodeInput{Frames: frames, Limits: c.lim})
		checkKVErr(t, c.field, err, spec.ErrTooLarge, c.field, c.value, "")
	}
	// The caps themselves are accepted, and so is nothing at all.
	for _, lim := range []spec.KVDecodeLimits{{}, {MaxEvents: 1 << 24, MaxDecodeRatio: 1024}, {MaxEvents: 3, MaxDecodeRatio: 1}} {
		if _, err := ref.KVEvDecode(spec.DefaultLimits(), spec.KVEvDecodeInput{Frames: frames, Limits: lim}); err != nil {
			t.Errorf("%+v: %v", lim, err)
		}
	}
	_, err := ref.KVEvDecode(spec.DefaultLimits(), spec.KVEvDecodeInput{Frames: frames, Limits: spec.KVDecodeLimits{MaxEvents: 2}})
	checkKVErr(t, "3 events under 2", err, spec.ErrMessageBudget, "payload.events", uint64(3), "at most 2 events (max_events)")
}

// TestKVEvConfigBoundsDefaultsAndCaps pins A5/A7/A10's defaults and caps.
func TestKVEvConfigBoundsDefaultsAndCaps(t *testing.T) {
	d := spec.KVEvConfig{}.WithDefaults()
	if d.MaxEvents != 262144 || d.MaxDecodeRatio != 16 || d.MaxHeldBytes != 64<<20 {
		t.Fatalf("defaults %+v", d)
	}
	if d != spec.DefaultKVEvConfig() {
		t.Fatalf("WithDefaults %+v != DefaultKVEvConfig %+v", d, spec.DefaultKVEvConfig())
	}
	for _, c := range []struct {
		cfg   spec.KVEvConfig
		field string
	}{
		{spec.KVEvConfig{MaxEvents: -1}, "config.max_events"},
		{spec.KVEvConfig{MaxEvents: 1<<24 + 1}, "config.max_events"},
		{spec.KVEvConfig{MaxDecodeRatio: 1025}, "config.max_decode_ratio"},
		{spec.KVEvConfig{MaxHeldBytes: -1}, "config.max_held_bytes"},
		{spec.KVEvConfig{MaxHeldBytes: 1<<40 + 1}, "config.max_held_bytes"},
	} {
		err := c.cfg.Validate()
		if ie, ok := spec.AsInputError(err); !ok || ie.Field != c.field {
			t.Errorf("%+v: %v, want an error at %s", c.cfg, err, c.field)
		}
	}
	if err := (spec.KVEvConfig{MaxEvents: 1 << 24, MaxDecodeRatio: 1024, MaxHeldBytes: 1 << 40}).Validate(); err != nil {
		t.Fatal(err)
	}
}
