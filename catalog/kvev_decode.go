package catalog

import (
	"encoding/binary"
	"encoding/hex"
	"strings"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// KVEvDecode registers kvev.decode (docs/spec/kv-events.md §1): one ZMQ
// message of a vLLM or SGLang KV-event stream decoded to canonical events.
func KVEvDecode() *Op[spec.KVEvDecodeInput, spec.KVEvDecodeOutput] {
	return &Op[spec.KVEvDecodeInput, spec.KVEvDecodeOutput]{
		OpName:  "kvev.decode",
		SpecRef: "kv-events.md §1",
		Summary: "KV-event message (topic, seq, msgpack batch, both event encodings) → canonical events, or the first §1 error",
		Ref:     ref.KVEvDecode,
		Fast:    fast.KVEvDecode,
		// A token is one msgpack byte and a JSON number of up to 11 bytes.
		Work: Cost{PerInputByte: 64, PerOutputByte: 8, Fixed: 1 << 20},
		// §5.2: topic kv@10.0.0.7@llama, seq 1, payload E2.
		Sample: spec.KVEvDecodeInput{Frames: []spec.HexBytes{
			[]byte("kv@10.0.0.7@llama"),
			{0, 0, 0, 0, 0, 0, 0, 1},
			mustHex("93 cb41da3054981000 00 91 93 ac 426c6f636b52656d6f766564 91 cff0e1d2c3b4a59687 a3 475055 00"),
		}},
		Shapes: []Shape[spec.KVEvDecodeInput]{
			// One vLLM scheduler step's store of a 1K-token prompt's run.
			{Name: "stored-64-blocks-x16-tokens", Make: func() spec.KVEvDecodeInput {
				return spec.KVEvDecodeInput{Frames: kvevFrames(0, kvevStored(1, nil, 64, 16, 0))}
			}},
			// A long prompt's run in one message.
			{Name: "stored-4096-blocks-x16-tokens", Make: func() spec.KVEvDecodeInput {
				return spec.KVEvDecodeInput{Frames: kvevFrames(0, kvevStored(1, nil, 4096, 16, 0))}
			}},
		},
	}
}

// kvevTS is §5's ts, 1757500000.25, as a msgpack float64.
var kvevTS = []byte{0xcb, 0x41, 0xda, 0x30, 0x54, 0x98, 0x10, 0x00, 0x00}

// kvevStored is the payload [ts, [["BlockStored", hashes, parent, tokens,
// bs, nil, "GPU"]], 0] (§1.3-§1.4, form A) storing blocks blocks with
// hashes first, first+1, …, tokens derived from salt, in fixed-width
// msgpack formats: the benchmark shapes' input, written here because the
// catalog imports only the twins.
func kvevStored(first uint64, parent *uint64, blocks, bs int, salt uint32) []byte {
	b := append([]byte{0x93}, kvevTS...)
	b = append(b, 0x91, 0x97, 0xab)
	b = append(b, "BlockStored"...)
	b = binary.BigEndian.AppendUint32(append(b, 0xdd), uint32(blocks))
	for i := range blocks {
		b = binary.BigEndian.AppendUint64(append(b, 0xcf), first+uint64(i))
	}
	if parent == nil {
		b = append(b, 0xc0)
	} else {
		b = binary.BigEndian.AppendUint64(append(b, 0xcf), *parent)
	}
	b = binary.BigEndian.AppendUint32(append(b, 0xdd), uint32(blocks*bs))
	for i := range blocks * bs {
		b = binary.BigEndian.AppendUint32(append(b, 0xce), (uint32(i)*2654435761+salt)%151936)
	}
	b = binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(bs))
	return append(b, 0xc0, 0xa3, 'G', 'P', 'U', 0x00)
}

// kvevRemoved is the payload [ts, [["BlockRemoved", hashes, "GPU"]], 0]
// removing the hashes first, first+1, … of blocks blocks.
func kvevRemoved(first uint64, blocks int) []byte {
	b := append([]byte{0x93}, kvevTS...)
	b = append(b, 0x91, 0x93, 0xac)
	b = append(b, "BlockRemoved"...)
	b = binary.BigEndian.AppendUint32(append(b, 0xdd), uint32(blocks))
	for i := range blocks {
		b = binary.BigEndian.AppendUint64(append(b, 0xcf), first+uint64(i))
	}
	return append(b, 0xa3, 'G', 'P', 'U', 0x00)
}

// kvevFrames is a live message of §1.2 with seq and payload.
func kvevFrames(seq uint64, payload []byte) []spec.HexBytes {
	return []spec.HexBytes{[]byte("kv@pod-0@bench"), binary.BigEndian.AppendUint64(nil, seq), payload}
}

// mustHex decodes a spec example's spaced hex; a bad literal is a bug here.
func mustHex(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic("catalog: bad hex literal: " + err.Error())
	}
	return b
}
