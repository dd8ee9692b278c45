package equiv

import (
	"bytes"
	"encoding/binary"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/kvtwin/kvtwin/spec"
)

// Test data for the kvev family (docs/spec/kv-events.md §1): msgpack values
// are built as a small tree (mpVal) and written with vmihailenco's Encoder,
// never by hand, so a generated payload is exactly what a msgpack library
// writes for it. The tree keeps, for every value, the sentinel of its
// "place" (§2.10 A6: ErrBatchShape for the batch and its fields,
// ErrEventShape for an event and its tag, ErrHashEncoding for a hash,
// ErrFieldType for every other event field), so the invalid generators know
// which error a truncation or an oversized declared length at that value
// must produce.

// mpKind is the msgpack family of an mpVal.
type mpKind uint8

const (
	mpKNil mpKind = iota
	mpKBool
	mpKUint
	mpKInt
	mpKF32
	mpKF64
	mpKStr
	mpKBin
	mpKArr
	mpKMap
	mpKRaw
)

// mpVal is one msgpack value of test data.
type mpVal struct {
	k mpKind
	// width is an int's fixed width in bytes (1, 2, 4, 8), 0 for the
	// compact encoding.
	width int
	u     uint64
	i     int64
	f     float64
	b     bool
	s     string
	bin   []byte
	// elems are an array's elements, or a map's keys and values alternating.
	elems []*mpVal
	// declared, when >= 0, is the element (pair) count the header declares
	// instead of the real one: a length past the payload's end (§2.10 A6).
	declared int
	// raw is written as is (a header no encoder call writes, such as a
	// str32 declaring more bytes than follow).
	raw []byte
	// place is the sentinel of the value's place (§2.10 A6).
	place *spec.Sentinel
	// wide writes a str, bin, array or map with a header wider than it
	// needs, as an encoder may (the length is the same, only its width
	// differs): 1 the next width up (str8, bin16, array16, map16), 2 the
	// 16-bit one, 3 the 32-bit one.
	wide int
}

// wideHeader is the header of a str, bin, array or map of n elements
// (bytes) at width level w (see mpVal.wide); ok is false when no wider
// header applies (the compact one is written).
func wideHeader(k mpKind, n int, w int) (hdr []byte, ok bool) {
	var c8, c16, c32 byte
	switch k {
	case mpKStr:
		c8, c16, c32 = 0xd9, 0xda, 0xdb
	case mpKBin:
		c8, c16, c32 = 0xc4, 0xc5, 0xc6
	case mpKArr:
		c16, c32 = 0xdc, 0xdd
	case mpKMap:
		c16, c32 = 0xde, 0xdf
	default:
		return nil, false
	}
	switch {
	case w == 1 && c8 != 0 && k == mpKStr && n < 256:
		return []byte{c8, byte(n)}, true
	case w <= 2 && w >= 1 && n < 1<<16:
		return binary.BigEndian.AppendUint16([]byte{c16}, uint16(n)), true
	case w == 3:
		return binary.BigEndian.AppendUint32([]byte{c32}, uint32(n)), true
	}
	return nil, false
}

func mpNil() *mpVal               { return &mpVal{k: mpKNil, declared: -1} }
func mpBoolV(b bool) *mpVal       { return &mpVal{k: mpKBool, b: b, declared: -1} }
func mpU(v uint64) *mpVal         { return &mpVal{k: mpKUint, u: v, declared: -1} }
func mpUW(v uint64, w int) *mpVal { return &mpVal{k: mpKUint, u: v, width: w, declared: -1} }
func mpI(v int64) *mpVal          { return &mpVal{k: mpKInt, i: v, declared: -1} }
func mpIW(v int64, w int) *mpVal  { return &mpVal{k: mpKInt, i: v, width: w, declared: -1} }
func mpF64(f float64) *mpVal      { return &mpVal{k: mpKF64, f: f, declared: -1} }
func mpF32(f float32) *mpVal      { return &mpVal{k: mpKF32, f: float64(f), declared: -1} }
func mpS(s string) *mpVal         { return &mpVal{k: mpKStr, s: s, declared: -1} }
func mpB(b []byte) *mpVal         { return &mpVal{k: mpKBin, bin: b, declared: -1} }
func mpA(elems ...*mpVal) *mpVal  { return &mpVal{k: mpKArr, elems: elems, declared: -1} }
func mpRawV(raw []byte) *mpVal    { return &mpVal{k: mpKRaw, raw: raw, declared: -1} }
func mpM(kvs ...*mpVal) *mpVal    { return &mpVal{k: mpKMap, elems: kvs, declared: -1} }
func mpIntOrNil(v *int64) *mpVal  { return optVal(v, mpI) }

