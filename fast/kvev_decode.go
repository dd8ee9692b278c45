package fast

import (
	"encoding/binary"
	"math"
	"strconv"
	"unsafe"

	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// The fast twin of kvev.decode (docs/spec/kv-events.md §1, §2.10 A6).
//
// It reads the msgpack format bytes directly rather than through msgp's
// helpers: every error of A6 names the first byte of the value it refused
// and the place whose bytes ran out, and reading the bytes ourselves keeps
// those positions exact, lets the depth bound be ours, and keeps the hot
// loops (block hashes, token ids) free of calls. One pass over the payload;
// the allocations are the output's own (events, hash and token slices, the
// strings and the optional fields), never an intermediate generic value.
//
// Error rules, shared with ref.decodeKVBatch (the words come from
// ref/kvev_errors.go): checks run in document order and the first failure
// is the error. An event's form is decided first, then its fields in
// declaration order (form A by position, form B in key order, each known
// key's value checked where it is met, unknown keys skipped), then, after
// the walk, its missing required fields in declaration order. Places and
// their sentinels:
//
//	payload, payload.ts, payload.events, payload.data_parallel_rank,
//	payload.publisher_id                             ErrBatchShape
//	payload.events[i], payload.events[i].type (tag)  ErrEventShape
//	payload.events[i].parent_block_hash,
//	payload.events[i].block_hashes[j]                ErrHashEncoding
//	payload.events[i].<other field>[j]               ErrFieldType
//
// Where those rules leave room, this decoder makes the choices that
// ref/kvev_decode.go writes down at its top (they are listed in the report
// that came with this file), in short:
//
//   - Depth: the batch is at depth 1, an element or entry one deeper than
//     its container. Only containers have a depth: one at depth
//     spec.MaxMsgpackDepth+1 is refused at its place (a skipped value's
//     place when inside one) after its first byte is classified and before
//     its header is read. Scalars are never refused for depth.
//   - A container: its first byte, the depth bound, its header (truncated),
//     A6's declared-length check, A10's bounds of one message (the events
//     array's max_events, then the decoded cost charged by the events,
//     block_hashes and token_ids arrays: spec.KVDecodeBudget), then the
//     count checks (a batch array of
//     fewer than 2 elements and an empty event array are KVTypeError with
//     the value "array"; an empty block_hashes is KVEmptyHashesError), then
//     its elements. A str, bin or ext past the payload's end is truncated.
//   - Skipped values take spec.WantValue and the place of the outermost
//     skipped value: payload[k] (k >= 4) and payload.<key> (ErrBatchShape);
//     payload.events[i][k] for a form-A position past the tag's table or of
//     an unknown tag, payload.events[i].<key> for extra_keys,
//     kv_cache_spec_sliding_window and unknown keys (ErrFieldType). The
//     reserved byte 0xc1 starts no value.
//   - A map-shaped batch without ts or events is KVTypeError at payload
//     (value "map", bound WantBatch).
//   - The tag's place is payload.events[i].type in both forms. Form B finds
//     its tag first: the entries are walked up to the first key "type"
//     (keys checked: strs, no repeats; values skipped), the tag read, then
//     the map walked again from its first entry; a map with no "type" key
//     is KVTypeError at the event (value "map").
//   - Form A: a map at BlockStored position 7 is SGLang's salt map: skipped
//     (at .lora_name), lora_name nil.
//   - An int's value in a range error is int64 when negative, else uint64.
//   - An empty token_ids is a non-nil empty slice; an empty publisher_id
//     bin is a non-nil empty HexBytes; Events is never nil.

// KVEvDecode is the fast twin of kvev.decode (docs/spec/kv-events.md §1).
func KVEvDecode(lim spec.Limits, in spec.KVEvDecodeInput) (spec.KVEvDecodeOutput, error) {
	return kvevDecodeWithFaults(lim, in, fault.KVEv{})
}

// kvevDecodeWithFaults is KVEvDecode with the historic decoder bugs f selects
// put back, for the bug zoo only: fault.Hooks hands it to equiv/mutants
// (hooks.go). Called with the zero value it is KVEvDecode.
func kvevDecodeWithFaults(_ spec.Limits, in spec.KVEvDecodeInput, f fault.KVEv) (spec.KVEvDecodeOutput, error) {
	if err := in.Limits.Validate("limits"); err != nil {
		return spec.KVMessage{}, err
	}
	return decodeKVMessage(in.FrameBytes(), f, in.Limits)
}

// DecodeKVMessage decodes one live message's frames (docs/spec/kv-events.md
// §1.2) under the default bounds of one message (§2.10 A10): frame 0 the
// topic, frame 1 the 8-byte big-endian seq, frame 2 the msgpack batch
// (DecodeKVBatch). The result does not alias the frames.
func DecodeKVMessage(frames [][]byte) (spec.KVMessage, error) {
	return decodeKVMessage(frames, fault.KVEv{}, spec.KVDecodeLimits{})
}

// DecodeKVMessageWithin is DecodeKVMessage under the bounds lim (zero
// fields: the defaults; lim is not validated here, see
// spec.KVDecodeLimits.Validate).
func DecodeKVMessageWithin(frames [][]byte, lim spec.KVDecodeLimits) (spec.KVMessage, error) {
	return decodeKVMessage(frames, fault.KVEv{}, lim)
}

// DecodeKVBatch decodes one batch payload (docs/spec/kv-events.md
// §1.3-§1.5, §2.10 A6) in one pass, under the default bounds of one
// message (A10). The result does not alias payload.
func DecodeKVBatch(payload []byte) (spec.KVBatch, error) {
	return DecodeKVBatchWithin(payload, spec.KVDecodeLimits{})
}

// DecodeKVBatchWithin is DecodeKVBatch under the bounds lim (zero fields:
// the defaults).
func DecodeKVBatchWithin(payload []byte, lim spec.KVDecodeLimits) (spec.KVBatch, error) {
	d := kvDec{b: payload, f: fault.KVEv{}, budget: spec.NewKVDecodeBudget(lim, len(payload))}
	return d.batch()
}

// decodeKVBatchScratch is the index's decode of a live message's payload
// (its frames already checked): the batch, with the decoder bugs f
// selects, carved from sc, valid until sc's next reset.
func decodeKVBatchScratch(payload []byte, f fault.KVEv, lim spec.KVDecodeLimits, sc *kvDecScratch) (spec.KVBatch, error) {
	sc.reset()
	d := kvDec{b: payload, f: f, budget: spec.NewKVDecodeBudget(lim, len(payload)), sc: sc}
	b, err := d.batch()
	if err == nil {
		sc.evs = b.Events // the scratch's array, its length for the next reset's clear
	}
	return b, err
}

// decodeKVMessage is DecodeKVMessageWithin with the decoder bugs f selects;
// the fast index calls it with its own switches and bounds.
func decodeKVMessage(frames [][]byte, f fault.KVEv, lim spec.KVDecodeLimits) (spec.KVMessage, error) {
	if len(frames) != 3 {
		return spec.KVMessage{}, ref.KVFrameCountError(len(frames))
	}
	if len(frames[1]) != 8 {
		return spec.KVMessage{}, ref.KVSeqWidthError(len(frames[1]))
	}
	d := kvDec{b: frames[2], f: f, budget: spec.NewKVDecodeBudget(lim, len(frames[2]))}
	b, err := d.batch()
	if err != nil {
		return spec.KVMessage{}, err
	}
	return ref.KVMessageOf(frames[0], binary.BigEndian.Uint64(frames[1]), b), nil
}

// kvPlace names a place of the payload without formatting it: the path is
// built only when an error needs it.
type kvPlace struct {
	ev    int    // event index; -1 for the batch level
	name  string // field name, when named
	key   []byte // or unknown key (a view of the payload), when named
	named bool   // the place is a field or key of the batch or the event
	j     int    // element (or form-A position) index; -1 for none
}

func (pl kvPlace) String() string {
	s := "payload"
	if pl.ev >= 0 {
		s = "payload.events[" + strconv.Itoa(pl.ev) + "]"
	}
	if pl.named {
		s += "." + pl.name + string(pl.key)
	}
	if pl.j >= 0 {
		s += "[" + strconv.Itoa(pl.j) + "]"
	}
	return s
}

func kvBatchPlace(name string) kvPlace {
	return kvPlace{ev: -1, name: name, named: name != "", j: -1}
}
func kvBatchKeyPlace(key []byte) kvPlace      { return kvPlace{ev: -1, key: key, named: true, j: -1} }
func kvEvPlace(i int) kvPlace                 { return kvPlace{ev: i, j: -1} }
func kvFieldPlace(i int, name string) kvPlace { return kvPlace{ev: i, name: name, named: true, j: -1} }
func kvKeyPlace(i int, key []byte) kvPlace    { return kvPlace{ev: i, key: key, named: true, j: -1} }

// Field names of §1.4, as form B spells them and errors name them.
const (
	kfType        = "type"
	kfHashes      = "block_hashes"
	kfParent      = "parent_block_hash"
	kfTokens      = "token_ids"
	kfBlockSize   = "block_size"
	kfLoraID      = "lora_id"
	kfMedium      = "medium"
	kfLoraName    = "lora_name"
	kfExtraKeys   = "extra_keys"
	kfGroupIdx    = "group_idx"
	kfSpecKind    = "kv_cache_spec_kind"
	kfSpecWindow  = "kv_cache_spec_sliding_window"
	kfTS          = "ts"
	kfEvents      = "events"
	kfRank        = "data_parallel_rank"
	kfPublisherID = "publisher_id"
)

// Event kinds, and the fields of each in declaration order (form A's
// positions 1..n).
const (
	kvKindUnknown = iota
	kvKindStored
	kvKindRemoved
	kvKindCleared
)

var (
	kvStoredFields  = []string{kfHashes, kfParent, kfTokens, kfBlockSize, kfLoraID, kfMedium, kfLoraName, kfExtraKeys, kfGroupIdx, kfSpecKind, kfSpecWindow}
	kvRemovedFields = []string{kfHashes, kfMedium, kfGroupIdx}
)

// kvDec is one payload being decoded; p is the read position.
type kvDec struct {
	b   []byte
	p   int
	f   fault.KVEv
	opt *kvOpt // the current event's optional values
	// budget is the payload's A10 decoded cost so far.
	budget spec.KVDecodeBudget
	// sc, when set, is where the output's slices and optional values are
	// carved from instead of allocated: the index's own decode, whose
	// output is applied and dropped before the stream's next message.
	sc *kvDecScratch
}

// kvDecScratch is a stream's decode output memory, reused message after
// message: the events, their hashes and tokens, their optional values and
// the batch's rank. An ingest that allocated them afresh spent a sixth of
// its time in the allocator and the GC; reused, a message allocates
// nothing here. Decoded strings are still allocated (or interned), so
// nothing the index keeps, such as a namespace name, points into it.
type kvDecScratch struct {
	evs    []spec.KVEvent
	hashes []spec.EvHash
	tokens []uint32
	opts   []kvOpt
	rank   int64
}

// kvScratchKeepBytes is the most memory each scratch slice keeps between
// messages: a message past it (a large replay batch) is decoded into
// memory dropped after it, so one outlier does not pin its size for the
// stream's life (a stream keeps at most four such slices). 64 KiB holds a
// 500-block batch of 16-token blocks.
const kvScratchKeepBytes = 64 << 10

// reset readies sc for the next message, dropping the last one's events'
// references (their slices and strings).
func (sc *kvDecScratch) reset() {
	clear(sc.evs)
	sc.evs = kvScratchTrim(sc.evs)
	sc.hashes = kvScratchTrim(sc.hashes)
	sc.tokens = kvScratchTrim(sc.tokens)
	sc.opts = kvScratchTrim(sc.opts)
}

// kvScratchTrim empties a scratch slice, dropping it past
// kvScratchKeepBytes.
func kvScratchTrim[T any](s []T) []T {
	if uintptr(cap(s))*unsafe.Sizeof(*new(T)) > kvScratchKeepBytes {
		return nil
	}
	return s[:0]
}

// kvScratchTake returns n elements carved from *buf (growing it into a
// new array when it lacks room, the slices already carved keeping the
// old one), or a new slice when buf is nil (no scratch). The elements are
// not zeroed: every caller writes all of them.
func kvScratchTake[T any](buf *[]T, n int) []T {
	if buf == nil {
		return make([]T, n)
	}
	b := *buf
	if cap(b)-len(b) < n {
		b = make([]T, 0, max(2*cap(b), n, 64))
	}
	l := len(b)
	*buf = b[:l+n]
	return b[l : l+n : l+n]
}

// left is the number of bytes after the read position.
func (d *kvDec) left() int { return len(d.b) - d.p }

// Container headers. hdr reports one of these, with the declared length.
const (
	kvHdrOther = iota // not a container of the wanted kind (d.p unmoved)
	kvHdrTrunc        // the header itself runs past the payload
	kvHdrOK
)

// arrayHeader reads an array header at d.p. On kvHdrOK d.p is after the header.
func (d *kvDec) arrayHeader() (n uint64, st int) { return d.containerHeader(0x90, 0xdc, 0xdd) }

// mapHeader reads a map header at d.p. On kvHdrOK d.p is after the header.
func (d *kvDec) mapHeader() (n uint64, st int) { return d.containerHeader(0x80, 0xde, 0xdf) }

// containerHeader reads the header of a container whose msgpack family
// has the fix codes fix..fix+15 and the 16- and 32-bit length codes w16
// and w32 (array: 0x90, 0xdc, 0xdd; map: 0x80, 0xde, 0xdf).
func (d *kvDec) containerHeader(fix, w16, w32 byte) (n uint64, st int) {
	b, p := d.b, d.p
	if p >= len(b) {
		return 0, kvHdrTrunc
	}
	c := b[p]
	switch {
	case c >= fix && c <= fix|0x0f:
		d.p = p + 1
		return uint64(c & 0x0f), kvHdrOK
	case c == w16:
		if p+3 > len(b) {
			return 0, kvHdrTrunc
		}
		d.p = p + 3
		return uint64(binary.BigEndian.Uint16(b[p+1:])), kvHdrOK
	case c == w32:
		if p+5 > len(b) {
			return 0, kvHdrTrunc
		}
		d.p = p + 5
		return uint64(binary.BigEndian.Uint32(b[p+1:])), kvHdrOK
	}
	return 0, kvHdrOther
}

// Scalar reads report one of these.
const (
	kvValOther = iota // the value has another type (its first byte at d.b[d.p])
	kvValTrunc        // the payload ends inside the value
	kvValOK
	kvValNil // the value is nil (d.p unmoved: the caller steps over it)
)

// str reads a str at d.p and returns its bytes (a view of the payload).
func (d *kvDec) str() (s []byte, st int) {
	b, p := d.b, d.p
	if p >= len(b) {
		return nil, kvValTrunc
	}
	c := b[p]
	var n, h int
	switch {
	case c >= 0xa0 && c <= 0xbf:
		n, h = int(c&0x1f), 1
	case c == 0xd9:
		if p+2 > len(b) {
			return nil, kvValTrunc
		}
		n, h = int(b[p+1]), 2
	case c == 0xda:
		if p+3 > len(b) {
			return nil, kvValTrunc
		}
		n, h = int(binary.BigEndian.Uint16(b[p+1:])), 3
	case c == 0xdb:
		if p+5 > len(b) {
			return nil, kvValTrunc
		}
		n, h = int(binary.BigEndian.Uint32(b[p+1:])), 5
	case c == 0xc0:
		return nil, kvValNil
	default:
		return nil, kvValOther
	}
	if n > len(b)-p-h {
		return nil, kvValTrunc
	}
	d.p = p + h + n
	return b[p+h : p+h+n], kvValOK
}

// bin reads a bin at d.p and returns its bytes (a view of the payload).
func (d *kvDec) bin() (s []byte, st int) {
	b, p := d.b, d.p
	if p >= len(b) {
		return nil, kvValTrunc
	}
	var n, h int
	switch b[p] {
	case 0xc4:
		if p+2 > len(b) {
			return nil, kvValTrunc
		}
		n, h = int(b[p+1]), 2
	case 0xc5:
		if p+3 > len(b) {
			return nil, kvValTrunc
		}
		n, h = int(binary.BigEndian.Uint16(b[p+1:])), 3
	case 0xc6:
		if p+5 > len(b) {
			return nil, kvValTrunc
		}
		n, h = int(binary.BigEndian.Uint32(b[p+1:])), 5
	case 0xc0:
		return nil, kvValNil
	default:
		return nil, kvValOther
	}
	if n > len(b)-p-h {
		return nil, kvValTrunc
	}
	d.p = p + h + n
	return b[p+h : p+h+n], kvValOK
}

// integer reads an int of any width at d.p. signed says it came in a signed
// format (negative fixint, 0xd0-0xd3): v is then int64(u), which may be >= 0.
func (d *kvDec) integer() (u uint64, signed bool, st int) {
	b, p := d.b, d.p
	if p >= len(b) {
		return 0, false, kvValTrunc
	}
	c := b[p]
	if c <= 0x7f {
		d.p = p + 1
		return uint64(c), false, kvValOK
	}
	if c >= 0xe0 {
		d.p = p + 1
		return uint64(int64(int8(c))), true, kvValOK
	}
	switch c {
	case 0xcc, 0xd0:
		if p+2 > len(b) {
			return 0, false, kvValTrunc
		}
		d.p = p + 2
		if c == 0xd0 {
			return uint64(int64(int8(b[p+1]))), true, kvValOK
		}
		return uint64(b[p+1]), false, kvValOK
	case 0xcd, 0xd1:
		if p+3 > len(b) {
			return 0, false, kvValTrunc
		}
		d.p = p + 3
		v := binary.BigEndian.Uint16(b[p+1:])
		if c == 0xd1 {
			return uint64(int64(int16(v))), true, kvValOK
		}
		return uint64(v), false, kvValOK
	case 0xce, 0xd2:
		if p+5 > len(b) {
			return 0, false, kvValTrunc
		}
		d.p = p + 5
		v := binary.BigEndian.Uint32(b[p+1:])
		if c == 0xd2 {
			return uint64(int64(int32(v))), true, kvValOK
		}
		return uint64(v), false, kvValOK
	case 0xcf, 0xd3:
		if p+9 > len(b) {
			return 0, false, kvValTrunc
		}
		d.p = p + 9
		return binary.BigEndian.Uint64(b[p+1:]), c == 0xd3, kvValOK
	case 0xc0:
		return 0, false, kvValNil
	}
	return 0, false, kvValOther
}

// typeErr is KVTypeError for the value at d.p (truncated when st says so).
func (d *kvDec) typeErr(s *spec.Sentinel, pl kvPlace, st int, want string) error {
	if st == kvValTrunc || d.p >= len(d.b) {
		return ref.KVTypeError(s, pl.String(), 0, false, want)
	}
	return ref.KVTypeError(s, pl.String(), d.b[d.p], true, want)
}

// skip steps over the value at d.p, whose containers would sit at the
// given depth, without building it. Every error inside it is at pl with s:
// truncation, a declared length past the payload's end and the reserved
// byte with want (spec.WantValue), a container past spec.MaxMsgpackDepth
// with KVDepthError.
func (d *kvDec) skip(depth int, s *spec.Sentinel, pl kvPlace, want string) error {
	b, p := d.b, d.p
	if p >= len(b) {
		return ref.KVTypeError(s, pl.String(), 0, false, want)
	}
	c := b[p]
	var h, n int // header bytes, then n payload bytes
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		d.p = p + 1
		return nil
	case c >= 0xa0 && c <= 0xbf:
		h, n = 1, int(c&0x1f)
	case c >= 0x80 && c <= 0x9f, c == 0xdc, c == 0xdd, c == 0xde, c == 0xdf:
		return d.skipContainer(depth, s, pl, want)
	case c == 0xc1:
		return ref.KVTypeError(s, pl.String(), c, true, want)
	case c == 0xcc || c == 0xd0:
		h = 2
	case c == 0xcd || c == 0xd1:
		h = 3
	case c == 0xce || c == 0xd2 || c == 0xca:
		h = 5
	case c == 0xcf || c == 0xd3 || c == 0xcb:
		h = 9
	case c >= 0xd4 && c <= 0xd8: // fixext 1, 2, 4, 8, 16: type byte + data
		h, n = 2, 1<<(c-0xd4)
	case c == 0xc4 || c == 0xd9: // bin8, str8
		h = 2
		if p+h <= len(b) {
			n = int(b[p+1])
		}
	case c == 0xc5 || c == 0xda:
		h = 3
		if p+h <= len(b) {
			n = int(binary.BigEndian.Uint16(b[p+1:]))
		}
	case c == 0xc6 || c == 0xdb:
		h = 5
		if p+h <= len(b) {
			n = int(binary.BigEndian.Uint32(b[p+1:]))
		}
	case c == 0xc7: // ext8: length, type
		h = 3
		if p+h <= len(b) {
			n = int(b[p+1])
		}
	case c == 0xc8:
		h = 4
		if p+h <= len(b) {
			n = int(binary.BigEndian.Uint16(b[p+1:]))
		}
	default: // 0xc9, ext32
		h = 6
		if p+h <= len(b) {
			n = int(binary.BigEndian.Uint32(b[p+1:]))
		}
	}
	if h > len(b)-p || n > len(b)-p-h {
		return ref.KVTypeError(s, pl.String(), 0, false, want)
	}
	d.p = p + h + n
	return nil
}

