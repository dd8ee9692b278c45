package ref

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/kvtwin/kvtwin/spec"
)

// The reference decoder of kvev.decode (docs/spec/kv-events.md §1, §2.10
// A6). It reads the msgpack bytes itself, with the standard library only,
// as the msgpack specification's format table lays them out (see "The
// msgpack formats" below), so that it depends on no codec the fast twin
// might share. Every choice below that the spec leaves open is written
// down here, and both twins make it the same way. The words of every error
// come from kvev_errors.go.
//
// Order of checks. One walk over the payload in document order; the first
// failure is the error:
//   - message: frame count, then seq width, then the payload (§1.2);
//   - batch: its header, then its elements in order (array form: ts, events,
//     data_parallel_rank, publisher_id, then every element past 4 skipped);
//     in the map form, the entries in key order, then "ts" and "events"
//     present (§1.3); then trailing bytes;
//   - event: form detection (rule 1), then its fields. Form A: the tag
//     (element 0), then elements 1.. in position order, each read as the
//     tag's field at that position (extra positions skipped), then the
//     required fields missing from a short array, in declaration order.
//     Form B: (1) form detection walks the entries in key order up to and
//     including the first key "type", checking each key (a str, not seen
//     before) and skipping each earlier value, then reads the tag; (2) the
//     entries are walked again from the first, in key order: each key is
//     checked again (a repeated key anywhere is found here), the value of
//     "type" is skipped, the value of a key that names a field of the tag is
//     decoded and checked as it is met, any other value is skipped; (3) the
//     required fields whose key is absent, in declaration order. When
//     "type" is the first key (every known producer) this is one pass in
//     document order. When it is not, an error inside an earlier entry's
//     value found by skipping (truncation, a declared length, depth) is
//     reported at that entry's key with ErrFieldType and WantValue, as any
//     skipped value's is, before any type or range check of the fields.
//   - a container: its first byte, then the depth bound, then its header,
//     then the declared-length check (A6), then the bounds of one message
//     (A10: the events array's max_events, then the decoded cost the events,
//     block_hashes and token_ids arrays charge, KVDecodeBudget), then the
//     count checks (a batch array of fewer than 2, an empty event array, an
//     empty block_hashes), then its elements.
//
// Places. Every value has a place: a field path, the place's sentinel and
// the wanted type (the bound of a wrong-type error):
//
//	payload                        ErrBatchShape   WantBatch
//	payload.ts                     ErrBatchShape   WantTS
//	payload.events                 ErrBatchShape   WantEvents
//	payload.data_parallel_rank     ErrBatchShape   WantRank
//	payload.publisher_id           ErrBatchShape   WantPubID
//	payload[k] (k >= 4), payload.<unknown key>    ErrBatchShape  WantValue
//	payload.events[i]              ErrEventShape   WantEvent
//	payload.events[i].type         ErrEventShape   WantEvent (the tag, element 0 or key "type")
//	payload.events[i].block_hashes     ErrFieldType     WantHashes
//	payload.events[i].block_hashes[j]  ErrHashEncoding  WantHash
//	payload.events[i].parent_block_hash ErrHashEncoding WantHash
//	payload.events[i].token_ids        ErrFieldType     WantTokens
//	payload.events[i].token_ids[j]     ErrFieldType     WantToken
//	payload.events[i].block_size       ErrFieldType     WantBlockSize
//	payload.events[i].lora_id, .group_idx              ErrFieldType WantIntOrNil
//	payload.events[i].medium, .lora_name, .kv_cache_spec_kind  ErrFieldType WantStrOrNil
//	payload.events[i].<other field or key>, payload.events[i][k]  ErrFieldType WantValue
//
// Form-A fields are named by their spec name from §1.4's tables; a position
// past the tag's table, or any position of an unknown tag, is named [k]. A
// map key's own errors (not a str, truncated, repeated) are reported at the
// map's place with WantKey; only the keys of event maps and of a map-shaped
// batch are checked (A6), not those of maps inside skipped values. A batch
// array of fewer than 2 elements, an empty event array, a map-shaped batch
// without "ts" or "events" and an event map without "type" are KVTypeError
// at the container's place with its family ("array", "map") as the value.
// An empty bin as a hash is KVTypeError with the value "bin".
//
// Truncation: when the payload ends inside a value (its first byte, the
// length or number bytes of its header, the bytes of a str, bin or ext, or
// a scalar's bytes), the error is at the place of the innermost value whose
// bytes ran out, with the value Truncated. A str, bin or ext whose declared
// length is larger than the bytes left is truncated (A6's declared-length
// check, KVLengthError, is for arrays and maps only: n elements need n
// bytes, n entries 2n bytes). Inside a skipped value the place is the
// skipped value's place.
//
// Depth: the batch is at depth 1, its events array at 2, an event at 3, an
// event's field at 4, and every container one deeper than its parent. A
// container that would be at depth MaxMsgpackDepth+1 (33) is refused at its
// place (inside a skipped value: the skipped value's place) with
// KVDepthError, before its header is read. Scalars have no depth.
//
// Ints: any msgpack width. An int's value in a range error is int64 when it
// is negative and uint64 otherwise, whatever its width.
//
// Values: ts of every numeric format as float64 (ints as Go's float64(v));
// block hashes normalised (§1.5); token_ids, block_size, lora_id, group_idx
// and the rank checked (§1.4 rule 4, A6); extra_keys and
// kv_cache_spec_sliding_window are skipped like unknown fields (rule 4 does
// not type them and KVEvent does not carry them). In form A a map at
// BlockStored position 7 (lora_name) is SGLang's salt map (§1.4, SGLang PR
// #38562): it is skipped and lora_name is nil. Str bytes are taken as they
// are (no UTF-8 check). A present publisher_id bin, empty included, is a
// non-nil HexBytes; a BlockStored's empty token_ids (a tokenless tier
// update) is a non-nil empty slice; Events is never nil.

