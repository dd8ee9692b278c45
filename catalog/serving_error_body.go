package catalog

import (
	"encoding/json"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// ServingValidateInputLength registers serving.validate_input_length (docs/spec/admission-serving.md S1.2).
func ServingValidateInputLength() *Op[spec.ServingValidateInputLengthInput, spec.ServingValidateInputLengthOutput] {
	return &Op[spec.ServingValidateInputLengthInput, spec.ServingValidateInputLengthOutput]{
		OpName:  "serving.validate_input_length",
		SpecRef: "admission-serving.md S1.2",
		Summary: "tokenizer pre-check and scheduler input-length bound: 413 and the exact message, or accepted",
		Ref:     ref.ServingValidateInputLength,
		Fast:    fast.ServingValidateInputLength,
		Sample:  spec.ServingValidateInputLengthInput{PromptTokens: 8190, ContextLen: 8192, MaxTotalTokens: 100000},
		Shapes: []Shape[spec.ServingValidateInputLengthInput]{
			{Name: "scheduler-reject", Make: func() spec.ServingValidateInputLengthInput {
				return spec.ServingValidateInputLengthInput{PromptTokens: 8190, ContextLen: 8192, MaxTotalTokens: 100000}
			}},
		},
	}
}

// ServingErrorBody registers serving.error_body (docs/spec/admission-serving.md S1.3).
func ServingErrorBody() *Op[spec.ServingErrorBodyInput, spec.ServingErrorBodyOutput] {
	msg := "The input (9000 tokens) is longer than the model's context length (8192 tokens)."
	return &Op[spec.ServingErrorBodyInput, spec.ServingErrorBodyOutput]{
		OpName:  "serving.error_body",
		SpecRef: "admission-serving.md S1.3",
		Summary: "exact status and body of an error on the OpenAI, OpenAI-streaming or raw /generate surface",
		Ref:     ref.ServingErrorBody,
		Fast:    fast.ServingErrorBody,
		Sample:  spec.ServingErrorBodyInput{Surface: spec.SurfaceOpenAI, Status: 413, Message: msg},
		Shapes: []Shape[spec.ServingErrorBodyInput]{
			{Name: "openai-413", Make: func() spec.ServingErrorBodyInput {
				return spec.ServingErrorBodyInput{Surface: spec.SurfaceOpenAI, Status: 413, Message: msg}
			}},
			{Name: "stream-413-unicode", Make: func() spec.ServingErrorBodyInput {
				return spec.ServingErrorBodyInput{Surface: spec.SurfaceOpenAIStream, Status: 413, Message: msg + " — ünïcödé"}
			}},
		},
	}
}

// ServingStreamErrorChunk registers serving.stream_error_chunk (docs/spec/admission-serving.md S1.3, S2.5).
func ServingStreamErrorChunk() *Op[spec.ServingStreamErrorChunkInput, spec.ServingStreamErrorChunkOutput] {
	abort := json.RawMessage(`{"type":"abort","status_code":413,"err_type":"PayloadTooLargeError","message":"m"}`)
	return &Op[spec.ServingStreamErrorChunkInput, spec.ServingStreamErrorChunkOutput]{
		OpName:  "serving.stream_error_chunk",
		SpecRef: "admission-serving.md S1.3, S2.5",
		Summary: "what one stream item sends: error chunk typed by err_type or status name, preflight error, or the normal chunk",
		Ref:     ref.ServingStreamErrorChunk,
		Fast:    fast.ServingStreamErrorChunk,
		Sample:  spec.ServingStreamErrorChunkInput{FinishReason: abort},
		Shapes: []Shape[spec.ServingStreamErrorChunkInput]{
			{Name: "abort-413", Make: func() spec.ServingStreamErrorChunkInput {
				return spec.ServingStreamErrorChunkInput{FinishReason: abort}
			}},
			{Name: "normal-chunk-first-preflight", Make: func() spec.ServingStreamErrorChunkInput {
				return spec.ServingStreamErrorChunkInput{FinishReason: json.RawMessage(`null`), Chunk: `{"id":"c","choices":[]}`, First: true, Preflight: true}
			}},
		},
	}
}