// skipContainer is skip for an array or a map.
func (d *kvDec) skipContainer(depth int, s *spec.Sentinel, pl kvPlace, want string) error {
	if depth > spec.MaxMsgpackDepth {
		return ref.KVDepthError(s, pl.String())
	}
	var n uint64
	var st int
	isMap := false
	if n, st = d.arrayHeader(); st == kvHdrOther {
		n, st = d.mapHeader()
		isMap = true
	}
	if st == kvHdrTrunc {
		return ref.KVTypeError(s, pl.String(), 0, false, want)
	}
	if isMap {
		if n > uint64(d.left())/2 {
			return ref.KVLengthError(s, pl.String(), n, d.left())
		}
		n *= 2
	} else if n > uint64(d.left()) {
		return ref.KVLengthError(s, pl.String(), n, d.left())
	}
	for ; n > 0; n-- {
		if err := d.skip(depth+1, s, pl, want); err != nil {
			return err
		}
	}
	return nil
}

// batch decodes the whole payload (§1.3) and refuses trailing bytes.
func (d *kvDec) batch() (spec.KVBatch, error) {
	var out spec.KVBatch
	var err error
	if d.p >= len(d.b) {
		return out, ref.KVTypeError(spec.ErrBatchShape, "payload", 0, false, spec.WantBatch)
	}
	first := d.b[d.p]
	if n, st := d.arrayHeader(); st == kvHdrOK {
		if n > uint64(d.left()) {
			return out, ref.KVLengthError(spec.ErrBatchShape, "payload", n, d.left())
		}
		if n < 2 {
			return out, ref.KVTypeError(spec.ErrBatchShape, "payload", first, true, spec.WantBatch)
		}
		out, err = d.arrayBatch(int(n))
	} else if st == kvHdrTrunc {
		return out, ref.KVTypeError(spec.ErrBatchShape, "payload", 0, false, spec.WantBatch)
	} else if n, st := d.mapHeader(); st == kvHdrOK {
		if n > uint64(d.left())/2 {
			return out, ref.KVLengthError(spec.ErrBatchShape, "payload", n, d.left())
		}
		out, err = d.mapBatch(int(n), first)
	} else if st == kvHdrTrunc {
		return out, ref.KVTypeError(spec.ErrBatchShape, "payload", 0, false, spec.WantBatch)
	} else {
		return out, ref.KVTypeError(spec.ErrBatchShape, "payload", first, true, spec.WantBatch)
	}
	if err != nil {
		return spec.KVBatch{}, err
	}
	if r := d.left(); r > 0 {
		return spec.KVBatch{}, ref.KVTrailingError(r)
	}
	return out, nil
}

