package spec

import (
	"encoding/json"
)

// Compatibility families of --openai-compat-family (docs/spec/admission-serving.md S2.1).
const (
	// FamilyNone is upstream behaviour (also spelled "").
	FamilyNone = "none"
	// FamilyGLM adds completion_tokens_details.reasoning_tokens (S2.6).
	FamilyGLM = "glm"
	// FamilyKimi rewrites tool-call ids (S2.9).
	FamilyKimi = "kimi"
)

// Endpoints a request is normalized for.
const (
	// EndpointChat is /v1/chat/completions.
	EndpointChat = "chat"
	// EndpointCompletions is /v1/completions.
	EndpointCompletions = "completions"
)

// CompatFlags are the opt-in server arguments of S2.1; the zero value is
// upstream behaviour.
type CompatFlags struct {
	// ParaChatDefaultMaxTokens is --para-chat-default-max-tokens (>= 1); nil is unset.
	ParaChatDefaultMaxTokens *int64 `json:"para_chat_default_max_tokens,omitempty"`
	// Family is --openai-compat-family: "none" (or ""), "glm" or "kimi".
	Family string `json:"openai_compat_family,omitempty"`
	// NormalizeToolChoice is --normalize-tool-choice (S2.3).
	NormalizeToolChoice bool `json:"normalize_tool_choice,omitempty"`
	// FlattenToolRoleContent is --flatten-tool-role-content (S2.4).
	FlattenToolRoleContent bool `json:"flatten_tool_role_content,omitempty"`
	// StreamFirstChunkPreflight is --stream-first-chunk-preflight (S2.5).
	StreamFirstChunkPreflight bool `json:"stream_first_chunk_preflight,omitempty"`
}

// ServingChatNormalizeInput is the input of serving.chat_normalize (S2.2–S2.4, S2.7).
type ServingChatNormalizeInput struct {
	// Endpoint is "chat" or "completions".
	Endpoint string `json:"endpoint"`
	// Request is the client's JSON request object, untouched.
	Request json.RawMessage `json:"request"`
	// PromptTokens is N after tokenization; nil before tokenization (no soft clamp).
	PromptTokens *int64 `json:"prompt_tokens,omitempty"`
	// ContextLen is the model context length, >= 1.
	ContextLen int64 `json:"context_len"`
	// Flags are the server's compatibility flags.
	Flags CompatFlags `json:"flags"`
}

// ServingChatNormalizeOutput is the request the engine goes on with (Status 200),
// or the 400 it answers instead.
type ServingChatNormalizeOutput struct {
	// Status is 200, or 400 for a request the layer rejects.
	Status int `json:"status"`
	// Request is the normalized request (null on 400): every member the
	// layer does not edit keeps its bytes and place.
	Request json.RawMessage `json:"request"`
	// SoftMaxTokens is true when max_tokens was injected by the server (S2.2).
	SoftMaxTokens bool `json:"soft_max_tokens"`
	// Message is the BadRequestError message on 400, "" otherwise.
	Message string `json:"message"`
}

// Client error messages of S2 (the engine's exact texts).
const (
	// MsgMessagesNotList: a chat request whose messages is not a list.
	MsgMessagesNotList = "messages must be a list"
	// MsgToolsNotList: tools present but neither a list nor null.
	MsgToolsNotList = "tools must be a list or null"
	// MsgUpstreamToolChoice: flag off, tool_choice outside upstream's forms.
	MsgUpstreamToolChoice = `tool_choice must be "none", "auto", "required" or {"type":"function","function":{"name":...}}`
)
