package catalog

import (
	"encoding/json"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
)

// ServingValidateInputLength registers serving.validate_input_length (docs/spec/admission-serving.md S1.2).
func ServingValidateInputLength() *Op[ref.ServingValidateInputLengthInput, ref.ServingValidateInputLengthOutput] {
	return &Op[ref.ServingValidateInputLengthInput, ref.ServingValidateInputLengthOutput]{
		OpName:  "serving.validate_input_length",
		SpecRef: "admission-serving.md S1.2",
		Summary: "tokenizer pre-check and scheduler input-length bound: 413 and the exact message, or accepted",
		Ref:     ref.ServingValidateInputLength,
		Fast:    fast.ServingValidateInputLength,
		Sample:  ref.ServingValidateInputLengthInput{PromptTokens: 8190, ContextLen: 8192, MaxTotalTokens: 100000},
		Shapes: []Shape[ref.ServingValidateInputLengthInput]{
			{Name: "scheduler-reject", Make: func() ref.ServingValidateInputLengthInput {
				return ref.ServingValidateInputLengthInput{PromptTokens: 8190, ContextLen: 8192, MaxTotalTokens: 100000}
			}},
		},
	}
}

// ServingErrorBody registers serving.error_body (docs/spec/admission-serving.md S1.3).
func ServingErrorBody() *Op[ref.ServingErrorBodyInput, ref.ServingErrorBodyOutput] {
	msg := "The input (9000 tokens) is longer than the model's context length (8192 tokens)."
	return &Op[ref.ServingErrorBodyInput, ref.ServingErrorBodyOutput]{
		OpName:  "serving.error_body",
		SpecRef: "admission-serving.md S1.3",
		Summary: "exact status and body of an error on the OpenAI, OpenAI-streaming or raw /generate surface",
		Ref:     ref.ServingErrorBody,
		Fast:    fast.ServingErrorBody,
		Sample:  ref.ServingErrorBodyInput{Surface: ref.SurfaceOpenAI, Status: 413, Message: msg},
		Shapes: []Shape[ref.ServingErrorBodyInput]{
			{Name: "openai-413", Make: func() ref.ServingErrorBodyInput {
				return ref.ServingErrorBodyInput{Surface: ref.SurfaceOpenAI, Status: 413, Message: msg}
			}},
			{Name: "stream-413-unicode", Make: func() ref.ServingErrorBodyInput {
				return ref.ServingErrorBodyInput{Surface: ref.SurfaceOpenAIStream, Status: 413, Message: msg + " — ünïcödé"}
			}},
		},
	}
}

// ServingStreamErrorChunk registers serving.stream_error_chunk (docs/spec/admission-serving.md S1.3, S2.5).
func ServingStreamErrorChunk() *Op[ref.ServingStreamErrorChunkInput, ref.ServingStreamErrorChunkOutput] {
	abort := json.RawMessage(`{"type":"abort","status_code":413,"err_type":"PayloadTooLargeError","message":"m"}`)
	return &Op[ref.ServingStreamErrorChunkInput, ref.ServingStreamErrorChunkOutput]{
		OpName:  "serving.stream_error_chunk",
		SpecRef: "admission-serving.md S1.3, S2.5",
		Summary: "what one stream item sends: error chunk typed by err_type or status name, preflight error, or the normal chunk",
		Ref:     ref.ServingStreamErrorChunk,
		Fast:    fast.ServingStreamErrorChunk,
		Sample:  ref.ServingStreamErrorChunkInput{FinishReason: abort},
		Shapes: []Shape[ref.ServingStreamErrorChunkInput]{
			{Name: "abort-413", Make: func() ref.ServingStreamErrorChunkInput { return ref.ServingStreamErrorChunkInput{FinishReason: abort} }},
			{Name: "normal-chunk-first-preflight", Make: func() ref.ServingStreamErrorChunkInput {
				return ref.ServingStreamErrorChunkInput{FinishReason: json.RawMessage(`null`), Chunk: `{"id":"c","choices":[]}`, First: true, Preflight: true}
			}},
		},
	}
}