// arrayBatch decodes the n >= 2 elements of an array-shaped batch.
func (d *kvDec) arrayBatch(n int) (spec.KVBatch, error) {
	out := spec.KVBatch{Form: "array"}
	var err error
	if out.TS, err = d.ts(); err != nil {
		return out, err
	}
	if out.Events, err = d.events(); err != nil {
		return out, err
	}
	if n > 2 {
		if out.DPRank, err = d.rank(); err != nil {
			return out, err
		}
	}
	if n > 3 {
		if out.PublisherID, err = d.publisherID(); err != nil {
			return out, err
		}
	}
	for k := 4; k < n; k++ {
		if err := d.skip(2, spec.ErrBatchShape, kvPlace{ev: -1, j: k}, spec.WantValue); err != nil {
			return out, err
		}
	}
	return out, nil
}

// mapBatch decodes the n entries of the tolerated map-shaped batch (§1.3).
func (d *kvDec) mapBatch(n int, first byte) (spec.KVBatch, error) {
	out := spec.KVBatch{Form: "map"}
	var seen kvSeen
	const hasTS, hasEvents, hasRank, hasPub = 1, 2, 4, 8
	var got uint8
	var err error
	for k := 0; k < n; k++ {
		key, st := d.str()
		if st != kvValOK {
			return out, d.typeErr(spec.ErrBatchShape, kvBatchPlace(""), st, spec.WantKey)
		}
		var bit uint8
		switch string(key) {
		case kfTS:
			bit = hasTS
		case kfEvents:
			bit = hasEvents
		case kfRank:
			bit = hasRank
		case kfPublisherID:
			bit = hasPub
		}
		if bit != 0 && got&bit != 0 || bit == 0 && seen.dup(key) {
			return out, ref.KVDuplicateKeyError(spec.ErrBatchShape, "payload", string(key))
		}
		got |= bit
		switch bit {
		case hasTS:
			out.TS, err = d.ts()
		case hasEvents:
			out.Events, err = d.events()
		case hasRank:
			out.DPRank, err = d.rank()
		case hasPub:
			out.PublisherID, err = d.publisherID()
		default:
			err = d.skip(2, spec.ErrBatchShape, kvBatchKeyPlace(key), spec.WantValue)
		}
		if err != nil {
			return out, err
		}
	}
	if got&(hasTS|hasEvents) != hasTS|hasEvents {
		return out, ref.KVTypeError(spec.ErrBatchShape, "payload", first, true, spec.WantBatch)
	}
	return out, nil
}

