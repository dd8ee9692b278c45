package fast

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// kvdAppendUint appends v in msgpack's smallest unsigned encoding.
func kvdAppendUint(b []byte, v uint64) []byte {
	switch {
	case v <= 0x7f:
		return append(b, byte(v))
	case v <= 0xff:
		return append(b, 0xcc, byte(v))
	case v <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(v))
	case v <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xcf), v)
}

func kvdAppendStr(b []byte, s string) []byte {
	return append(append(b, 0xa0|byte(len(s))), s...)
}

// kvdStoredPayload is a batch [ts, [BlockStored], 0] of one store of blocks
// blocks of bs tokens (token ids drawn below 128k, as a large vocabulary's
// would be), with uint64 block hashes, in form A or form B as vLLM writes them.
func kvdStoredPayload(blocks, bs int, mapForm bool) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := []byte{0x93, 0xcb, 0x41, 0xda, 0x30, 0x54, 0x98, 0x10, 0x00, 0x00, 0x91}
	hashes := func(b []byte) []byte {
		b = binary.BigEndian.AppendUint16(append(b, 0xdc), uint16(blocks))
		for range blocks {
			b = binary.BigEndian.AppendUint64(append(b, 0xcf), r.Uint64())
		}
		return b
	}
	tokens := func(b []byte) []byte {
		b = binary.BigEndian.AppendUint16(append(b, 0xdc), uint16(blocks*bs))
		for range blocks * bs {
			b = kvdAppendUint(b, uint64(r.IntN(128000)))
		}
		return b
	}
	parent := func(b []byte) []byte { return binary.BigEndian.AppendUint64(append(b, 0xcf), r.Uint64()) }
	if mapForm {
		b = append(b, 0x89)
		b = kvdAppendStr(kvdAppendStr(b, "type"), "BlockStored")
		b = hashes(kvdAppendStr(b, "block_hashes"))
		b = parent(kvdAppendStr(b, "parent_block_hash"))
		b = tokens(kvdAppendStr(b, "token_ids"))
		b = kvdAppendUint(kvdAppendStr(b, "block_size"), uint64(bs))
		b = append(kvdAppendStr(b, "lora_id"), 0xc0)
		b = kvdAppendStr(kvdAppendStr(b, "medium"), "GPU")
		b = append(kvdAppendStr(b, "lora_name"), 0xc0)
		b = append(kvdAppendStr(b, "group_idx"), 0)
	} else {
		b = kvdAppendStr(append(b, 0x9c), "BlockStored")
		b = tokens(parent(hashes(b)))
		b = kvdAppendUint(b, uint64(bs))
		b = append(b, 0xc0)
		b = kvdAppendStr(b, "GPU")
		b = append(b, 0xc0, 0x91, 0xc0, 0x00)
		b = kvdAppendStr(b, "full_attention")
		b = append(b, 0xc0)
	}
	return append(b, 0) // dp rank 0
}

// BenchmarkKVEvDecodeStored16x64 decodes a batch holding one BlockStored
// of 64 blocks × 16 tokens, in each encoding, and reports blocks/s.
func BenchmarkKVEvDecodeStored16x64(b *testing.B) {
	const blocks, bs = 64, 16
	for _, form := range []struct {
		name    string
		mapForm bool
	}{{"array", false}, {"map", true}} {
		b.Run(form.name, func(b *testing.B) {
			frames := [][]byte{[]byte("kv@10.0.0.7@llama"), make([]byte, 8), kvdStoredPayload(blocks, bs, form.mapForm)}
			if m, err := DecodeKVMessage(frames); err != nil || len(m.Batch.Events[0].TokenIDs) != blocks*bs {
				b.Fatalf("bad payload: %v", err)
			}
			b.SetBytes(int64(len(frames[2])))
			b.ReportAllocs()
			b.ResetTimer()
			n := 0
			for b.Loop() {
				if _, err := DecodeKVMessage(frames); err != nil {
					b.Fatal(err)
				}
				n++
			}
			secs := b.Elapsed().Seconds()
			b.ReportMetric(float64(n*blocks)/secs, "blocks/s")
			b.ReportMetric(secs*1e9/float64(n*blocks), "ns/block")
		})
	}
}
