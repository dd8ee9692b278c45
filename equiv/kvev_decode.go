package equiv

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
)

// KVEvDecode is the differential spec of kvev.decode (docs/spec/kv-events.md
// §1, §2.10 A6): real messages of every producer version of §1.4's table
// (both event encodings, batches of 2–4 elements and the map-shaped batch,
// the three hash shapes of §1.5), every §1 error class, §5's examples, and
// the properties that re-encode a decoded message (form A ↔ form B, int ↔
// bin hashes) and must decode to the same canonical events.
func KVEvDecode() *Spec[ref.KVEvDecodeInput, ref.KVMessage] {
	return &Spec[ref.KVEvDecodeInput, ref.KVMessage]{
		Op:          catalog.KVEvDecode(),
		Valid:       rapid.Custom(kvDecodeValid),
		Invalid:     rapid.Custom(kvDecodeInvalid),
		Boundary:    kvDecodeBoundary(),
		Regressions: kvDecodeRegressions(),
		Rejects:     kvDecodeRejects,
		Props: []Prop[ref.KVEvDecodeInput, ref.KVMessage]{
			{"canonical-shape", kvDecodeCanonicalShape},
			{"reencoding-round-trips", kvDecodeRoundTrips},
			{"form-a-equals-form-b", kvDecodeFormInvariant},
			{"hash-shapes-agree", kvDecodeHashShapes},
			{"trailing-bytes-refused", kvDecodeTrailing},
			{"proper-prefix-refused", kvDecodeProperPrefix},
		},
	}
}

// Draw helpers shared with kvev.apply's generator.

// kvTopics are topic frames: llm-d's kv@<pod>@<model> (§2.1, A2), the
// empty default, and forms A2 does not parse.
var kvTopics = []string{"kv@10.0.0.7@llama", "kv@pod-a@model", "", "vllm", "kv@@x", "kv@a@b@c", "kv@pod-b@", "other@a@b", "\xff\xfe"}

func drawTopic(t *rapid.T) string {
	if oneIn(t, 6, "free_topic") {
		return rapid.StringN(0, 12, -1).Draw(t, "topic_str")
	}
	return rapid.SampledFrom(kvTopics).Draw(t, "topic")
}

func drawSeq(t *rapid.T) uint64 {
	if rapid.Bool().Draw(t, "seq_edge") {
		return rapid.SampledFrom([]uint64{0, 1, 2, 255, 256, 1 << 32, 1<<63 - 1, 1 << 63, math.MaxUint64 - 1, math.MaxUint64}).Draw(t, "seq_at")
	}
	return rapid.Uint64().Draw(t, "seq")
}

// drawTS is a ts of any numeric msgpack type (§1.3).
func drawTS(t *rapid.T) *mpVal {
	switch uniform(t, 6, "ts_kind") {
	case 0:
		return mpF32(finite32(rapid.Float32().Draw(t, "ts32")))
	case 1:
		return mpI(rapid.Int64().Draw(t, "ts_int"))
	case 2:
		return mpU(rapid.Uint64().Draw(t, "ts_uint"))
	case 3:
		return mpF64(finite(rapid.Float64().Draw(t, "ts64")))
	}
	return mpF64(1757500000.25)
}