// ts reads the batch's timestamp: any msgpack number, as float64.
func (d *kvDec) ts() (float64, error) {
	b, p := d.b, d.p
	if p < len(b) {
		switch b[p] {
		case 0xcb:
			if p+9 <= len(b) {
				d.p = p + 9
				f := math.Float64frombits(binary.BigEndian.Uint64(b[p+1:]))
				return f, ref.CheckKVTS(f)
			}
			return 0, ref.KVTypeError(spec.ErrBatchShape, "payload.ts", 0, false, spec.WantTS)
		case 0xca:
			if p+5 <= len(b) {
				d.p = p + 5
				f := float64(math.Float32frombits(binary.BigEndian.Uint32(b[p+1:])))
				return f, ref.CheckKVTS(f)
			}
			return 0, ref.KVTypeError(spec.ErrBatchShape, "payload.ts", 0, false, spec.WantTS)
		}
	}
	u, signed, st := d.integer()
	if st != kvValOK {
		return 0, d.typeErr(spec.ErrBatchShape, kvBatchPlace(kfTS), st, spec.WantTS)
	}
	if signed {
		return float64(int64(u)), nil
	}
	return float64(u), nil
}

// rank reads data_parallel_rank: nil or an int in [0, 2^63).
func (d *kvDec) rank() (*int64, error) {
	u, signed, st := d.integer()
	switch {
	case st == kvValNil:
		d.p++
		return nil, nil
	case st != kvValOK:
		return nil, d.typeErr(spec.ErrBatchShape, kvBatchPlace(kfRank), st, spec.WantRank)
	case signed && int64(u) < 0:
		return nil, ref.KVRangeError(spec.ErrBatchShape, "payload.data_parallel_rank", int64(u), spec.WantRank)
	case u > math.MaxInt64:
		return nil, ref.KVRangeError(spec.ErrBatchShape, "payload.data_parallel_rank", u, spec.WantRank)
	}
	if d.sc != nil {
		d.sc.rank = int64(u)
		return &d.sc.rank, nil
	}
	v := int64(u)
	return &v, nil
}

