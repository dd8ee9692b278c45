package ref_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// S1.4's table: C = 8192, T = 100000, so max_req_input_len = 8186 and L_eff = 8185.
func TestServingValidateInputLengthS14(t *testing.T) {
	for _, c := range []struct {
		n        int64
		stage    string
		prefill  int64
		msg      string
		accepted bool
	}{
		{9000, spec.StageTokenizer, 0, "The input (9000 tokens) is longer than the model's context length (8192 tokens).", false},
		{8192, spec.StageTokenizer, 0, "The input (8192 tokens) is longer than the model's context length (8192 tokens).", false},
		{8190, spec.StageScheduler, 1, "The input (8190 tokens) is longer than the model's context length (8185 tokens).", false},
		{8186, spec.StageScheduler, 1, "The input (8186 tokens) is longer than the model's context length (8185 tokens).", false},
		{8185, "", 8185, "", true},
	} {
		out, err := ref.ServingValidateInputLength(spec.DefaultLimits(), spec.ServingValidateInputLengthInput{PromptTokens: c.n, ContextLen: 8192, MaxTotalTokens: 100000})
		if err != nil {
			t.Fatal(err)
		}
		if out.MaxReqInputLen != 8186 || out.Stage != c.stage || out.PrefillTokens != c.prefill || out.Message != c.msg || out.Accepted != c.accepted {
			t.Errorf("N=%d: got %+v", c.n, out)
		}
		if !c.accepted && (out.Status != 413 || out.ErrType != "PayloadTooLargeError") {
			t.Errorf("N=%d: rejection must be 413 PayloadTooLargeError, got %d %s", c.n, out.Status, out.ErrType)
		}
	}
}

func TestServingValidateInputLengthAutoTruncate(t *testing.T) {
	out, err := ref.ServingValidateInputLength(spec.DefaultLimits(), spec.ServingValidateInputLengthInput{PromptTokens: 9000, ContextLen: 8192, MaxTotalTokens: 100000, AllowAutoTruncate: true})
	if err != nil || !out.Accepted || out.PrefillTokens != 8186 {
		t.Fatalf("auto-truncate keeps the first max_req_input_len tokens: %+v %v", out, err)
	}
}

func TestServingValidateInputLengthBadInput(t *testing.T) {
	for _, c := range []struct {
		in    spec.ServingValidateInputLengthInput
		want  *spec.Sentinel
		field string
	}{
		{spec.ServingValidateInputLengthInput{ContextLen: 0, MaxTotalTokens: 10}, spec.ErrPoolTooSmall, "context_len"},
		{spec.ServingValidateInputLengthInput{ContextLen: 10, MaxTotalTokens: -1}, spec.ErrPoolTooSmall, "max_total_tokens"},
		{spec.ServingValidateInputLengthInput{ContextLen: 6, MaxTotalTokens: 100}, spec.ErrPoolTooSmall, "max_req_input_len"},
		{spec.ServingValidateInputLengthInput{PromptTokens: -1, ContextLen: 100, MaxTotalTokens: 100}, spec.ErrNegative, "prompt_tokens"},
	} {
		_, err := ref.ServingValidateInputLength(spec.DefaultLimits(), c.in)
		ie, ok := spec.AsInputError(err)
		if !errors.Is(err, c.want) || !ok || ie.Field != c.field {
			t.Errorf("%+v: got %v, want %s on %s", c.in, err, c.want.Code(), c.field)
		}
	}
}

