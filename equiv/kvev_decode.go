package equiv

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
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
func KVEvDecode() *Spec[spec.KVEvDecodeInput, spec.KVEvDecodeOutput] {
	return &Spec[spec.KVEvDecodeInput, spec.KVEvDecodeOutput]{
		Op:          catalog.KVEvDecode(),
		Valid:       rapid.Custom(kvDecodeValid),
		Invalid:     rapid.Custom(kvDecodeInvalid),
		Boundary:    kvDecodeBoundary(),
		Regressions: kvDecodeRegressions(),
		Rejects:     kvDecodeRejects,
		Props: []Prop[spec.KVEvDecodeInput, spec.KVEvDecodeOutput]{
			{"canonical-shape", kvDecodeCanonicalShape},
			{"reencoding-round-trips", kvDecodeRoundTrips},
			{"form-a-equals-form-b", kvDecodeFormInvariant},
			{"hash-shapes-agree", kvDecodeHashShapes},
			{"trailing-bytes-refused", kvDecodeTrailing},
			{"proper-prefix-refused", kvDecodeProperPrefix},
		},
	}
}

func kvDecodeValid(t *rapid.T) spec.KVEvDecodeInput {
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

var kvDecodeRejects = map[string]*spec.Sentinel{
	"frame-count-2":                         spec.ErrFrameCount,
	"frame-count-4":                         spec.ErrFrameCount,
	"seq-width-7":                           spec.ErrSeqWidth,
	"trailing-nil-byte":                     spec.ErrTrailingBytes,
	"empty-payload":                         spec.ErrBatchShape,
	"batch-of-one-element":                  spec.ErrBatchShape,
	"rank-negative":                         spec.ErrBatchShape,
	"rank-2-pow-63":                         spec.ErrBatchShape,
	"ts-as-string":                          spec.ErrBatchShape,
	"event-without-string-tag":              spec.ErrEventShape,
	"event-map-duplicate-key":               spec.ErrEventShape,
	"event-map-duplicate-non-utf8-key":      spec.ErrEventShape,
	"event-map-int-key":                     spec.ErrEventShape,
	"stored-array-4-missing-block-size":     spec.ErrMissingField,
	"stored-empty-hashes":                   spec.ErrEmptyHashes,
	"hash-empty-bin":                        spec.ErrHashEncoding,
	"hash-nil-in-list":                      spec.ErrHashEncoding,
	"hash-float":                            spec.ErrHashEncoding,
	"token-2-pow-32":                        spec.ErrTokenRange,
	"token-negative":                        spec.ErrTokenRange,
	"token-nil":                             spec.ErrFieldType,
	"block-size-zero":                       spec.ErrFieldType,
	"medium-int":                            spec.ErrFieldType,
	"depth-40-in-extra-keys":                spec.ErrFieldType,
	"depth-33-in-extra-keys":                spec.ErrFieldType,
	"depth-33-past-batch-element-4":         spec.ErrBatchShape,
	"depth-33-in-a-map-form-unknown-key":    spec.ErrFieldType,
	"ts-nan":                                spec.ErrBatchShape,
	"ts-float32-infinity":                   spec.ErrBatchShape,
	"depth-40-past-batch-element-4":         spec.ErrBatchShape,
	"token-ids-declared-past-end":           spec.ErrFieldType,
	"events-declared-past-end":              spec.ErrBatchShape,
	"hash-bin32-past-end":                   spec.ErrHashEncoding,
	"e2-truncated-in-medium":                spec.ErrFieldType,
	"publisher-id-str":                      spec.ErrBatchShape,
	"publisher-id-missing-at-end":           spec.ErrBatchShape,
	"publisher-id-bin8-header-cut":          spec.ErrBatchShape,
	"publisher-id-bin16-header-cut":         spec.ErrBatchShape,
	"publisher-id-bin32-header-cut":         spec.ErrBatchShape,
	"batch-ends-after-ts":                   spec.ErrBatchShape,
	"batch-3-ends-after-ts-events-missing":  spec.ErrBatchShape,
	"ts-float32-cut":                        spec.ErrBatchShape,
	"events-nil":                            spec.ErrBatchShape,
	"events-array16-header-cut":             spec.ErrBatchShape,
	"events-array32-header-cut":             spec.ErrBatchShape,
	"rank-missing-at-end":                   spec.ErrBatchShape,
	"rank-uint8-cut":                        spec.ErrBatchShape,
	"rank-uint16-cut":                       spec.ErrBatchShape,
	"rank-uint32-cut":                       spec.ErrBatchShape,
	"batch-element-4-missing-at-end":        spec.ErrBatchShape,
	"batch-element-4-reserved-byte":         spec.ErrBatchShape,
	"batch-element-4-array16-header-cut":    spec.ErrBatchShape,
	"batch-element-4-fixmap-15-past-end":    spec.ErrBatchShape,
	"batch-element-4-fixarray-15-past-end":  spec.ErrBatchShape,
	"payload-array16-header-cut":            spec.ErrBatchShape,
	"payload-fixmap-15-past-end":            spec.ErrBatchShape,
	"payload-map16-header-cut":              spec.ErrBatchShape,
	"payload-map32-header-cut":              spec.ErrBatchShape,
	"map-batch-ts-twice":                    spec.ErrBatchShape,
	"map-batch-without-events":              spec.ErrBatchShape,
	"map-batch-ends-after-ts-key":           spec.ErrBatchShape,
	"map-batch-key-missing-at-end":          spec.ErrBatchShape,
	"map-batch-key-str8-header-cut":         spec.ErrBatchShape,
	"map-batch-key-str16-header-cut":        spec.ErrBatchShape,
	"map-batch-key-str32-header-cut":        spec.ErrBatchShape,
	"event-missing-at-end":                  spec.ErrEventShape,
	"event-fixarray-15-past-end":            spec.ErrEventShape,
	"event-empty-array":                     spec.ErrEventShape,
	"event-array16-header-cut":              spec.ErrEventShape,
	"event-map16-header-cut":                spec.ErrEventShape,
	"event-map-int-key-before-type":         spec.ErrEventShape,
	"event-map-repeated-key-before-type":    spec.ErrEventShape,
	"event-map-type-not-str-after-a-key":    spec.ErrEventShape,
	"event-map-reserved-byte-before-type":   spec.ErrFieldType,
	"event-map-key-repeated-after-17-keys":  spec.ErrEventShape,
	"hashes-array16-header-cut":             spec.ErrFieldType,
	"hashes-fixarray-15-past-end":           spec.ErrFieldType,
	"tokens-array16-header-cut":             spec.ErrFieldType,
	"tokens-end-after-first-of-two":         spec.ErrFieldType,
	"block-size-missing-at-end":             spec.ErrFieldType,
	"block-size-uint16-cut":                 spec.ErrFieldType,
	"block-size-past-int64":                 spec.ErrFieldType,
	"block-size-str":                        spec.ErrFieldType,
	"medium-negative-fixint":                spec.ErrFieldType,
	"sglang-salt-map-reserved-byte":         spec.ErrFieldType,
	"depth-33-map-in-extra-keys":            spec.ErrFieldType,
	"hash-float32":                          spec.ErrHashEncoding,
	"hash-reserved-byte":                    spec.ErrHashEncoding,
	"hash-fixext1":                          spec.ErrHashEncoding,
	"a10-max-events-4-refuses-5":            spec.ErrMessageBudget,
	"a10-ratio-1-events-259-refused":        spec.ErrMessageBudget,
	"a10-ratio-1-hashes-42-refused":         spec.ErrMessageBudget,
	"a10-ratio-1-tokens-95-refused":         spec.ErrMessageBudget,
	"a10-declared-length-before-max-events": spec.ErrBatchShape,
	"a10-limits-max-events-past-cap":        spec.ErrTooLarge,
	"a10-limits-ratio-negative":             spec.ErrTooLarge,
	// the decode mutants' regressions are accepted
}

// kvDecodeRegressions: §1.5's two hash normalisation bugs. Dynamo's
// decoder before its PR #3180 read hashes as u64 only, so SGLang's signed
// hashes (E5: -1 as negative fixint) failed the whole batch and a router fed
// by SGLang saw no blocks at all; the converse decoder (i64 only) fails
// every vLLM batch carrying a hash >= 2^63 (E1's H2, about half of them).
func kvDecodeRegressions() []Case[spec.KVEvDecodeInput] {
	return []Case[spec.KVEvDecodeInput]{
		{"unsigned-hashes-only", kvMsg("kv@sgl-0@qwen", 0, kvE5)},
		{"signed-hashes-only", kvMsg(kvTopic52, 0, kvE1)},
	}
}

// Properties.

func kvDecodeCanonicalShape(_ spec.Limits, _ spec.KVEvDecodeInput, out spec.KVMessage) error {
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
		case spec.EventStored:
			if len(ev.BlockHashes) == 0 || ev.BlockSize < 1 {
				return fmt.Errorf("events[%d]: stored with %d hashes, block size %d", i, len(ev.BlockHashes), ev.BlockSize)
			}
		case spec.EventRemoved:
			if len(ev.BlockHashes) == 0 || ev.TokenIDs != nil || ev.ParentBlockHash != nil || ev.BlockSize != 0 {
				return fmt.Errorf("events[%d]: removed %+v", i, ev)
			}
		case spec.EventCleared:
			if !reflect.DeepEqual(ev, spec.KVEvent{Type: ev.Type, Form: ev.Form}) {
				return fmt.Errorf("events[%d]: cleared with fields %+v", i, ev)
			}
		case spec.EventUnknown:
			if !reflect.DeepEqual(ev, spec.KVEvent{Type: ev.Type, Tag: ev.Tag, Form: ev.Form}) {
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
func kvRedecode(lim spec.Limits, what string, frames []spec.HexBytes, want spec.KVMessage) error {
	got, err := ref.KVEvDecode(lim, spec.KVEvDecodeInput{Frames: frames})
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

func sameForms(out spec.KVMessage) func(int) string {
	return func(i int) string { return out.Batch.Events[i].Form }
}

// kvDecodeRoundTrips: the decoded message written back (same forms, ints
// for hashes) decodes to itself.
func kvDecodeRoundTrips(lim spec.Limits, _ spec.KVEvDecodeInput, out spec.KVMessage) error {
	return kvRedecode(lim, "the message re-encoded", encodeMessage(out, out.Batch.Form, sameForms(out), hashUint), out)
}

// kvDecodeFormInvariant is §1.4: every event written in the other form
// (array ↔ map), and the batch too, decodes to the same canonical event,
// Form aside.
func kvDecodeFormInvariant(lim spec.Limits, _ spec.KVEvDecodeInput, out spec.KVMessage) error {
	flip := map[string]string{"array": "map", "map": "array"}
	want := out
	want.Batch.Events = make([]spec.KVEvent, len(out.Batch.Events))
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
func kvDecodeHashShapes(lim spec.Limits, _ spec.KVEvDecodeInput, out spec.KVMessage) error {
	for _, shape := range []int{hashSigned, hashSigned64, hashUint64, hashBin8, hashBin32, hashBinShort} {
		if err := kvRedecode(lim, fmt.Sprintf("hash shape %d", shape), encodeMessage(out, out.Batch.Form, sameForms(out), shape), out); err != nil {
			return err
		}
	}
	return nil
}

// kvDecodeTrailing is §1.3: any bytes after the batch are ErrTrailingBytes,
// counted (A6's words from ref.KVTrailingError).
func kvDecodeTrailing(lim spec.Limits, in spec.KVEvDecodeInput, _ spec.KVMessage) error {
	for _, tail := range [][]byte{{0xc0}, mpA(mpU(1), mpS("x")).bytes(), kvE2} {
		fr := []spec.HexBytes{in.Frames[0], in.Frames[1], append(append([]byte{}, in.Frames[2]...), tail...)}
		_, err := ref.KVEvDecode(lim, spec.KVEvDecodeInput{Frames: fr})
		want := spec.ErrorObjectOf(ref.KVTrailingError(len(tail)))
		if err == nil || !reflect.DeepEqual(spec.ErrorObjectOf(err), want) {
			return fmt.Errorf("%d trailing bytes: got %v, want %s", len(tail), err, want.Message)
		}
	}
	return nil
}

// kvDecodeProperPrefix: a payload cut anywhere before its end is refused
// (never decoded as a shorter message, never ErrTrailingBytes).
func kvDecodeProperPrefix(lim spec.Limits, in spec.KVEvDecodeInput, _ spec.KVMessage) error {
	p := in.Frames[2]
	for _, n := range []int{0, len(p) / 2, len(p) - 1} {
		fr := []spec.HexBytes{in.Frames[0], in.Frames[1], p[:n]}
		_, err := ref.KVEvDecode(lim, spec.KVEvDecodeInput{Frames: fr})
		if err == nil || errors.Is(err, spec.ErrTrailingBytes) {
			return fmt.Errorf("the payload cut to %d of %d bytes: %v", n, len(p), err)
		}
	}
	return nil
}