// publisherID reads publisher_id: nil or a bin (copied).
func (d *kvDec) publisherID() (spec.HexBytes, error) {
	s, st := d.bin()
	switch st {
	case kvValNil:
		d.p++
		return nil, nil
	case kvValOK:
		return append(spec.HexBytes{}, s...), nil
	}
	return nil, d.typeErr(spec.ErrBatchShape, kvBatchPlace(kfPublisherID), st, spec.WantPubID)
}

// events reads the batch's event array.
func (d *kvDec) events() ([]spec.KVEvent, error) {
	n, st := d.arrayHeader()
	switch st {
	case kvHdrTrunc:
		return nil, ref.KVTypeError(spec.ErrBatchShape, "payload.events", 0, false, spec.WantEvents)
	case kvHdrOther:
		return nil, ref.KVTypeError(spec.ErrBatchShape, "payload.events", d.b[d.p], true, spec.WantEvents)
	}
	if n > uint64(d.left()) {
		return nil, ref.KVLengthError(spec.ErrBatchShape, "payload.events", n, d.left())
	}
	// A10: n events cost n × spec.KVEventCost, within the message's bound,
	// so the slice can be sized by the header once this passes.
	if err := d.budget.Events("payload.events", n); err != nil {
		return nil, err
	}
	var evs []spec.KVEvent
	if d.sc != nil && d.sc.evs != nil && uint64(cap(d.sc.evs)) >= n {
		evs = d.sc.evs[:0]
	} else {
		evs = make([]spec.KVEvent, 0, n)
		if d.sc != nil {
			d.sc.evs = evs
		}
	}
	for i := 0; i < int(n); i++ {
		evs = append(evs, spec.KVEvent{})
		d.opt = nil
		if err := d.event(i, &evs[i]); err != nil {
			return nil, err
		}
	}
	return evs, nil
}

// kvKindOf maps a tag to its event kind.
func kvKindOf(tag []byte) int {
	switch string(tag) {
	case spec.EventStored:
		return kvKindStored
	case spec.EventRemoved:
		return kvKindRemoved
	case spec.EventCleared:
		return kvKindCleared
	}
	return kvKindUnknown
}

// kvSetKind fills ev's Type (and Tag) for a tag of kind k.
func kvSetKind(ev *spec.KVEvent, k int, tag []byte) {
	switch k {
	case kvKindStored:
		ev.Type = spec.EventStored
	case kvKindRemoved:
		ev.Type = spec.EventRemoved
	case kvKindCleared:
		ev.Type = spec.EventCleared
	default:
		ev.Type = spec.EventUnknown
		ev.Tag = ref.KVValidString(tag)
	}
}

// kvFieldsOf is the declaration-order field list of kind k.
func kvFieldsOf(k int) []string {
	switch k {
	case kvKindStored:
		return kvStoredFields
	case kvKindRemoved:
		return kvRemovedFields
	}
	return nil
}

