package equiv

import (
	"fmt"
	"math"
	"strings"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/spec"
)

// Drawn KV-event messages (docs/spec/kv-events.md §1): topics, seqs,
// timestamps, hashes in every shape of §1.5, tokens, the junk a consumer
// ignores, and events and batches of every producer version of §1.4's table
// in either encoding. kvev.decode's generators draw whole messages from
// them; kvev.apply's fleet (kvev_fleet.go, kvev_engine.go) shares the
// encoders.

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
		return mpB(b).at(spec.ErrHashEncoding)
	}
	h := rapid.Uint64().Draw(t, "hash")
	if rapid.Bool().Draw(t, "hash_edge") {
		h = rapid.SampledFrom(kvHashEdges).Draw(t, "hash_at")
	}
	v := hashVal(h, uniform(t, hashShapes, "hash_shape"), []byte{0xde, 0xad})
	if v.k == mpKInt && int64(h) >= 0 && oneIn(t, 3, "hash_narrow") {
		return drawWideUint(t, h, "hash").at(spec.ErrHashEncoding)
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
	if v := e.body.vals; e.body.tag == spec.EventStored && v[7] != nil && v[7].k == mpKMap {
		v[7] = nil
	}
	e.n = n
}

// asMap turns a drawn event into form B with "type" first (a salt map,
// SGLang's form-A element, is dropped: in a map it would be lora_name).
func (e *kvEvent) asMap() {
	if v := e.body.vals; e.body.tag == spec.EventStored && v[7] != nil && v[7].k == mpKMap {
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
	e := kvEvent{body: evBody{tag: spec.EventStored, vals: vals, required: 7}, names: storedNames, form: drawForm(t)}
	return finishEvent(t, e, []int{5, 6, 7, 8, 9, 10, 11, 12, 12}, []int{2, 5, 6, 7})
}

// finishEvent picks a form-A length among lengths (a salted SGLang store
// puts a {"cache_salt": …} map at position 7), or form B's omissions
// (among omittable) and unknown keys; either may get trailing extras.
func finishEvent(t *rapid.T, e kvEvent, lengths, omittable []int) kvEvent {
	if e.form == "array" {
		e.n = rapid.SampledFrom(lengths).Draw(t, "array_len")
		if e.body.tag == spec.EventStored && e.n == 7 && oneIn(t, 3, "sglang_salt") {
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
	e := kvEvent{body: evBody{tag: spec.EventRemoved, vals: vals, required: 2}, names: removedNames, form: drawForm(t)}
	return finishEvent(t, e, []int{2, 3, 4, 4}, []int{2})
}

func drawCleared(t *rapid.T) kvEvent {
	e := kvEvent{body: evBody{tag: spec.EventCleared}, form: drawForm(t)}
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
		m := mpM(kv...).at(spec.ErrBatchShape)
		for i := 0; i < len(m.elems); i += 2 {
			m.elems[i].place = spec.ErrBatchShape
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
	return mpA(el...).at(spec.ErrBatchShape)
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

func (d kvDecodeDraw) input(payload []byte) spec.KVEvDecodeInput {
	return spec.KVEvDecodeInput{Frames: []spec.HexBytes{[]byte(d.topic), seqFrame(d.seq), payload}}
}