// finite maps NaN and ±Inf to 0: a decoded ts is JSON output, which cannot
// carry them (see TestKVEvNonFiniteTS).
func finite(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

func finite32(f float32) float32 { return float32(finite(float64(f))) }

// drawWideUint encodes v compactly or in any fixed width that holds it,
// unsigned or signed ("ints are read whatever their msgpack width", A6).
func drawWideUint(t *rapid.T, v uint64, label string) *mpVal {
	widths := []int{0}
	for _, w := range []int{1, 2, 4, 8} {
		if w == 8 || v < 1<<(8*w) {
			widths = append(widths, w)
		}
	}
	w := rapid.SampledFrom(widths).Draw(t, label+"_width")
	if v < 1<<63 && rapid.IntRange(0, 3).Draw(t, label+"_signed") == 0 {
		if w == 0 || v < 1<<(8*w-1) {
			return mpIW(int64(v), w)
		}
	}
	return mpUW(v, w)
}

// kvHashEdges are hash values at the §1.5 boundaries (H1, H2 of §5).
var kvHashEdges = []uint64{0, 1, 0x7f, 0x80, 0xff, 1 << 31, 1 << 32, 1<<63 - 1, 1 << 63, math.MaxUint64, 0x1111111111111111, 0xF0E1D2C3B4A59687}

// drawHash is a block hash in any of §1.5's shapes; a bin may be 1 to 64
// bytes long (only the last 8 count, left-padded when shorter).
func drawHash(t *rapid.T) *mpVal {
	if oneIn(t, 8, "hash_any_bin") {
		b := rapid.SliceOfN(rapid.Byte(), 1, 64).Draw(t, "hash_bin")
		return mpB(b).at(ref.ErrHashEncoding)
	}
	h := rapid.Uint64().Draw(t, "hash")
	if rapid.Bool().Draw(t, "hash_edge") {
		h = rapid.SampledFrom(kvHashEdges).Draw(t, "hash_at")
	}
	v := hashVal(h, uniform(t, hashShapes, "hash_shape"), []byte{0xde, 0xad})
	if v.k == mpKInt && int64(h) >= 0 && oneIn(t, 3, "hash_narrow") {
		return drawWideUint(t, h, "hash").at(ref.ErrHashEncoding)
	}
	return v
}

// kvTokenEdges are token ids at msgpack's width boundaries and 2^32-1.
var kvTokenEdges = []uint64{0, 1, 127, 128, 255, 256, 65535, 65536, 1 << 31, math.MaxUint32}

func drawTokenVals(t *rapid.T, n int) *mpVal {
	el := make([]*mpVal, n)
	for i := range el {
		v := uint64(rapid.Uint32Range(0, 300).Draw(t, "tok"))
		if oneIn(t, 4, "tok_edge") {
			v = rapid.SampledFrom(kvTokenEdges).Draw(t, "tok_at")
		}
		el[i] = drawWideUint(t, v, "tok")
	}
	return mpA(el...)
}

// drawJunk is a value a consumer ignores (an unknown key, a trailing
// element, extra_keys, an unknown event's body): any msgpack family,
// nested at most depth deep, ext values included.
func drawJunk(t *rapid.T, depth int) *mpVal {
	k := uniform(t, 11, "junk")
	if depth <= 0 && k >= 8 {
		k = 0
	}
	switch k {
	case 0:
		return mpNil()
	case 1:
		return mpBoolV(rapid.Bool().Draw(t, "junk_bool"))
	case 2:
		return mpI(rapid.Int64().Draw(t, "junk_int"))
	case 3:
		return mpS(rapid.SampledFrom([]string{"", "local", "session-7", "full_attention", strings.Repeat("x", 40)}).Draw(t, "junk_str"))
	case 4:
		return mpB(rapid.SliceOfN(rapid.Byte(), 0, 20).Draw(t, "junk_bin"))
	case 5:
		return mpF64(rapid.Float64().Draw(t, "junk_float")) // ignored: NaN is fine
	case 6:
		return mpRawV(rapid.SampledFrom([][]byte{
			{0xd6, 0xff, 0, 0, 0, 1},       // fixext4: a msgpack timestamp
			{0xc7, 3, 1, 0xaa, 0xbb, 0xcc}, // ext8
			{0xd4, 5, 9},                   // fixext1
			{0xc8, 0, 2, 7, 1, 2},          // ext16
		}).Draw(t, "junk_ext"))
	case 7:
		return mpU(rapid.Uint64().Draw(t, "junk_uint"))
	case 8, 9:
		n := rapid.IntRange(0, 3).Draw(t, "junk_len")
		el := make([]*mpVal, n)
		for i := range el {
			el[i] = drawJunk(t, depth-1)
		}
		return mpA(el...)
	}
	n := rapid.IntRange(0, 3).Draw(t, "junk_pairs")
	kv := make([]*mpVal, 0, 2*n)
	for i := range n {
		// keys inside a skipped value are not checked (A6): any type, repeats
		key := mpS(fmt.Sprintf("k%d", i))
		switch uniform(t, 8, "junk_key") {
		case 0:
			key = mpU(uint64(i))
		case 1:
			key = mpS("k0")
		case 2:
			key = mpA()
		}
		kv = append(kv, key, drawJunk(t, depth-1))
	}
	return mpM(kv...)
}

// kvEvent is a drawn event before it is rendered: its body and form.
type kvEvent struct {
	body  evBody
	names []string
	form  string // "array" or "map"
	n     int    // form A length, the tag included
	// permute shuffles a map's pairs (consumers select by name, §1.4 B).
	permute []int
}

// growTo makes a form-A event at least n elements long; a salted SGLang
// map at position 7 becomes nil (it is only SGLang's in an 8-element store).
func (e *kvEvent) growTo(n int) {
	if e.form != "array" || e.n >= n {
		return
	}
	if v := e.body.vals; e.body.tag == ref.EventStored && v[7] != nil && v[7].k == mpKMap {
		v[7] = nil
	}
	e.n = n
}

// asMap turns a drawn event into form B with "type" first (a salt map,
// SGLang's form-A element, is dropped: in a map it would be lora_name).
func (e *kvEvent) asMap() {
	if v := e.body.vals; e.body.tag == ref.EventStored && v[7] != nil && v[7].k == mpKMap {
		v[7] = nil
	}
	if e.body.omit == nil {
		e.body.omit = map[int]bool{}
	}
	e.form, e.permute, e.body.trailing = "map", nil, nil
}

func (e kvEvent) render() *mpVal {
	if e.form == "map" {
		v := e.body.mapForm(e.names)
		if len(e.permute) > 0 {
			pairs := len(v.elems) / 2
			el := make([]*mpVal, 0, len(v.elems))
			for _, p := range e.permute {
				if p < pairs {
					el = append(el, v.elems[2*p], v.elems[2*p+1])
				}
			}
			el = append(el, v.elems[2*min(pairs, len(e.permute)):]...) // pairs past the permutation keep their order
			v.elems = el
		}
		return v
	}
	return e.body.arrayForm(e.n)
}

func drawMedium(t *rapid.T) *mpVal {
	m := rapid.SampledFrom([]string{"", "GPU", "GPU", "gpu", "CPU", "cpu", "disk", "Gpu", "G\xffPU"}).Draw(t, "medium")
	if m == "" && rapid.Bool().Draw(t, "medium_nil") {
		return nil
	}
	return mpS(m)
}

func drawOptInt(t *rapid.T, label string, lo, hi int64) *mpVal {
	if rapid.Bool().Draw(t, label+"_nil") {
		return nil
	}
	v := rapid.Int64Range(lo, hi).Draw(t, label)
	if v >= 0 {
		return drawWideUint(t, uint64(v), label)
	}
	return mpI(v)
}

func drawForm(t *rapid.T) string {
	return rapid.SampledFrom([]string{"array", "map"}).Draw(t, "form")
}

// drawStored is a BlockStored of any producer of §1.4's table: form A of
// 5 to 12 elements (SGLang's salted 8th element map included, trailing
// fields of a newer producer sometimes), or form B with omit_defaults,
// tolerated omissions and unknown keys.
func drawStored(t *rapid.T) kvEvent {
	nh := rapid.IntRange(1, 4).Draw(t, "hashes")
	hs := make([]*mpVal, nh)
	for i := range hs {
		hs[i] = drawHash(t)
	}
	bs := rapid.SampledFrom([]uint64{1, 2, 4, 16}).Draw(t, "block_size")
	nt := int(bs) * nh
	switch uniform(t, 8, "token_shape") {
	case 0:
		nt = 0 // tokenless tier update (§2.3 step 6)
	case 1:
		nt = rapid.IntRange(0, 9).Draw(t, "odd_tokens") // ErrTokenCount is the index's (§2.3)
	}
	if nt > 24 {
		nt = 24
	}
	vals := make([]*mpVal, 12)
	vals[1] = mpA(hs...)
	if rapid.Bool().Draw(t, "has_parent") {
		vals[2] = drawHash(t)
	}
	vals[3] = drawTokenVals(t, nt)
	vals[4] = drawWideUint(t, bs, "bs")
	if oneIn(t, 10, "bs_huge") {
		vals[4] = mpI(math.MaxInt64)
	}
	vals[5] = drawOptInt(t, "lora_id", -3, 5)
	vals[6] = drawMedium(t)
	if rapid.IntRange(0, 3).Draw(t, "lora_name_set") == 0 {
		vals[7] = mpS(rapid.SampledFrom([]string{"", "adapter-a", "sql-lora", "sql-\xfflora"}).Draw(t, "lora_name"))
	}
	if oneIn(t, 3, "extra_keys_set") {
		ek := make([]*mpVal, nh)
		for i := range ek {
			if rapid.Bool().Draw(t, "ek_nil") {
				ek[i] = mpNil()
			} else {
				ek[i] = mpA(drawJunk(t, 2), mpS("salt"))
			}
		}
		vals[8] = mpA(ek...)
	}
	vals[9] = drawOptInt(t, "group_idx", -1, 3)
	if oneIn(t, 3, "kind_set") {
		vals[10] = mpS(rapid.SampledFrom([]string{"full_attention", "sliding_window", "mamba"}).Draw(t, "kind"))
		if rapid.Bool().Draw(t, "window_set") {
			vals[11] = mpU(4096)
		}
	}
	e := kvEvent{body: evBody{tag: ref.EventStored, vals: vals, required: 7}, names: storedNames, form: drawForm(t)}
	return finishEvent(t, e, []int{5, 6, 7, 8, 9, 10, 11, 12, 12}, []int{2, 5, 6, 7})
}

// finishEvent picks a form-A length among lengths (a salted SGLang store
// puts a {"cache_salt": …} map at position 7), or form B's omissions
// (among omittable) and unknown keys; either may get trailing extras.
func finishEvent(t *rapid.T, e kvEvent, lengths, omittable []int) kvEvent {
	if e.form == "array" {
		e.n = rapid.SampledFrom(lengths).Draw(t, "array_len")
		if e.body.tag == ref.EventStored && e.n == 7 && oneIn(t, 3, "sglang_salt") {
			e.n = 8
			e.body.vals[7] = mpM(mpS("cache_salt"), mpS(rapid.SampledFrom([]string{"", "s3cr3t"}).Draw(t, "salt")))
		}
		// trailing elements past the declared fields (a newer producer)
		if e.n >= max(1, len(e.names)) && oneIn(t, 3, "trailing") {
			for range rapid.IntRange(1, 3).Draw(t, "trailing_n") {
				e.body.trailing = append(e.body.trailing, drawJunk(t, 2))
			}
		}
		return e
	}
	e.body.omit = map[int]bool{}
	for _, p := range omittable {
		if oneIn(t, 4, "omit") {
			e.body.omit[p] = true
		}
	}
	for _, k := range []string{"locality", "ownership", "session_id", "cache_salt"} {
		if oneIn(t, 5, "extra_key") {
			v := drawJunk(t, 1)
			if rapid.Bool().Draw(t, "extra_key_str") {
				v = mpS("v-" + k)
			}
			e.body.extraKV = append(e.body.extraKV, mpS(k), v)
		}
	}
	if oneIn(t, 12, "many_keys") { // past any small fixed-size key set
		for i := range rapid.IntRange(10, 24).Draw(t, "many_keys_n") {
			e.body.extraKV = append(e.body.extraKV, mpS(fmt.Sprintf("x_%02d", i)), mpU(uint64(i)))
		}
	}
	if oneIn(t, 5, "permute") {
		idx := make([]int, 16)
		for i := range idx {
			idx[i] = i
		}
		e.permute = rapid.Permutation(idx).Draw(t, "key_order")
	}
	return e
}

func drawRemoved(t *rapid.T) kvEvent {
	nh := rapid.IntRange(1, 4).Draw(t, "hashes")
	hs := make([]*mpVal, nh)
	for i := range hs {
		hs[i] = drawHash(t)
	}
	vals := []*mpVal{nil, mpA(hs...), drawMedium(t), drawOptInt(t, "group_idx", -1, 3)}
	e := kvEvent{body: evBody{tag: ref.EventRemoved, vals: vals, required: 2}, names: removedNames, form: drawForm(t)}
	return finishEvent(t, e, []int{2, 3, 4, 4}, []int{2})
}

func drawCleared(t *rapid.T) kvEvent {
	e := kvEvent{body: evBody{tag: ref.EventCleared}, form: drawForm(t)}
	return finishEvent(t, e, []int{1}, nil)
}

// drawUnknown is an event with a tag this decoder does not know (§1.4
// rule 2): its body is anything and is skipped.
func drawUnknown(t *rapid.T) kvEvent {
	tag := rapid.SampledFrom([]string{"BlockEvicted", "blockstored", "Heartbeat", "", "SnapshotMarker", "Heart\xc3beat"}).Draw(t, "tag")
	e := kvEvent{body: evBody{tag: tag}, form: drawForm(t), n: 1}
	for range rapid.IntRange(0, 3).Draw(t, "unknown_fields") {
		v := drawJunk(t, 3)
		if e.form == "array" {
			e.body.trailing = append(e.body.trailing, v)
		} else {
			e.body.extraKV = append(e.body.extraKV, mpS(fmt.Sprintf("f%d", len(e.body.extraKV))), v)
		}
	}
	return e
}

func drawAnyEvent(t *rapid.T) kvEvent {
	switch uniform(t, 10, "event_type") {
	case 0, 1, 2, 3:
		return drawStored(t)
	case 4, 5, 6:
		return drawRemoved(t)
	case 7, 8:
		return drawCleared(t)
	}
	return drawUnknown(t)
}

// kvBatchShape is how a drawn batch is laid out (§1.3).
type kvBatchShape struct {
	n      int  // array length: 2, 3, 4, or more (elements past 4 ignored)
	asMap  bool // the tolerated map-shaped batch
	rank   *mpVal
	pubID  *mpVal
	extras []*mpVal
	order  []int // map key order
}

func drawBatchShape(t *rapid.T) kvBatchShape {
	s := kvBatchShape{n: rapid.SampledFrom([]int{2, 3, 3, 3, 4, 5}).Draw(t, "batch_len")}
	s.asMap = oneIn(t, 8, "map_batch")
	s.rank = mpNil()
	if rapid.IntRange(0, 3).Draw(t, "rank_nil") > 0 {
		r := rapid.Int64Range(0, 3).Draw(t, "rank")
		if oneIn(t, 10, "rank_max") {
			r = math.MaxInt64
		}
		s.rank = drawWideUint(t, uint64(r), "rank")
	}
	if s.n >= 4 {
		s.pubID = mpNil()
		if rapid.Bool().Draw(t, "pub_id_set") {
			s.pubID = mpB(rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "pub_id"))
		}
	}
	for i := 4; i < s.n; i++ {
		s.extras = append(s.extras, drawJunk(t, 2))
	}
	if s.asMap {
		s.order = rapid.Permutation([]int{0, 1, 2, 3, 4}).Draw(t, "batch_key_order")
		if rapid.Bool().Draw(t, "map_no_rank") {
			s.rank = nil
		}
		if s.pubID == nil && oneIn(t, 3, "map_pub_id") {
			s.pubID = mpB(rapid.SliceOfN(rapid.Byte(), 0, 16).Draw(t, "map_pub_id_bytes"))
		}
		if oneIn(t, 3, "map_unknown_key") {
			s.extras = []*mpVal{drawJunk(t, 2)}
		} else {
			s.extras = nil
		}
	}
	return s
}

func (s kvBatchShape) render(ts *mpVal, events []*mpVal) *mpVal {
	evs := mpA(events...)
	if s.asMap {
		pairs := [][2]*mpVal{{mpS("ts"), ts}, {mpS("events"), evs}, {mpS("data_parallel_rank"), s.rank}, {mpS("publisher_id"), s.pubID}, {mpS("heartbeat"), nil}}
		if len(s.extras) > 0 {
			pairs[4][1] = s.extras[0]
		}
		var kv []*mpVal
		for _, i := range s.order {
			if i < len(pairs) && pairs[i][1] != nil {
				kv = append(kv, pairs[i][0], pairs[i][1])
			}
		}
		m := mpM(kv...).at(ref.ErrBatchShape)
		for i := 0; i < len(m.elems); i += 2 {
			m.elems[i].place = ref.ErrBatchShape
		}
		return m
	}
	el := []*mpVal{ts, evs}
	if s.n >= 3 {
		r := s.rank
		if r == nil { // a map batch's absent rank
			r = mpNil()
		}
		el = append(el, r)
	}
	if s.n >= 4 {
		el = append(el, s.pubID)
	}
	el = append(el, s.extras...)
	return mpA(el...).at(ref.ErrBatchShape)
}

// kvDecodeDraw is a drawn message: topic, seq, batch shape and events.
type kvDecodeDraw struct {
	topic  string
	seq    uint64
	shape  kvBatchShape
	ts     *mpVal
	events []kvEvent
}

func drawMessage(t *rapid.T, maxEvents int) kvDecodeDraw {
	d := kvDecodeDraw{topic: drawTopic(t), seq: drawSeq(t), shape: drawBatchShape(t), ts: drawTS(t)}
	for range rapid.IntRange(0, maxEvents).Draw(t, "events") {
		d.events = append(d.events, drawAnyEvent(t))
	}
	return d
}

func (d kvDecodeDraw) batch() *mpVal {
	evs := make([]*mpVal, len(d.events))
	for i, e := range d.events {
		evs[i] = e.render()
	}
	return d.shape.render(d.ts, evs)
}

func (d kvDecodeDraw) input(payload []byte) ref.KVEvDecodeInput {
	return ref.KVEvDecodeInput{Frames: []ref.HexBytes{[]byte(d.topic), seqFrame(d.seq), payload}}
}

