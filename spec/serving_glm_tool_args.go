package spec

import (
	"encoding/json"
)

const (
	GLMCallOpen   = "<tool_call>"  // GLMCallOpen starts a call.
	GLMCallClose  = "</tool_call>" // GLMCallClose ends a call.
	GLMKeyOpen    = "<arg_key>"    // GLMKeyOpen starts an argument key.
	GLMKeyClose   = "</arg_key>"   // GLMKeyClose ends an argument key.
	GLMValueOpen  = "<arg_value>"  // GLMValueOpen starts an argument value.
	GLMValueClose = "</arg_value>" // GLMValueClose ends an argument value.
)

// ServingGLMToolArgsInput is the input of serving.glm_tool_args (S2.8).
type ServingGLMToolArgsInput struct {
	// Text is the model's output text.
	Text string `json:"text"`
	// Tools is the request's tools list (for each key's schema type), or null.
	Tools json.RawMessage `json:"tools,omitempty"`
}

// GLMToolCall is one parsed call.
type GLMToolCall struct {
	// Name is the function name, trimmed.
	Name string `json:"name"`
	// Arguments is the arguments object as the detector emits it
	// (Python json.dumps, ensure_ascii=False, separators ", " and ": ").
	Arguments string `json:"arguments"`
}

// ServingGLMToolArgsOutput is the parse of Text.
type ServingGLMToolArgsOutput struct {
	// NormalText is the text outside complete tool calls, in order.
	NormalText string `json:"normal_text"`
	// Calls are the complete tool calls in order.
	Calls []GLMToolCall `json:"calls"`
}