// Event forms of KVEvent.Form and KVBatch.Form.
const (
	kvFormArray = "array"
	kvFormMap   = "map"
)

// kvEventFields are §1.4's field tables: the name of each form-A position,
// position 0 being the tag. Form B uses the same names as keys.
var kvEventFields = map[string][]string{
	spec.EventStored: {"type", "block_hashes", "parent_block_hash", "token_ids", "block_size",
		"lora_id", "medium", "lora_name", "extra_keys", "group_idx", "kv_cache_spec_kind",
		"kv_cache_spec_sliding_window"},
	spec.EventRemoved: {"type", "block_hashes", "medium", "group_idx"},
	spec.EventCleared: {"type"},
}

// kvRequired are the fields of §1.4 rule 3 that must be present, in
// declaration order (parent_block_hash, lora_id, medium and lora_name are
// nil when missing; the rest have defaults).
var kvRequired = map[string][]string{
	spec.EventStored:  {"block_hashes", "token_ids", "block_size"},
	spec.EventRemoved: {"block_hashes"},
}

// kvSaltPosition is the form-A BlockStored position where SGLang sends its
// salt map and vLLM sends lora_name.
const kvSaltPosition = 7

// DecodeKVMessage decodes one live message (docs/spec/kv-events.md §1.2)
// under the default bounds of one message: decodeKVMessageWithin with a
// zero KVDecodeLimits.
func DecodeKVMessage(frames [][]byte) (spec.KVMessage, error) {
	return decodeKVMessageWithin(frames, spec.KVDecodeLimits{})
}

// decodeKVMessageWithin decodes one live message (docs/spec/kv-events.md
// §1.2): exactly 3 frames (else KVFrameCountError), frame 1 the 8-byte
// big-endian seq (else KVSeqWidthError), frame 0 the topic as a string and
// frame 2 the batch, decoded by decodeKVBatchWithin under lim (zero fields:
// the defaults; lim is not validated here, see KVDecodeLimits.Validate).
func decodeKVMessageWithin(frames [][]byte, lim spec.KVDecodeLimits) (spec.KVMessage, error) {
	if len(frames) != 3 {
		return spec.KVMessage{}, KVFrameCountError(len(frames))
	}
	if len(frames[1]) != 8 {
		return spec.KVMessage{}, KVSeqWidthError(len(frames[1]))
	}
	b, err := decodeKVBatchWithin(frames[2], lim)
	if err != nil {
		return spec.KVMessage{}, err
	}
	return KVMessageOf(frames[0], binary.BigEndian.Uint64(frames[1]), b), nil
}

// decodeKVBatch decodes one batch payload under the default bounds of one
// message: decodeKVBatchWithin with a zero KVDecodeLimits.
func decodeKVBatch(payload []byte) (spec.KVBatch, error) {
	return decodeKVBatchWithin(payload, spec.KVDecodeLimits{})
}

// decodeKVBatchWithin decodes one batch payload: the batch of §1.3 (array
// of 2..4 elements or the tolerated map), its events in both encodings of
// §1.4, block hashes normalised by §1.5, under A6's bounds and A10's bounds
// of one message (lim; zero fields take the defaults); bytes after the
// batch are KVTrailingError. It returns the first failure in document order
// (see the comment at the top of this file). It never allocates from a
// declared length that the bytes left cannot hold, nor past A10's bounds.
func decodeKVBatchWithin(payload []byte, lim spec.KVDecodeLimits) (spec.KVBatch, error) {
	r := newKVReader(payload, lim)
	b, err := r.batch()
	if err != nil {
		return spec.KVBatch{}, err
	}
	if n := r.left(); n > 0 {
		return spec.KVBatch{}, KVTrailingError(n)
	}
	return b, nil
}

// KVEvDecode is the reference twin of kvev.decode (docs/spec/kv-events.md
// §1, §2.10 A1, A6 and A10): the live message in.Frames decoded to its
// topic, seq and batch of canonical events, or the first §1 error. It
// refuses in.Limits past their caps up front (ErrTooLarge naming
// limits.<field>), then is decodeKVMessageWithin of the frames under
// in.Limits; every byte string is an input. It uses no server limits: a
// payload's declared lengths are bounded by its own size (A6) and its
// decoded cost by A10's ratio to it.
func KVEvDecode(_ spec.Limits, in spec.KVEvDecodeInput) (spec.KVEvDecodeOutput, error) {
	if err := in.Limits.Validate("limits"); err != nil {
		return spec.KVMessage{}, err
	}
	return decodeKVMessageWithin(in.FrameBytes(), in.Limits)
}

