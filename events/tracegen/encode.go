package tracegen

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/zeebo/xxh3"
)

// Encodings of an event (docs/spec/kv-events.md §1.4).
const (
	// EncodingArray is form A: the positional array of the last vLLM array
	// release, every declared field written, defaults as nil.
	EncodingArray = "array"
	// EncodingMap is form B: the tagged map with omit_defaults.
	EncodingMap = "map"
	// EncodingMixed alternates the two forms event by event within each
	// engine's stream (a mixed fleet, decoded per event).
	EncodingMixed = "mixed"
)

// Block hash representations (§1.5). All three normalise to the same
// 64-bit spec.EvHash.
const (
	// HashInt is vLLM's default: the 64-bit value as an unsigned msgpack int
	// (0xcf when >= 2^63).
	HashInt = "int"
	// HashBin is VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0: a 32-byte bin whose
	// last 8 bytes, big-endian, are the 64-bit value.
	HashBin = "bin"
	// HashSigned is SGLang's: the 64-bit value as a signed int64 (negative
	// when its top bit is set).
	HashSigned = "signed"
)

// Medium is the tier every generated event names.
const Medium = "GPU"

// Event kinds of one generated event.
const (
	kindStored byte = iota + 1
	kindRemoved
	kindCleared
)

// Event is one event of a generated batch, before encoding.
type Event struct {
	// Kind is kindStored, kindRemoved or kindCleared.
	kind byte
	// Hashes are the block hashes (stored, removed).
	Hashes []uint64
	// Parent is the parent block hash when HasParent (stored).
	Parent    uint64
	HasParent bool
	// Tokens are the run's tokens, len(Hashes)·BlockSize of them (stored).
	Tokens []uint32
	// BlockSize is the tokens per block (stored).
	BlockSize int
}

// Stored returns a BlockStored event.
func Stored(hashes []uint64, parent *uint64, tokens []uint32, blockSize int) Event {
	ev := Event{kind: kindStored, Hashes: hashes, Tokens: tokens, BlockSize: blockSize}
	if parent != nil {
		ev.Parent, ev.HasParent = *parent, true
	}
	return ev
}

// Removed returns a BlockRemoved event.
func Removed(hashes []uint64) Event { return Event{kind: kindRemoved, Hashes: hashes} }

// Cleared returns an AllBlocksCleared event.
func Cleared() Event { return Event{kind: kindCleared} }

// BatchEncoder writes batches (§1.3) with vmihailenco/msgpack's Encoder:
// always the 3-element array [ts, events, data_parallel_rank] that every
// released vLLM sends. It reuses its buffer: the bytes Encode returns are
// valid until the next call.
type BatchEncoder struct {
	hash string
	buf  bytes.Buffer
	enc  *msgpack.Encoder
}

// NewBatchEncoder returns an encoder presenting hashes as hashForm (HashInt,
// HashBin or HashSigned).
func NewBatchEncoder(hashForm string) (*BatchEncoder, error) {
	switch hashForm {
	case HashInt, HashBin, HashSigned:
	default:
		return nil, fmt.Errorf("hash form %q: want int, bin or signed", hashForm)
	}
	b := &BatchEncoder{hash: hashForm}
	b.enc = msgpack.NewEncoder(&b.buf)
	return b, nil
}

