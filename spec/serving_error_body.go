package spec

import (
	"encoding/json"
)

// Sentinels of the serving surface (docs/spec/admission-serving.md S1.6, S2.10).
var (
	// ErrPoolTooSmall: context_len or max_total_tokens below 1, or a
	// max_req_input_len below 1 (docs/spec/admission-serving.md S1.6).
	ErrPoolTooSmall = NewSentinel("pool_too_small", "max_req_input_len must be >= 1 (memory pool too small)")
	// ErrBadStatus: an error body asked for a status outside [400, 599] (S1.6).
	ErrBadStatus = NewSentinel("bad_status", "error status must be a 4xx or 5xx code")
	// ErrBadFlag: a server flag outside its type (S2.10).
	ErrBadFlag = NewSentinel("bad_flag", "server argument outside its type")
	// ErrNotJSONObject: a field that carries a JSON document is not a JSON object (S2).
	ErrNotJSONObject = NewSentinel("not_json_object", "value must be a JSON object")
)

// Scheduler stages that can reject an input (docs/spec/admission-serving.md S1.2).
const (
	// StageTokenizer is the tokenizer pre-check, N >= context_len.
	StageTokenizer = "tokenizer"
	// StageScheduler is validate_input_length, N >= max_req_input_len.
	StageScheduler = "scheduler"
)

// Error types and statuses of S1.
const (
	// PayloadTooLarge is the err_type of every length rejection (S1.2).
	PayloadTooLarge = "PayloadTooLargeError"
	// BadRequest is the err_type of every other client error (S1.3, S2.10).
	BadRequest = "BadRequestError"
	// StatusPayloadTooLarge is HTTP 413.
	StatusPayloadTooLarge = 413
	// StatusBadRequest is HTTP 400.
	StatusBadRequest = 400
)

// ServingValidateInputLengthInput is the input of serving.validate_input_length
// (docs/spec/admission-serving.md S1.2).
type ServingValidateInputLengthInput struct {
	// PromptTokens is N, the prompt's token count after multimodal expansion, >= 0.
	PromptTokens int64 `json:"prompt_tokens"`
	// ContextLen is C, the model context length, >= 1.
	ContextLen int64 `json:"context_len"`
	// MaxTotalTokens is T, the KV pool size in tokens, >= 1.
	MaxTotalTokens int64 `json:"max_total_tokens"`
	// AllowAutoTruncate is --allow-auto-truncate: truncate instead of rejecting.
	AllowAutoTruncate bool `json:"allow_auto_truncate,omitempty"`
}

// ServingValidateInputLengthOutput is the verdict of both bounds (S1.2).
type ServingValidateInputLengthOutput struct {
	// MaxReqLen is min(C-1, T-1).
	MaxReqLen int64 `json:"max_req_len"`
	// MaxReqInputLen is max_req_len - 5.
	MaxReqInputLen int64 `json:"max_req_input_len"`
	// Accepted is true when generation proceeds.
	Accepted bool `json:"accepted"`
	// Stage is the rejecting check ("tokenizer" or "scheduler"), "" when accepted.
	Stage string `json:"stage"`
	// PrefillTokens is how many tokens reach prefill: N, the truncated length
	// under auto-truncate, 1 (the abort placeholder) for a scheduler
	// rejection, 0 for a tokenizer rejection (S1.2, S1.5 invariant 4).
	PrefillTokens int64 `json:"prefill_tokens"`
	// Status is 413 on rejection, 0 when accepted.
	Status int `json:"status"`
	// ErrType is "PayloadTooLargeError" on rejection, "" when accepted.
	ErrType string `json:"err_type"`
	// Message is the exact client message on rejection, "" when accepted.
	Message string `json:"message"`
}

// Surfaces an error body is rendered for (docs/spec/admission-serving.md S1.3).
const (
	// SurfaceOpenAI is an OpenAI endpoint answering a non-streaming request.
	SurfaceOpenAI = "openai"
	// SurfaceOpenAIStream is an OpenAI endpoint whose SSE stream is already open.
	SurfaceOpenAIStream = "openai_stream"
	// SurfaceGenerate is the raw /generate endpoint.
	SurfaceGenerate = "generate"
)

// Content types of the rendered responses.
const (
	// ContentJSON is the non-streaming content type.
	ContentJSON = "application/json"
	// ContentSSE is the streaming content type.
	ContentSSE = "text/event-stream"
)

// ServingErrorBodyInput is the input of serving.error_body (S1.3).
type ServingErrorBodyInput struct {
	// Surface is "openai", "openai_stream" or "generate".
	Surface string `json:"surface"`
	// Status is the error's status code, in [400, 599].
	Status int `json:"status"`
	// ErrType is the error class; "" means the default for Status (DefaultErrType).
	ErrType string `json:"err_type,omitempty"`
	// Message is the client message.
	Message string `json:"message"`
}

// ServingErrorBodyOutput is the exact response an error produces (S1.3).
type ServingErrorBodyOutput struct {
	// Status is the HTTP status of the response (200 for an in-stream error).
	Status int `json:"status"`
	// ContentType is the response content type.
	ContentType string `json:"content_type"`
	// Body is the response body, byte for byte.
	Body string `json:"body"`
}

// ServingStreamErrorChunkInput is the input of serving.stream_error_chunk: one item of
// the generation stream (S1.3 streaming abort typing, S2.5 first-chunk
// preflight).
type ServingStreamErrorChunkInput struct {
	// FinishReason is the item's finish reason exactly as the engine sent
	// it (any JSON value; null or absent when the item has none).
	FinishReason json.RawMessage `json:"finish_reason,omitempty"`
	// Chunk is the data the normal chunk path sends for this item (the
	// chunk's JSON text), used when the item is not an error.
	Chunk string `json:"chunk"`
	// First is true for the stream's first item, before the status is committed.
	First bool `json:"first,omitempty"`
	// Preflight is --stream-first-chunk-preflight.
	Preflight bool `json:"preflight,omitempty"`
}

// ServingStreamErrorChunkOutput is what the server sends for the item.
type ServingStreamErrorChunkOutput struct {
	// Emit is true when the item is an error that ends the stream; false is
	// a normal chunk or a graceful abort (the normal chunk path continues).
	Emit bool `json:"emit"`
	// Code is the normalized integer status code (0 when Emit is false).
	Code int64 `json:"code"`
	// ErrType is the chosen err_type ("" when Emit is false).
	ErrType string `json:"err_type"`
	// Status is the HTTP status this item commits: set on the first item
	// only (200, or the error's code under preflight), 0 afterwards.
	Status int64 `json:"status"`
	// ContentType is the committed content type on the first item, "" afterwards.
	ContentType string `json:"content_type"`
	// Body is the exact bytes sent for the item.
	Body string `json:"body"`
}