// kvPlace is where a value sits: its field path, the sentinel of errors
// there and the wanted type (the bound of a wrong-type error).
type kvPlace struct {
	s     *spec.Sentinel
	field string
	want  string
}

// typeErr: the value at p starts with byte c, which is not the wanted type.
func (p kvPlace) typeErr(c byte) error { return KVTypeError(p.s, p.field, c, true, p.want) }

// truncated: the payload ends inside the value at p.
func (p kvPlace) truncated() error { return KVTypeError(p.s, p.field, 0, false, p.want) }

// rangeErr: the int at p is v, outside the wanted range.
func (p kvPlace) rangeErr(v any) error { return KVRangeError(p.s, p.field, v, p.want) }

// key is the place of a map key of the map at p.
func (p kvPlace) key() kvPlace { return kvPlace{p.s, p.field, spec.WantKey} }

// kvReader reads one payload: b is the payload and pos the first byte not
// yet read.
type kvReader struct {
	b   []byte
	pos int
	// budget is the payload's A10 decoded cost so far.
	budget spec.KVDecodeBudget
}

func newKVReader(b []byte, lim spec.KVDecodeLimits) *kvReader {
	return &kvReader{b: b, budget: spec.NewKVDecodeBudget(lim, len(b))}
}

// left is the number of payload bytes not yet read.
func (r *kvReader) left() int { return len(r.b) - r.pos }

// offset is the read position, for seek.
func (r *kvReader) offset() int { return r.pos }

// seek moves the read position to off (an earlier offset).
func (r *kvReader) seek(off int) { r.pos = off }

// peek returns the first byte of the next value; ok is false at the end of
// the payload.
func (r *kvReader) peek() (c byte, ok bool) {
	if r.pos >= len(r.b) {
		return 0, false
	}
	return r.b[r.pos], true
}

// discard reads past n bytes the caller has checked are there.
func (r *kvReader) discard(n int) { r.pos += n }

// The msgpack formats, by first byte (the msgpack specification's format
// table; msgpackTypeName names the same families). Every length and every
// number past the first byte is big-endian. A fix format keeps its value or
// length in the first byte; an 8, 16, 32 or 64 form keeps it in the 1, 2, 4
// or 8 bytes after it.
//
//	0x00-0x7f positive fixint   0x80-0x8f fixmap   0x90-0x9f fixarray
//	0xa0-0xbf fixstr            0xc0 nil           0xc1 (never used)
//	0xc2, 0xc3 false, true      0xc4-0xc6 bin 8/16/32
//	0xc7-0xc9 ext 8/16/32       0xca float 32      0xcb float 64
//	0xcc-0xcf uint 8/16/32/64   0xd0-0xd3 int 8/16/32/64
//	0xd4-0xd8 fixext 1/2/4/8/16 0xd9-0xdb str 8/16/32
//	0xdc, 0xdd array 16/32      0xde, 0xdf map 16/32
//	0xe0-0xff negative fixint
//
// An ext is its header (the fixext's first byte, or ext's first byte and
// length), one type byte, then its data.
const (
	mpNil      = 0xc0
	mpReserved = 0xc1
	mpFloat32  = 0xca
	mpFloat64  = 0xcb
	mpUint8    = 0xcc // uint 8; uint 16, 32, 64 follow
	mpInt8     = 0xd0 // int 8; int 16, 32, 64 follow
	mpFixExt1  = 0xd4 // fixext 1; fixext 2, 4, 8, 16 follow
)

// The format families a value's first byte c belongs to, from the table
// above.
func isKVArray(c byte) bool { return c&0xf0 == 0x90 || c == 0xdc || c == 0xdd }
func isKVMap(c byte) bool   { return c&0xf0 == 0x80 || c == 0xde || c == 0xdf }
func isKVStr(c byte) bool   { return c&0xe0 == 0xa0 || (c >= 0xd9 && c <= 0xdb) }
func isKVBin(c byte) bool   { return c >= 0xc4 && c <= 0xc6 }
func isKVExt(c byte) bool   { return (c >= 0xc7 && c <= 0xc9) || (c >= mpFixExt1 && c <= 0xd8) }
func isKVInt(c byte) bool {
	return c <= 0x7f || c >= 0xe0 || (c >= mpUint8 && c <= 0xcf) || (c >= mpInt8 && c <= 0xd3)
}

// bigEndian reads the n-byte big-endian unsigned number at the read position;
// ok is false, and the payload ended inside it, when fewer than n bytes
// are left.
func (r *kvReader) bigEndian(n int) (v uint64, ok bool) {
	if n > r.left() {
		return 0, false
	}
	for _, x := range r.b[r.pos : r.pos+n] {
		v = v<<8 | uint64(x)
	}
	r.pos += n
	return v, true
}

