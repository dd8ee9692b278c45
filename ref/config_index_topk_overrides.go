package ref

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
)

// This file is config.index_topk_overrides (docs/spec/admission-serving.md §S4): the
// launch flags --nsa-index-topk-freq, --nsa-index-topk-pattern and
// --nsa-index-skip-topk-offset merged into --json-model-override-args
// before any model config is read, so prefill and decode see one config.

// The model-config keys the flags control, in merge (and append) order.
const (
	KeyIndexTopKFreq       = "index_topk_freq"
	KeyIndexTopKPattern    = "index_topk_pattern"
	KeyIndexSkipTopKOffset = "index_skip_topk_offset"
)

// ConfigIndexTopKOverridesInput is the input of config.index_topk_overrides
// (§S4.2): the raw --json-model-override-args string and the three flags.
type ConfigIndexTopKOverridesInput struct {
	// JSON is --json-model-override-args as given; "" means {}.
	JSON string `json:"json"`
	// Freq is --nsa-index-topk-freq (>= 1), nil when not given.
	Freq *int64 `json:"freq,omitempty"`
	// Pattern is --nsa-index-topk-pattern (non-empty, 'F'/'S' only), nil when not given.
	Pattern *string `json:"pattern,omitempty"`
	// Offset is --nsa-index-skip-topk-offset (>= 0); 0 means unset.
	Offset int64 `json:"offset,omitzero"`
}

// ConfigIndexTopKOverridesOutput is the merged override string and the warnings
// the merge records (§S4.2 steps 2 and 3), in the order they arise.
type ConfigIndexTopKOverridesOutput struct {
	// JSON is the merged --json-model-override-args, compact; the input
	// string itself when no flag is set.
	JSON string `json:"json"`
	// Warnings are the override and shadow warnings, never nil.
	Warnings []string `json:"warnings"`
}

// OverrideMember is one top-level member of the override object: its
// decoded key, and the key's and value's raw JSON, compacted.
type OverrideMember struct {
	// Key is the decoded member name (for matching and duplicates).
	Key string
	// RawKey is the key as written, quotes and escapes included.
	RawKey []byte
	// Value is the compacted raw JSON of the value.
	Value []byte
}

// IndexTopKFlag is one set flag: the key it controls, its flag spelling,
// the value as the flag prints it and as JSON.
type IndexTopKFlag struct {
	// Key is the model-config key.
	Key string
	// Flag is the command-line spelling, e.g. "--nsa-index-topk-freq".
	Flag string
	// Text is the value as written after "=" in the override warning.
	Text string
	// JSON is the value's JSON encoding.
	JSON []byte
	// Int is the integer value (freq, offset); Str the string (pattern).
	Int int64
	// IsString says Str holds the value.
	IsString bool
	// Str is the pattern.
	Str string
}

// IndexTopKFlags lists the set flags of a validated input in merge order;
// offset 0 is unset and never listed (§S4.2 step 2, invariant 3).
func IndexTopKFlags(in ConfigIndexTopKOverridesInput) []IndexTopKFlag {
	flags := make([]IndexTopKFlag, 0, 3)
	if in.Freq != nil {
		flags = append(flags, intFlag(KeyIndexTopKFreq, "--nsa-index-topk-freq", *in.Freq))
	}
	if in.Pattern != nil {
		p := *in.Pattern // 'F'/'S' only, so quoting needs no escapes
		flags = append(flags, IndexTopKFlag{Key: KeyIndexTopKPattern, Flag: "--nsa-index-topk-pattern",
			Text: p, JSON: []byte(`"` + p + `"`), IsString: true, Str: p})
	}
	if in.Offset != 0 {
		flags = append(flags, IndexTopKOffsetFlag(in.Offset))
	}
	return flags
}

// IndexTopKOffsetFlag is the --nsa-index-skip-topk-offset flag set to v.
func IndexTopKOffsetFlag(v int64) IndexTopKFlag {
	return intFlag(KeyIndexSkipTopKOffset, "--nsa-index-skip-topk-offset", v)
}

func intFlag(key, flag string, v int64) IndexTopKFlag {
	s := strconv.FormatInt(v, 10)
	return IndexTopKFlag{Key: key, Flag: flag, Text: s, JSON: []byte(s), Int: v}
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
	return Reject(ErrOverrideDuplicateKey, "json", key, "each top-level key once (--json-model-override-args)")
}

// ParseOverrideObject decodes a valid JSON object (CheckOverrideJSON passed)
// into its members in source order, keys and values as written less the
// insignificant whitespace, and rejects a duplicate top-level key. It
// compacts the whole input first, so the decoder's offsets delimit each
// key's raw bytes: a key starts right after the previous member's comma.
func ParseOverrideObject(s string) ([]OverrideMember, error) {
	members := []OverrideMember{}
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
		members = append(members, OverrideMember{Key: key, RawKey: rawKey, Value: raw})
	}
	return members, nil
}

// OverrideValueEquals says whether the JSON value raw equals the flag's
// value as Python would compare the parsed config: numbers by exact value
// (4, 4.0 and 40e-1 are equal), strings after unescaping. Any other kind
// differs.
func OverrideValueEquals(raw []byte, f IndexTopKFlag) bool {
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
func OverrideWarning(f IndexTopKFlag, old []byte) string {
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
func ConfigIndexTopKOverrides(_ Limits, in ConfigIndexTopKOverridesInput) (ConfigIndexTopKOverridesOutput, error) {
	if err := CheckIndexTopKFlags(in); err != nil {
		return ConfigIndexTopKOverridesOutput{}, err
	}
	if err := CheckOverrideJSON(in.JSON); err != nil {
		return ConfigIndexTopKOverridesOutput{}, err
	}
	members, err := ParseOverrideObject(in.JSON)
	if err != nil {
		return ConfigIndexTopKOverridesOutput{}, err
	}
	flags := IndexTopKFlags(in)
	warnings := []string{}
	if len(flags) == 0 {
		return ConfigIndexTopKOverridesOutput{JSON: in.JSON, Warnings: warnings}, nil
	}
	for _, f := range flags {
		members, warnings = setMember(members, f, warnings)
	}
	if in.Pattern != nil {
		for _, m := range members {
			if m.Key == KeyIndexTopKFreq {
				warnings = append(warnings, ShadowWarning(m.Value))
			}
		}
	}
	return ConfigIndexTopKOverridesOutput{JSON: encodeMembers(members), Warnings: warnings}, nil
}

// setMember sets f's key: replaced in place (with a warning when the old
// value differs) or appended.
func setMember(members []OverrideMember, f IndexTopKFlag, warnings []string) ([]OverrideMember, []string) {
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
	return append(members, OverrideMember{Key: f.Key, RawKey: []byte(`"` + f.Key + `"`), Value: f.JSON}), warnings
}

// encodeMembers writes the object compactly, keys as written.
func encodeMembers(members []OverrideMember) string {
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