// Encode encodes one batch; asMap[i] selects form B for event i (nil: all
// form A).
func (b *BatchEncoder) Encode(ts float64, rank int64, events []Event, asMap []bool) ([]byte, error) {
	b.buf.Reset()
	e := b.enc
	if err := firstErr(e.EncodeArrayLen(3), e.EncodeFloat64(ts), e.EncodeArrayLen(len(events))); err != nil {
		return nil, err
	}
	for i, ev := range events {
		m := asMap != nil && asMap[i]
		var err error
		switch ev.kind {
		case kindStored:
			err = b.stored(ev, m)
		case kindRemoved:
			err = b.removed(ev, m)
		case kindCleared:
			if m {
				err = firstErr(e.EncodeMapLen(1), e.EncodeString("type"), e.EncodeString("AllBlocksCleared"))
			} else {
				err = firstErr(e.EncodeArrayLen(1), e.EncodeString("AllBlocksCleared"))
			}
		default:
			err = fmt.Errorf("event %d: unknown kind %d", i, ev.kind)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := e.EncodeInt(rank); err != nil {
		return nil, err
	}
	return b.buf.Bytes(), nil
}

// stored writes a BlockStored. Form A: the 12-element array (tag + the 11
// fields through kv_cache_spec_sliding_window), lora_id, lora_name,
// extra_keys, kv_cache_spec_kind and the window nil, medium "GPU",
// group_idx 0. Form B: "type" then the seven required fields (nil
// included) and group_idx 0, the fields at their nil default left out (as
// in §5.1 E4).
func (b *BatchEncoder) stored(ev Event, asMap bool) error {
	e := b.enc
	if asMap {
		if err := firstErr(e.EncodeMapLen(9), e.EncodeString("type"), e.EncodeString("BlockStored"), e.EncodeString("block_hashes")); err != nil {
			return err
		}
	} else if err := firstErr(e.EncodeArrayLen(12), e.EncodeString("BlockStored")); err != nil {
		return err
	}
	if err := b.hashes(ev.Hashes); err != nil {
		return err
	}
	if asMap {
		if err := e.EncodeString("parent_block_hash"); err != nil {
			return err
		}
	}
	var err error
	if ev.HasParent {
		err = b.hashValue(ev.Parent)
	} else {
		err = e.EncodeNil()
	}
	if err != nil {
		return err
	}
	if asMap {
		if err := e.EncodeString("token_ids"); err != nil {
			return err
		}
	}
	if err := e.EncodeArrayLen(len(ev.Tokens)); err != nil {
		return err
	}
	for _, t := range ev.Tokens {
		if err := e.EncodeUint(uint64(t)); err != nil {
			return err
		}
	}
	if asMap {
		return firstErr(e.EncodeString("block_size"), e.EncodeInt(int64(ev.BlockSize)),
			e.EncodeString("lora_id"), e.EncodeNil(), e.EncodeString("medium"), e.EncodeString(Medium),
			e.EncodeString("lora_name"), e.EncodeNil(), e.EncodeString("group_idx"), e.EncodeInt(0))
	}
	return firstErr(e.EncodeInt(int64(ev.BlockSize)), e.EncodeNil(), e.EncodeString(Medium), e.EncodeNil(),
		e.EncodeNil(), e.EncodeInt(0), e.EncodeNil(), e.EncodeNil())
}

// removed writes a BlockRemoved. Form A: ["BlockRemoved", hashes, "GPU",
// nil] (group_idx declared, nil). Form B: type, block_hashes, medium.
func (b *BatchEncoder) removed(ev Event, asMap bool) error {
	e := b.enc
	if asMap {
		if err := firstErr(e.EncodeMapLen(3), e.EncodeString("type"), e.EncodeString("BlockRemoved"), e.EncodeString("block_hashes")); err != nil {
			return err
		}
		if err := b.hashes(ev.Hashes); err != nil {
			return err
		}
		return firstErr(e.EncodeString("medium"), e.EncodeString(Medium))
	}
	if err := firstErr(e.EncodeArrayLen(4), e.EncodeString("BlockRemoved")); err != nil {
		return err
	}
	if err := b.hashes(ev.Hashes); err != nil {
		return err
	}
	return firstErr(e.EncodeString(Medium), e.EncodeNil())
}

func (b *BatchEncoder) hashes(hs []uint64) error {
	if err := b.enc.EncodeArrayLen(len(hs)); err != nil {
		return err
	}
	for _, h := range hs {
		if err := b.hashValue(h); err != nil {
			return err
		}
	}
	return nil
}

func (b *BatchEncoder) hashValue(h uint64) error {
	switch b.hash {
	case HashSigned:
		return b.enc.EncodeInt(int64(h))
	case HashBin:
		d := BinDigest(h)
		return b.enc.EncodeBytes(d[:])
	}
	return b.enc.EncodeUint(h)
}

// BinDigest is the 32-byte digest presented for block hash h in bin mode:
// 24 bytes derived from h, then h big-endian, so that §1.5's "last 8
// bytes" rule normalises it back to h.
func BinDigest(h uint64) [32]byte {
	var d [32]byte
	binary.BigEndian.PutUint64(d[24:], h)
	hi := xxh3.Hash128Seed(d[24:], 0x6b7674776e).Bytes()
	copy(d[:16], hi[:])
	binary.BigEndian.PutUint64(d[16:24], xxh3.HashSeed(d[24:], 0x6b766576))
	return d
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