func kvDecodeValid(t *rapid.T) ref.KVEvDecodeInput {
	d := drawMessage(t, 4)
	b := d.batch()
	if oneIn(t, 5, "widen") {
		widen(t, b)
	}
	in := d.input(b.bytes())
	if oneIn(t, 6, "max_events_at") {
		// A10: max_events is inclusive.
		in.Limits.MaxEvents = max(1, len(d.events))
	}
	return in
}

// widen gives some strs, bins, arrays and maps of v wider headers than
// they need (str8, bin16, array16, map16): the same values, another
// encoder's choice.
func widen(t *rapid.T, v *mpVal) {
	switch v.k {
	case mpKStr, mpKBin, mpKArr, mpKMap:
		if oneIn(t, 3, "wide") {
			v.wide = rapid.IntRange(1, 3).Draw(t, "wide_level")
		}
	}
	for _, e := range v.elems {
		widen(t, e)
	}
}

// kvDecodeInvalid draws a real message and breaks it once, in one of the
// §1 / A6 error classes; every other check passes, so the first failure in
// document order is the broken one.
func kvDecodeInvalid(t *rapid.T) Bad[ref.KVEvDecodeInput] {
	d := drawMessage(t, 3)
	bad := func(s *ref.Sentinel, payload []byte) Bad[ref.KVEvDecodeInput] {
		return Bad[ref.KVEvDecodeInput]{In: d.input(payload), Want: s}
	}
	switch uniform(t, 13, "class") {
	case 0: // §1.2: frame count
		in := d.input(d.batch().bytes())
		switch rapid.IntRange(0, 3).Draw(t, "frames") {
		case 0:
			in.Frames = nil
		case 1:
			in.Frames = in.Frames[:rapid.IntRange(1, 2).Draw(t, "keep")]
		default:
			in.Frames = append(in.Frames, rapid.SliceOfN(rapid.Byte(), 0, 3).Draw(t, "extra_frame"))
		}
		return Bad[ref.KVEvDecodeInput]{In: in, Want: ref.ErrFrameCount}
	case 1: // §1.2: seq width
		in := d.input(d.batch().bytes())
		in.Frames[1] = rapid.SliceOfN(rapid.Byte(), 0, 16).Filter(func(b []byte) bool { return len(b) != 8 }).Draw(t, "seq_frame")
		return Bad[ref.KVEvDecodeInput]{In: in, Want: ref.ErrSeqWidth}
	case 2: // §1.3: trailing bytes
		tail := drawJunk(t, 1).bytes()
		if rapid.Bool().Draw(t, "raw_tail") {
			tail = rapid.SliceOfN(rapid.Byte(), 1, 3).Draw(t, "tail")
		}
		return bad(ref.ErrTrailingBytes, append(d.batch().bytes(), tail...))
	case 3: // §1.3: batch shape
		return bad(ref.ErrBatchShape, kvBreakBatch(t, d))
	case 4: // §1.4 rule 1, A6: event shape, keys
		return kvBreakEvent(t, d, ref.ErrEventShape, kvBadEventShape)
	case 5: // §1.4 rule 3: missing required field
		return kvBreakEvent(t, d, ref.ErrMissingField, kvMissingField)
	case 6: // §1.4 rule 4: field types and ranges
		return kvBreakEvent(t, d, ref.ErrFieldType, kvBadFieldType)
	case 7: // §1.4 rule 4: empty hashes
		return kvBreakEvent(t, d, ref.ErrEmptyHashes, func(t *rapid.T) *mpVal {
			e := rapid.SampledFrom([]func(*rapid.T) kvEvent{drawStored, drawRemoved}).Draw(t, "type")(t)
			e.body.vals[1] = mpA()
			return e.render()
		})
	case 8: // §1.5: hash encoding
		return kvBreakEvent(t, d, ref.ErrHashEncoding, kvBadHash)
	case 9: // §1.4 rule 4: tokens
		if rapid.Bool().Draw(t, "token_range") {
			return kvBreakEvent(t, d, ref.ErrTokenRange, func(t *rapid.T) *mpVal { return kvBadToken(t, true) })
		}
		return kvBreakEvent(t, d, ref.ErrFieldType, func(t *rapid.T) *mpVal { return kvBadToken(t, false) })
	case 10: // A6: depth, declared lengths past the end
		if rapid.Bool().Draw(t, "depth") {
			return kvTooDeep(t, d)
		}
		return kvLengthPastEnd(t, d)
	case 11: // A10: more events than max_events
		for len(d.events) < 2 {
			d.events = append(d.events, drawAnyEvent(t))
		}
		in := d.input(d.batch().bytes())
		in.Limits.MaxEvents = rapid.IntRange(1, len(d.events)-1).Draw(t, "max_events")
		return Bad[ref.KVEvDecodeInput]{In: in, Want: ref.ErrMessageBudget}
	}
	return kvTruncate(t, d) // A6: the payload ends inside a value
}

// kvBreakBatch breaks the batch itself or one of its fields.
func kvBreakBatch(t *rapid.T, d kvDecodeDraw) []byte {
	wrong := func(label string, allowed ...mpKind) *mpVal {
		vs := []*mpVal{mpNil(), mpS("x"), mpB([]byte{1}), mpBoolV(true), mpA(mpU(1)), mpM(mpS("a"), mpU(1)), mpF64(1.5), mpI(-1), mpU(7)}
		var out []*mpVal
		for _, v := range vs {
			ok := true
			for _, k := range allowed {
				ok = ok && v.k != k
			}
			if ok {
				out = append(out, v)
			}
		}
		return rapid.SampledFrom(out).Draw(t, label)
	}
	switch rapid.IntRange(0, 8).Draw(t, "batch_break") {
	case 8: // a map-shaped batch without ts or without events
		d.shape.asMap = true
		b := d.batch()
		return b.del(rapid.SampledFrom([]string{"ts", "events"}).Draw(t, "missing_key")).bytes()
	case 0: // not a container
		return wrong("batch_scalar", mpKArr, mpKMap).bytes()
	case 1: // fewer than 2 elements
		return rapid.SampledFrom([]*mpVal{mpA(), mpA(d.ts)}).Draw(t, "short_batch").bytes()
	case 2: // ts not a number, or not a finite one (A6: JSON cannot carry it)
		d.ts = wrong("bad_ts", mpKF64, mpKInt, mpKUint)
		if rapid.Bool().Draw(t, "non_finite") {
			f := rapid.SampledFrom([]float64{math.NaN(), math.Inf(1), math.Inf(-1)}).Draw(t, "ts_non_finite")
			d.ts = rapid.SampledFrom([]*mpVal{mpF64(f), mpF32(float32(f))}).Draw(t, "ts_width")
		}
	case 3: // events not an array
		v := wrong("bad_events", mpKArr)
		b := d.batch()
		if b.k == mpKMap {
			b.set("events", v)
		} else {
			b.elems[1] = v
		}
		return b.bytes()
	case 4: // rank negative, past int64 or not an int
		d.shape.rank = rapid.SampledFrom([]*mpVal{mpI(-1), mpI(math.MinInt64), mpUW(1<<63, 8), mpU(math.MaxUint64), mpS("0"), mpF64(0), mpBoolV(false)}).Draw(t, "bad_rank")
		if !d.shape.asMap && d.shape.n < 3 {
			d.shape.n = 3
		}
	case 5: // publisher id not nil or a bin
		d.shape.asMap = false
		d.shape.n = max(d.shape.n, 4)
		d.shape.pubID = rapid.SampledFrom([]*mpVal{mpS("publisher"), mpU(16), mpA(mpU(1)), mpBoolV(true)}).Draw(t, "bad_pub_id")
	case 6, 7: // map batch: a key that is not a str, or a repeated key
		d.shape.asMap = true
		d.shape.order = []int{0, 1, 2}
		b := d.batch()
		if rapid.Bool().Draw(t, "dup_key") {
			i := rapid.IntRange(0, len(b.elems)/2-1).Draw(t, "dup_of")
			b.elems = append(b.elems, b.elems[2*i].clone(), b.elems[2*i+1].clone())
		} else {
			b.elems = append(b.elems, rapid.SampledFrom([]*mpVal{mpU(1), mpNil(), mpB([]byte("ts"))}).Draw(t, "bad_key"), mpU(1))
		}
		return b.bytes()
	}
	return d.batch().bytes()
}

// kvBreakEvent puts the broken event f draws among d's events.
func kvBreakEvent(t *rapid.T, d kvDecodeDraw, want *ref.Sentinel, f func(*rapid.T) *mpVal) Bad[ref.KVEvDecodeInput] {
	b := d.batch()
	evs := b.elems[1]
	if b.k == mpKMap {
		evs = b.get("events")
	}
	at := rapid.IntRange(0, len(evs.elems)).Draw(t, "bad_event_at")
	evs.elems = append(evs.elems[:at:at], append([]*mpVal{f(t)}, evs.elems[at:]...)...)
	return Bad[ref.KVEvDecodeInput]{In: d.input(b.bytes()), Want: want}
}

func kvBadEventShape(t *rapid.T) *mpVal {
	switch rapid.IntRange(0, 7).Draw(t, "event_break") {
	case 0:
		return rapid.SampledFrom([]*mpVal{mpNil(), mpU(3), mpS("BlockStored"), mpB([]byte("BlockStored")), mpF64(1)}).Draw(t, "scalar_event")
	case 1:
		return mpA()
	case 2:
		return mpA(rapid.SampledFrom([]*mpVal{mpU(0), mpNil(), mpB([]byte("BlockStored")), mpA(mpS("BlockStored"))}).Draw(t, "bad_tag"), mpA(mpU(1)))
	case 3: // map without "type"
		return mpM(mpS("block_hashes"), mpA(mpU(1)), mpS("tag"), mpS("BlockStored"))
	case 4: // "type" not a str
		return mpM(mpS("type"), rapid.SampledFrom([]*mpVal{mpU(1), mpNil(), mpB([]byte("BlockRemoved"))}).Draw(t, "bad_type"), mpS("block_hashes"), mpA(mpU(1)))
	case 5, 6: // a key that is not a str, in a real event
		e := rapid.SampledFrom([]func(*rapid.T) kvEvent{drawStored, drawRemoved, drawCleared, drawUnknown}).Draw(t, "type")(t)
		e.asMap()
		v := e.render()
		at := 2 * rapid.IntRange(1, len(v.elems)/2).Draw(t, "bad_key_at")
		kv := []*mpVal{rapid.SampledFrom([]*mpVal{mpU(1), mpNil(), mpB([]byte("medium")), mpA()}).Draw(t, "bad_key"), mpNil()}
		v.elems = append(v.elems[:at:at], append(kv, v.elems[at:]...)...)
		return v
	}
	// a repeated key, sometimes after many keys
	e := rapid.SampledFrom([]func(*rapid.T) kvEvent{drawStored, drawRemoved, drawCleared}).Draw(t, "type")(t)
	e.asMap()
	if rapid.Bool().Draw(t, "dup_after_many") {
		for i := range rapid.IntRange(12, 24).Draw(t, "many_keys_n") {
			e.body.extraKV = append(e.body.extraKV, mpS(fmt.Sprintf("x_%02d", i)), mpNil())
		}
	}
	v := e.render()
	i := rapid.IntRange(0, len(v.elems)/2-1).Draw(t, "dup_of")
	v.elems = append(v.elems, v.elems[2*i].clone(), v.elems[2*i+1].clone())
	return v
}

