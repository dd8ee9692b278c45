package equiv

import (
	"fmt"
	"math"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/spec"
)

// kvev.decode's invalid generator: a real message broken once, in one of
// §1's and A6's error classes, each breaker keeping every other check
// passing so that the first failure in document order is the broken one.

// kvDecodeInvalid draws a real message and breaks it once, in one of the
// §1 / A6 error classes; every other check passes, so the first failure in
// document order is the broken one.
func kvDecodeInvalid(t *rapid.T) Bad[spec.KVEvDecodeInput] {
	d := drawMessage(t, 3)
	bad := func(s *spec.Sentinel, payload []byte) Bad[spec.KVEvDecodeInput] {
		return Bad[spec.KVEvDecodeInput]{In: d.input(payload), Want: s}
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
		return Bad[spec.KVEvDecodeInput]{In: in, Want: spec.ErrFrameCount}
	case 1: // §1.2: seq width
		in := d.input(d.batch().bytes())
		in.Frames[1] = rapid.SliceOfN(rapid.Byte(), 0, 16).Filter(func(b []byte) bool { return len(b) != 8 }).Draw(t, "seq_frame")
		return Bad[spec.KVEvDecodeInput]{In: in, Want: spec.ErrSeqWidth}
	case 2: // §1.3: trailing bytes
		tail := drawJunk(t, 1).bytes()
		if rapid.Bool().Draw(t, "raw_tail") {
			tail = rapid.SliceOfN(rapid.Byte(), 1, 3).Draw(t, "tail")
		}
		return bad(spec.ErrTrailingBytes, append(d.batch().bytes(), tail...))
	case 3: // §1.3: batch shape
		return bad(spec.ErrBatchShape, kvBreakBatch(t, d))
	case 4: // §1.4 rule 1, A6: event shape, keys
		return kvBreakEvent(t, d, spec.ErrEventShape, kvBadEventShape)
	case 5: // §1.4 rule 3: missing required field
		return kvBreakEvent(t, d, spec.ErrMissingField, kvMissingField)
	case 6: // §1.4 rule 4: field types and ranges
		return kvBreakEvent(t, d, spec.ErrFieldType, kvBadFieldType)
	case 7: // §1.4 rule 4: empty hashes
		return kvBreakEvent(t, d, spec.ErrEmptyHashes, func(t *rapid.T) *mpVal {
			e := rapid.SampledFrom([]func(*rapid.T) kvEvent{drawStored, drawRemoved}).Draw(t, "type")(t)
			e.body.vals[1] = mpA()
			return e.render()
		})
	case 8: // §1.5: hash encoding
		return kvBreakEvent(t, d, spec.ErrHashEncoding, kvBadHash)
	case 9: // §1.4 rule 4: tokens
		if rapid.Bool().Draw(t, "token_range") {
			return kvBreakEvent(t, d, spec.ErrTokenRange, func(t *rapid.T) *mpVal { return kvBadToken(t, true) })
		}
		return kvBreakEvent(t, d, spec.ErrFieldType, func(t *rapid.T) *mpVal { return kvBadToken(t, false) })
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
		return Bad[spec.KVEvDecodeInput]{In: in, Want: spec.ErrMessageBudget}
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
func kvBreakEvent(t *rapid.T, d kvDecodeDraw, want *spec.Sentinel, f func(*rapid.T) *mpVal) Bad[spec.KVEvDecodeInput] {
	b := d.batch()
	evs := b.elems[1]
	if b.k == mpKMap {
		evs = b.get("events")
	}
	at := rapid.IntRange(0, len(evs.elems)).Draw(t, "bad_event_at")
	evs.elems = append(evs.elems[:at:at], append([]*mpVal{f(t)}, evs.elems[at:]...)...)
	return Bad[spec.KVEvDecodeInput]{In: d.input(b.bytes()), Want: want}
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
	wrong.at(spec.ErrHashEncoding)
	var e kvEvent
	if rapid.Bool().Draw(t, "removed") {
		e = drawRemoved(t)
	} else {
		e = drawStored(t)
	}
	if e.body.tag == spec.EventStored && rapid.Bool().Draw(t, "parent") {
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
func kvTooDeep(t *rapid.T, d kvDecodeDraw) Bad[spec.KVEvDecodeInput] {
	deep := mpNest(rapid.IntRange(kvDepthProbe, kvDepthProbe+20).Draw(t, "depth"), drawJunk(t, 0))
	if rapid.IntRange(0, 3).Draw(t, "in_batch") == 0 {
		d.shape.asMap = false
		d.shape.n = 5
		d.shape.pubID = mpNil()
		d.shape.extras = []*mpVal{deep}
		return Bad[spec.KVEvDecodeInput]{In: d.input(d.batch().bytes()), Want: spec.ErrBatchShape}
	}
	return kvBreakEvent(t, d, spec.ErrFieldType, func(t *rapid.T) *mpVal {
		e := rapid.SampledFrom([]func(*rapid.T) kvEvent{drawStored, drawRemoved, drawCleared, drawUnknown}).Draw(t, "type")(t)
		switch {
		case e.body.tag == spec.EventStored && rapid.Bool().Draw(t, "in_extra_keys"):
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

// kvDepthProbe is a nesting depth past spec.MaxMsgpackDepth wherever the
// nest starts (the batch is at depth 1, A6): the invalid generator nests
// ignored values at least this deep; the boundary table has the exact
// 32/33 cases.
const kvDepthProbe = spec.MaxMsgpackDepth + 4

// kvLengthPastEnd gives one container of the message (or a str or bin) a
// declared length past the payload's end: refused at its place (A6).
func kvLengthPastEnd(t *rapid.T, d kvDecodeDraw) Bad[spec.KVEvDecodeInput] {
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
	return Bad[spec.KVEvDecodeInput]{In: d.input(b.bytes()), Want: v.place}
}

// kvTruncate cuts the payload inside its last scalar (keeping at least
// that scalar's first byte, so every enclosing container still declares a
// length the bytes left can hold): refused at that scalar's place (A6);
// or cuts it to nothing.
func kvTruncate(t *rapid.T, d kvDecodeDraw) Bad[spec.KVEvDecodeInput] {
	if oneIn(t, 10, "empty_payload") {
		return Bad[spec.KVEvDecodeInput]{In: d.input([]byte{}), Want: spec.ErrBatchShape}
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
	return Bad[spec.KVEvDecodeInput]{In: d.input(p[:cut]), Want: last.place}
}

// kvCutAnywhere cuts the payload (its headers widened at random, so that
// a cut can fall inside a 16- or 32-bit length) at any byte, and expects
// the error truncatedAt derives from the places and declared lengths of
// the values around the cut (A6).
func kvCutAnywhere(t *rapid.T, d kvDecodeDraw) Bad[spec.KVEvDecodeInput] {
	for i := range d.events {
		d.events[i].permute = nil // "type" first (see truncatedAt)
	}
	b := d.batch()
	if rapid.Bool().Draw(t, "widen") {
		widen(t, b)
	}
	p, spans := b.encodeSpans()
	c := rapid.IntRange(0, len(p)-1).Draw(t, "cut_at")
	return Bad[spec.KVEvDecodeInput]{In: d.input(p[:c]), Want: truncatedAt(spans, c)}
}
