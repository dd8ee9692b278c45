package mutants

import (
	"strconv"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/spec"
)

// The serving-surface bugs of docs/spec/admission-serving.md §S1.7 and
// §S2.11. Those that change only what a production function is given or
// returns are wrappers around it; the three that live inside the fast
// parsers (S1-B5 and S1-B6 in the finish-reason scan, S2-B2 in the GLM
// argument scan, S2-B3 in the content-part scan) are fault.Serving
// switches.

// lengthMutant wraps fast.ServingValidateInputLength: bug rewrites the output of
// an input the scheduler rejects (n is its prompt length).
func lengthMutant(id, section, about string, bug func(out *spec.ServingValidateInputLengthOutput, n int64)) equiv.Killable {
	return &equiv.Mutant[spec.ServingValidateInputLengthInput, spec.ServingValidateInputLengthOutput]{Spec: equiv.ServingValidateInputLength(), ID: id, Section: section, About: about,
		Fn: func(lim spec.Limits, in spec.ServingValidateInputLengthInput) (spec.ServingValidateInputLengthOutput, error) {
			out, err := fast.ServingValidateInputLength(lim, in)
			if err == nil && out.Stage == spec.StageScheduler {
				bug(&out, in.PromptTokens)
			}
			return out, err
		}}
}

// upstreamWording is the pre-fix scheduler message (S1-B1, S1-B2), which
// names the exclusive bound max_req_input_len.
func upstreamWording(n, maxIn int64) string {
	return "Input length (" + strconv.FormatInt(n, 10) + " tokens) exceeds the maximum allowed length (" +
		strconv.FormatInt(maxIn, 10) + " tokens). Use a shorter input or enable --allow-auto-truncate."
}

// SchedulerUpstreamWording is S1-B1: the scheduler rejected an over-long
// input with 400 BadRequestError and upstream's "exceeds the maximum
// allowed length" wording, unlike the tokenizer's 413.
func SchedulerUpstreamWording() equiv.Killable {
	return lengthMutant("s1-b1-scheduler-400-upstream-wording", "admission-serving.md S1.7 S1-B1",
		"scheduler rejects with 400 BadRequestError and upstream's \"Input length … exceeds …\" wording",
		func(out *spec.ServingValidateInputLengthOutput, n int64) {
			out.Status, out.ErrType, out.Message = spec.StatusBadRequest, spec.BadRequest, upstreamWording(n, out.MaxReqInputLen)
		})
}

// ExceedsItself is S1-B2: reporting the exclusive bound max_req_input_len
// made N == max_req_input_len read "X exceeds X".
func ExceedsItself() equiv.Killable {
	return lengthMutant("s1-b2-exceeds-itself", "admission-serving.md S1.7 S1-B2",
		"scheduler message reports max_req_input_len: N = 8186 \"exceeds\" 8186",
		func(out *spec.ServingValidateInputLengthOutput, n int64) {
			out.Message = upstreamWording(n, out.MaxReqInputLen)
		})
}

// BatchNoAbort is S1-B3: the batch handler queued a rejected request
// without aborting it, so its original tokens were prefilled.
func BatchNoAbort() equiv.Killable {
	return lengthMutant("s1-b3-batch-no-abort", "admission-serving.md S1.7 S1-B3",
		"batch handler does not abort: the rejected request's original tokens reach prefill",
		func(out *spec.ServingValidateInputLengthOutput, n int64) { out.PrefillTokens = n })
}

// GenericValueErrorFirst is S1-B4: the OpenAI layer's generic ValueError
// clause caught PayloadTooLargeError first, so a 413 answered 400. A
// wrapper: an accepted OpenAI 413 is rendered as a 400 BadRequestError.
func GenericValueErrorFirst() equiv.Killable {
	return &equiv.Mutant[spec.ServingErrorBodyInput, spec.ServingErrorBodyOutput]{Spec: equiv.ServingErrorBody(),
		ID: "s1-b4-generic-valueerror-first", Section: "admission-serving.md S1.7 S1-B4",
		About: "generic ValueError clause first: a non-streaming 413 becomes 400 BadRequestError",
		Fn: func(lim spec.Limits, in spec.ServingErrorBodyInput) (spec.ServingErrorBodyOutput, error) {
			out, err := fast.ServingErrorBody(lim, in)
			if err == nil && in.Surface == spec.SurfaceOpenAI && in.Status == spec.StatusPayloadTooLarge {
				in.Status, in.ErrType = spec.StatusBadRequest, spec.BadRequest
				return fast.ServingErrorBody(lim, in)
			}
			return out, err
		}}
}

func streamMutant(id, section, about string, fn func(spec.Limits, spec.ServingStreamErrorChunkInput) (spec.ServingStreamErrorChunkOutput, error)) equiv.Killable {
	return &equiv.Mutant[spec.ServingStreamErrorChunkInput, spec.ServingStreamErrorChunkOutput]{Spec: equiv.ServingStreamErrorChunk(), ID: id, Section: section, About: about,
		Fn: fn}
}

// streamSwitch is fault.Installed().ServingStreamErrorChunk with f.
func streamSwitch(f fault.Serving) func(spec.Limits, spec.ServingStreamErrorChunkInput) (spec.ServingStreamErrorChunkOutput, error) {
	return switched(fault.Installed().ServingStreamErrorChunk, f)
}

// StreamTypeFromStatus is S1-B5: the in-stream error was typed by the
// status name even when the scheduler sent err_type.
func StreamTypeFromStatus() equiv.Killable {
	return streamMutant("s1-b5-stream-type-from-status", "admission-serving.md S1.7 S1-B5",
		"stream error typed REQUEST_ENTITY_TOO_LARGE although err_type says PayloadTooLargeError",
		streamSwitch(fault.Serving{StreamTypeFromStatus: true}))
}

// HTTPStatusOnly is S1-B6: only an HTTPStatus status code was recognized,
// so a plain int 413 was a graceful abort and no error chunk was sent.
func HTTPStatusOnly() equiv.Killable {
	return streamMutant("s1-b6-http-status-only", "admission-serving.md S1.7 S1-B6",
		"status code accepted only as HTTPStatus: a plain int 413 sends no error chunk",
		streamSwitch(fault.Serving{HTTPStatusOnly: true}))
}

// PreflightExtraChunk is S2-B5: the first-chunk preflight changed the
// bytes of a successful stream. A wrapper: a normal first chunk under
// preflight is preceded by an empty one.
func PreflightExtraChunk() equiv.Killable {
	return streamMutant("s2-b5-preflight-extra-chunk", "admission-serving.md S2.11 S2-B5",
		"preflight sends an extra empty chunk before a successful first chunk",
		func(lim spec.Limits, in spec.ServingStreamErrorChunkInput) (spec.ServingStreamErrorChunkOutput, error) {
			out, err := fast.ServingStreamErrorChunk(lim, in)
			if err == nil && !out.Emit && in.First && in.Preflight {
				out.Body = "data: {}\n\n" + out.Body
			}
			return out, err
		})
}
