package ref

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"

	"github.com/kvtwin/kvtwin/spec"
)

// This file is config.index_topk_overrides (docs/spec/admission-serving.md §S4): the
// launch flags --nsa-index-topk-freq, --nsa-index-topk-pattern and
// --nsa-index-skip-topk-offset merged into --json-model-override-args
// before any model config is read, so prefill and decode see one config.

// IndexTopKFlags lists the set flags of a validated input in merge order;
// offset 0 is unset and never listed (§S4.2 step 2, invariant 3).
func IndexTopKFlags(in spec.ConfigIndexTopKOverridesInput) []spec.IndexTopKFlag {
	flags := make([]spec.IndexTopKFlag, 0, 3)
	if in.Freq != nil {
		flags = append(flags, intFlag(spec.KeyIndexTopKFreq, "--nsa-index-topk-freq", *in.Freq))
	}
	if in.Pattern != nil {
		p := *in.Pattern // 'F'/'S' only, so quoting needs no escapes
		flags = append(flags, spec.IndexTopKFlag{Key: spec.KeyIndexTopKPattern, Flag: "--nsa-index-topk-pattern",
			Text: p, JSON: []byte(`"` + p + `"`), IsString: true, Str: p})
	}
	if in.Offset != 0 {
		flags = append(flags, IndexTopKOffsetFlag(in.Offset))
	}
	return flags
}

// IndexTopKOffsetFlag is the --nsa-index-skip-topk-offset flag set to v.
func IndexTopKOffsetFlag(v int64) spec.IndexTopKFlag {
	return intFlag(spec.KeyIndexSkipTopKOffset, "--nsa-index-skip-topk-offset", v)
}

func intFlag(key, flag string, v int64) spec.IndexTopKFlag {
	s := strconv.FormatInt(v, 10)
	return spec.IndexTopKFlag{Key: key, Flag: flag, Text: s, JSON: []byte(s), Int: v}
}

// JSONKind names the kind of a valid JSON value from its first byte.
func JSONKind(raw []byte) string {
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// DuplicateOverrideKey is the §S4.6 duplicate-key error for key.
func DuplicateOverrideKey(key string) error {
	return spec.Reject(spec.ErrOverrideDuplicateKey, "json", key, "each top-level key once (--json-model-override-args)")
}

// ParseOverrideObject decodes a valid JSON object (CheckOverrideJSON passed)
// into its members in source order, keys and values as written less the
// insignificant whitespace, and rejects a duplicate top-level key. It
// compacts the whole input first, so the decoder's offsets delimit each
// key's raw bytes: a key starts right after the previous member's comma.
func ParseOverrideObject(s string) ([]spec.OverrideMember, error) {
	members := []spec.OverrideMember{}
	if s == "" {
		return members, nil
	}
	var c bytes.Buffer
	if err := json.Compact(&c, []byte(s)); err != nil {
		return nil, err
	}
	src := c.Bytes()
	dec := json.NewDecoder(bytes.NewReader(src))
	if _, err := dec.Token(); err != nil { // '{'
		return nil, err
	}
	seen := map[string]bool{}
	for dec.More() {
		start := dec.InputOffset()
		if src[start] == ',' {
			start++
		}
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key := tok.(string)
		if seen[key] {
			return nil, DuplicateOverrideKey(key)
		}
		seen[key] = true
		rawKey := src[start:dec.InputOffset()]
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		members = append(members, spec.OverrideMember{Key: key, RawKey: rawKey, Value: raw})
	}
	return members, nil
}

// OverrideValueEquals says whether the JSON value raw equals the flag's
// value as Python would compare the parsed config: numbers by exact value
// (4, 4.0 and 40e-1 are equal), strings after unescaping. Any other kind
// differs.
func OverrideValueEquals(raw []byte, f spec.IndexTopKFlag) bool {
	if f.IsString {
		var s string
		return raw[0] == '"' && json.Unmarshal(raw, &s) == nil && s == f.Str
	}
	if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return false
	}
	r, ok := new(big.Rat).SetString(string(raw))
	return ok && r.IsInt() && r.Num().IsInt64() && r.Num().Int64() == f.Int
}

// OverrideWarning is §S4.2 step 2's warning: the flag replaced a different
// value given in the JSON.
func OverrideWarning(f spec.IndexTopKFlag, old []byte) string {
	return fmt.Sprintf("%s=%s overrides %s=%s from --json-model-override-args", f.Flag, f.Text, f.Key, old)
}

// ShadowWarning is §S4.2 step 3's warning: a pattern flag set while
// index_topk_freq is present; the pattern takes precedence in the model.
func ShadowWarning(freq []byte) string {
	return fmt.Sprintf("index_topk_pattern shadows index_topk_freq=%s", freq)
}

// ConfigIndexTopKOverrides is config.index_topk_overrides (§S4.2): the flags
// merged into the override object, existing keys replaced in place, new
// ones appended in flag order, every value re-emitted compact with its
// lexemes kept, and the input returned unchanged when no flag is set.
func ConfigIndexTopKOverrides(_ spec.Limits, in spec.ConfigIndexTopKOverridesInput) (spec.ConfigIndexTopKOverridesOutput, error) {
	if err := CheckIndexTopKFlags(in); err != nil {
		return spec.ConfigIndexTopKOverridesOutput{}, err
	}
	if err := CheckOverrideJSON(in.JSON); err != nil {
		return spec.ConfigIndexTopKOverridesOutput{}, err
	}
	members, err := ParseOverrideObject(in.JSON)
	if err != nil {
		return spec.ConfigIndexTopKOverridesOutput{}, err
	}
	flags := IndexTopKFlags(in)
	warnings := []string{}
	if len(flags) == 0 {
		return spec.ConfigIndexTopKOverridesOutput{JSON: in.JSON, Warnings: warnings}, nil
	}
	for _, f := range flags {
		members, warnings = setMember(members, f, warnings)
	}
	if in.Pattern != nil {
		for _, m := range members {
			if m.Key == spec.KeyIndexTopKFreq {
				warnings = append(warnings, ShadowWarning(m.Value))
			}
		}
	}
	return spec.ConfigIndexTopKOverridesOutput{JSON: encodeMembers(members), Warnings: warnings}, nil
}

// setMember sets f's key: replaced in place (with a warning when the old
// value differs) or appended.
func setMember(members []spec.OverrideMember, f spec.IndexTopKFlag, warnings []string) ([]spec.OverrideMember, []string) {
	for i, m := range members {
		if m.Key != f.Key {
			continue
		}
		if !OverrideValueEquals(m.Value, f) {
			warnings = append(warnings, OverrideWarning(f, m.Value))
		}
		members[i].Value = f.JSON
		return members, warnings
	}
	return append(members, spec.OverrideMember{Key: f.Key, RawKey: []byte(`"` + f.Key + `"`), Value: f.JSON}), warnings
}

// encodeMembers writes the object compactly, keys as written.
func encodeMembers(members []spec.OverrideMember) string {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(m.RawKey)
		b.WriteByte(':')
		b.Write(m.Value)
	}
	b.WriteByte('}')
	return b.String()
}