func optVal[T any](p *T, f func(T) *mpVal) *mpVal {
	if p == nil {
		return mpNil()
	}
	return f(*p)
}

// at sets the place of v and of every value inside it whose place is not
// set yet, and returns v.
func (v *mpVal) at(s *spec.Sentinel) *mpVal {
	if v.place == nil {
		v.place = s
	}
	for _, e := range v.elems {
		e.at(s)
	}
	return v
}

// clone deep-copies v.
func (v *mpVal) clone() *mpVal {
	c := *v
	c.bin = bytes.Clone(v.bin)
	c.raw = bytes.Clone(v.raw)
	if v.elems != nil {
		c.elems = make([]*mpVal, len(v.elems))
		for i, e := range v.elems {
			c.elems[i] = e.clone()
		}
	}
	return &c
}

// get returns the value of the str key name of a map, or nil.
func (v *mpVal) get(name string) *mpVal {
	if v.k != mpKMap {
		return nil
	}
	for i := 0; i+1 < len(v.elems); i += 2 {
		if k := v.elems[i]; k.k == mpKStr && k.s == name {
			return v.elems[i+1]
		}
	}
	return nil
}

// set replaces the value of key name in a map (appending the key when
// absent) and returns v.
func (v *mpVal) set(name string, val *mpVal) *mpVal {
	for i := 0; i+1 < len(v.elems); i += 2 {
		if k := v.elems[i]; k.k == mpKStr && k.s == name {
			v.elems[i+1] = val
			return v
		}
	}
	v.elems = append(v.elems, mpS(name), val)
	return v
}

// del removes key name from a map and returns v.
func (v *mpVal) del(name string) *mpVal {
	for i := 0; i+1 < len(v.elems); i += 2 {
		if k := v.elems[i]; k.k == mpKStr && k.s == name {
			v.elems = append(v.elems[:i:i], v.elems[i+2:]...)
			return v
		}
	}
	return v
}

// mpLeaf is the byte span of one scalar value of an encoded payload and its
// place.
type mpLeaf struct {
	start, end int
	place      *spec.Sentinel
}

// mpEnc writes mpVals with vmihailenco's Encoder into one buffer.
type mpEnc struct {
	buf    bytes.Buffer
	e      *msgpack.Encoder
	leaves []mpLeaf
	// spans are every value's bytes, in document order (pre-order).
	spans []mpSpan
}

// mpSpan is one encoded value: its bytes [start, end), where a
// container's header ends, the element count it declares (pairs for a
// map), its place, and its children's indexes in spans.
type mpSpan struct {
	start, hdrEnd, end int
	k                  mpKind
	n                  int
	place              *spec.Sentinel
	children           []int
}

// encodeSpans writes v and returns the bytes and every value's span
// (spans[0] is v's).
func (v *mpVal) encodeSpans() ([]byte, []mpSpan) {
	w := &mpEnc{}
	w.e = msgpack.NewEncoder(&w.buf)
	w.put(v)
	return w.buf.Bytes(), w.spans
}

// truncatedAt is the sentinel a decoder following §2.10 A6 (in document
// order; ref/kvev_decode.go) must return for the payload cut to its first
// c bytes (0 <= c < len): the place of the value whose bytes ran out — or
// whose first byte is missing — unless an enclosing container's header
// declared more elements than the bytes left could hold, which is refused
// first, at that container's place. Map keys and values are children in
// order; an event map must have "type" first (entries before it are
// skipped while the tag is sought, and errors found skipping are reported
// elsewhere).
func truncatedAt(spans []mpSpan, c int) *spec.Sentinel {
	cur := 0
	for {
		sp := spans[cur]
		if c == sp.start || (sp.k != mpKArr && sp.k != mpKMap) || c < sp.hdrEnd {
			return sp.place
		}
		need := sp.n
		if sp.k == mpKMap {
			need = 2 * sp.n
		}
		if c-sp.hdrEnd < need {
			return sp.place
		}
		next := -1
		for _, ch := range sp.children {
			if spans[ch].start <= c && c < spans[ch].end {
				next = ch
				break
			}
		}
		if next < 0 {
			return sp.place // cannot happen for c inside sp
		}
		cur = next
	}
}