func kvMissingField(t *rapid.T) *mpVal {
	if rapid.Bool().Draw(t, "removed") {
		e := drawRemoved(t)
		if e.form == "array" {
			e.n, e.body.trailing = 1, nil
		} else {
			e.body.omit[1] = true
		}
		return e.render()
	}
	e := drawStored(t)
	if e.form == "array" {
		e.n = rapid.SampledFrom([]int{1, 2, 3, 4}).Draw(t, "short_len")
		e.body.trailing = nil
	} else {
		e.body.omit[rapid.SampledFrom([]int{1, 3, 4}).Draw(t, "missing")] = true
	}
	return e.render()
}

// kvBadFieldType breaks one typed field of a stored or removed event.
func kvBadFieldType(t *rapid.T) *mpVal {
	notArray := []*mpVal{mpNil(), mpS("1,2"), mpU(1), mpM(mpS("0"), mpU(1)), mpB([]byte{1})}
	notStr := []*mpVal{mpU(1), mpBoolV(true), mpB([]byte("GPU")), mpA(mpS("GPU")), mpF64(0)}
	notInt := []*mpVal{mpS("1"), mpF64(1), mpBoolV(false), mpUW(1<<63, 8), mpU(math.MaxUint64), mpA()}
	if rapid.IntRange(0, 3).Draw(t, "removed") == 0 {
		e := drawRemoved(t)
		switch p := rapid.SampledFrom([]int{1, 2, 3}).Draw(t, "field"); p {
		case 1:
			e.body.vals[1] = rapid.SampledFrom(notArray).Draw(t, "bad")
		case 2:
			e.body.vals[2] = rapid.SampledFrom(notStr).Draw(t, "bad")
		default:
			e.body.vals[3] = rapid.SampledFrom(notInt).Draw(t, "bad")
		}
		e.growTo(4)
		delete(e.body.omit, 2)
		return e.render()
	}
	e := drawStored(t)
	p := rapid.SampledFrom([]int{1, 3, 4, 4, 5, 6, 7, 9, 10}).Draw(t, "field")
	switch p {
	case 1, 3:
		e.body.vals[p] = rapid.SampledFrom(notArray).Draw(t, "bad")
	case 4:
		e.body.vals[4] = rapid.SampledFrom(append([]*mpVal{mpU(0), mpI(-1), mpI(math.MinInt64), mpNil()}, notInt...)).Draw(t, "bad")
	case 5, 9:
		e.body.vals[p] = rapid.SampledFrom(notInt).Draw(t, "bad")
	default:
		e.body.vals[p] = rapid.SampledFrom(notStr).Draw(t, "bad")
	}
	e.growTo(p + 1)
	if p == 7 && e.form == "array" && e.n == 8 {
		e.growTo(9) // not a salted SGLang store
	}
	delete(e.body.omit, p)
	return e.render()
}

func kvBadHash(t *rapid.T) *mpVal {
	wrong := rapid.SampledFrom([]*mpVal{mpS("0x11"), mpF64(1), mpBoolV(true), mpB([]byte{}), mpA(mpU(1)), mpRawV([]byte{0xd4, 1, 1})}).Draw(t, "bad_hash")
	wrong.at(ref.ErrHashEncoding)
	var e kvEvent
	if rapid.Bool().Draw(t, "removed") {
		e = drawRemoved(t)
	} else {
		e = drawStored(t)
	}
	if e.body.tag == ref.EventStored && rapid.Bool().Draw(t, "parent") {
		if wrong.k == mpKArr {
			wrong = mpS("parent")
		}
		e.body.vals[2] = wrong
		delete(e.body.omit, 2)
		e.growTo(3)
		return e.render()
	}
	hs := e.body.vals[1]
	if rapid.Bool().Draw(t, "nil_in_list") {
		wrong = mpNil()
	}
	i := rapid.IntRange(0, len(hs.elems)-1).Draw(t, "bad_hash_at")
	hs.elems[i] = wrong
	return e.render()
}

func kvBadToken(t *rapid.T, rangeErr bool) *mpVal {
	e := drawStored(t)
	tok := rapid.SampledFrom([]*mpVal{mpNil(), mpS("1"), mpF64(1), mpBoolV(true), mpB([]byte{1})}).Draw(t, "bad_tok")
	if rangeErr {
		tok = rapid.SampledFrom([]*mpVal{mpI(-1), mpI(math.MinInt64), mpU(1 << 32), mpUW(1<<32, 8), mpU(math.MaxUint64), mpIW(1<<32, 8)}).Draw(t, "bad_tok")
	}
	toks := e.body.vals[3]
	i := rapid.IntRange(0, len(toks.elems)).Draw(t, "bad_tok_at")
	toks.elems = append(toks.elems[:i:i], append([]*mpVal{tok}, toks.elems[i:]...)...)
	e.growTo(5)
	return e.render()
}

// kvTooDeep nests an ignored value 40 arrays deep: inside an event
// (ErrFieldType) or past the batch's fourth element (ErrBatchShape).
func kvTooDeep(t *rapid.T, d kvDecodeDraw) Bad[ref.KVEvDecodeInput] {
	deep := mpNest(rapid.IntRange(kvDepthProbe, kvDepthProbe+20).Draw(t, "depth"), drawJunk(t, 0))
	if rapid.IntRange(0, 3).Draw(t, "in_batch") == 0 {
		d.shape.asMap = false
		d.shape.n = 5
		d.shape.pubID = mpNil()
		d.shape.extras = []*mpVal{deep}
		return Bad[ref.KVEvDecodeInput]{In: d.input(d.batch().bytes()), Want: ref.ErrBatchShape}
	}
	return kvBreakEvent(t, d, ref.ErrFieldType, func(t *rapid.T) *mpVal {
		e := rapid.SampledFrom([]func(*rapid.T) kvEvent{drawStored, drawRemoved, drawCleared, drawUnknown}).Draw(t, "type")(t)
		switch {
		case e.body.tag == ref.EventStored && rapid.Bool().Draw(t, "in_extra_keys"):
			e.body.vals[8] = mpA(deep)
			e.growTo(9)
		case e.form == "array":
			e.growTo(max(1, len(e.names)))
			e.body.trailing = append(e.body.trailing, deep)
		default:
			e.body.extraKV = append(e.body.extraKV, mpS("deep_value"), deep)
		}
		return e.render()
	})
}

// kvDepthProbe is a nesting depth past ref.MaxMsgpackDepth wherever the
// nest starts (the batch is at depth 1, A6): the invalid generator nests
// ignored values at least this deep; the boundary table has the exact
// 32/33 cases.
const kvDepthProbe = ref.MaxMsgpackDepth + 4

// kvLengthPastEnd gives one container of the message (or a str or bin) a
// declared length past the payload's end: refused at its place (A6).
func kvLengthPastEnd(t *rapid.T, d kvDecodeDraw) Bad[ref.KVEvDecodeInput] {
	// "type" first: an entry before it is skipped while the decoder looks
	// for the tag, and a length past the end found by skipping is reported
	// at the entry's key (ref/kvev_decode.go's order of checks).
	for i := range d.events {
		d.events[i].permute = nil
	}
	b := d.batch()
	var nodes []*mpVal
	var walk func(v *mpVal, key bool)
	walk = func(v *mpVal, key bool) {
		if !key && (v.k == mpKArr || v.k == mpKMap || v.k == mpKStr || v.k == mpKBin) {
			nodes = append(nodes, v)
		}
		for i, e := range v.elems {
			walk(e, v.k == mpKMap && i%2 == 0)
		}
	}
	walk(b, false)
	v := rapid.SampledFrom(nodes).Draw(t, "past_end_at")
	switch v.k {
	case mpKArr, mpKMap:
		v.declared = rapid.SampledFrom([]int{1 << 16, 1<<32 - 1, 1 << 20}).Draw(t, "declared")
	default:
		*v = *mpStrPastEnd(v.k == mpKBin, []byte("ab")).at(v.place)
	}
	return Bad[ref.KVEvDecodeInput]{In: d.input(b.bytes()), Want: v.place}
}

// kvTruncate cuts the payload inside its last scalar (keeping at least
// that scalar's first byte, so every enclosing container still declares a
// length the bytes left can hold): refused at that scalar's place (A6);
// or cuts it to nothing.
func kvTruncate(t *rapid.T, d kvDecodeDraw) Bad[ref.KVEvDecodeInput] {
	if oneIn(t, 10, "empty_payload") {
		return Bad[ref.KVEvDecodeInput]{In: d.input([]byte{}), Want: ref.ErrBatchShape}
	}
	if rapid.Bool().Draw(t, "cut_anywhere") {
		return kvCutAnywhere(t, d)
	}
	b := d.batch()
	p, leaves := b.encode()
	last := leaves[len(leaves)-1]
	if last.end != len(p) || last.end-last.start < 2 {
		// end the batch with a wide rank: the batch's place
		d.shape.asMap = false
		d.shape.n, d.shape.extras = 3, nil
		d.shape.rank = mpUW(rapid.Uint64Range(0, 1<<62).Draw(t, "wide_rank"), 8)
		b = d.batch()
		p, leaves = b.encode()
		last = leaves[len(leaves)-1]
	}
	cut := rapid.IntRange(last.start+1, last.end-1).Draw(t, "cut")
	return Bad[ref.KVEvDecodeInput]{In: d.input(p[:cut]), Want: last.place}
}

// kvCutAnywhere cuts the payload (its headers widened at random, so that
// a cut can fall inside a 16- or 32-bit length) at any byte, and expects
// the error truncatedAt derives from the places and declared lengths of
// the values around the cut (A6).
func kvCutAnywhere(t *rapid.T, d kvDecodeDraw) Bad[ref.KVEvDecodeInput] {
	for i := range d.events {
		d.events[i].permute = nil // "type" first (see truncatedAt)
	}
	b := d.batch()
	if rapid.Bool().Draw(t, "widen") {
		widen(t, b)
	}
	p, spans := b.encodeSpans()
	c := rapid.IntRange(0, len(p)-1).Draw(t, "cut_at")
	return Bad[ref.KVEvDecodeInput]{In: d.input(p[:c]), Want: truncatedAt(spans, c)}
}

// Tables.

// kvHex decodes spaced hex (docs/spec/kv-events.md §5's layout).
func kvHex(s string) []byte {
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		panic("equiv: bad hex literal: " + err.Error())
	}
	return b
}

