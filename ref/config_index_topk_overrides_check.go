package ref

import (
	"encoding/json"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for config.index_topk_overrides (docs/spec/admission-serving.md §S4): flags and override JSON.

// CheckIndexTopKFlags checks the flags in the order freq, pattern,
// offset (§S4.6). They are checked before the JSON, as argument parsing
// would reject them before any merge.
func CheckIndexTopKFlags(in spec.ConfigIndexTopKOverridesInput) error {
	if in.Freq != nil && *in.Freq < 1 {
		return spec.Reject(spec.ErrFreq, "freq", *in.Freq, ">= 1 (--nsa-index-topk-freq)")
	}
	if in.Pattern != nil {
		p := *in.Pattern
		if p == "" {
			return spec.Reject(spec.ErrPatternCharset, "pattern", p, "non-empty, only 'F' and 'S' (--nsa-index-topk-pattern)")
		}
		for pos := range len(p) {
			if p[pos] != 'F' && p[pos] != 'S' {
				return spec.Reject(spec.ErrPatternCharset, spec.Idx("pattern", pos), p[pos:pos+1], "only 'F' and 'S' (--nsa-index-topk-pattern)")
			}
		}
	}
	if in.Offset < 0 {
		return spec.Reject(spec.ErrOffset, "offset", in.Offset, ">= 0, 0 = unset (--nsa-index-skip-topk-offset)")
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
		return spec.Reject(spec.ErrOverrideJSON, "json", err.Error(), "valid JSON (--json-model-override-args)")
	}
	if kind := JSONKind(raw); kind != "object" {
		return spec.Reject(spec.ErrOverrideNotObject, "json", kind, "a JSON object (--json-model-override-args)")
	}
	return nil
}
