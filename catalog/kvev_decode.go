package catalog

import (
	"encoding/hex"
	"strings"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
)

// KVEvDecode registers kvev.decode (docs/spec/kv-events.md §1): one ZMQ
// message of a vLLM or SGLang KV-event stream decoded to canonical events.
func KVEvDecode() *Op[ref.KVEvDecodeInput, ref.KVMessage] {
	return &Op[ref.KVEvDecodeInput, ref.KVMessage]{
		OpName:  "kvev.decode",
		SpecRef: "kv-events.md §1",
		Summary: "KV-event message (topic, seq, msgpack batch, both event encodings) → canonical events, or the first §1 error",
		Ref:     ref.KVEvDecode,
		Fast:    fast.KVEvDecode,
		// A token is one msgpack byte and a JSON number of up to 11 bytes.
		Work: Cost{PerInputByte: 64, PerOutputByte: 8, Fixed: 1 << 20},
		// §5.2: topic kv@10.0.0.7@llama, seq 1, payload E2.
		Sample: ref.KVEvDecodeInput{Frames: []ref.HexBytes{
			[]byte("kv@10.0.0.7@llama"),
			{0, 0, 0, 0, 0, 0, 0, 1},
			mustHex("93 cb41da3054981000 00 91 93 ac 426c6f636b52656d6f766564 91 cff0e1d2c3b4a59687 a3 475055 00"),
		}},
	}
}

// mustHex decodes a spec example's spaced hex; a bad literal is a bug here.
func mustHex(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic("catalog: bad hex literal: " + err.Error())
	}
	return b
}