// §5.1's payloads, as the spec lists them (the 00 after cb41da3054981000
// is ts's last byte).
var (
	kvE1 = kvHex(`92 cb41da3054981000 00 91 96 ab 426c6f636b53746f726564 92 cf1111111111111111 cff0e1d2c3b4a59687 c0
		98 01 02 03 04 cc80 ccff cd0100 ce00010000 04 c0`)
	kvE2 = kvHex(`93 cb41da3054981000 00 91 93 ac 426c6f636b52656d6f766564 91 cff0e1d2c3b4a59687 a3 475055 00`)
	kvE3 = kvHex(`93 cb41da3054981000 00 91 9c ab 426c6f636b53746f726564
		91 cff0e1d2c3b4a59687 cf1111111111111111 94 cc80 ccff cd0100 ce00010000 04
		c0 a3 475055 c0 91 c0 00 ae 66756c6c5f617474656e74696f6e c0 00`)
	kvE4 = kvHex(`93 cb41da3054981000 00 93
		89 a4 74797065 ab 426c6f636b53746f726564 ac 626c6f636b5f686173686573 91 cf1111111111111111
		b1 706172656e745f626c6f636b5f68617368 c0 a9 746f6b656e5f696473 94 01020304 aa 626c6f636b5f73697a65 04
		a7 6c6f72615f6964 c0 a6 6d656469756d a3 475055 a9 6c6f72615f6e616d65 c0 a9 67726f75705f696478 00
		83 a4 74797065 ac 426c6f636b52656d6f766564 ac 626c6f636b5f686173686573 91 cf1111111111111111 a6 6d656469756d a3 475055
		81 a4 74797065 b0 416c6c426c6f636b73436c6561726564 00`)
	kvE5 = kvHex(`93 cb41da3054981000 00 91 97 ab 426c6f636b53746f726564 91 ff c0 92 07 08 02 c0 a3 475055 c0`)
	kvE6 = kvHex(`93 cb41da3054981000 00 91 83 a4 74797065 ac 426c6f636b52656d6f766564
		ac 626c6f636b5f686173686573 91 c4 20 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
		a6 6d656469756d a3 475055 00`)
)

const kvTopic52 = "kv@10.0.0.7@llama"

func kvMsg(topic string, seq uint64, payload []byte) ref.KVEvDecodeInput {
	return ref.KVEvDecodeInput{Frames: []ref.HexBytes{[]byte(topic), seqFrame(seq), payload}}
}

// kvPayload encodes a hand-built batch.
func kvPayload(v *mpVal) []byte { return v.bytes() }