// header reads the header of the array, map, str, bin or ext whose first
// byte (there, and classified by the caller) is at the read position, and
// returns the length it declares: elements of an array, entries of a map,
// bytes of a str, bin or ext's data. ok is false when the payload ends
// inside the header.
func (r *kvReader) header() (n uint64, ok bool) {
	c := r.b[r.pos]
	r.pos++
	switch {
	case c&0xe0 == 0x80: // fixmap 0x80-0x8f, fixarray 0x90-0x9f
		return uint64(c & 0x0f), true
	case c&0xe0 == 0xa0: // fixstr
		return uint64(c & 0x1f), true
	case c >= mpFixExt1 && c <= 0xd8: // fixext 1, 2, 4, 8, 16
		return 1 << (c - mpFixExt1), true
	case c == 0xc4, c == 0xc7, c == 0xd9: // bin 8, ext 8, str 8
		return r.bigEndian(1)
	case c == 0xc5, c == 0xc8, c == 0xda, c == 0xdc, c == 0xde: // the 16-bit forms
		return r.bigEndian(2)
	}
	return r.bigEndian(4) // 0xc6, 0xc9, 0xdb, 0xdd, 0xdf: the 32-bit forms
}

// scalarSize is the size in bytes, first byte included, of the nil, bool,
// int or float whose first byte is c.
func scalarSize(c byte) int {
	switch {
	case c >= mpUint8 && c <= 0xcf:
		return 1 + 1<<(c-mpUint8)
	case c >= mpInt8 && c <= 0xd3:
		return 1 + 1<<(c-mpInt8)
	case c == mpFloat32:
		return 5
	case c == mpFloat64:
		return 9
	}
	return 1 // fixints, nil, false, true
}

// readNil reads the nil the caller has peeked.
func (r *kvReader) readNil() error {
	r.pos++
	return nil
}

// openArray reads the header of the array at p whose first byte the caller
// has peeked; enclosing is the number of containers around it. It checks
// the depth bound before the header and A6's declared length after it.
// Every error after the first byte was classified is the payload ending
// inside the header.
func (r *kvReader) openArray(p kvPlace, enclosing int) (uint64, error) {
	if enclosing+1 > spec.MaxMsgpackDepth {
		return 0, KVDepthError(p.s, p.field)
	}
	n, ok := r.header()
	if !ok {
		return 0, p.truncated()
	}
	if left := r.left(); n > uint64(left) {
		return 0, KVLengthError(p.s, p.field, n, left)
	}
	return n, nil
}

// array is openArray for the array that must be at p: nothing left is
// p's truncation, another type p's type error.
func (r *kvReader) array(p kvPlace, enclosing int) (uint64, error) {
	c, ok := r.peek()
	if !ok {
		return 0, p.truncated()
	}
	if !isKVArray(c) {
		return 0, p.typeErr(c)
	}
	return r.openArray(p, enclosing)
}

// openMap is openArray for a map of n entries, which need 2n bytes.
func (r *kvReader) openMap(p kvPlace, enclosing int) (uint64, error) {
	if enclosing+1 > spec.MaxMsgpackDepth {
		return 0, KVDepthError(p.s, p.field)
	}
	n, ok := r.header()
	if !ok {
		return 0, p.truncated()
	}
	if left := r.left(); 2*n > uint64(left) {
		return 0, KVLengthError(p.s, p.field, n, left)
	}
	return n, nil
}

// rawLen reads the header of the str or bin at p and checks that its n
// bytes are there; a header or body that runs past the end is truncated.
func (r *kvReader) rawLen(p kvPlace) (int, error) {
	n, ok := r.header()
	if !ok || n > uint64(r.left()) {
		return 0, p.truncated()
	}
	return int(n), nil
}

// raw reads the str or bin at p (first byte already classified).
func (r *kvReader) raw(p kvPlace) ([]byte, error) {
	n, err := r.rawLen(p)
	if err != nil {
		return nil, err
	}
	b := make([]byte, n)
	copy(b, r.b[r.pos:])
	r.pos += n
	return b, nil
}

// str reads the value at p, which must be a str.
func (r *kvReader) str(p kvPlace) (string, error) {
	c, ok := r.peek()
	if !ok {
		return "", p.truncated()
	}
	if !isKVStr(c) {
		return "", p.typeErr(c)
	}
	b, err := r.raw(p)
	return string(b), err
}

// strOrNil reads the value at p, which must be nil or a str, made valid
// UTF-8 (KVValidString): it is output.
func (r *kvReader) strOrNil(p kvPlace) (*string, error) {
	c, ok := r.peek()
	if !ok {
		return nil, p.truncated()
	}
	if c == mpNil {
		return nil, r.readNil()
	}
	s, err := r.str(p)
	if err != nil {
		return nil, err
	}
	s = KVValidString([]byte(s))
	return &s, nil
}