func TestErrorBodyS13(t *testing.T) {
	msg := "The input (9000 tokens) is longer than the model's context length (8192 tokens)."
	for _, c := range []struct {
		in     spec.ServingErrorBodyInput
		status int
		body   string
	}{
		{spec.ServingErrorBodyInput{Surface: "openai", Status: 413, Message: msg}, 413,
			`{"object":"error","message":"The input (9000 tokens) is longer than the model's context length (8192 tokens).","type":"PayloadTooLargeError","param":null,"code":413}`},
		{spec.ServingErrorBodyInput{Surface: "openai", Status: 400, Message: "x"}, 400,
			`{"object":"error","message":"x","type":"BadRequestError","param":null,"code":400}`},
		{spec.ServingErrorBodyInput{Surface: "openai_stream", Status: 413, Message: "m"}, 200,
			"data: {\"error\": {\"object\": \"error\", \"message\": \"m\", \"type\": \"PayloadTooLargeError\", \"param\": null, \"code\": 413}}\n\ndata: [DONE]\n\n"},
		{spec.ServingErrorBodyInput{Surface: "openai_stream", Status: 400, Message: "é😀\x7f"}, 200,
			"data: {\"error\": {\"object\": \"error\", \"message\": \"\\u00e9\\ud83d\\ude00\\u007f\", \"type\": \"BadRequestError\", \"param\": null, \"code\": 400}}\n\ndata: [DONE]\n\n"},
		{spec.ServingErrorBodyInput{Surface: "generate", Status: 413, Message: msg}, 400,
			`{"error":{"message":"The input (9000 tokens) is longer than the model's context length (8192 tokens)."}}`},
	} {
		out, err := ref.ServingErrorBody(spec.DefaultLimits(), c.in)
		if err != nil || out.Status != c.status || out.Body != c.body {
			t.Errorf("%+v:\n got %d %q %v\nwant %d %q", c.in, out.Status, out.Body, err, c.status, c.body)
		}
	}
	if _, err := ref.ServingErrorBody(spec.DefaultLimits(), spec.ServingErrorBodyInput{Surface: "openai", Status: 200}); !errors.Is(err, spec.ErrBadStatus) {
		t.Errorf("status 200: got %v, want bad_status", err)
	}
}

func TestServingStreamErrorChunkS14(t *testing.T) {
	for _, c := range []struct {
		fr   string
		emit bool
		typ  string
	}{
		{`{"type":"abort","status_code":413,"err_type":"PayloadTooLargeError","message":"m"}`, true, "PayloadTooLargeError"},
		{`{"type":"abort","status_code":413,"message":"m"}`, true, "REQUEST_ENTITY_TOO_LARGE"},
		{`{"type":"abort","status_code":"413","message":"m"}`, true, "REQUEST_ENTITY_TOO_LARGE"},
		{`{"type":"abort","status_code":599,"message":"m"}`, true, "HTTP_599"},
		{`{"type":"abort","status_code":"4x3","message":"m"}`, false, ""},
		{`{"type":"abort","status_code":413.0,"message":"m"}`, false, ""},
		{`{"type":"abort","message":"m"}`, false, ""},
		{`{"type":"stop"}`, false, ""},
		{`null`, false, ""},
	} {
		out, err := ref.ServingStreamErrorChunk(spec.DefaultLimits(), spec.ServingStreamErrorChunkInput{FinishReason: json.RawMessage(c.fr)})
		if err != nil || out.Emit != c.emit || out.ErrType != c.typ {
			t.Errorf("%s: got %+v %v", c.fr, out, err)
		}
	}
	out, _ := ref.ServingStreamErrorChunk(spec.DefaultLimits(), spec.ServingStreamErrorChunkInput{FinishReason: json.RawMessage(`{"type":"abort","status_code":413,"err_type":"PayloadTooLargeError","message":"m"}`)})
	want := "data: {\"error\": {\"object\": \"error\", \"message\": \"m\", \"type\": \"PayloadTooLargeError\", \"param\": null, \"code\": 413}}\n\ndata: [DONE]\n\n"
	if out.Body != want {
		t.Errorf("chunk %q, want %q", out.Body, want)
	}
}

func int64p(v int64) *int64 { return &v }

