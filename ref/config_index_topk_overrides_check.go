package ref

import "encoding/json"

// Validation for config.index_topk_overrides (docs/spec/admission-serving.md §S4): flags and override JSON.

// Override-merge sentinels (§S4.2, §S4.6). The flag checks reuse the NSA
// family's ErrFreq, ErrOffset and ErrPatternCharset.
var (
	// ErrOverrideJSON: --json-model-override-args is not valid JSON.
	ErrOverrideJSON = NewSentinel("override_json", "--json-model-override-args is not valid JSON")
	// ErrOverrideNotObject: --json-model-override-args is valid JSON but not an object.
	ErrOverrideNotObject = NewSentinel("override_not_object", "--json-model-override-args must be a JSON object")
	// ErrOverrideDuplicateKey: a top-level key appears twice (Python would keep the last silently).
	ErrOverrideDuplicateKey = NewSentinel("override_duplicate_key", "--json-model-override-args has a duplicate key")
)

// CheckIndexTopKFlags checks the flags in the order freq, pattern,
// offset (§S4.6). They are checked before the JSON, as argument parsing
// would reject them before any merge.
func CheckIndexTopKFlags(in ConfigIndexTopKOverridesInput) error {
	if in.Freq != nil && *in.Freq < 1 {
		return Reject(ErrFreq, "freq", *in.Freq, ">= 1 (--nsa-index-topk-freq)")
	}
	if in.Pattern != nil {
		p := *in.Pattern
		if p == "" {
			return Reject(ErrPatternCharset, "pattern", p, "non-empty, only 'F' and 'S' (--nsa-index-topk-pattern)")
		}
		for pos := range len(p) {
			if p[pos] != 'F' && p[pos] != 'S' {
				return Reject(ErrPatternCharset, Idx("pattern", pos), p[pos:pos+1], "only 'F' and 'S' (--nsa-index-topk-pattern)")
			}
		}
	}
	if in.Offset < 0 {
		return Reject(ErrOffset, "offset", in.Offset, ">= 0, 0 = unset (--nsa-index-skip-topk-offset)")
	}
	return nil
}

// CheckOverrideJSON checks that s is one valid JSON value and an object
// (§S4.2 step 1, §S4.6). The empty string is {}. The parser message is
// encoding/json's, computed here once so both twins report the same text.
func CheckOverrideJSON(s string) error {
	if s == "" {
		return nil
	}
	var raw json.RawMessage
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return Reject(ErrOverrideJSON, "json", err.Error(), "valid JSON (--json-model-override-args)")
	}
	if kind := JSONKind(raw); kind != "object" {
		return Reject(ErrOverrideNotObject, "json", kind, "a JSON object (--json-model-override-args)")
	}
	return nil
}
