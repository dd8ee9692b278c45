package fault

// Serving selects the historic serving-surface bugs
// (docs/spec/admission-serving.md §S1.7, §S2.11) that live inside the fast
// parsers: Hooks.ServingStreamErrorChunk, Hooks.ServingChatNormalize
// and Hooks.ServingGLMToolArgs read them. The zero value is the fixed
// code. S1-B1..B4, S2-B1, S2-B4 and S2-B5 change only a production
// function's input or output and are wrappers in equiv/mutants.
type Serving struct {
	// StreamTypeFromStatus is docs/spec/admission-serving.md §S1.7 S1-B5:
	// the in-stream err_type is always the status name, ignoring the
	// engine's err_type.
	StreamTypeFromStatus bool
	// HTTPStatusOnly is docs/spec/admission-serving.md §S1.7 S1-B6: only an
	// HTTPStatus status code counts, so a plain int (all JSON can carry) is
	// a graceful abort: no error chunk.
	HTTPStatusOnly bool
	// StripGLMArgs is docs/spec/admission-serving.md §S2.11 S2-B2: argument
	// values are stripped before parsing.
	StripGLMArgs bool
	// RejectStringImageURL is docs/spec/admission-serving.md §S2.11 S2-B3: a
	// string image_url is a 400.
	RejectStringImageURL bool
}
