package fast

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/spec"
)

// Tests of docs/spec/kv-events.md §2.10 A10 on the fast twin, the one
// `serve` runs: what the decoded-cost constants claim about the Go values
// the decoder builds, the real producers' ratios the default stands on,
// and finding 1 of issue 27 refused without allocating.

// kvbBatch is [ts, [n × event], 0] with an array32 events header.
func kvbBatch(event []byte, n int) []byte {
	b := append([]byte{0x93, 0xcb}, binary.BigEndian.AppendUint64(nil, 0x41da305498100000)...)
	b = binary.BigEndian.AppendUint32(append(b, 0xdd), uint32(n))
	b = append(b, bytes.Repeat(event, n)...)
	return append(b, 0x00)
}

func kvbStr(s string) []byte { return append([]byte{0xa0 + byte(len(s))}, s...) }

// One event of each kind a real producer sends (docs/spec/kv-events.md
// §1.4), with 64-bit hashes as vLLM (uint64) and SGLang (int64) write them.
var (
	kvbHash    = []byte{0xcf, 0xf0, 0xe1, 0xd2, 0xc3, 0xb4, 0xa5, 0x96, 0x87}
	kvbSGLHash = []byte{0xd3, 0x70, 0xe1, 0xd2, 0xc3, 0xb4, 0xa5, 0x96, 0x87}
)

// kvbVLLMStored is vLLM's last array form: one 16-token block, uint32
// tokens: 9c, tag 12, [H] 10, parent 9, dc 0010 + 16 × 5, 16, nil, "GPU",
// nil, nil, 0, "full_attention" 15, nil = 140 bytes.
func kvbVLLMStored() []byte {
	b := append([]byte{0x9c}, kvbStr(spec.EventStored)...)
	b = append(append(append(b, 0x91), kvbHash...), kvbHash...)
	b = append(b, 0xdc, 0x00, 0x10)
	for i := range 16 {
		b = binary.BigEndian.AppendUint32(append(b, 0xce), uint32(100000+i))
	}
	b = append(b, 0x10, 0xc0)
	b = append(b, kvbStr("GPU")...)
	b = append(b, 0xc0, 0xc0, 0x00)
	return append(append(b, kvbStr("full_attention")...), 0xc0)
}

// kvbSGLStored is SGLang's per-page store at page size 1: 97, tag 12,
// [H] 10, parent 9, [token] 6, 1, nil, "GPU" 4 = 44 bytes.
func kvbSGLStored() []byte {
	b := append([]byte{0x97}, kvbStr(spec.EventStored)...)
	b = append(append(append(b, 0x91), kvbSGLHash...), kvbSGLHash...)
	b = binary.BigEndian.AppendUint32(append(b, 0x91, 0xce), 151000)
	return append(append(b, 0x01, 0xc0), kvbStr("GPU")...)
}

// kvbSGLRemoved is SGLang's per-page removal: 93, tag 13, [H] 10, "GPU" 4
// = 28 bytes.
func kvbSGLRemoved() []byte {
	b := append([]byte{0x93}, kvbStr(spec.EventRemoved)...)
	b = append(append(b, 0x91), kvbSGLHash...)
	return append(b, kvbStr("GPU")...)
}

// kvbCost is A10's decoded cost of n events of h hashes and k tokens each.
func kvbCost(n, h, k int) int64 {
	return int64(n) * (spec.KVEventCost + int64(h)*spec.KVHashCost + int64(k)*spec.KVTokenCost)
}

func kvbAllocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestKVDecodeCostBoundsWhatTheFastDecoderAllocates pins A10's constants to
// the Go structs: decoding 20,000 events of each real kind allocates no more
// than the decoded cost plus the payload's own size (strings are copies of
// payload bytes), and the real kinds' cost per payload byte is below the
// default ratio of 16 while finding 1's three-byte events are far above it.
func TestKVDecodeCostBoundsWhatTheFastDecoderAllocates(t *testing.T) {
	const n = 20000
	for _, c := range []struct {
		name      string
		event     []byte
		size      int
		h, k      int
		realistic bool
	}{
		{"vllm-16-token-block", kvbVLLMStored(), 140, 1, 16, true},
		{"sglang-page-store", kvbSGLStored(), 44, 1, 1, true},
		{"sglang-page-removal", kvbSGLRemoved(), 28, 1, 0, true},
		{"cleared", append([]byte{0x91}, kvbStr(spec.EventCleared)...), 18, 0, 0, true},
		{"finding-1-unknown-x", []byte{0x91, 0xa1, 'x'}, 3, 0, 0, false},
	} {
		if len(c.event) != c.size {
			t.Fatalf("%s: %d bytes, counted %d", c.name, len(c.event), c.size)
		}
		payload := kvbBatch(c.event, n)
		cost := kvbCost(n, c.h, c.k)
		var err error
		alloc := kvbAllocated(func() {
			_, err = DecodeKVBatchWithin(payload, spec.KVDecodeLimits{MaxDecodeRatio: spec.MaxKVDecodeRatio})
		})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if alloc > uint64(cost)+uint64(len(payload)) {
			t.Errorf("%s: allocated %d bytes, more than the cost %d + the payload %d", c.name, alloc, cost, len(payload))
		}
		ratio := float64(cost) / float64(len(payload))
		t.Logf("%s: %d bytes allocated, cost %d, %.2f per payload byte", c.name, alloc, cost, ratio)
		if c.realistic != (ratio < spec.DefaultKVMaxDecodeRatio) {
			t.Errorf("%s: %.2f cost per payload byte; realistic %v, default ratio %d", c.name, ratio, c.realistic, spec.DefaultKVMaxDecodeRatio)
		}
	}
}

// TestFastDecodeRefusesFindingOneWithoutAllocating: issue 27's message of
// 5,600,000 `["x"]` events (16,800,016 bytes) is refused at payload.events
// (max_events) by the fast twin, with no event allocated.
func TestFastDecodeRefusesFindingOneWithoutAllocating(t *testing.T) {
	payload := kvbBatch([]byte{0x91, 0xa1, 'x'}, 5_600_000)
	var err error
	alloc := kvbAllocated(func() { _, err = DecodeKVBatch(payload) })
	ie, ok := spec.AsInputError(err)
	if !ok || ie.Err != spec.ErrMessageBudget || ie.Field != "payload.events" || ie.Value != uint64(5_600_000) {
		t.Fatalf("got %v", err)
	}
	if alloc > 1<<16 {
		t.Errorf("refusing it allocated %d bytes", alloc)
	}
}

// TestFastCursorHeldBytesOverflowIsACountOverflow mirrors ref's test of
// A7's byte bound: 12-byte messages, max_held_bytes 24.
func TestFastCursorHeldBytesOverflowIsACountOverflow(t *testing.T) {
	ix, err := newKVIndex(spec.KVEvConfig{MaxHeldBytes: 24}, []spec.KVEvStream{{Name: "r", Replay: true}}, fault.KVEv{})
	if err != nil {
		t.Fatal(err)
	}
	msg := func(s uint64) [][]byte {
		return [][]byte{[]byte("t"), binary.BigEndian.AppendUint64(nil, s), {0x92, 0x00, 0x90}}
	}
	for _, c := range []struct {
		seq  uint64
		held int
	}{{0, 0}, {3, 1}, {4, 2}, {5, 2}} {
		if r := ix.Live("r", msg(c.seq)); r.Held != c.held || r.Error != nil {
			t.Fatalf("seq %d: %+v", c.seq, r)
		}
	}
	st := ix.streams.Load().byName["r"]
	if st.heldBytes != 24 || st.c.HeldOverflow != 1 || !st.staleSet || st.staleSince != 5 {
		t.Fatalf("stream: %d bytes, %+v, stale %v since %d", st.heldBytes, st.c, st.staleSet, st.staleSince)
	}
	if r := ix.ReplayFailed("r", spec.ReplayReasonTimeout); r.Held != 0 || st.heldBytes != 0 {
		t.Fatalf("after the drain: %+v, %d bytes", r, st.heldBytes)
	}
}
