package equiv

import (
	"errors"
	"fmt"
	"reflect"

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
//
// The messages are drawn in kvev_message.go and broken in
// kvev_decode_invalid.go; the boundary table is kvev_decode_boundary.go.
func KVEvDecode() *Spec[ref.KVEvDecodeInput, ref.KVEvDecodeOutput] {
	return &Spec[ref.KVEvDecodeInput, ref.KVEvDecodeOutput]{
		Op:          catalog.KVEvDecode(),
		Valid:       rapid.Custom(kvDecodeValid),
		Invalid:     rapid.Custom(kvDecodeInvalid),
		Boundary:    kvDecodeBoundary(),
		Regressions: kvDecodeRegressions(),
		Rejects:     kvDecodeRejects,
		Props: []Prop[ref.KVEvDecodeInput, ref.KVEvDecodeOutput]{
			{"canonical-shape", kvDecodeCanonicalShape},
			{"reencoding-round-trips", kvDecodeRoundTrips},
			{"form-a-equals-form-b", kvDecodeFormInvariant},
			{"hash-shapes-agree", kvDecodeHashShapes},
			{"trailing-bytes-refused", kvDecodeTrailing},
			{"proper-prefix-refused", kvDecodeProperPrefix},
		},
	}
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
