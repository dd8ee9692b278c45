package spec

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