// encode writes v and returns the bytes and the spans of its scalars in
// document order.
func (v *mpVal) encode() ([]byte, []mpLeaf) {
	w := &mpEnc{}
	w.e = msgpack.NewEncoder(&w.buf)
	w.put(v)
	return w.buf.Bytes(), w.leaves
}

// bytes is encode without the spans.
func (v *mpVal) bytes() []byte {
	b, _ := v.encode()
	return b
}

// put writes one value. bytes.Buffer never fails a write, so the
// Encoder's errors are nil.
func (w *mpEnc) put(v *mpVal) {
	start := w.buf.Len()
	si := len(w.spans)
	w.spans = append(w.spans, mpSpan{start: start, k: v.k, place: v.place})
	defer func() { w.spans[si].end = w.buf.Len() }()
	e := w.e
	switch v.k {
	case mpKNil:
		_ = e.EncodeNil()
	case mpKBool:
		_ = e.EncodeBool(v.b)
	case mpKUint:
		switch v.width {
		case 1:
			_ = e.EncodeUint8(uint8(v.u))
		case 2:
			_ = e.EncodeUint16(uint16(v.u))
		case 4:
			_ = e.EncodeUint32(uint32(v.u))
		case 8:
			_ = e.EncodeUint64(v.u)
		default:
			_ = e.EncodeUint(v.u)
		}
	case mpKInt:
		switch v.width {
		case 1:
			_ = e.EncodeInt8(int8(v.i))
		case 2:
			_ = e.EncodeInt16(int16(v.i))
		case 4:
			_ = e.EncodeInt32(int32(v.i))
		case 8:
			_ = e.EncodeInt64(v.i)
		default:
			_ = e.EncodeInt(v.i)
		}
	case mpKF32:
		_ = e.EncodeFloat32(float32(v.f))
	case mpKF64:
		_ = e.EncodeFloat64(v.f)
	case mpKStr:
		if hdr, ok := wideHeader(v.k, len(v.s), v.wide); ok {
			w.buf.Write(hdr)
			w.buf.WriteString(v.s)
			break
		}
		_ = e.EncodeString(v.s)
	case mpKBin:
		b := v.bin
		if b == nil {
			b = []byte{} // EncodeBytes writes nil for a nil slice
		}
		if hdr, ok := wideHeader(v.k, len(b), v.wide); ok {
			w.buf.Write(hdr)
			w.buf.Write(b)
			break
		}
		_ = e.EncodeBytes(b)
	case mpKArr:
		n := len(v.elems)
		if v.declared >= 0 {
			n = v.declared
		}
		if hdr, ok := wideHeader(v.k, n, v.wide); ok {
			w.buf.Write(hdr)
		} else {
			_ = e.EncodeArrayLen(n)
		}
		w.children(si, n, v.elems)
		return
	case mpKMap:
		n := len(v.elems) / 2
		if v.declared >= 0 {
			n = v.declared
		}
		if hdr, ok := wideHeader(v.k, n, v.wide); ok {
			w.buf.Write(hdr)
		} else {
			_ = e.EncodeMapLen(n)
		}
		w.children(si, n, v.elems)
		return
	case mpKRaw:
		w.buf.Write(v.raw)
	}
	w.leaves = append(w.leaves, mpLeaf{start, w.buf.Len(), v.place})
}

// children writes a container's elements after its header, recording
// the header's end, the declared count and the children's spans.
func (w *mpEnc) children(si, n int, elems []*mpVal) {
	w.spans[si].hdrEnd, w.spans[si].n = w.buf.Len(), n
	for _, x := range elems {
		w.spans[si].children = append(w.spans[si].children, len(w.spans))
		w.put(x)
	}
}

// mpStrPastEnd is a str (or, with bin, a bin) whose str32/bin32 header
// declares more bytes than the few that follow: a length past the end.
func mpStrPastEnd(bin bool, follow []byte) *mpVal {
	code := byte(0xdb)
	if bin {
		code = 0xc6
	}
	raw := []byte{code, 0, 0x10, 0, 0}
	return mpRawV(append(raw, follow...))
}

// mpNest is n arrays nested in each other around leaf.
func mpNest(n int, leaf *mpVal) *mpVal {
	v := leaf
	for range n {
		v = mpA(v)
	}
	return v
}

