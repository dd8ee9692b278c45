package equiv

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/spec"
)

// mpSkipAll reads p as one msgpack value with vmihailenco's generic
// decoder and reports how many bytes are left after it.
func mpSkipAll(p []byte) (left int, err error) {
	r := bytes.NewReader(p)
	if err := msgpack.NewDecoder(r).Skip(); err != nil {
		return 0, err
	}
	return r.Len(), nil
}

// TestKVEvEncoderWritesSpecExamples: the test-data encoder, fed §5.1's
// layouts, writes exactly the spec's hex and sizes, so the generators' payloads are laid out as the spec's are.
func TestKVEvEncoderWritesSpecExamples(t *testing.T) {
	ts := mpF64(1757500000.25)
	h1, h2 := mpU(0x1111111111111111), mpU(0xF0E1D2C3B4A59687)
	toks := mpA(mpU(128), mpU(255), mpU(256), mpU(65536))
	digest := make([]byte, 32)
	for i := range digest {
		digest[i] = byte(i)
	}
	cases := []struct {
		name string
		v    *mpVal
		want []byte
	}{
		{"E1", mpA(ts, mpA(mpA(mpS("BlockStored"), mpA(h1, h2), mpNil(), mpA(mpU(1), mpU(2), mpU(3), mpU(4), mpU(128), mpU(255), mpU(256), mpU(65536)), mpU(4), mpNil()))), kvE1},
		{"E2", mpA(ts, mpA(mpA(mpS("BlockRemoved"), mpA(h2), mpS("GPU"))), mpU(0)), kvE2},
		{"E3", mpA(ts, mpA(mpA(mpS("BlockStored"), mpA(h2), h1, toks, mpU(4), mpNil(), mpS("GPU"), mpNil(), mpA(mpNil()), mpU(0), mpS("full_attention"), mpNil())), mpU(0)), kvE3},
		{"E4", mpA(ts, mpA(
			mpM(mpS("type"), mpS("BlockStored"), mpS("block_hashes"), mpA(h1), mpS("parent_block_hash"), mpNil(), mpS("token_ids"), mpA(mpU(1), mpU(2), mpU(3), mpU(4)),
				mpS("block_size"), mpU(4), mpS("lora_id"), mpNil(), mpS("medium"), mpS("GPU"), mpS("lora_name"), mpNil(), mpS("group_idx"), mpU(0)),
			mpM(mpS("type"), mpS("BlockRemoved"), mpS("block_hashes"), mpA(h1), mpS("medium"), mpS("GPU")),
			mpM(mpS("type"), mpS("AllBlocksCleared"))), mpU(0)), kvE4},
		{"E5", mpA(ts, mpA(mpA(mpS("BlockStored"), mpA(mpI(-1)), mpNil(), mpA(mpU(7), mpU(8)), mpU(2), mpNil(), mpS("GPU"))), mpNil()), kvE5},
		{"E6", mpA(ts, mpA(mpM(mpS("type"), mpS("BlockRemoved"), mpS("block_hashes"), mpA(mpB(digest)), mpS("medium"), mpS("GPU"))), mpU(0)), kvE6},
	}
	sizes := map[string]int{"E1": 63, "E2": 40, "E3": 83, "E4": 217, "E5": 37, "E6": 90}
	for _, c := range cases {
		got := c.v.bytes()
		if !bytes.Equal(got, c.want) {
			t.Errorf("%s: the encoder writes\n%s\nthe spec has\n%s", c.name, hex.EncodeToString(got), hex.EncodeToString(c.want))
		}
		if len(c.want) != sizes[c.name] {
			t.Errorf("%s: %d bytes, the spec says %d", c.name, len(c.want), sizes[c.name])
		}
	}
	// E6's bin normalises like the int vLLM's int mode would send.
	if v := hashVal(0x18191a1b1c1d1e1f, hashBin32, digest); !bytes.Equal(v.bin, digest) {
		t.Errorf("hashVal(bin32) = %x, want E6's digest", v.bin)
	}
}

// TestKVEvDecodeGeneratorsWriteMsgpack: every valid payload is exactly one
// msgpack value for a generic decoder, as are the invalid ones whose
// violation is not in the msgpack layer; truncated ones and declared
// lengths past the end are not.
func TestKVEvDecodeGeneratorsWriteMsgpack(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := kvDecodeValid(t)
		if len(in.Frames) != 3 || len(in.Frames[1]) != 8 {
			t.Fatalf("frames %v", in.Frames)
		}
		left, err := mpSkipAll(in.Frames[2])
		if err != nil || left != 0 {
			t.Fatalf("payload %x: %v, %d bytes left", []byte(in.Frames[2]), err, left)
		}
	})
	rapid.Check(t, func(t *rapid.T) {
		bad := kvDecodeInvalid(t)
		if len(bad.In.Frames) != 3 || len(bad.In.Frames[1]) != 8 {
			return
		}
		left, err := mpSkipAll(bad.In.Frames[2])
		switch {
		case bad.Want == spec.ErrTrailingBytes:
			if err != nil || left == 0 {
				t.Fatalf("trailing: %v, %d left", err, left)
			}
		case err != nil:
			// a truncation, a length past the end, or a reserved byte
		case left != 0:
			t.Fatalf("%s: %d bytes left after the value", bad.Want.Code(), left)
		}
	})
}

// TestKVEvTruncationsEndInsideAValue: the truncation class cuts inside
// the payload's last value, so a generic decoder fails with EOF.
func TestKVEvTruncationsEndInsideAValue(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := drawMessage(t, 3)
		bad := kvTruncate(t, d)
		if _, err := mpSkipAll(bad.In.Frames[2]); err == nil {
			t.Fatalf("payload %x decodes", []byte(bad.In.Frames[2]))
		}
	})
}

// TestKVEvFleetPayloadsAreMsgpack: every payload the fleet generator puts
// in a live or replayed message is exactly one msgpack value for a generic
// decoder (garbage events included: they are well-formed msgpack that §1.4
// refuses), and every script survives its JSON round trip.
func TestKVEvFleetPayloadsAreMsgpack(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := KVEvFleet(t, 40)
		for i, s := range in.Steps {
			if (s.Op != spec.KVStepLive && s.Op != spec.KVStepReplay) || len(s.Frames) < 3 {
				continue
			}
			p := s.Frames[len(s.Frames)-1]
			if len(p) == 0 {
				continue // the sentinel
			}
			if left, err := mpSkipAll(p); err != nil || left != 0 {
				t.Fatalf("step %d: payload %x: %v, %d bytes left", i, []byte(p), err, left)
			}
		}
	})
}