func kvDecodeBoundary() []Case[ref.KVEvDecodeInput] {
	ts := mpF64(1757500000.25)
	stored := func(vals ...*mpVal) *mpVal { return mpA(append([]*mpVal{mpS(ref.EventStored)}, vals...)...) }
	batch := func(evs ...*mpVal) []byte { return kvPayload(mpA(ts, mpA(evs...), mpU(0))) }
	hashOnly := func(h *mpVal) []byte {
		return batch(mpA(mpS(ref.EventRemoved), mpA(h), mpS("GPU")))
	}
	// raw is a message whose payload is spaced hex.
	raw := func(payload string) ref.KVEvDecodeInput { return kvMsg("t", 0, kvHex(payload)) }
	cases := []Case[ref.KVEvDecodeInput]{
		{"e1-oldest-vllm-array-2-element-batch", kvMsg(kvTopic52, 0, kvE1)},
		{"e2-removed-with-medium-and-rank", kvMsg(kvTopic52, 1, kvE2)},
		{"e3-last-vllm-array-12-elements", kvMsg(kvTopic52, 2, kvE3)},
		{"e4-map-form-stored-removed-cleared", kvMsg(kvTopic52, 3, kvE4)},
		{"e5-sglang-negative-fixint-hash", kvMsg("", 0, kvE5)},
		{"e6-bin-hash-32-bytes", kvMsg(kvTopic52, 4, kvE6)},
		{"frames-5.2-topic-seq-1-payload-e2", kvMsg(kvTopic52, 1, kvE2)},
		{"seq-max-and-empty-topic", kvMsg("", math.MaxUint64, kvE2)},
		{"non-utf8-topic", kvMsg("\xff\xfekv@a@b", 7, kvE2)},
		// A6: every str the output carries is made valid UTF-8 (an unknown
		// tag, medium, lora_name, kv_cache_spec_kind), so any JSON encoder
		// writes the same bytes for it.
		{"non-utf8-strings", kvMsg("t", 0, batch(
			mpA(mpS("Heart\xc3beat")),
			mpA(mpS(ref.EventStored), mpA(mpU(1)), mpNil(), mpA(mpU(5)), mpU(1), mpNil(), mpS("G\xffPU"), mpS("sql-\xfelora"), mpNil(), mpNil(), mpS("full\x80attention")),
			mpM(mpS("type"), mpS(ref.EventRemoved), mpS("block_hashes"), mpA(mpU(1)), mpS("medium"), mpS("\xe2\x82"))))},
		{"empty-events-2-element-batch", kvMsg("t", 0, kvPayload(mpA(ts, mpA())))},
		{"ts-as-negative-int", kvMsg("t", 0, kvPayload(mpA(mpI(-5), mpA(), mpNil())))},
		{"ts-float32", kvMsg("t", 0, kvPayload(mpA(mpF32(1.5), mpA(), mpNil())))},
		{"batch-4-with-publisher-id", kvMsg("t", 0, kvPayload(mpA(ts, mpA(), mpU(1), mpB(kvHex("000102030405060708090a0b0c0d0e0f")))))},
		{"batch-6-elements-past-4-ignored", kvMsg("t", 0, kvPayload(mpA(ts, mpA(), mpNil(), mpNil(), mpS("x"), mpM(mpS("y"), mpA()))))},
		{"batch-rank-max-int64-uint64-width", kvMsg("t", 0, kvPayload(mpA(ts, mpA(), mpUW(math.MaxInt64, 8))))},
		{"batch-rank-signed-width", kvMsg("t", 0, kvPayload(mpA(ts, mpA(), mpIW(3, 8))))},
		{"map-shaped-batch", kvMsg("t", 0, kvPayload(mpM(mpS("events"), mpA(mpA(mpS(ref.EventCleared))), mpS("ts"), ts, mpS("data_parallel_rank"), mpU(2))))},
		{"map-shaped-batch-without-rank", kvMsg("t", 0, kvPayload(mpM(mpS("ts"), ts, mpS("events"), mpA())))},
		{"hash-zero-and-max-uint", kvMsg("t", 0, batch(mpA(mpS(ref.EventRemoved), mpA(mpU(0), mpU(math.MaxUint64), mpUW(5, 8)))))},
		{"hash-minus-one-every-width", kvMsg("t", 0, batch(mpA(mpS(ref.EventRemoved), mpA(mpI(-1), mpIW(-1, 1), mpIW(-1, 2), mpIW(-1, 4), mpIW(-1, 8), mpI(math.MinInt64)))))},
		{"hash-bin-1-byte", kvMsg("t", 0, hashOnly(mpB([]byte{0xab})))},
		{"hash-bin-7-bytes", kvMsg("t", 0, hashOnly(mpB(kvHex("01020304050607"))))},
		{"hash-bin-8-bytes", kvMsg("t", 0, hashOnly(mpB(kvHex("18191a1b1c1d1e1f"))))},
		{"hash-bin-64-bytes", kvMsg("t", 0, hashOnly(mpB(append(make([]byte, 56), kvHex("18191a1b1c1d1e1f")...))))},
		{"tokens-at-width-boundaries", kvMsg("t", 0, batch(stored(mpA(mpU(1), mpU(2)), mpNil(),
			mpA(mpU(0), mpU(127), mpU(128), mpU(255), mpU(256), mpU(65535), mpU(65536), mpU(math.MaxUint32)), mpU(4), mpNil())))},
		{"tokens-in-signed-and-wide-encodings", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(),
			mpA(mpIW(0, 1), mpIW(127, 1), mpIW(300, 2), mpUW(math.MaxUint32, 8)), mpUW(4, 8), mpNil())))},
		{"stored-array-5-without-lora-id", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(mpU(7)), mpU(1))))},
		{"stored-tokenless-cpu", kvMsg("t", 0, batch(stored(mpA(mpU(1), mpU(2)), mpNil(), mpA(), mpU(16), mpNil(), mpS("CPU"))))},
		{"sglang-salted-8th-element-map", kvMsg("t", 0, kvPayload(mpA(ts, mpA(stored(mpA(mpI(-7)), mpI(-8), mpA(mpU(1), mpU(2)), mpU(2), mpNil(), mpS("GPU"),
			mpM(mpS("cache_salt"), mpS("s3cr3t")))), mpNil())))},
		{"stored-array-14-trailing-fields-ignored", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(mpU(7)), mpU(1), mpI(-2), mpS("gpu"), mpS(""),
			mpA(mpA(mpS("salt"), mpM(mpS("k"), mpA()))), mpI(-1), mpS("sliding_window"), mpU(4096), mpS("local"), mpRawV([]byte{0xd6, 0xff, 0, 0, 0, 1}))))},
		{"map-form-unknown-keys-and-omitted-tolerated-fields", kvMsg("t", 0, batch(mpM(
			mpS("session_id"), mpS("s"), mpS("type"), mpS(ref.EventStored), mpS("token_ids"), mpA(mpU(3)), mpS("block_size"), mpU(1),
			mpS("block_hashes"), mpA(mpU(9)), mpS("locality"), mpNil(), mpS("ownership"), mpA(mpA()), mpS("cache_salt"), mpS("x"))))},
		{"removed-array-4-with-group", kvMsg("t", 0, batch(mpA(mpS(ref.EventRemoved), mpA(mpU(9)), mpNil(), mpU(1))))},
		{"removed-map-omitting-medium", kvMsg("t", 0, batch(mpM(mpS("type"), mpS(ref.EventRemoved), mpS("block_hashes"), mpA(mpU(9)), mpS("locality"), mpS("x"))))},
		{"cleared-with-trailing-elements", kvMsg("t", 0, batch(mpA(mpS(ref.EventCleared), mpNil(), mpS("GPU")), mpM(mpS("type"), mpS(ref.EventCleared), mpS("medium"), mpS("GPU"))))},
		{"unknown-tags-skipped", kvMsg("t", 0, batch(mpA(mpS("BlockEvicted"), mpA(mpU(1)), mpM(mpU(1), mpU(2))), mpM(mpS("type"), mpS(""), mpS("x"), mpRawV([]byte{0xc7, 3, 1, 0xaa, 0xbb, 0xcc}))))},
		// A6's depth: the batch is at 1, events 2, an event 3, a field 4;
		// extra_keys (4) holding 28 nested arrays reaches 32, 29 reach 33.
		{"depth-32-in-extra-keys", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(mpU(7)), mpU(1), mpNil(), mpNil(), mpNil(), mpA(mpNest(28, mpU(1))))))},
		{"depth-32-past-batch-element-4", kvMsg("t", 0, kvPayload(mpA(ts, mpA(), mpNil(), mpNil(), mpNest(31, mpNil()))))},
		{"depth-24-in-extra-keys", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(mpU(7)), mpU(1), mpNil(), mpNil(), mpNil(), mpA(mpNest(24, mpU(1))))))},
		// rejected (kvDecodeRejects)
		{"frame-count-2", ref.KVEvDecodeInput{Frames: []ref.HexBytes{[]byte("t"), seqFrame(0)}}},
		{"frame-count-4", ref.KVEvDecodeInput{Frames: []ref.HexBytes{[]byte("t"), seqFrame(0), kvE2, {}}}},
		{"seq-width-7", ref.KVEvDecodeInput{Frames: []ref.HexBytes{[]byte("t"), seqFrame(0)[1:], kvE2}}},
		{"trailing-nil-byte", kvMsg("t", 0, append(kvE2[:len(kvE2):len(kvE2)], 0xc0))},
		{"empty-payload", kvMsg("t", 0, []byte{})},
		{"batch-of-one-element", kvMsg("t", 0, kvPayload(mpA(ts)))},
		{"rank-negative", kvMsg("t", 0, kvPayload(mpA(ts, mpA(), mpI(-1))))},
		{"rank-2-pow-63", kvMsg("t", 0, kvPayload(mpA(ts, mpA(), mpU(1<<63))))},
		{"ts-as-string", kvMsg("t", 0, kvPayload(mpA(mpS("now"), mpA())))},
		{"event-without-string-tag", kvMsg("t", 0, batch(mpA(mpU(1), mpA(mpU(1)))))},
		{"event-map-duplicate-key", kvMsg("t", 0, batch(mpM(mpS("type"), mpS(ref.EventRemoved), mpS("block_hashes"), mpA(mpU(1)), mpS("block_hashes"), mpA(mpU(2)))))},
		{"event-map-duplicate-non-utf8-key", kvMsg("t", 0, batch(mpM(mpS("type"), mpS(ref.EventRemoved), mpS("\xffk"), mpU(1), mpS("\xffk"), mpU(2))))},
		{"event-map-int-key", kvMsg("t", 0, batch(mpM(mpS("type"), mpS(ref.EventCleared), mpU(1), mpU(2))))},
		{"stored-array-4-missing-block-size", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(mpU(7)))))},
		{"stored-empty-hashes", kvMsg("t", 0, batch(stored(mpA(), mpNil(), mpA(), mpU(1), mpNil())))},
		{"hash-empty-bin", kvMsg("t", 0, hashOnly(mpB([]byte{})))},
		{"hash-nil-in-list", kvMsg("t", 0, hashOnly(mpNil()))},
		{"hash-float", kvMsg("t", 0, hashOnly(mpF64(1)))},
		{"token-2-pow-32", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(mpU(1<<32)), mpU(1), mpNil())))},
		{"token-negative", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(mpI(-1)), mpU(1), mpNil())))},
		{"token-nil", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(mpNil()), mpU(1), mpNil())))},
		{"block-size-zero", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(), mpU(0), mpNil())))},
		{"medium-int", kvMsg("t", 0, batch(mpA(mpS(ref.EventRemoved), mpA(mpU(1)), mpU(1))))},
		{"depth-33-in-extra-keys", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(mpU(7)), mpU(1), mpNil(), mpNil(), mpNil(), mpA(mpNest(29, mpU(1))))))},
		{"depth-33-past-batch-element-4", kvMsg("t", 0, kvPayload(mpA(ts, mpA(), mpNil(), mpNil(), mpNest(32, mpNil()))))},
		{"depth-33-in-a-map-form-unknown-key", kvMsg("t", 0, batch(mpM(mpS("type"), mpS(ref.EventCleared), mpS("locality"), mpNest(30, mpNil()))))},
		{"ts-nan", kvMsg("t", 0, kvPayload(mpA(mpF64(math.NaN()), mpA())))},
		{"ts-float32-infinity", kvMsg("t", 0, kvPayload(mpA(mpF32(float32(math.Inf(-1))), mpA())))},
		{"depth-40-in-extra-keys", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(mpU(7)), mpU(1), mpNil(), mpNil(), mpNil(), mpA(mpNest(40, mpU(1))))))},
		{"depth-40-past-batch-element-4", kvMsg("t", 0, kvPayload(mpA(ts, mpA(), mpNil(), mpNil(), mpNest(40, mpNil()))))},
		{"token-ids-declared-past-end", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), &mpVal{k: mpKArr, declared: 1 << 30}, mpU(1), mpNil())))},
		{"events-declared-past-end", kvMsg("t", 0, kvPayload(mpA(ts, &mpVal{k: mpKArr, declared: 1<<32 - 1})))},
		{"hash-bin32-past-end", kvMsg("t", 0, append(kvE2[:len(kvE2)-14:len(kvE2)-14], mpStrPastEnd(true, []byte{1}).raw...))},
		{"e2-truncated-in-medium", kvMsg("t", 0, kvE2[:len(kvE2)-3])},
		// The batch's elements one by one (A6: a payload that ends inside
		// a value is refused at that value's place, truncated). ts is a
		// float64 (cb + 8 bytes) where the batch's declared length needs
		// the bytes to pass its check.
		{"publisher-id-str", raw(`94 00 90 c0 a1 78`)},
		{"publisher-id-missing-at-end", raw(`94 cb 0000000000000000 90 c0`)},
		{"publisher-id-bin8-header-cut", raw(`94 cb 0000000000000000 90 c0 c4`)},
		{"publisher-id-bin16-header-cut", raw(`94 cb 0000000000000000 90 c0 c5 00`)},
		{"publisher-id-bin32-header-cut", raw(`94 cb 0000000000000000 90 c0 c6 00 00`)},
		{"batch-ends-after-ts", raw(`92 cb 0000000000000000`)},
		{"batch-3-ends-after-ts-events-missing", raw(`93 cb 0000000000000000`)},
		{"ts-float32-cut", raw(`92 ca 00 00`)},
		{"events-nil", kvMsg("t", 0, kvPayload(mpA(ts, mpNil())))},
		{"events-array16-header-cut", raw(`92 cb 0000000000000000 dc 00`)},
		{"events-array32-header-cut", raw(`92 cb 0000000000000000 dd 00 00`)},
		{"rank-missing-at-end", raw(`93 cb 0000000000000000 90`)},
		{"rank-uint8-cut", raw(`93 cb 0000000000000000 90 cc`)},
		{"rank-uint16-cut", raw(`93 cb 0000000000000000 90 cd 00`)},
		{"rank-uint32-cut", raw(`93 cb 0000000000000000 90 ce 00 00`)},
		{"batch-element-4-missing-at-end", raw(`95 cb 0000000000000000 90 c0 c0`)},
		{"batch-element-4-reserved-byte", kvMsg("t", 0, kvPayload(mpA(ts, mpA(), mpNil(), mpNil(), mpRawV([]byte{0xc1}))))},
		{"batch-element-4-ext32-skipped", kvMsg("t", 0, kvPayload(mpA(ts, mpA(), mpNil(), mpNil(), mpRawV(kvHex(`c9 00000002 05 aabb`)))))},
		{"batch-element-4-array16-header-cut", raw(`95 cb 0000000000000000 90 c0 c0 dc 00`)},
		{"batch-element-4-fixmap-15-past-end", raw(`95 cb 0000000000000000 90 c0 c0 8f`)},
		{"batch-element-4-fixarray-15-past-end", raw(`95 cb 0000000000000000 90 c0 c0 9f`)},
		// The payload's own header.
		{"payload-array16-header-cut", raw(`dc 00`)},
		{"payload-fixmap-15-past-end", raw(`8f`)},
		{"payload-map16-header-cut", raw(`de 00`)},
		{"payload-map32-header-cut", raw(`df 00 00`)},
		// The map-shaped batch (§1.3): its keys are checked, ts and events
		// required.
		{"map-batch-ts-twice", kvMsg("t", 0, kvPayload(mpM(mpS("ts"), ts, mpS("ts"), ts, mpS("events"), mpA())))},
		{"map-batch-without-events", kvMsg("t", 0, kvPayload(mpM(mpS("ts"), ts)))},
		{"map-batch-ends-after-ts-key", raw(`81 a2 7473`)},
		{"map-batch-key-missing-at-end", raw(`82 a2 7473 00`)},
		{"map-batch-key-str8-header-cut", raw(`82 a2 7473 00 d9`)},
		{"map-batch-key-str16-header-cut", raw(`82 a2 7473 00 da 00`)},
		{"map-batch-key-str32-header-cut", raw(`82 a2 7473 00 db 00 00`)},
		// Events: the first event ["x"] is an unknown tag's, skipped.
		{"event-missing-at-end", raw(`92 cb 0000000000000000 92 91 a1 78`)},
		{"event-fixarray-15-past-end", raw(`92 cb 0000000000000000 91 9f a1 78`)},
		{"event-empty-array", kvMsg("t", 0, batch(mpA()))},
		{"event-array16-header-cut", raw(`92 cb 0000000000000000 91 dc 00`)},
		{"event-map16-header-cut", raw(`92 cb 0000000000000000 91 de 00`)},
		// Form B with entries before "type": form detection checks their
		// keys and skips their values first.
		{"event-map-int-key-before-type", kvMsg("t", 0, batch(mpM(mpU(1), mpU(2), mpS("type"), mpS(ref.EventCleared))))},
		{"event-map-repeated-key-before-type", kvMsg("t", 0, batch(mpM(mpS("x"), mpU(1), mpS("x"), mpU(2), mpS("type"), mpS(ref.EventCleared))))},
		{"event-map-type-not-str-after-a-key", kvMsg("t", 0, batch(mpM(mpS("x"), mpU(1), mpS("type"), mpU(1))))},
		{"event-map-reserved-byte-before-type", kvMsg("t", 0, batch(mpM(mpS("x"), mpRawV([]byte{0xc1}), mpS("type"), mpS(ref.EventCleared))))},
		// 17 distinct unknown keys, then the 4th again: the fast decoder
		// keeps 16 keys in place and the rest in a set.
		{"event-map-key-repeated-after-17-keys", kvMsg("t", 0, batch(kvManyKeys(17, "k03")))},
		// An event's fields.
		{"hashes-array16-header-cut", kvMsg("t", 0, kvPayload(mpA(mpU(0), mpA(mpA(mpS(ref.EventRemoved), mpRawV(kvHex(`dc 00`)))))))},
		{"hashes-fixarray-15-past-end", kvMsg("t", 0, kvPayload(mpA(mpU(0), mpA(mpA(mpS(ref.EventRemoved), mpRawV(kvHex(`9f 01`)))))))},
		{"tokens-array16-header-cut", kvMsg("t", 0, kvPayload(mpA(mpU(0), mpA(stored(mpA(mpU(1)), mpNil(), mpRawV(kvHex(`dc 00`)))))))},
		{"tokens-end-after-first-of-two", kvMsg("t", 0, kvPayload(mpA(mpU(0), mpA(stored(mpA(mpU(1)), mpNil(), mpRawV(kvHex(`92 cd 0100`)))))))},
		// A stored event of 5 positions whose block_size is missing, then
		// one whose block_size ends inside its uint16.
		{"block-size-missing-at-end", raw(`92 00 91 95 ab 426c6f636b53746f726564 91 01 c0 91 07`)},
		{"block-size-uint16-cut", raw(`92 00 91 95 ab 426c6f636b53746f726564 91 01 c0 91 07 cd 00`)},
		{"block-size-past-int64", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(mpU(7)), mpU(1<<63), mpNil())))},
		{"block-size-str", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(mpU(7)), mpS("1"), mpNil())))},
		{"medium-negative-fixint", kvMsg("t", 0, batch(mpA(mpS(ref.EventRemoved), mpA(mpU(1)), mpI(-1))))},
		{"sglang-salt-map-reserved-byte", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(mpU(7)), mpU(1), mpNil(), mpNil(),
			mpM(mpS("s"), mpRawV([]byte{0xc1})))))},
		// extra_keys (4) holding 28 nested arrays (5..32), then a map at 33.
		{"depth-33-map-in-extra-keys", kvMsg("t", 0, batch(stored(mpA(mpU(1)), mpNil(), mpA(mpU(7)), mpU(1), mpNil(), mpNil(), mpNil(), mpA(mpNest(28, mpM())))))},
		// A wrong type names its msgpack family (MsgpackTypeName).
		{"hash-float32", kvMsg("t", 0, hashOnly(mpF32(1)))},
		{"hash-reserved-byte", kvMsg("t", 0, hashOnly(mpRawV([]byte{0xc1})))},
		{"hash-fixext1", kvMsg("t", 0, hashOnly(mpRawV(kvHex(`d4 01 aa`))))},
	}
	return append(cases, kvBoundsBoundary()...)
}