// Hash shapes of §1.5: how one normalised hash travels on the wire.
const (
	hashUint     = iota // vLLM's int mode: uint, compact (0xcf at >= 2^63)
	hashUint64          // uint, always 9 bytes
	hashSigned          // SGLang: the same 64 bits as a signed int64
	hashSigned64        // signed, always 9 bytes
	hashBin8            // vLLM's bytes mode at 8 bytes
	hashBin32           // vLLM's bytes mode: a 32-byte digest whose last 8 bytes are the hash
	hashBinShort        // the shortest bin that left-pads to the hash (§1.5, n < 8)
	hashShapes
)

// hashVal encodes normalised hash h in shape, with digest's first bytes
// in front of a 32-byte bin (any bytes: only the last 8 count).
func hashVal(h uint64, shape int, digest []byte) *mpVal {
	var be [8]byte
	binary.BigEndian.PutUint64(be[:], h)
	var v *mpVal
	switch shape {
	case hashUint:
		v = mpU(h)
	case hashUint64:
		v = mpUW(h, 8)
	case hashSigned:
		v = mpI(int64(h))
	case hashSigned64:
		v = mpIW(int64(h), 8)
	case hashBin8:
		v = mpB(be[:])
	case hashBin32:
		d := make([]byte, 32)
		copy(d, digest)
		copy(d[24:], be[:])
		v = mpB(d)
	default:
		n := 8
		for n > 1 && be[8-n] == 0 {
			n--
		}
		v = mpB(bytes.Clone(be[8-n:]))
	}
	return v.at(spec.ErrHashEncoding)
}

// seqFrame is an 8-byte big-endian seq frame (§1.2).
func seqFrame(s uint64) spec.HexBytes {
	return binary.BigEndian.AppendUint64(nil, s)
}

// Field names of the declared event fields, by form-A position (§1.4).
var (
	storedNames  = []string{"type", "block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium", "lora_name", "extra_keys", "group_idx", "kv_cache_spec_kind", "kv_cache_spec_sliding_window"}
	removedNames = []string{"type", "block_hashes", "medium", "group_idx"}
)

// evBody is one event's declared fields as msgpack values by form-A
// position (vals[0] unused: the tag is tag), plus what a newer or
// different publisher adds: trailing array elements (form A) or extra
// keys (form B).
type evBody struct {
	tag  string
	vals []*mpVal // nil entry: the field holds its default (nil)
	// required is how many positions (from 1) a map writes even at nil.
	required int
	// omit lists positions a map leaves out although they are required
	// (the fields §1.4 rule 3 tolerates missing).
	omit     map[int]bool
	trailing []*mpVal
	extraKV  []*mpVal // alternating str keys and values
}

// arrayForm is the event as form A with n elements (the tag included);
// positions past len(vals) are nil, then the trailing elements follow.
func (b evBody) arrayForm(n int) *mpVal {
	el := []*mpVal{mpS(b.tag).at(spec.ErrEventShape)}
	for p := 1; p < n; p++ {
		if p < len(b.vals) && b.vals[p] != nil {
			el = append(el, b.vals[p])
		} else {
			el = append(el, b.nilAt(p))
		}
	}
	el = append(el, b.trailing...)
	return mpA(el...).at(spec.ErrFieldType).markEvent()
}

// nilAt is the nil a field at form-A position p holds by default, placed
// as that field (a parent_block_hash is a hash, A6).
func (b evBody) nilAt(p int) *mpVal {
	if b.tag == spec.EventStored && p == 2 {
		return mpNil().at(spec.ErrHashEncoding)
	}
	return mpNil()
}

// mapForm is the event as form B: "type" first, the required fields (nil
// included, unless omitted), the optional ones not at their default, then
// the extra keys; names are the field names by position.
func (b evBody) mapForm(names []string) *mpVal {
	kv := []*mpVal{mpS("type"), mpS(b.tag).at(spec.ErrEventShape)}
	for p := 1; p < len(b.vals) && p < len(names); p++ {
		v := b.vals[p]
		switch {
		case b.omit[p]:
			continue
		case v == nil && p <= b.required:
			v = b.nilAt(p)
		case v == nil:
			continue
		}
		kv = append(kv, mpS(names[p]), v)
	}
	kv = append(kv, b.extraKV...)
	return mpM(kv...).at(spec.ErrFieldType).markEvent()
}

