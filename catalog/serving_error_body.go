package catalog

import (
	"encoding/json"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
)

// ValidateInputLength registers serving.validate_input_length (docs/spec/admission-serving.md S1.2).
func ValidateInputLength() *Op[ref.InputLengthInput, ref.InputLengthOutput] {
	return &Op[ref.InputLengthInput, ref.InputLengthOutput]{
		OpName:  "serving.validate_input_length",
		SpecRef: "admission-serving.md S1.2",
		Summary: "tokenizer pre-check and scheduler input-length bound: 413 and the exact message, or accepted",
		Ref:     ref.ValidateInputLength,
		Fast:    fast.ValidateInputLength,
		Sample:  ref.InputLengthInput{PromptTokens: 8190, ContextLen: 8192, MaxTotalTokens: 100000},
		Shapes: []Shape[ref.InputLengthInput]{
			{Name: "scheduler-reject", Make: func() ref.InputLengthInput {
				return ref.InputLengthInput{PromptTokens: 8190, ContextLen: 8192, MaxTotalTokens: 100000}
			}},
		},
	}
}

// ErrorBody registers serving.error_body (docs/spec/admission-serving.md S1.3).
func ErrorBody() *Op[ref.ErrorBodyInput, ref.ErrorBodyOutput] {
	msg := "The input (9000 tokens) is longer than the model's context length (8192 tokens)."
	return &Op[ref.ErrorBodyInput, ref.ErrorBodyOutput]{
		OpName:  "serving.error_body",
		SpecRef: "admission-serving.md S1.3",
		Summary: "exact status and body of an error on the OpenAI, OpenAI-streaming or raw /generate surface",
		Ref:     ref.ErrorBody,
		Fast:    fast.ErrorBody,
		Sample:  ref.ErrorBodyInput{Surface: ref.SurfaceOpenAI, Status: 413, Message: msg},
		Shapes: []Shape[ref.ErrorBodyInput]{
			{Name: "openai-413", Make: func() ref.ErrorBodyInput {
				return ref.ErrorBodyInput{Surface: ref.SurfaceOpenAI, Status: 413, Message: msg}
			}},
			{Name: "stream-413-unicode", Make: func() ref.ErrorBodyInput {
				return ref.ErrorBodyInput{Surface: ref.SurfaceOpenAIStream, Status: 413, Message: msg + " — ünïcödé"}
			}},
		},
	}
}

// StreamErrorChunk registers serving.stream_error_chunk (docs/spec/admission-serving.md S1.3, S2.5).
func StreamErrorChunk() *Op[ref.StreamErrorInput, ref.StreamErrorOutput] {
	abort := json.RawMessage(`{"type":"abort","status_code":413,"err_type":"PayloadTooLargeError","message":"m"}`)
	return &Op[ref.StreamErrorInput, ref.StreamErrorOutput]{
		OpName:  "serving.stream_error_chunk",
		SpecRef: "admission-serving.md S1.3, S2.5",
		Summary: "what one stream item sends: error chunk typed by err_type or status name, preflight error, or the normal chunk",
		Ref:     ref.StreamErrorChunk,
		Fast:    fast.StreamErrorChunk,
		Sample:  ref.StreamErrorInput{FinishReason: abort},
		Shapes: []Shape[ref.StreamErrorInput]{
			{Name: "abort-413", Make: func() ref.StreamErrorInput { return ref.StreamErrorInput{FinishReason: abort} }},
			{Name: "normal-chunk-first-preflight", Make: func() ref.StreamErrorInput {
				return ref.StreamErrorInput{FinishReason: json.RawMessage(`null`), Chunk: `{"id":"c","choices":[]}`, First: true, Preflight: true}
			}},
		},
	}
}