// kvBoundsBoundary are A10's bounds of one message at and one past each
// bound, their expectations derived from the spec's text in the comments
// (cost: 256 per event, 8 per hash, 4 per token; bound: ratio × payload
// bytes + 65,536).
func kvBoundsBoundary() []Case[ref.KVEvDecodeInput] {
	msg := func(payload []byte, lim ref.KVDecodeLimits) ref.KVEvDecodeInput {
		in := kvMsg("t", 0, payload)
		in.Limits = lim
		return in
	}
	ratio1 := ref.KVDecodeLimits{MaxDecodeRatio: 1}
	return []Case[ref.KVEvDecodeInput]{
		// max_events 4: [ts, [4 or 5 × ["x"]], 0].
		{"a10-max-events-4-holds-4", msg(kvEmptyTags(0, 4, "x", nil), ref.KVDecodeLimits{MaxEvents: 4})},
		{"a10-max-events-4-refuses-5", msg(kvEmptyTags(0, 5, "x", nil), ref.KVDecodeLimits{MaxEvents: 4})},
		// Events, ratio 1: n × [""] is 2n + 14 bytes and costs 256n; 258
		// costs 66,048 <= 66,066, 259 costs 66,304 > 66,068.
		{"a10-ratio-1-events-258-hold", msg(kvEmptyTags(0, 258, "", nil), ratio1)},
		{"a10-ratio-1-events-259-refused", msg(kvEmptyTags(0, 259, "", nil), ratio1)},
		// Hashes, ratio 1: 256 × [""] then ["BlockRemoved", [k × 1]]:
		// 543 + k bytes, cost 65,792 + 8k; k = 41 is exactly at the bound
		// (66,120), k = 42 one hash past it (66,128 > 66,121).
		{"a10-ratio-1-hashes-41-exactly-at-the-bound", msg(kvEmptyTags(256, 0, "", kvRemovedFixints(41)), ratio1)},
		{"a10-ratio-1-hashes-42-refused", msg(kvEmptyTags(256, 0, "", kvRemovedFixints(42)), ratio1)},
		// Tokens, ratio 1: 256 × [""] then ["BlockStored", [1], nil, [T × 1],
		// T]: 546 + T bytes, cost 65,800 + 4T; T = 94 is exactly at the
		// bound (66,176), T = 95 one token past it (66,180 > 66,177).
		{"a10-ratio-1-tokens-94-exactly-at-the-bound", msg(kvEmptyTags(256, 0, "", kvStoredFixints(94)), ratio1)},
		{"a10-ratio-1-tokens-95-refused", msg(kvEmptyTags(256, 0, "", kvStoredFixints(95)), ratio1)},
		// Skipped values charge nothing: an unknown event holding 600
		// empty arrays (153,600 bytes were they charged as events) decodes
		// under ratio 1.
		{"a10-skipped-arrays-charge-nothing", msg(kvPayload(mpA(mpF64(1757500000.25), mpA(mpA(mpS("Later"), mpA(slices.Repeat([]*mpVal{mpA()}, 600)...))), mpU(0))), ratio1)},
		// The declared-length check (A6) comes first: 20 events declared
		// with 9 bytes left.
		{"a10-declared-length-before-max-events", msg(kvHex(`93 cb41da3054981000 00 dc0014 91a178 91a178 91a178`), ref.KVDecodeLimits{MaxEvents: 1})},
		// Limits past their caps are refused up front (ErrTooLarge).
		{"a10-limits-max-events-past-cap", msg(kvE2, ref.KVDecodeLimits{MaxEvents: ref.MaxKVEvents + 1})},
		{"a10-limits-ratio-negative", msg(kvE2, ref.KVDecodeLimits{MaxDecodeRatio: -1})},
		{"a10-limits-at-their-caps", msg(kvE2, ref.KVDecodeLimits{MaxEvents: ref.MaxKVEvents, MaxDecodeRatio: ref.MaxKVDecodeRatio})},
	}
}

// kvEmptyTags is [ts, [lead × [""], n × [tag], last?], 0] with an array16
// (or array32 past 65,535) events header: the events of A10's cases.
func kvEmptyTags(lead, n int, tag string, last []byte) []byte {
	total := lead + n
	if last != nil {
		total++
	}
	b := kvHex(`93 cb41da3054981000 00`)
	if total < 1<<16 {
		b = binary.BigEndian.AppendUint16(append(b, 0xdc), uint16(total))
	} else {
		b = binary.BigEndian.AppendUint32(append(b, 0xdd), uint32(total))
	}
	b = append(b, bytes.Repeat([]byte{0x91, 0xa0}, lead)...)
	b = append(b, bytes.Repeat(append([]byte{0x91, 0xa0 + byte(len(tag))}, tag...), n)...)
	return append(append(b, last...), 0x00)
}

// kvRemovedFixints is ["BlockRemoved", [k × 1]] with an array16 list:
// 1 + 13 + 3 + k bytes.
func kvRemovedFixints(k int) []byte {
	b := append([]byte{0x92, 0xac}, ref.EventRemoved...)
	b = binary.BigEndian.AppendUint16(append(b, 0xdc), uint16(k))
	return append(b, bytes.Repeat([]byte{0x01}, k)...)
}

// kvStoredFixints is ["BlockStored", [1], nil, [t × 1], t] (t < 128) with
// an array16 token list: 1 + 12 + 2 + 1 + 3 + t + 1 bytes.
func kvStoredFixints(t int) []byte {
	b := append([]byte{0x95, 0xab}, ref.EventStored...)
	b = binary.BigEndian.AppendUint16(append(b, 0x91, 0x01, 0xc0, 0xdc), uint16(t))
	return append(append(b, bytes.Repeat([]byte{0x01}, t)...), byte(t))
}

// kvManyKeys is a form-B AllBlocksCleared with n distinct unknown keys
// k00, k01, … after "type", then the key again (n null values, then 1).
func kvManyKeys(n int, again string) *mpVal {
	kvs := []*mpVal{mpS("type"), mpS(ref.EventCleared)}
	for k := range n {
		kvs = append(kvs, mpS(fmt.Sprintf("k%02d", k)), mpNil())
	}
	return mpM(append(kvs, mpS(again), mpU(1))...)
}