// event decodes event i (§1.4) into ev.
func (d *kvDec) event(i int, ev *spec.KVEvent) error {
	if d.p >= len(d.b) {
		return ref.KVTypeError(spec.ErrEventShape, kvEvPlace(i).String(), 0, false, spec.WantEvent)
	}
	first := d.b[d.p]
	n, st := d.arrayHeader()
	if st == kvHdrOK {
		if n > uint64(d.left()) {
			return ref.KVLengthError(spec.ErrEventShape, kvEvPlace(i).String(), n, d.left())
		}
		if n == 0 {
			return ref.KVTypeError(spec.ErrEventShape, kvEvPlace(i).String(), first, true, spec.WantEvent)
		}
		return d.arrayEvent(i, int(n), ev)
	}
	if st == kvHdrTrunc {
		return ref.KVTypeError(spec.ErrEventShape, kvEvPlace(i).String(), 0, false, spec.WantEvent)
	}
	n, st = d.mapHeader()
	switch st {
	case kvHdrTrunc:
		return ref.KVTypeError(spec.ErrEventShape, kvEvPlace(i).String(), 0, false, spec.WantEvent)
	case kvHdrOther:
		return ref.KVTypeError(spec.ErrEventShape, kvEvPlace(i).String(), first, true, spec.WantEvent)
	}
	if n > uint64(d.left())/2 {
		return ref.KVLengthError(spec.ErrEventShape, kvEvPlace(i).String(), n, d.left())
	}
	return d.mapEvent(i, int(n), first, ev)
}

// tag reads an event's tag string at the tag's place.
func (d *kvDec) tag(i int) ([]byte, error) {
	tag, st := d.str()
	if st != kvValOK {
		return nil, d.typeErr(spec.ErrEventShape, kvFieldPlace(i, kfType), st, spec.WantEvent)
	}
	return tag, nil
}

// arrayEvent decodes form A: the tag, then the fields by position.
func (d *kvDec) arrayEvent(i, n int, ev *spec.KVEvent) error {
	tag, err := d.tag(i)
	if err != nil {
		return err
	}
	k := kvKindOf(tag)
	kvSetKind(ev, k, tag)
	ev.Form = "array"
	fields := kvFieldsOf(k)
	for pos := 1; pos < n; pos++ {
		switch {
		case pos-1 >= len(fields):
			err = d.skip(4, spec.ErrFieldType, kvPlace{ev: i, j: pos}, spec.WantValue)
		case k == kvKindStored && pos == kvSaltPosition && d.p < len(d.b) && kvIsMap(d.b[d.p]):
			// SGLang's salt map where vLLM sends lora_name: ignored.
			err = d.skip(4, spec.ErrFieldType, kvFieldPlace(i, kfLoraName), spec.WantValue)
		default:
			err = d.field(i, fields[pos-1], ev)
		}
		if err != nil {
			return err
		}
	}
	// Positions 1..n-1 were present; the required ones after them are missing.
	for pos := n; pos-1 < len(fields); pos++ {
		if kvRequired(fields[pos-1]) {
			return ref.KVMissingError(kvFieldPlace(i, fields[pos-1]).String())
		}
	}
	return nil
}

// kvSaltPosition is the form-A BlockStored position where SGLang sends its
// salt map and vLLM sends lora_name (§1.4, SGLang PR #38562).
const kvSaltPosition = 7

// kvIsMap says c starts a map.
func kvIsMap(c byte) bool { return c >= 0x80 && c <= 0x8f || c == 0xde || c == 0xdf }

// kvRequired says a field's absence is ErrMissingField (§1.4 rule 3).
func kvRequired(name string) bool {
	return name == kfHashes || name == kfTokens || name == kfBlockSize
}

// Known-key bits of a form-B event, for duplicates and missing fields.
func kvKeyBit(k int, key []byte) uint16 {
	if string(key) == kfType {
		return 1
	}
	var fields []string
	switch k {
	case kvKindStored:
		fields = kvStoredFields
	case kvKindRemoved:
		fields = kvRemovedFields
	default:
		return 0
	}
	for j, f := range fields {
		if string(key) == f {
			return 2 << j
		}
	}
	return 0
}

// mapEvent decodes form B: the tag found first, then the map walked in key
// order (d.p is after the map header).
func (d *kvDec) mapEvent(i, n int, first byte, ev *spec.KVEvent) error {
	start := d.p
	var tag []byte
	var err error
	// The tag: producers write "type" first; otherwise look ahead for it.
	found := false
	var ahead kvSeen
	for k := 0; k < n; k++ {
		key, st := d.str()
		if st != kvValOK {
			return d.typeErr(spec.ErrEventShape, kvEvPlace(i), st, spec.WantKey)
		}
		if ahead.dup(key) {
			return ref.KVDuplicateKeyError(spec.ErrEventShape, kvEvPlace(i).String(), string(key))
		}
		if string(key) == kfType {
			if tag, err = d.tag(i); err != nil {
				return err
			}
			found = true
			break
		}
		if err := d.skip(4, spec.ErrFieldType, kvKeyPlace(i, key), spec.WantValue); err != nil {
			return err
		}
	}
	if !found {
		return ref.KVTypeError(spec.ErrEventShape, kvEvPlace(i).String(), first, true, spec.WantEvent)
	}
	kind := kvKindOf(tag)
	kvSetKind(ev, kind, tag)
	ev.Form = "map"
	d.p = start
	var got uint16
	var seen kvSeen
	for k := 0; k < n; k++ {
		key, st := d.str()
		if st != kvValOK {
			return d.typeErr(spec.ErrEventShape, kvEvPlace(i), st, spec.WantKey)
		}
		bit := kvKeyBit(kind, key)
		if bit != 0 && got&bit != 0 || bit == 0 && seen.dup(key) {
			return ref.KVDuplicateKeyError(spec.ErrEventShape, kvEvPlace(i).String(), string(key))
		}
		got |= bit
		switch {
		case bit == 1: // the tag, read above
			_, _ = d.str()
		case bit != 0:
			err = d.field(i, kvFieldsOf(kind)[kvBitIndex(bit)], ev)
		default:
			err = d.skip(4, spec.ErrFieldType, kvKeyPlace(i, key), spec.WantValue)
		}
		if err != nil {
			return err
		}
	}
	for j, f := range kvFieldsOf(kind) {
		if kvRequired(f) && got&(2<<j) == 0 {
			return ref.KVMissingError(kvFieldPlace(i, f).String())
		}
	}
	return nil
}