// intValue reads the int at p (first byte already classified). neg says v
// is a negative int64 in two's complement; otherwise v is the value.
func (r *kvReader) intValue(p kvPlace, c byte) (v uint64, neg bool, err error) {
	r.pos++
	switch {
	case c <= 0x7f: // positive fixint
		return uint64(c), false, nil
	case c >= 0xe0: // negative fixint
		return uint64(int64(int8(c))), true, nil
	case c >= mpUint8 && c <= 0xcf:
		u, ok := r.bigEndian(1 << (c - mpUint8))
		if !ok {
			return 0, false, p.truncated()
		}
		return u, false, nil
	}
	n := 1 << (c - mpInt8) // int 8, 16, 32, 64: sign-extend its n bytes
	u, ok := r.bigEndian(n)
	if !ok {
		return 0, false, p.truncated()
	}
	i := int64(u<<(64-8*n)) >> (64 - 8*n)
	return uint64(i), i < 0, nil
}

// kvIntAny is an int as a range error's value: int64 when negative, else uint64.
func kvIntAny(v uint64, neg bool) any {
	if neg {
		return int64(v)
	}
	return v
}

// int64OrNil reads the value at p, which must be nil or an int within int64
// (lora_id, group_idx, and the batch rank when nonNegative).
func (r *kvReader) int64OrNil(p kvPlace, nonNegative bool) (*int64, error) {
	c, ok := r.peek()
	if !ok {
		return nil, p.truncated()
	}
	if c == mpNil {
		return nil, r.readNil()
	}
	if !isKVInt(c) {
		return nil, p.typeErr(c)
	}
	v, neg, err := r.intValue(p, c)
	if err != nil {
		return nil, err
	}
	if (neg && nonNegative) || (!neg && v > math.MaxInt64) {
		return nil, p.rangeErr(kvIntAny(v, neg))
	}
	i := int64(v)
	return &i, nil
}

// skip reads past the value at p, ignored, checking that it is well-formed
// msgpack within the depth bound; enclosing is the number of containers
// around it. Errors anywhere inside it are reported at p.
func (r *kvReader) skip(p kvPlace, enclosing int) error {
	c, ok := r.peek()
	if !ok {
		return p.truncated()
	}
	switch {
	case isKVArray(c):
		n, err := r.openArray(p, enclosing)
		if err != nil {
			return err
		}
		for k := uint64(0); k < n; k++ {
			if err := r.skip(p, enclosing+1); err != nil {
				return err
			}
		}
		return nil
	case isKVMap(c):
		n, err := r.openMap(p, enclosing)
		if err != nil {
			return err
		}
		for k := uint64(0); k < 2*n; k++ {
			if err := r.skip(p, enclosing+1); err != nil {
				return err
			}
		}
		return nil
	case isKVStr(c), isKVBin(c):
		n, err := r.rawLen(p)
		if err != nil {
			return err
		}
		r.discard(n)
		return nil
	case isKVExt(c):
		n, ok := r.header()
		if !ok {
			return p.truncated()
		}
		if _, ok := r.bigEndian(1); !ok || n > uint64(r.left()) { // the type byte, then the data
			return p.truncated()
		}
		r.discard(int(n))
		return nil
	case c == mpReserved:
		return p.typeErr(c)
	}
	// nil, bool, ints and floats: fixed size, no nesting.
	n := scalarSize(c)
	if n > r.left() {
		return p.truncated()
	}
	r.discard(n)
	return nil
}

// batch decodes the payload's value (§1.3), the batch at depth 1.
func (r *kvReader) batch() (spec.KVBatch, error) {
	p := kvPlace{spec.ErrBatchShape, "payload", spec.WantBatch}
	c, ok := r.peek()
	if !ok {
		return spec.KVBatch{}, p.truncated()
	}
	switch {
	case isKVArray(c):
		return r.batchArray(p, c)
	case isKVMap(c):
		return r.batchMap(p, c)
	}
	return spec.KVBatch{}, p.typeErr(c)
}

// batchArray decodes [ts, events, data_parallel_rank?, publisher_id?, ...]:
// 2 or more elements, those past 4 skipped.
func (r *kvReader) batchArray(p kvPlace, c byte) (spec.KVBatch, error) {
	n, err := r.openArray(p, 0)
	if err != nil {
		return spec.KVBatch{}, err
	}
	if n < 2 {
		return spec.KVBatch{}, p.typeErr(c)
	}
	b := spec.KVBatch{Form: kvFormArray}
	for k := uint64(0); k < n; k++ {
		var err error
		switch k {
		case 0:
			b.TS, err = r.ts()
		case 1:
			b.Events, err = r.events()
		case 2:
			b.DPRank, err = r.rank()
		case 3:
			b.PublisherID, err = r.publisherID()
		default:
			err = r.skip(kvPlace{spec.ErrBatchShape, spec.Idx("payload", int(k)), spec.WantValue}, 1)
		}
		if err != nil {
			return spec.KVBatch{}, err
		}
	}
	return b, nil
}

