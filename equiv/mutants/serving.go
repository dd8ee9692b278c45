package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/internal/servingfault"
	"github.com/kvtwin/kvtwin/ref"
)

// The serving-surface bugs of docs/spec/admission-serving.md S1.7 and S2.11, each the
// fast twin with one servingfault put back.

func lengthMutant(id, section, about string, f servingfault.Faults) equiv.Killable {
	return &equiv.Mutant[ref.InputLengthInput, ref.InputLengthOutput]{Spec: equiv.ValidateInputLength(), ID: id, Section: section, About: about,
		Fn: fast.ValidateInputLengthFaulty(f)}
}

// SchedulerUpstreamWording is S1-B1: the scheduler rejected an over-long
// input with 400 BadRequestError and upstream's "exceeds the maximum
// allowed length" wording, unlike the tokenizer's 413.
func SchedulerUpstreamWording() equiv.Killable {
	return lengthMutant("s1-b1-scheduler-400-upstream-wording", "admission-serving.md S1.7 S1-B1",
		"scheduler rejects with 400 BadRequestError and upstream's \"Input length … exceeds …\" wording",
		servingfault.Faults{SchedulerUpstreamWording: true})
}

// ExceedsItself is S1-B2: reporting the exclusive bound max_req_input_len
// made N == max_req_input_len read "X exceeds X".
func ExceedsItself() equiv.Killable {
	return lengthMutant("s1-b2-exceeds-itself", "admission-serving.md S1.7 S1-B2",
		"scheduler message reports max_req_input_len: N = 8186 \"exceeds\" 8186",
		servingfault.Faults{ExceedsItself: true})
}

// BatchNoAbort is S1-B3: the batch handler queued a rejected request
// without aborting it, so its original tokens were prefilled.
func BatchNoAbort() equiv.Killable {
	return lengthMutant("s1-b3-batch-no-abort", "admission-serving.md S1.7 S1-B3",
		"batch handler does not abort: the rejected request's original tokens reach prefill",
		servingfault.Faults{BatchNoAbort: true})
}

// GenericValueErrorFirst is S1-B4: the OpenAI layer's generic ValueError
// clause caught PayloadTooLargeError first, so a 413 answered 400.
func GenericValueErrorFirst() equiv.Killable {
	return &equiv.Mutant[ref.ErrorBodyInput, ref.ErrorBodyOutput]{Spec: equiv.ErrorBody(),
		ID: "s1-b4-generic-valueerror-first", Section: "admission-serving.md S1.7 S1-B4",
		About: "generic ValueError clause first: a non-streaming 413 becomes 400 BadRequestError",
		Fn:    fast.ErrorBodyFaulty(servingfault.Faults{GenericValueErrorFirst: true})}
}

func streamMutant(id, section, about string, f servingfault.Faults) equiv.Killable {
	return &equiv.Mutant[ref.StreamErrorInput, ref.StreamErrorOutput]{Spec: equiv.StreamErrorChunk(), ID: id, Section: section, About: about,
		Fn: fast.StreamErrorChunkFaulty(f)}
}

// StreamTypeFromStatus is S1-B5: the in-stream error was typed by the
// status name even when the scheduler sent err_type.
func StreamTypeFromStatus() equiv.Killable {
	return streamMutant("s1-b5-stream-type-from-status", "admission-serving.md S1.7 S1-B5",
		"stream error typed REQUEST_ENTITY_TOO_LARGE although err_type says PayloadTooLargeError",
		servingfault.Faults{StreamTypeFromStatus: true})
}

// HTTPStatusOnly is S1-B6: only an HTTPStatus status code was recognized,
// so a plain int 413 was a graceful abort and no error chunk was sent.
func HTTPStatusOnly() equiv.Killable {
	return streamMutant("s1-b6-http-status-only", "admission-serving.md S1.7 S1-B6",
		"status code accepted only as HTTPStatus: a plain int 413 sends no error chunk",
		servingfault.Faults{HTTPStatusOnly: true})
}

// PreflightExtraChunk is S2-B5: the first-chunk preflight changed the
// bytes of a successful stream.
func PreflightExtraChunk() equiv.Killable {
	return streamMutant("s2-b5-preflight-extra-chunk", "admission-serving.md S2.11 S2-B5",
		"preflight sends an extra empty chunk before a successful first chunk",
		servingfault.Faults{PreflightExtraChunk: true})
}

func chatMutant(id, section, about string, f servingfault.Faults) equiv.Killable {
	return &equiv.Mutant[ref.ChatNormalizeInput, ref.ChatNormalizeOutput]{Spec: equiv.ChatNormalize(), ID: id, Section: section, About: about,
		Fn: fast.ChatNormalizeFaulty(f)}
}

// ParaDefaultUngated is S2-B1: the Para max_tokens default was hard-coded,
// so every chat request without max_tokens got 32768.
func ParaDefaultUngated() equiv.Killable {
	return chatMutant("s2-b1-para-default-ungated", "admission-serving.md S2.11 S2-B1",
		"max_tokens = 32768 injected with --para-chat-default-max-tokens unset",
		servingfault.Faults{ParaDefaultUngated: true})
}

// StringImageURLRejected is S2-B3: a string image_url part was a 400.
func StringImageURLRejected() equiv.Killable {
	return chatMutant("s2-b3-string-image-url-rejected", "admission-serving.md S2.11 S2-B3",
		"a string image_url content part is rejected with 400 instead of normalized",
		servingfault.Faults{RejectStringImageURL: true})
}

// GLMArgsStripped is S2-B2: GLM argument values were stripped before
// parsing, losing code's indentation and trailing newline.
func GLMArgsStripped() equiv.Killable {
	return &equiv.Mutant[ref.GLMToolArgsInput, ref.GLMToolArgsOutput]{Spec: equiv.GLMToolArgs(),
		ID: "s2-b2-glm-args-stripped", Section: "admission-serving.md S2.11 S2-B2",
		About: "GLM argument values stripped: \"  def f():\\n    return 1\\n\" loses its whitespace",
		Fn:    fast.GLMToolArgsFaulty(servingfault.Faults{StripGLMArgs: true})}
}

// GLMUsageNoDetails is S2-B4: the glm family did not get
// completion_tokens_details.reasoning_tokens.
func GLMUsageNoDetails() equiv.Killable {
	return &equiv.Mutant[ref.UsageInput, ref.Usage]{Spec: equiv.Usage(),
		ID: "s2-b4-glm-usage-missing-details", Section: "admission-serving.md S2.11 S2-B4",
		About: "glm usage lacks completion_tokens_details.reasoning_tokens",
		Fn:    fast.UsageOfFaulty(servingfault.Faults{GLMUsageNoDetails: true})}
}