// kvBitIndex is the field index of a kvKeyBit other than the tag's.
func kvBitIndex(bit uint16) int {
	j := 0
	for bit > 2 {
		bit >>= 1
		j++
	}
	return j
}

// kvSeen remembers the keys of one map, for duplicates: in place while
// few (no allocation for any producer's map), in a set past that.
type kvSeen struct {
	keys [16][]byte
	n    int
	set  map[string]struct{}
}

// dup records key and says whether it was seen before.
func (s *kvSeen) dup(key []byte) bool {
	if s.set != nil {
		if _, ok := s.set[string(key)]; ok {
			return true
		}
		s.set[string(key)] = struct{}{}
		return false
	}
	for _, k := range s.keys[:s.n] {
		if string(k) == string(key) {
			return true
		}
	}
	if s.n < len(s.keys) {
		s.keys[s.n] = key
		s.n++
		return false
	}
	s.set = make(map[string]struct{}, 2*len(s.keys))
	for _, k := range s.keys {
		s.set[string(k)] = struct{}{}
	}
	s.set[string(key)] = struct{}{}
	return false
}

// kvOpt holds one event's optional values, so that their pointers cost one
// allocation together.
type kvOpt struct {
	parent        spec.EvHash
	loraID, group int64
	strs          [3]string // medium, lora_name, kv_cache_spec_kind
}

// box is the current event's kvOpt, allocated (or taken from the
// scratch) on first use.
func (d *kvDec) box() *kvOpt {
	if d.opt == nil {
		if d.sc == nil {
			d.opt = new(kvOpt)
		} else {
			d.opt = &kvScratchTake(&d.sc.opts, 1)[0]
			*d.opt = kvOpt{}
		}
	}
	return d.opt
}

// field decodes the named field of event i at d.p into ev.
func (d *kvDec) field(i int, name string, ev *spec.KVEvent) error {
	var err error
	switch name {
	case kfHashes:
		ev.BlockHashes, err = d.hashes(i)
	case kfParent:
		var h spec.EvHash
		var ok bool
		if h, ok, err = d.hash(kvFieldPlace(i, kfParent), true); err == nil && ok {
			o := d.box()
			o.parent = h
			ev.ParentBlockHash = &o.parent
		}
	case kfTokens:
		ev.TokenIDs, err = d.tokens(i)
	case kfBlockSize:
		ev.BlockSize, err = d.blockSize(i)
	case kfLoraID:
		ev.LoraID, err = d.optInt(i, kfLoraID)
	case kfGroupIdx:
		ev.GroupIdx, err = d.optInt(i, kfGroupIdx)
	case kfMedium:
		ev.Medium, err = d.optStr(i, kfMedium, 0)
	case kfLoraName:
		ev.LoraName, err = d.optStr(i, kfLoraName, 1)
	case kfSpecKind:
		ev.KVCacheSpecKind, err = d.optStr(i, kfSpecKind, 2)
	default: // extra_keys, kv_cache_spec_sliding_window: read past
		err = d.skip(4, spec.ErrFieldType, kvFieldPlace(i, name), spec.WantValue)
	}
	return err
}

// hash reads one block hash (§1.5) at pl; nilOK admits nil (ok false).
func (d *kvDec) hash(pl kvPlace, nilOK bool) (h spec.EvHash, ok bool, err error) {
	b, p := d.b, d.p
	if p < len(b) {
		c := b[p]
		// vLLM's int mode (uint64) first, then bytes mode; other ints below.
		if c == 0xcf && p+9 <= len(b) {
			u := binary.BigEndian.Uint64(b[p+1:])
			if d.f.SignedHashesOnly && u > math.MaxInt64 {
				return 0, false, ref.KVRangeError(spec.ErrHashEncoding, pl.String(), u, spec.WantHash)
			}
			d.p = p + 9
			return spec.EvHash(u), true, nil
		}
		if c >= 0xc4 && c <= 0xc6 {
			s, st := d.bin()
			if st != kvValOK {
				return 0, false, d.typeErr(spec.ErrHashEncoding, pl, st, spec.WantHash)
			}
			if len(s) == 0 {
				d.p = p
				return 0, false, ref.KVTypeError(spec.ErrHashEncoding, pl.String(), c, true, spec.WantHash)
			}
			if len(s) > 8 {
				s = s[len(s)-8:]
			}
			var u uint64
			for _, x := range s {
				u = u<<8 | uint64(x)
			}
			return spec.EvHash(u), true, nil
		}
	}
	u, signed, st := d.integer()
	switch {
	case st == kvValOK:
		if d.f.UnsignedHashesOnly && signed && int64(u) < 0 {
			d.p = p
			return 0, false, ref.KVTypeError(spec.ErrHashEncoding, pl.String(), b[p], true, spec.WantHash)
		}
		if d.f.SignedHashesOnly && !signed && u > math.MaxInt64 {
			d.p = p
			return 0, false, ref.KVRangeError(spec.ErrHashEncoding, pl.String(), u, spec.WantHash)
		}
		return spec.EvHash(u), true, nil
	case st == kvValNil && nilOK:
		d.p++
		return 0, false, nil
	}
	return 0, false, d.typeErr(spec.ErrHashEncoding, pl, st, spec.WantHash)
}

// hashBuf is the scratch's hash buffer (nil without a scratch: the
// hashes are then allocated).
func (d *kvDec) hashBuf() *[]spec.EvHash {
	if d.sc == nil {
		return nil
	}
	return &d.sc.hashes
}

// tokenBuf is the scratch's token buffer (nil without a scratch: the
// tokens are then allocated).
func (d *kvDec) tokenBuf() *[]uint32 {
	if d.sc == nil {
		return nil
	}
	return &d.sc.tokens
}

