package catalog

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// ServingChatNormalize registers serving.chat_normalize (docs/spec/admission-serving.md S2.2–S2.4, S2.7).
func ServingChatNormalize() *Op[spec.ServingChatNormalizeInput, spec.ServingChatNormalizeOutput] {
	d := int64(32768)
	n := int64(1000)
	return &Op[spec.ServingChatNormalizeInput, spec.ServingChatNormalizeOutput]{
		OpName:  "serving.chat_normalize",
		SpecRef: "admission-serving.md S2.2–S2.4, S2.7",
		Summary: "opt-in OpenAI compatibility: soft max_tokens, tool_choice, tool-role flattening, string image_url; 400 message on a client fault",
		Ref:     ref.ServingChatNormalize,
		Fast:    fast.ServingChatNormalize,
		// ref splits the request one element at a time (a decoder per
		// message and per content part) and re-encodes what it changed, all
		// bounded by the request. Measured with the harness's limits on 1 MiB
		// of messages: ref 369 B per request byte (content parts {}), 359
		// (messages {}), 148 (the example's message repeated); fast 8–18.
		Work: Cost{PerInputByte: 512, PerOutputByte: 8, Fixed: 4 << 20},
		Sample: spec.ServingChatNormalizeInput{Endpoint: spec.EndpointChat, ContextLen: 32768, PromptTokens: &n,
			Request: json.RawMessage(`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":"https://x/y.png"}]}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"any"}`),
			Flags:   spec.CompatFlags{ParaChatDefaultMaxTokens: &d, NormalizeToolChoice: true, FlattenToolRoleContent: true}},
		Shapes: []Shape[spec.ServingChatNormalizeInput]{
			{Name: "32KB-tools-flags-on", Make: func() spec.ServingChatNormalizeInput {
				return spec.ServingChatNormalizeInput{Endpoint: spec.EndpointChat, ContextLen: 131072, PromptTokens: &n, Request: ChatRequest32K("any"),
					Flags: spec.CompatFlags{ParaChatDefaultMaxTokens: &d, NormalizeToolChoice: true, FlattenToolRoleContent: true}}
			}},
			{Name: "32KB-tools-flags-off", Make: func() spec.ServingChatNormalizeInput {
				return spec.ServingChatNormalizeInput{Endpoint: spec.EndpointChat, ContextLen: 131072, PromptTokens: &n, Request: ChatRequest32K("auto")}
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