// batchMap decodes the tolerated map-shaped batch: keys ts, events,
// data_parallel_rank, publisher_id in any order, unknown keys skipped, ts
// and events required (a map without them is the wrong batch shape).
func (r *kvReader) batchMap(p kvPlace, c byte) (spec.KVBatch, error) {
	n, err := r.openMap(p, 0)
	if err != nil {
		return spec.KVBatch{}, err
	}
	b := spec.KVBatch{Form: kvFormMap}
	seen := map[string]bool{}
	for k := uint64(0); k < n; k++ {
		key, err := r.str(p.key())
		if err != nil {
			return spec.KVBatch{}, err
		}
		if seen[key] {
			return spec.KVBatch{}, KVDuplicateKeyError(p.s, p.field, key)
		}
		seen[key] = true
		switch key {
		case "ts":
			b.TS, err = r.ts()
		case "events":
			b.Events, err = r.events()
		case "data_parallel_rank":
			b.DPRank, err = r.rank()
		case "publisher_id":
			b.PublisherID, err = r.publisherID()
		default:
			err = r.skip(kvPlace{spec.ErrBatchShape, "payload." + key, spec.WantValue}, 1)
		}
		if err != nil {
			return spec.KVBatch{}, err
		}
	}
	if !seen["ts"] || !seen["events"] {
		return spec.KVBatch{}, p.typeErr(c)
	}
	return b, nil
}

// ts decodes the batch's timestamp: any msgpack number, as float64.
func (r *kvReader) ts() (float64, error) {
	p := kvPlace{spec.ErrBatchShape, "payload.ts", spec.WantTS}
	c, ok := r.peek()
	if !ok {
		return 0, p.truncated()
	}
	switch {
	case isKVInt(c):
		v, neg, err := r.intValue(p, c)
		if err != nil {
			return 0, err
		}
		if neg {
			return float64(int64(v)), nil
		}
		return float64(v), nil
	case c == mpFloat32:
		r.pos++
		u, ok := r.bigEndian(4)
		if !ok {
			return 0, p.truncated()
		}
		f := float64(math.Float32frombits(uint32(u)))
		return f, CheckKVTS(f)
	case c == mpFloat64:
		r.pos++
		u, ok := r.bigEndian(8)
		if !ok {
			return 0, p.truncated()
		}
		f := math.Float64frombits(u)
		return f, CheckKVTS(f)
	}
	return 0, p.typeErr(c)
}

// rank decodes data_parallel_rank: nil, or an int in [0, 2^63).
func (r *kvReader) rank() (*int64, error) {
	return r.int64OrNil(kvPlace{spec.ErrBatchShape, "payload.data_parallel_rank", spec.WantRank}, true)
}

// publisherID decodes publisher_id: nil or a bin (§3.5).
func (r *kvReader) publisherID() (spec.HexBytes, error) {
	p := kvPlace{spec.ErrBatchShape, "payload.publisher_id", spec.WantPubID}
	c, ok := r.peek()
	if !ok {
		return nil, p.truncated()
	}
	if c == mpNil {
		return nil, r.readNil()
	}
	if !isKVBin(c) {
		return nil, p.typeErr(c)
	}
	return r.raw(p)
}

// events decodes the batch's events array (depth 2), each event in turn.
func (r *kvReader) events() ([]spec.KVEvent, error) {
	p := kvPlace{spec.ErrBatchShape, "payload.events", spec.WantEvents}
	n, err := r.array(p, 1)
	if err != nil {
		return nil, err
	}
	if err := r.budget.Events(p.field, n); err != nil {
		return nil, err
	}
	events := []spec.KVEvent{}
	for i := uint64(0); i < n; i++ {
		ev, err := r.event(spec.Idx("payload.events", int(i)))
		if err != nil {
			return nil, err
		}
		events = append(events, ev)
	}
	return events, nil
}

// event decodes the event at path at (depth 3): a tagged array (form A) or
// a map with a str "type" (form B), §1.4 rule 1.
func (r *kvReader) event(at string) (spec.KVEvent, error) {
	p := kvPlace{spec.ErrEventShape, at, spec.WantEvent}
	c, ok := r.peek()
	if !ok {
		return spec.KVEvent{}, p.truncated()
	}
	switch {
	case isKVArray(c):
		return r.eventArray(p, c)
	case isKVMap(c):
		return r.eventMap(p, c)
	}
	return spec.KVEvent{}, p.typeErr(c)
}

// newKVEvent is the event a tag announces: a known type, or Unknown
// carrying the tag (§1.4 rule 2).
func newKVEvent(tag, form string) spec.KVEvent {
	if _, known := kvEventFields[tag]; known {
		return spec.KVEvent{Type: tag, Form: form}
	}
	return spec.KVEvent{Type: spec.EventUnknown, Tag: KVValidString([]byte(tag)), Form: form}
}