// hashes reads block_hashes: a non-empty array of hashes.
func (d *kvDec) hashes(i int) ([]spec.EvHash, error) {
	n, st := d.arrayHeader()
	switch st {
	case kvHdrTrunc:
		return nil, ref.KVTypeError(spec.ErrFieldType, kvFieldPlace(i, kfHashes).String(), 0, false, spec.WantHashes)
	case kvHdrOther:
		return nil, ref.KVTypeError(spec.ErrFieldType, kvFieldPlace(i, kfHashes).String(), d.b[d.p], true, spec.WantHashes)
	}
	if n > uint64(d.left()) {
		return nil, ref.KVLengthError(spec.ErrFieldType, kvFieldPlace(i, kfHashes).String(), n, d.left())
	}
	if !d.budget.Charge(n, spec.KVHashCost) {
		return nil, d.budget.CostError(kvFieldPlace(i, kfHashes).String())
	}
	if n == 0 {
		return nil, ref.KVEmptyHashesError(kvFieldPlace(i, kfHashes).String())
	}
	out := kvScratchTake(d.hashBuf(), int(n))
	b := d.b
	for j := range out {
		p := d.p
		// Fast path: vLLM's uint64 hashes (production switches only).
		if p+9 <= len(b) && b[p] == 0xcf && !d.f.SignedHashesOnly {
			out[j] = spec.EvHash(binary.BigEndian.Uint64(b[p+1:]))
			d.p = p + 9
			continue
		}
		h, _, err := d.hash(kvPlace{ev: i, name: kfHashes, named: true, j: j}, false)
		if err != nil {
			return nil, err
		}
		out[j] = h
	}
	return out, nil
}

// tokens reads token_ids: an array of ints in [0, 2^32).
func (d *kvDec) tokens(i int) ([]uint32, error) {
	n, st := d.arrayHeader()
	switch st {
	case kvHdrTrunc:
		return nil, ref.KVTypeError(spec.ErrFieldType, kvFieldPlace(i, kfTokens).String(), 0, false, spec.WantTokens)
	case kvHdrOther:
		return nil, ref.KVTypeError(spec.ErrFieldType, kvFieldPlace(i, kfTokens).String(), d.b[d.p], true, spec.WantTokens)
	}
	if n > uint64(d.left()) {
		return nil, ref.KVLengthError(spec.ErrFieldType, kvFieldPlace(i, kfTokens).String(), n, d.left())
	}
	if !d.budget.Charge(n, spec.KVTokenCost) {
		return nil, d.budget.CostError(kvFieldPlace(i, kfTokens).String())
	}
	out := kvScratchTake(d.tokenBuf(), int(n))
	b, p := d.b, d.p
	for j := range out {
		if p >= len(b) {
			d.p = p
			return nil, ref.KVTypeError(spec.ErrFieldType, kvPlace{ev: i, name: kfTokens, named: true, j: j}.String(), 0, false, spec.WantToken)
		}
		c := b[p]
		// Fast paths: fixint, uint16, uint8, uint32 (a large vocabulary's ids
		// mix uint16 and uint32; a branch-free read of 4 bytes shifted by the
		// width measured slower than these predicted branches).
		if c <= 0x7f {
			out[j] = uint32(c)
			p++
			continue
		}
		if c == 0xcd && p+3 <= len(b) {
			out[j] = uint32(binary.BigEndian.Uint16(b[p+1:]))
			p += 3
			continue
		}
		if c == 0xcc && p+2 <= len(b) {
			out[j] = uint32(b[p+1])
			p += 2
			continue
		}
		if c == 0xce && p+5 <= len(b) {
			out[j] = binary.BigEndian.Uint32(b[p+1:])
			p += 5
			continue
		}
		d.p = p
		u, signed, st := d.integer()
		switch {
		case st != kvValOK:
			return nil, d.typeErr(spec.ErrFieldType, kvPlace{ev: i, name: kfTokens, named: true, j: j}, st, spec.WantToken)
		case signed && int64(u) < 0:
			return nil, ref.KVTokenRangeError(kvPlace{ev: i, name: kfTokens, named: true, j: j}.String(), int64(u))
		case u > math.MaxUint32:
			return nil, ref.KVTokenRangeError(kvPlace{ev: i, name: kfTokens, named: true, j: j}.String(), u)
		}
		out[j] = uint32(u)
		p = d.p
	}
	d.p = p
	return out, nil
}

// blockSize reads block_size: an int >= 1 within int64.
func (d *kvDec) blockSize(i int) (int64, error) {
	u, signed, st := d.integer()
	switch {
	case st == kvValNil || st == kvValOther || st == kvValTrunc:
		return 0, d.typeErr(spec.ErrFieldType, kvFieldPlace(i, kfBlockSize), st, spec.WantBlockSize)
	case signed && int64(u) < 0:
		return 0, ref.KVRangeError(spec.ErrFieldType, kvFieldPlace(i, kfBlockSize).String(), int64(u), spec.WantBlockSize)
	case u < 1 || u > math.MaxInt64:
		return 0, ref.KVRangeError(spec.ErrFieldType, kvFieldPlace(i, kfBlockSize).String(), u, spec.WantBlockSize)
	}
	return int64(u), nil
}

// optInt reads lora_id or group_idx: nil or an int within int64.
func (d *kvDec) optInt(i int, name string) (*int64, error) {
	u, signed, st := d.integer()
	switch {
	case st == kvValNil:
		d.p++
		return nil, nil
	case st != kvValOK:
		return nil, d.typeErr(spec.ErrFieldType, kvFieldPlace(i, name), st, spec.WantIntOrNil)
	case !signed && u > math.MaxInt64:
		return nil, ref.KVRangeError(spec.ErrFieldType, kvFieldPlace(i, name).String(), u, spec.WantIntOrNil)
	}
	o := d.box()
	v := &o.group
	if name == kfLoraID {
		v = &o.loraID
	}
	*v = int64(u)
	return v, nil
}

// optStr reads medium, lora_name or kv_cache_spec_kind (slot k of the
// event's kvOpt): nil or a str.
func (d *kvDec) optStr(i int, name string, k int) (*string, error) {
	s, st := d.str()
	switch st {
	case kvValNil:
		d.p++
		return nil, nil
	case kvValOK:
		o := d.box()
		o.strs[k] = internKVStr(s)
		return &o.strs[k], nil
	}
	return nil, d.typeErr(spec.ErrFieldType, kvFieldPlace(i, name), st, spec.WantStrOrNil)
}

// internKVStr returns s as the string the decoders output
// (ref.KVValidString), without allocating for the tiers and attention
// kinds every producer sends.
func internKVStr(s []byte) string {
	switch string(s) {
	case "GPU":
		return "GPU"
	case "CPU":
		return "CPU"
	case "gpu":
		return "gpu"
	case "cpu":
		return "cpu"
	case "full_attention":
		return "full_attention"
	case "sliding_window":
		return "sliding_window"
	}
	return ref.KVValidString(s)
}
