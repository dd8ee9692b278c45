package spec

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
