// Package servingfault names the historic serving-surface bugs that the
// fast twins can re-introduce for the bug zoo (equiv/mutants,
// docs/spec/admission-serving.md S1.7, S2.11). The package is internal, so nothing
// outside kvtwin can construct Faults; the exported fast ops always run with
// the zero value, the fixed code.
package servingfault

// Faults selects the re-introduced bugs; the zero value is the fixed code.
type Faults struct {
	// SchedulerUpstreamWording is S1-B1: the scheduler rejects with 400
	// BadRequestError and upstream's "Input length … exceeds …" wording.
	SchedulerUpstreamWording bool
	// ExceedsItself is S1-B2: the scheduler reports max_req_input_len in the
	// old wording, so N == max_req_input_len reads "X exceeds X".
	ExceedsItself bool
	// BatchNoAbort is S1-B3: the batch handler queues a rejected request
	// without aborting it, so its original tokens are prefilled.
	BatchNoAbort bool
	// GenericValueErrorFirst is S1-B4: the generic ValueError clause comes
	// first, so a non-streaming 413 answers 400 BadRequestError.
	GenericValueErrorFirst bool
	// StreamTypeFromStatus is S1-B5: the in-stream err_type is always the
	// status name, ignoring the engine's err_type.
	StreamTypeFromStatus bool
	// HTTPStatusOnly is S1-B6: only an HTTPStatus status code counts, so a
	// plain int (all JSON can carry) is a graceful abort: no error chunk.
	HTTPStatusOnly bool
	// ParaDefaultUngated is S2-B1: max_tokens = 32768 is injected with every
	// flag unset.
	ParaDefaultUngated bool
	// StripGLMArgs is S2-B2: argument values are stripped before parsing.
	StripGLMArgs bool
	// RejectStringImageURL is S2-B3: a string image_url is a 400.
	RejectStringImageURL bool
	// GLMUsageNoDetails is S2-B4: the glm family gets no
	// completion_tokens_details.reasoning_tokens.
	GLMUsageNoDetails bool
	// PreflightExtraChunk is S2-B5: under preflight a successful first item
	// is preceded by an extra empty chunk.
	PreflightExtraChunk bool
}