var kvDecodeRejects = map[string]*ref.Sentinel{
	"frame-count-2":                         ref.ErrFrameCount,
	"frame-count-4":                         ref.ErrFrameCount,
	"seq-width-7":                           ref.ErrSeqWidth,
	"trailing-nil-byte":                     ref.ErrTrailingBytes,
	"empty-payload":                         ref.ErrBatchShape,
	"batch-of-one-element":                  ref.ErrBatchShape,
	"rank-negative":                         ref.ErrBatchShape,
	"rank-2-pow-63":                         ref.ErrBatchShape,
	"ts-as-string":                          ref.ErrBatchShape,
	"event-without-string-tag":              ref.ErrEventShape,
	"event-map-duplicate-key":               ref.ErrEventShape,
	"event-map-duplicate-non-utf8-key":      ref.ErrEventShape,
	"event-map-int-key":                     ref.ErrEventShape,
	"stored-array-4-missing-block-size":     ref.ErrMissingField,
	"stored-empty-hashes":                   ref.ErrEmptyHashes,
	"hash-empty-bin":                        ref.ErrHashEncoding,
	"hash-nil-in-list":                      ref.ErrHashEncoding,
	"hash-float":                            ref.ErrHashEncoding,
	"token-2-pow-32":                        ref.ErrTokenRange,
	"token-negative":                        ref.ErrTokenRange,
	"token-nil":                             ref.ErrFieldType,
	"block-size-zero":                       ref.ErrFieldType,
	"medium-int":                            ref.ErrFieldType,
	"depth-40-in-extra-keys":                ref.ErrFieldType,
	"depth-33-in-extra-keys":                ref.ErrFieldType,
	"depth-33-past-batch-element-4":         ref.ErrBatchShape,
	"depth-33-in-a-map-form-unknown-key":    ref.ErrFieldType,
	"ts-nan":                                ref.ErrBatchShape,
	"ts-float32-infinity":                   ref.ErrBatchShape,
	"depth-40-past-batch-element-4":         ref.ErrBatchShape,
	"token-ids-declared-past-end":           ref.ErrFieldType,
	"events-declared-past-end":              ref.ErrBatchShape,
	"hash-bin32-past-end":                   ref.ErrHashEncoding,
	"e2-truncated-in-medium":                ref.ErrFieldType,
	"publisher-id-str":                      ref.ErrBatchShape,
	"publisher-id-missing-at-end":           ref.ErrBatchShape,
	"publisher-id-bin8-header-cut":          ref.ErrBatchShape,
	"publisher-id-bin16-header-cut":         ref.ErrBatchShape,
	"publisher-id-bin32-header-cut":         ref.ErrBatchShape,
	"batch-ends-after-ts":                   ref.ErrBatchShape,
	"batch-3-ends-after-ts-events-missing":  ref.ErrBatchShape,
	"ts-float32-cut":                        ref.ErrBatchShape,
	"events-nil":                            ref.ErrBatchShape,
	"events-array16-header-cut":             ref.ErrBatchShape,
	"events-array32-header-cut":             ref.ErrBatchShape,
	"rank-missing-at-end":                   ref.ErrBatchShape,
	"rank-uint8-cut":                        ref.ErrBatchShape,
	"rank-uint16-cut":                       ref.ErrBatchShape,
	"rank-uint32-cut":                       ref.ErrBatchShape,
	"batch-element-4-missing-at-end":        ref.ErrBatchShape,
	"batch-element-4-reserved-byte":         ref.ErrBatchShape,
	"batch-element-4-array16-header-cut":    ref.ErrBatchShape,
	"batch-element-4-fixmap-15-past-end":    ref.ErrBatchShape,
	"batch-element-4-fixarray-15-past-end":  ref.ErrBatchShape,
	"payload-array16-header-cut":            ref.ErrBatchShape,
	"payload-fixmap-15-past-end":            ref.ErrBatchShape,
	"payload-map16-header-cut":              ref.ErrBatchShape,
	"payload-map32-header-cut":              ref.ErrBatchShape,
	"map-batch-ts-twice":                    ref.ErrBatchShape,
	"map-batch-without-events":              ref.ErrBatchShape,
	"map-batch-ends-after-ts-key":           ref.ErrBatchShape,
	"map-batch-key-missing-at-end":          ref.ErrBatchShape,
	"map-batch-key-str8-header-cut":         ref.ErrBatchShape,
	"map-batch-key-str16-header-cut":        ref.ErrBatchShape,
	"map-batch-key-str32-header-cut":        ref.ErrBatchShape,
	"event-missing-at-end":                  ref.ErrEventShape,
	"event-fixarray-15-past-end":            ref.ErrEventShape,
	"event-empty-array":                     ref.ErrEventShape,
	"event-array16-header-cut":              ref.ErrEventShape,
	"event-map16-header-cut":                ref.ErrEventShape,
	"event-map-int-key-before-type":         ref.ErrEventShape,
	"event-map-repeated-key-before-type":    ref.ErrEventShape,
	"event-map-type-not-str-after-a-key":    ref.ErrEventShape,
	"event-map-reserved-byte-before-type":   ref.ErrFieldType,
	"event-map-key-repeated-after-17-keys":  ref.ErrEventShape,
	"hashes-array16-header-cut":             ref.ErrFieldType,
	"hashes-fixarray-15-past-end":           ref.ErrFieldType,
	"tokens-array16-header-cut":             ref.ErrFieldType,
	"tokens-end-after-first-of-two":         ref.ErrFieldType,
	"block-size-missing-at-end":             ref.ErrFieldType,
	"block-size-uint16-cut":                 ref.ErrFieldType,
	"block-size-past-int64":                 ref.ErrFieldType,
	"block-size-str":                        ref.ErrFieldType,
	"medium-negative-fixint":                ref.ErrFieldType,
	"sglang-salt-map-reserved-byte":         ref.ErrFieldType,
	"depth-33-map-in-extra-keys":            ref.ErrFieldType,
	"hash-float32":                          ref.ErrHashEncoding,
	"hash-reserved-byte":                    ref.ErrHashEncoding,
	"hash-fixext1":                          ref.ErrHashEncoding,
	"a10-max-events-4-refuses-5":            ref.ErrMessageBudget,
	"a10-ratio-1-events-259-refused":        ref.ErrMessageBudget,
	"a10-ratio-1-hashes-42-refused":         ref.ErrMessageBudget,
	"a10-ratio-1-tokens-95-refused":         ref.ErrMessageBudget,
	"a10-declared-length-before-max-events": ref.ErrBatchShape,
	"a10-limits-max-events-past-cap":        ref.ErrTooLarge,
	"a10-limits-ratio-negative":             ref.ErrTooLarge,
	// the decode mutants' regressions are accepted
}

// kvDecodeRegressions: §1.5's two hash normalisation bugs. Dynamo's
// decoder before its PR #3180 read hashes as u64 only, so SGLang's signed
// hashes (E5: -1 as negative fixint) failed the whole batch and a router fed
// by SGLang saw no blocks at all; the converse decoder (i64 only) fails
// every vLLM batch carrying a hash >= 2^63 (E1's H2, about half of them).
func kvDecodeRegressions() []Case[ref.KVEvDecodeInput] {
	return []Case[ref.KVEvDecodeInput]{
		{"unsigned-hashes-only", kvMsg("kv@sgl-0@qwen", 0, kvE5)},
		{"signed-hashes-only", kvMsg(kvTopic52, 0, kvE1)},
	}
}

// Properties.

func kvDecodeCanonicalShape(_ ref.Limits, _ ref.KVEvDecodeInput, out ref.KVMessage) error {
	if f := out.Batch.Form; f != "array" && f != "map" {
		return fmt.Errorf("batch form %q", f)
	}
	if r := out.Batch.DPRank; r != nil && *r < 0 {
		return fmt.Errorf("negative rank %d", *r)
	}
	for i, ev := range out.Batch.Events {
		if ev.Form != "array" && ev.Form != "map" {
			return fmt.Errorf("events[%d]: form %q", i, ev.Form)
		}
		switch ev.Type {
		case ref.EventStored:
			if len(ev.BlockHashes) == 0 || ev.BlockSize < 1 {
				return fmt.Errorf("events[%d]: stored with %d hashes, block size %d", i, len(ev.BlockHashes), ev.BlockSize)
			}
		case ref.EventRemoved:
			if len(ev.BlockHashes) == 0 || ev.TokenIDs != nil || ev.ParentBlockHash != nil || ev.BlockSize != 0 {
				return fmt.Errorf("events[%d]: removed %+v", i, ev)
			}
		case ref.EventCleared:
			if !reflect.DeepEqual(ev, ref.KVEvent{Type: ev.Type, Form: ev.Form}) {
				return fmt.Errorf("events[%d]: cleared with fields %+v", i, ev)
			}
		case ref.EventUnknown:
			if !reflect.DeepEqual(ev, ref.KVEvent{Type: ev.Type, Tag: ev.Tag, Form: ev.Form}) {
				return fmt.Errorf("events[%d]: unknown with fields %+v", i, ev)
			}
		default:
			return fmt.Errorf("events[%d]: type %q", i, ev.Type)
		}
	}
	return nil
}

// kvRedecode decodes frames with ref and requires the result to equal
// want after fix (which may rewrite the forms).
func kvRedecode(lim ref.Limits, what string, frames []ref.HexBytes, want ref.KVMessage) error {
	got, err := ref.KVEvDecode(lim, ref.KVEvDecodeInput{Frames: frames})
	if err != nil {
		return fmt.Errorf("%s: ref rejects it: %v (payload %x)", what, err, []byte(frames[2]))
	}
	wb, _ := catalog.Marshal(want)
	gb, _ := catalog.Marshal(got)
	if string(wb) != string(gb) {
		return fmt.Errorf("%s decodes differently (payload %x):\n%s", what, []byte(frames[2]), cmp.Diff(want, got))
	}
	return nil
}

func sameForms(out ref.KVMessage) func(int) string {
	return func(i int) string { return out.Batch.Events[i].Form }
}

// kvDecodeRoundTrips: the decoded message written back (same forms, ints
// for hashes) decodes to itself.
func kvDecodeRoundTrips(lim ref.Limits, _ ref.KVEvDecodeInput, out ref.KVMessage) error {
	return kvRedecode(lim, "the message re-encoded", encodeMessage(out, out.Batch.Form, sameForms(out), hashUint), out)
}

// kvDecodeFormInvariant is §1.4: every event written in the other form
// (array ↔ map), and the batch too, decodes to the same canonical event,
// Form aside.
func kvDecodeFormInvariant(lim ref.Limits, _ ref.KVEvDecodeInput, out ref.KVMessage) error {
	flip := map[string]string{"array": "map", "map": "array"}
	want := out
	want.Batch.Events = make([]ref.KVEvent, len(out.Batch.Events))
	for i, ev := range out.Batch.Events {
		ev.Form = flip[ev.Form]
		want.Batch.Events[i] = ev
	}
	bf := flip[out.Batch.Form]
	want.Batch.Form = bf
	return kvRedecode(lim, "the message with every form flipped", encodeMessage(out, bf, func(i int) string { return want.Batch.Events[i].Form }, hashUint), want)
}

// kvDecodeHashShapes is §1.5 (and E6): the same hashes written as signed
// int64s, as 8-byte bins, as 32-byte digests and as the shortest bins
// normalise to the same EvHash.
func kvDecodeHashShapes(lim ref.Limits, _ ref.KVEvDecodeInput, out ref.KVMessage) error {
	for _, shape := range []int{hashSigned, hashSigned64, hashUint64, hashBin8, hashBin32, hashBinShort} {
		if err := kvRedecode(lim, fmt.Sprintf("hash shape %d", shape), encodeMessage(out, out.Batch.Form, sameForms(out), shape), out); err != nil {
			return err
		}
	}
	return nil
}

// kvDecodeTrailing is §1.3: any bytes after the batch are ErrTrailingBytes,
// counted (A6's words from ref.KVTrailingError).
func kvDecodeTrailing(lim ref.Limits, in ref.KVEvDecodeInput, _ ref.KVMessage) error {
	for _, tail := range [][]byte{{0xc0}, mpA(mpU(1), mpS("x")).bytes(), kvE2} {
		fr := []ref.HexBytes{in.Frames[0], in.Frames[1], append(append([]byte{}, in.Frames[2]...), tail...)}
		_, err := ref.KVEvDecode(lim, ref.KVEvDecodeInput{Frames: fr})
		want := ref.ErrorObjectOf(ref.KVTrailingError(len(tail)))
		if err == nil || !reflect.DeepEqual(ref.ErrorObjectOf(err), want) {
			return fmt.Errorf("%d trailing bytes: got %v, want %s", len(tail), err, want.Message)
		}
	}
	return nil
}

// kvDecodeProperPrefix: a payload cut anywhere before its end is refused
// (never decoded as a shorter message, never ErrTrailingBytes).
func kvDecodeProperPrefix(lim ref.Limits, in ref.KVEvDecodeInput, _ ref.KVMessage) error {
	p := in.Frames[2]
	for _, n := range []int{0, len(p) / 2, len(p) - 1} {
		fr := []ref.HexBytes{in.Frames[0], in.Frames[1], p[:n]}
		_, err := ref.KVEvDecode(lim, ref.KVEvDecodeInput{Frames: fr})
		if err == nil || errors.Is(err, ref.ErrTrailingBytes) {
			return fmt.Errorf("the payload cut to %d of %d bytes: %v", n, len(p), err)
		}
	}
	return nil
}