// eventArray decodes form A: element 0 the tag, then the tag's fields by
// position (§1.4 rule 3: missing trailing positions take their default,
// extra ones are skipped).
func (r *kvReader) eventArray(p kvPlace, c byte) (spec.KVEvent, error) {
	n, err := r.openArray(p, 2)
	if err != nil {
		return spec.KVEvent{}, err
	}
	if n == 0 {
		return spec.KVEvent{}, p.typeErr(c)
	}
	tag, err := r.str(kvPlace{spec.ErrEventShape, p.field + ".type", spec.WantEvent})
	if err != nil {
		return spec.KVEvent{}, err
	}
	ev := newKVEvent(tag, kvFormArray)
	fields := kvEventFields[tag] // nil for an unknown tag
	for k := uint64(1); k < n; k++ {
		if k >= uint64(len(fields)) {
			if err := r.skip(kvPlace{spec.ErrFieldType, spec.Idx(p.field, int(k)), spec.WantValue}, 3); err != nil {
				return spec.KVEvent{}, err
			}
			continue
		}
		name := fields[k]
		if ev.Type == spec.EventStored && k == kvSaltPosition {
			if c, ok := r.peek(); ok && isKVMap(c) {
				// SGLang's salt map, not a lora_name: ignored.
				if err := r.skip(kvPlace{spec.ErrFieldType, p.field + "." + name, spec.WantValue}, 3); err != nil {
					return spec.KVEvent{}, err
				}
				continue
			}
		}
		if err := r.field(&ev, p.field, name); err != nil {
			return spec.KVEvent{}, err
		}
	}
	// A field is present when the array reaches its position.
	return ev, missingKVField(ev, p.field, func(f string) bool { return uint64(slices.Index(fields, f)) < n })
}

// eventMap decodes form B: the tag is the value of the key "type", the
// fields are selected by name (§1.4 rule 3: unknown keys skipped, missing
// keys take their default). See the comment at the top of the file for the
// two walks.
func (r *kvReader) eventMap(p kvPlace, c byte) (spec.KVEvent, error) {
	n, err := r.openMap(p, 2)
	if err != nil {
		return spec.KVEvent{}, err
	}
	start := r.offset()
	tag, found, err := r.findTag(p, n)
	if err != nil {
		return spec.KVEvent{}, err
	}
	if !found {
		return spec.KVEvent{}, p.typeErr(c)
	}
	r.seek(start)
	ev := newKVEvent(tag, kvFormMap)
	fields := kvEventFields[tag]
	seen := map[string]bool{}
	for k := uint64(0); k < n; k++ {
		key, err := r.str(p.key())
		if err != nil {
			return spec.KVEvent{}, err
		}
		if seen[key] {
			return spec.KVEvent{}, KVDuplicateKeyError(p.s, p.field, key)
		}
		seen[key] = true
		switch {
		case key == "type":
			// The tag, read by findTag.
			err = r.skip(kvPlace{spec.ErrEventShape, p.field + ".type", spec.WantEvent}, 3)
		case isKVField(fields, key):
			err = r.field(&ev, p.field, key)
		default:
			err = r.skip(kvPlace{spec.ErrFieldType, p.field + "." + key, spec.WantValue}, 3)
		}
		if err != nil {
			return spec.KVEvent{}, err
		}
	}
	return ev, missingKVField(ev, p.field, func(f string) bool { return seen[f] })
}

// findTag is form B's form detection: it walks the n entries of the map at
// p from the read position up to the first key "type", checking the keys
// and skipping the values before it, and returns the tag (a str). found is
// false when no key is "type".
func (r *kvReader) findTag(p kvPlace, n uint64) (tag string, found bool, err error) {
	seen := map[string]bool{}
	for k := uint64(0); k < n; k++ {
		key, err := r.str(p.key())
		if err != nil {
			return "", false, err
		}
		if seen[key] {
			return "", false, KVDuplicateKeyError(p.s, p.field, key)
		}
		seen[key] = true
		if key == "type" {
			tag, err := r.str(kvPlace{spec.ErrEventShape, p.field + ".type", spec.WantEvent})
			return tag, err == nil, err
		}
		if err := r.skip(kvPlace{spec.ErrFieldType, p.field + "." + key, spec.WantValue}, 3); err != nil {
			return "", false, err
		}
	}
	return "", false, nil
}

// isKVField says key names a field (not the tag) of an event whose field
// table is fields.
func isKVField(fields []string, key string) bool {
	for _, f := range fields[min(1, len(fields)):] {
		if f == key {
			return true
		}
	}
	return false
}

// missingKVField is §1.4 rule 3's check: the first required field of ev's
// type, in declaration order, that is not present.
func missingKVField(ev spec.KVEvent, at string, present func(field string) bool) error {
	for _, f := range kvRequired[ev.Type] {
		if !present(f) {
			return KVMissingError(at + "." + f)
		}
	}
	return nil
}

// field decodes the value of the event field name into ev (depth 4). The
// fields kvtwin does not read (extra_keys, kv_cache_spec_sliding_window)
// are skipped.
func (r *kvReader) field(ev *spec.KVEvent, at, name string) error {
	path := at + "." + name
	var err error
	switch name {
	case "block_hashes":
		ev.BlockHashes, err = r.blockHashes(path)
	case "parent_block_hash":
		ev.ParentBlockHash, err = r.parentHash(path)
	case "token_ids":
		ev.TokenIDs, err = r.tokenIDs(path)
	case "block_size":
		ev.BlockSize, err = r.blockSize(path)
	case "lora_id":
		ev.LoraID, err = r.int64OrNil(kvPlace{spec.ErrFieldType, path, spec.WantIntOrNil}, false)
	case "group_idx":
		ev.GroupIdx, err = r.int64OrNil(kvPlace{spec.ErrFieldType, path, spec.WantIntOrNil}, false)
	case "medium":
		ev.Medium, err = r.strOrNil(kvPlace{spec.ErrFieldType, path, spec.WantStrOrNil})
	case "lora_name":
		ev.LoraName, err = r.strOrNil(kvPlace{spec.ErrFieldType, path, spec.WantStrOrNil})
	case "kv_cache_spec_kind":
		ev.KVCacheSpecKind, err = r.strOrNil(kvPlace{spec.ErrFieldType, path, spec.WantStrOrNil})
	default:
		err = r.skip(kvPlace{spec.ErrFieldType, path, spec.WantValue}, 3)
	}
	return err
}

