package catalog

import (
	"encoding/json"
	"fmt"
	"strings"

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

// ChatNormalize registers serving.chat_normalize (docs/spec/admission-serving.md S2.2–S2.4, S2.7).
func ChatNormalize() *Op[ref.ChatNormalizeInput, ref.ChatNormalizeOutput] {
	d := int64(32768)
	n := int64(1000)
	return &Op[ref.ChatNormalizeInput, ref.ChatNormalizeOutput]{
		OpName:  "serving.chat_normalize",
		SpecRef: "admission-serving.md S2.2–S2.4, S2.7",
		Summary: "opt-in OpenAI compatibility: soft max_tokens, tool_choice, tool-role flattening, string image_url; 400 message on a client fault",
		Ref:     ref.ChatNormalize,
		Fast:    fast.ChatNormalize,
		// ref splits the request one element at a time (a decoder per
		// message and per content part) and re-encodes what it changed, all
		// bounded by the request. Measured with the harness's limits on 1 MiB
		// of messages: ref 369 B per request byte (content parts {}), 359
		// (messages {}), 148 (the example's message repeated); fast 8–18.
		Work: Cost{PerInputByte: 512, PerOutputByte: 8, Fixed: 4 << 20},
		Sample: ref.ChatNormalizeInput{Endpoint: ref.EndpointChat, ContextLen: 32768, PromptTokens: &n,
			Request: json.RawMessage(`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":"https://x/y.png"}]}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"any"}`),
			Flags:   ref.CompatFlags{ParaChatDefaultMaxTokens: &d, NormalizeToolChoice: true, FlattenToolRoleContent: true}},
		Shapes: []Shape[ref.ChatNormalizeInput]{
			{Name: "32KB-tools-flags-on", Make: func() ref.ChatNormalizeInput {
				return ref.ChatNormalizeInput{Endpoint: ref.EndpointChat, ContextLen: 131072, PromptTokens: &n, Request: ChatRequest32K("any"),
					Flags: ref.CompatFlags{ParaChatDefaultMaxTokens: &d, NormalizeToolChoice: true, FlattenToolRoleContent: true}}
			}},
			{Name: "32KB-tools-flags-off", Make: func() ref.ChatNormalizeInput {
				return ref.ChatNormalizeInput{Endpoint: ref.EndpointChat, ContextLen: 131072, PromptTokens: &n, Request: ChatRequest32K("auto")}
			}},
		},
	}
}

// ChatRequest32K is the benchmark request of the issue: a chat request of
// about 32 KB with 8 tools, a tool-role message with text parts, a string
// image_url part and the given tool_choice. It is deterministic.
func ChatRequest32K(toolChoice string) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"model":"glm-4.5","stream":true,"temperature":0.7,"messages":[`)
	b.WriteString(`{"role":"system","content":"You are a helpful assistant."}`)
	for i := 0; b.Len() < 26000; i++ {
		fmt.Fprintf(&b, `,{"role":"user","content":"turn %d: %s"}`, i, strings.Repeat("lorem ipsum dolor sit amet ", 30))
		fmt.Fprintf(&b, `,{"role":"assistant","content":"answer %d: %s"}`, i, strings.Repeat("consectetur adipiscing elit ", 20))
	}
	b.WriteString(`,{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":"https://example.com/cat.png"}]}`)
	b.WriteString(`,{"role":"tool","tool_call_id":"call_1","content":[{"type":"text","text":"line one"},{"type":"text","text":"line two"}]}`)
	b.WriteString(`],"tools":[`)
	for i := 0; i < 8; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"function","function":{"name":"tool_%d","description":"%s","parameters":{"type":"object","properties":{"query":{"type":"string","description":"what to look up"},"limit":{"type":"integer"}},"required":["query"]}}}`,
			i, strings.Repeat("does a thing ", 40))
	}
	b.WriteString(`],"tool_choice":"` + toolChoice + `","user":"bench"}`)
	return json.RawMessage(b.String())
}

// Usage registers serving.usage (docs/spec/admission-serving.md S2.6).
func Usage() *Op[ref.UsageInput, ref.Usage] {
	return &Op[ref.UsageInput, ref.Usage]{
		OpName:  "serving.usage",
		SpecRef: "admission-serving.md S2.6",
		Summary: "usage with reasoning tokens: top-level always, completion_tokens_details.reasoning_tokens merged in for glm",
		Ref:     ref.UsageOf,
		Fast:    fast.UsageOf,
		Sample:  ref.UsageInput{Family: ref.FamilyGLM, PromptTokens: 12, Choices: []ref.UsageChoice{{CompletionTokens: 40, ReasoningTokens: 25}}},
		Shapes: []Shape[ref.UsageInput]{
			{Name: "glm-merge-4-choices", Make: func() ref.UsageInput {
				return ref.UsageInput{Family: ref.FamilyGLM, PromptTokens: 1200, CompletionTokensDetails: json.RawMessage(`{"accepted_prediction_tokens":31}`),
					Choices: []ref.UsageChoice{{CompletionTokens: 400, ReasoningTokens: 250}, {CompletionTokens: 380, ReasoningTokens: 200}, {CompletionTokens: 500, ReasoningTokens: 10}, {CompletionTokens: 12}}}
			}},
		},
	}
}

// GLMToolArgs registers serving.glm_tool_args (docs/spec/admission-serving.md S2.8).
func GLMToolArgs() *Op[ref.GLMToolArgsInput, ref.GLMToolArgsOutput] {
	tools := json.RawMessage(`[{"type":"function","function":{"name":"run","parameters":{"type":"object","properties":{"code":{"type":"string"},"n":{"type":"integer"}}}}}]`)
	text := "<tool_call>run\n<arg_key>code</arg_key>\n<arg_value>  def f():\n    return 1\n</arg_value>\n<arg_key>n</arg_key>\n<arg_value>3</arg_value>\n</tool_call>"
	return &Op[ref.GLMToolArgsInput, ref.GLMToolArgsOutput]{
		OpName:  "serving.glm_tool_args",
		SpecRef: "admission-serving.md S2.8",
		Summary: "GLM <tool_call> markup to calls, argument values parsed from their exact bytes (whitespace kept)",
		Ref:     ref.GLMToolArgs,
		Fast:    fast.GLMToolArgs,
		// ref splits the tool list one element at a time (a decoder per tool
		// and per schema object), bounded by the request. Measured with the
		// harness's limits on 1 MiB of tools: ref 697 B per request byte
		// (tools {}), 249 ([1,1,…]), 122–139 (the example's tool repeated);
		// fast 6.
		Work:   Cost{PerInputByte: 1024, PerOutputByte: 8, Fixed: 4 << 20},
		Sample: ref.GLMToolArgsInput{Text: text, Tools: tools},
		Shapes: []Shape[ref.GLMToolArgsInput]{
			{Name: "4-calls", Make: func() ref.GLMToolArgsInput {
				return ref.GLMToolArgsInput{Text: "thinking…" + strings.Repeat(text, 4), Tools: tools}
			}},
		},
	}
}