// markEvent gives the event itself and its map keys the event's place.
func (v *mpVal) markEvent() *mpVal {
	v.place = spec.ErrEventShape
	if v.k == mpKMap {
		for i := 0; i < len(v.elems); i += 2 {
			v.elems[i].place = spec.ErrEventShape
		}
	}
	return v
}

// canonicalBody is the evBody of a decoded event, every hash in shape, so
// that decoding its encoding gives the event back (§1.4, §1.5).
func canonicalBody(ev spec.KVEvent, shape int) (evBody, []string) {
	hashes := func(hs []spec.EvHash) *mpVal {
		el := make([]*mpVal, len(hs))
		for i, h := range hs {
			el[i] = hashVal(uint64(h), shape, []byte{byte(i), 0xaa, byte(h)})
		}
		return mpA(el...)
	}
	switch ev.Type {
	case spec.EventStored:
		toks := make([]*mpVal, len(ev.TokenIDs))
		for i, tok := range ev.TokenIDs {
			toks[i] = mpU(uint64(tok))
		}
		var parent *mpVal
		if ev.ParentBlockHash != nil {
			parent = hashVal(uint64(*ev.ParentBlockHash), shape, nil)
		}
		vals := []*mpVal{nil, hashes(ev.BlockHashes), parent, mpA(toks...), mpI(ev.BlockSize),
			optOrNil(ev.LoraID, mpI), optOrNil(ev.Medium, mpS), optOrNil(ev.LoraName, mpS), nil,
			optOrNil(ev.GroupIdx, mpI), optOrNil(ev.KVCacheSpecKind, mpS), nil}
		return evBody{tag: spec.EventStored, vals: vals, required: 7}, storedNames
	case spec.EventRemoved:
		vals := []*mpVal{nil, hashes(ev.BlockHashes), optOrNil(ev.Medium, mpS), optOrNil(ev.GroupIdx, mpI)}
		return evBody{tag: spec.EventRemoved, vals: vals, required: 2}, removedNames
	case spec.EventCleared:
		return evBody{tag: spec.EventCleared}, nil
	}
	return evBody{tag: ev.Tag}, nil
}

// optOrNil is optVal that leaves an unset field nil (its default).
func optOrNil[T any](p *T, f func(T) *mpVal) *mpVal {
	if p == nil {
		return nil
	}
	return f(*p)
}

// encodeEvent writes a decoded event in form ("array": every declared
// field, as msgspec writes array-like structs; "map": omit_defaults).
func encodeEvent(ev spec.KVEvent, form string, shape int) *mpVal {
	b, names := canonicalBody(ev, shape)
	if form == "map" {
		return b.mapForm(names)
	}
	return b.arrayForm(max(len(b.vals), 1))
}

// encodeBatch writes a decoded batch with its events in the forms
// formOf(i) picks and every hash in shape; an array batch writes the rank
// (nil when unset) and the publisher id only when set.
func encodeBatch(b spec.KVBatch, batchForm string, formOf func(int) string, shape int) *mpVal {
	evs := make([]*mpVal, len(b.Events))
	for i, ev := range b.Events {
		evs[i] = encodeEvent(ev, formOf(i), shape)
	}
	events := mpA(evs...)
	if batchForm == "map" {
		kv := []*mpVal{mpS("ts"), mpF64(b.TS), mpS("events"), events}
		if b.DPRank != nil {
			kv = append(kv, mpS("data_parallel_rank"), mpI(*b.DPRank))
		}
		if b.PublisherID != nil {
			kv = append(kv, mpS("publisher_id"), mpB(b.PublisherID))
		}
		return mpM(kv...).at(spec.ErrBatchShape)
	}
	el := []*mpVal{mpF64(b.TS), events, mpIntOrNil(b.DPRank)}
	if b.PublisherID != nil {
		el = append(el, mpB(b.PublisherID))
	}
	return mpA(el...).at(spec.ErrBatchShape)
}

// encodeMessage is the three frames of a decoded message re-encoded.
func encodeMessage(m spec.KVMessage, batchForm string, formOf func(int) string, shape int) []spec.HexBytes {
	topic := []byte(m.Topic)
	if m.TopicHex != nil { // the raw frame of a topic that is not UTF-8 (A6)
		topic = m.TopicHex
	}
	return []spec.HexBytes{topic, seqFrame(m.Seq), encodeBatch(m.Batch, batchForm, formOf, shape).bytes()}
}