// blockHashes decodes a non-empty array of hashes (§1.4 rule 4, §1.5).
func (r *kvReader) blockHashes(path string) ([]spec.EvHash, error) {
	p := kvPlace{spec.ErrFieldType, path, spec.WantHashes}
	n, err := r.array(p, 3)
	if err != nil {
		return nil, err
	}
	if !r.budget.Charge(n, spec.KVHashCost) {
		return nil, r.budget.CostError(path)
	}
	if n == 0 {
		return nil, KVEmptyHashesError(path)
	}
	var hashes []spec.EvHash
	for j := uint64(0); j < n; j++ {
		h, err := r.hash(kvPlace{spec.ErrHashEncoding, spec.Idx(path, int(j)), spec.WantHash})
		if err != nil {
			return nil, err
		}
		hashes = append(hashes, h)
	}
	return hashes, nil
}

// parentHash decodes parent_block_hash: nil or a hash.
func (r *kvReader) parentHash(path string) (*spec.EvHash, error) {
	p := kvPlace{spec.ErrHashEncoding, path, spec.WantHash}
	if c, ok := r.peek(); ok && c == mpNil {
		return nil, r.readNil()
	}
	h, err := r.hash(p)
	if err != nil {
		return nil, err
	}
	return &h, nil
}

// hash decodes one block hash and normalises it (§1.5): an int in
// [-2^63, 0) is its two's complement, an int in [0, 2^64) itself; a bin of
// n >= 8 bytes is its last 8 bytes big-endian, of 1 <= n < 8 bytes those
// bytes left-padded with zeros; an empty bin or any other type is
// ErrHashEncoding.
func (r *kvReader) hash(p kvPlace) (spec.EvHash, error) {
	c, ok := r.peek()
	if !ok {
		return 0, p.truncated()
	}
	switch {
	case isKVInt(c):
		v, _, err := r.intValue(p, c)
		return spec.EvHash(v), err
	case isKVBin(c):
		b, err := r.raw(p)
		if err != nil {
			return 0, err
		}
		if len(b) == 0 {
			return 0, p.typeErr(c)
		}
		return KVBinHash(b), nil
	}
	return 0, p.typeErr(c)
}

// KVBinHash is §1.5's hash of a non-empty bin block hash (SGLang's and old
// vLLM's bytes): its last 8 bytes, big-endian (all of it when shorter).
func KVBinHash(b []byte) spec.EvHash {
	var v uint64
	for _, x := range b[max(0, len(b)-8):] {
		v = v<<8 | uint64(x)
	}
	return spec.EvHash(v)
}

// tokenIDs decodes token_ids: an array of ints in [0, 2^32) (§1.4 rule 4).
func (r *kvReader) tokenIDs(path string) ([]uint32, error) {
	p := kvPlace{spec.ErrFieldType, path, spec.WantTokens}
	n, err := r.array(p, 3)
	if err != nil {
		return nil, err
	}
	if !r.budget.Charge(n, spec.KVTokenCost) {
		return nil, r.budget.CostError(path)
	}
	tokens := []uint32{}
	for j := uint64(0); j < n; j++ {
		tp := kvPlace{spec.ErrFieldType, spec.Idx(path, int(j)), spec.WantToken}
		c, ok := r.peek()
		if !ok {
			return nil, tp.truncated()
		}
		if !isKVInt(c) {
			return nil, tp.typeErr(c)
		}
		v, neg, err := r.intValue(tp, c)
		if err != nil {
			return nil, err
		}
		if neg || v > math.MaxUint32 {
			return nil, KVTokenRangeError(tp.field, kvIntAny(v, neg))
		}
		tokens = append(tokens, uint32(v))
	}
	return tokens, nil
}

// blockSize decodes block_size: an int in [1, 2^63).
func (r *kvReader) blockSize(path string) (int64, error) {
	p := kvPlace{spec.ErrFieldType, path, spec.WantBlockSize}
	c, ok := r.peek()
	if !ok {
		return 0, p.truncated()
	}
	if !isKVInt(c) {
		return 0, p.typeErr(c)
	}
	v, neg, err := r.intValue(p, c)
	if err != nil {
		return 0, err
	}
	if neg || v == 0 || v > math.MaxInt64 {
		return 0, p.rangeErr(kvIntAny(v, neg))
	}
	return int64(v), nil
}