func TestServingChatNormalizeExamples(t *testing.T) {
	lim := spec.DefaultLimits()
	for _, c := range []struct {
		name  string
		in    spec.ServingChatNormalizeInput
		want  string // normalized request, or the 400 message
		soft  bool
		is400 bool
	}{
		{"S2.2-soft-clamp", spec.ServingChatNormalizeInput{Endpoint: "chat", Request: json.RawMessage(`{"messages":[]}`), PromptTokens: int64p(1000), ContextLen: 32768,
			Flags: spec.CompatFlags{ParaChatDefaultMaxTokens: int64p(32768)}}, `{"messages":[],"max_tokens":31767}`, true, false},
		{"S2.2-client-value-kept", spec.ServingChatNormalizeInput{Endpoint: "chat", Request: json.RawMessage(`{"max_tokens":99999,"messages":[]}`), PromptTokens: int64p(1000), ContextLen: 32768,
			Flags: spec.CompatFlags{ParaChatDefaultMaxTokens: int64p(32768)}}, `{"max_tokens":99999,"messages":[]}`, false, false},
		{"S2-B1-flags-off", spec.ServingChatNormalizeInput{Endpoint: "chat", Request: json.RawMessage(`{"messages":[]}`), ContextLen: 32768}, `{"messages":[]}`, false, false},
		{"S2.3-any", spec.ServingChatNormalizeInput{Endpoint: "chat", Request: json.RawMessage(`{"messages":[],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":" ANY "}`), ContextLen: 10,
			Flags: spec.CompatFlags{NormalizeToolChoice: true}}, `{"messages":[],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required"}`, false, false},
		{"S2.3-name", spec.ServingChatNormalizeInput{Endpoint: "chat", Request: json.RawMessage(`{"messages":[],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"name":"f"}}`), ContextLen: 10,
			Flags: spec.CompatFlags{NormalizeToolChoice: true}}, `{"messages":[],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}}}`, false, false},
		{"S2.3-no-tools", spec.ServingChatNormalizeInput{Endpoint: "chat", Request: json.RawMessage(`{"messages":[],"tool_choice":"required"}`), ContextLen: 10,
			Flags: spec.CompatFlags{NormalizeToolChoice: true}}, `{"messages":[],"tool_choice":"none"}`, false, false},
		{"S2.3-bad-string", spec.ServingChatNormalizeInput{Endpoint: "chat", Request: json.RawMessage(`{"messages":[],"tools":[{"function":{"name":"f"}}],"tool_choice":"g"}`), ContextLen: 10,
			Flags: spec.CompatFlags{NormalizeToolChoice: true}}, `tool_choice "g" is not one of auto, none, required, any or a tool name`, false, true},
		{"S2.4-flatten", spec.ServingChatNormalizeInput{Endpoint: "chat", Request: json.RawMessage(`{"messages":[{"role":"tool","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`), ContextLen: 10,
			Flags: spec.CompatFlags{FlattenToolRoleContent: true}}, `{"messages":[{"role":"tool","content":"a\nb"}]}`, false, false},
		{"S2.4-bad-part", spec.ServingChatNormalizeInput{Endpoint: "chat", Request: json.RawMessage(`{"messages":[{"role":"user"},{"role":"tool","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":"u"}]}]}`), ContextLen: 10,
			Flags: spec.CompatFlags{FlattenToolRoleContent: true}}, `messages[1].content[1]: tool message parts must be text, got "image_url"`, false, true},
		{"S2.7-image-url", spec.ServingChatNormalizeInput{Endpoint: "chat", Request: json.RawMessage(`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":"https://x/y.png"}]}]}`), ContextLen: 10},
			`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"auto"}}]}]}`, false, false},
		{"S2.7-empty", spec.ServingChatNormalizeInput{Endpoint: "chat", Request: json.RawMessage(`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":""}]}]}`), ContextLen: 10},
			`messages[0].content[0].image_url must be a non-empty URL string or an object with "url"`, false, true},
	} {
		out, err := ref.ServingChatNormalize(lim, c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := string(out.Request)
		if c.is400 {
			got = out.Message
			if out.Status != 400 {
				t.Errorf("%s: status %d, want 400", c.name, out.Status)
			}
		}
		if got != c.want || out.SoftMaxTokens != c.soft {
			t.Errorf("%s:\n got %s soft=%v\nwant %s soft=%v", c.name, got, out.SoftMaxTokens, c.want, c.soft)
		}
	}
}

func TestUsageS26(t *testing.T) {
	u, err := ref.ServingUsage(spec.DefaultLimits(), spec.ServingUsageInput{Family: "glm", PromptTokens: 12, Choices: []spec.UsageChoice{{CompletionTokens: 40, ReasoningTokens: 25}}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(u)
	want := `{"prompt_tokens":12,"total_tokens":52,"completion_tokens":40,"prompt_tokens_details":null,"reasoning_tokens":25,"completion_tokens_details":{"reasoning_tokens":25}}`
	if string(b) != want {
		t.Errorf("got %s\nwant %s", b, want)
	}
	u, _ = ref.ServingUsage(spec.DefaultLimits(), spec.ServingUsageInput{Family: "glm", Choices: []spec.UsageChoice{{CompletionTokens: 4, ReasoningTokens: 1}, {CompletionTokens: 3, ReasoningTokens: 2}},
		CompletionTokensDetails: json.RawMessage(`{"accepted_prediction_tokens":3}`)})
	if got := string(u.CompletionTokensDetails); got != `{"accepted_prediction_tokens":3,"reasoning_tokens":3}` {
		t.Errorf("merge: got %s", got)
	}
	if _, err := ref.ServingUsage(spec.DefaultLimits(), spec.ServingUsageInput{Choices: []spec.UsageChoice{{CompletionTokens: 1, ReasoningTokens: 2}}}); !errors.Is(err, spec.ErrReasoningExceedsCompletion) {
		t.Errorf("reasoning > completion: got %v", err)
	}
}

func TestServingGLMToolArgsS28(t *testing.T) {
	tools := json.RawMessage(`[{"type":"function","function":{"name":"run","parameters":{"type":"object","properties":{"code":{"type":"string"},"n":{"type":"number"}}}}}]`)
	text := "hi<tool_call>run\n<arg_key>code</arg_key>\n<arg_value>  def f():\n    return 1\n</arg_value>\n<arg_key> n </arg_key><arg_value>\"42\"</arg_value></tool_call>bye"
	out, err := ref.ServingGLMToolArgs(spec.DefaultLimits(), spec.ServingGLMToolArgsInput{Text: text, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"code": "  def f():\n    return 1\n", "n": 42}`
	if len(out.Calls) != 1 || out.Calls[0].Name != "run" || out.Calls[0].Arguments != want || out.NormalText != "hibye" {
		t.Errorf("got %+v\nwant args %s", out, want)
	}
}

func TestPyFloatRepr(t *testing.T) {
	for lit, want := range map[string]string{"1.0": "1.0", "1e16": "1e+16", "1e15": "1000000000000000.0", "0.0001": "0.0001",
		"1e-5": "1e-05", "-0.0": "-0.0", "1.5e300": "1.5e+300", "1e999": "Infinity", "-0": "0", "123": "123", "2.5": "2.5", "0.1": "0.1"} {
		if got := ref.PyNumber(lit); got != want {
			t.Errorf("PyNumber(%s) = %s, want %s", lit, got, want)
		}
	}
}

// S2.5: preflight turns a first-item error into the non-streaming error and
// changes nothing else.
func TestStreamPreflightS25(t *testing.T) {
	abort := json.RawMessage(`{"type":"abort","status_code":413,"err_type":"PayloadTooLargeError","message":"m"}`)
	out, _ := ref.ServingStreamErrorChunk(spec.DefaultLimits(), spec.ServingStreamErrorChunkInput{FinishReason: abort, First: true, Preflight: true})
	if out.Status != 413 || out.ContentType != "application/json" ||
		out.Body != `{"object":"error","message":"m","type":"PayloadTooLargeError","param":null,"code":413}` {
		t.Errorf("preflight error: %+v", out)
	}
	for _, pre := range []bool{false, true} {
		ok, _ := ref.ServingStreamErrorChunk(spec.DefaultLimits(), spec.ServingStreamErrorChunkInput{Chunk: `{"id":"x"}`, First: true, Preflight: pre})
		if ok.Status != 200 || ok.Body != "data: {\"id\":\"x\"}\n\n" {
			t.Errorf("preflight=%v success: %+v", pre, ok)
		}
	}
}
