package fast

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// ConfigIndexTopKOverrides is the twin of ref.ConfigIndexTopKOverrides
// (docs/spec/admission-serving.md §S4). It validates with ref's helpers, compacts the
// input once and then walks the compact bytes with a byte scanner instead
// of a token decoder, copying each member's span straight into one output
// buffer: no per-member allocation unless a key has escapes.
func ConfigIndexTopKOverrides(lim spec.Limits, in spec.ConfigIndexTopKOverridesInput) (spec.ConfigIndexTopKOverridesOutput, error) {
	return configIndexTopKOverridesWithFaults(lim, in, fault.IndexTopK{})
}

// configIndexTopKOverridesWithFaults is ConfigIndexTopKOverrides with the
// historic bugs f selects put back, for the bug zoo only: fault.Hooks hands it
// to equiv/mutants (hooks.go). Called with the zero value it is
// ConfigIndexTopKOverrides.
func configIndexTopKOverridesWithFaults(_ spec.Limits, in spec.ConfigIndexTopKOverridesInput, f fault.IndexTopK) (spec.ConfigIndexTopKOverridesOutput, error) {
	if err := ref.CheckIndexTopKFlags(in); err != nil {
		return spec.ConfigIndexTopKOverridesOutput{}, err
	}
	if err := ref.CheckOverrideJSON(in.JSON); err != nil {
		return spec.ConfigIndexTopKOverridesOutput{}, err
	}
	src := []byte("{}")
	if in.JSON != "" {
		var c bytes.Buffer
		c.Grow(len(in.JSON))
		_ = json.Compact(&c, []byte(in.JSON)) // valid: CheckOverrideJSON passed
		src = c.Bytes()
	}
	spans, err := memberSpans(src)
	if err != nil {
		return spec.ConfigIndexTopKOverridesOutput{}, err
	}
	warnings := []string{}
	flags := ref.IndexTopKFlags(in)
	if f.OffsetZeroInjected && in.Offset == 0 {
		flags = append(flags, ref.IndexTopKOffsetFlag(0))
	}
	if len(flags) == 0 {
		return spec.ConfigIndexTopKOverridesOutput{JSON: in.JSON, Warnings: warnings}, nil
	}
	// at[f] is the member flag f replaces, or -1 to append it.
	var at [3]int
	for fi, f := range flags {
		at[fi] = -1
		for i, sp := range spans {
			if string(sp.key) == f.Key {
				at[fi] = i
				break
			}
		}
		if at[fi] >= 0 {
			if old := src[spans[at[fi]].valStart:spans[at[fi]].valEnd]; !ref.OverrideValueEquals(old, f) {
				warnings = append(warnings, ref.OverrideWarning(f, old))
			}
		}
	}
	out := make([]byte, 0, len(src)+64)
	out = append(out, '{')
	for i, sp := range spans {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, src[sp.keyStart:sp.valStart]...) // key and colon
		out = append(out, replacement(flags, at[:len(flags)], i, src[sp.valStart:sp.valEnd])...)
	}
	for fi, f := range flags {
		if at[fi] >= 0 {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = append(out, f.Key...)
		out = append(out, '"', ':')
		out = append(out, f.JSON...)
	}
	out = append(out, '}')
	if in.Pattern != nil {
		warnings = shadow(warnings, flags, at[:len(flags)], spans, src)
	}
	return spec.ConfigIndexTopKOverridesOutput{JSON: string(out), Warnings: warnings}, nil
}

// replacement is member i's value: the flag's when a flag replaces it.
func replacement(flags []spec.IndexTopKFlag, at []int, i int, old []byte) []byte {
	for fi, a := range at {
		if a == i {
			return flags[fi].JSON
		}
	}
	return old
}

// shadow appends §S4.2 step 3's warning when index_topk_freq is present
// after the merge, naming its merged value.
func shadow(warnings []string, flags []spec.IndexTopKFlag, at []int, spans []memberSpan, src []byte) []string {
	if flags[0].Key == spec.KeyIndexTopKFreq { // the freq flag sets the key
		return append(warnings, ref.ShadowWarning(flags[0].JSON))
	}
	for _, sp := range spans {
		if string(sp.key) == spec.KeyIndexTopKFreq {
			return append(warnings, ref.ShadowWarning(src[sp.valStart:sp.valEnd]))
		}
	}
	return warnings
}

// memberSpan locates one member in the compact object: the raw key starts
// at keyStart, the value at valStart (after the colon) and ends at valEnd.
// key is the decoded name: a view of src for plain keys.
type memberSpan struct {
	key                        []byte
	keyStart, valStart, valEnd int
}

// memberSpans scans a compact, valid JSON object and returns its members
// in order, rejecting a duplicate decoded key as ref does.
func memberSpans(src []byte) ([]memberSpan, error) {
	spans := []memberSpan{}
	for pos := 1; src[pos] != '}'; {
		if src[pos] == ',' {
			pos++
		}
		keyEnd := skipString(src, pos)
		valEnd := skipValue(src, keyEnd+1)
		spans = append(spans, memberSpan{key: decodeKey(src[pos:keyEnd]), keyStart: pos, valStart: keyEnd + 1, valEnd: valEnd})
		pos = valEnd
	}
	return spans, firstDuplicate(spans)
}

// firstDuplicate reports the member ref's decoder would stop at: the
// earliest member whose key appeared before. Sorting member indexes by key
// (stable, so each run of equal keys is in source order) finds every
// repeat without a map of key strings; the earliest second occurrence wins.
func firstDuplicate(spans []memberSpan) error {
	if len(spans) < 2 {
		return nil
	}
	idx := make([]int, len(spans))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return bytes.Compare(spans[a].key, spans[b].key) })
	first := -1
	for i := 1; i < len(idx); i++ {
		if bytes.Equal(spans[idx[i]].key, spans[idx[i-1]].key) && (first < 0 || idx[i] < first) {
			first = idx[i]
		}
	}
	if first < 0 {
		return nil
	}
	return ref.DuplicateOverrideKey(string(spans[first].key))
}

// decodeKey decodes a raw JSON string. Plain ASCII needs no decoder and
// stays a view of raw; an escape or a non-ASCII byte (invalid UTF-8
// decodes to U+FFFD) goes through encoding/json so keys compare exactly
// as ref's decoder sees them.
func decodeKey(raw []byte) []byte {
	for _, c := range raw {
		if c == '\\' || c >= 0x80 {
			var s string
			_ = json.Unmarshal(raw, &s) // raw is a valid JSON string
			return []byte(s)
		}
	}
	return raw[1 : len(raw)-1]
}

// skipString returns the index just past the JSON string starting at pos.
func skipString(src []byte, pos int) int {
	for i := pos + 1; ; i++ {
		switch src[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
}

// skipValue returns the index just past the compact JSON value at pos.
func skipValue(src []byte, pos int) int {
	depth := 0
	for i := pos; ; {
		switch c := src[i]; c {
		case '"':
			i = skipString(src, i)
		case '{', '[':
			depth++
			i++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
			i++
		case ',':
			if depth == 0 {
				return i
			}
			i++
		default:
			i++
		}
		if depth == 0 && i < len(src) && (src[i] == ',' || src[i] == '}') {
			return i
		}
	}
}
