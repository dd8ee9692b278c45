package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/server"
)

func compact(t *testing.T, b []byte) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	return buf.String()
}

// TestPreflightAnswersWhatTheEngineWould: the endpoint's three outcomes
// (docs/spec/admission-serving.md S1.3, S2), on both implementations, byte for byte.
func TestPreflightAnswersWhatTheEngineWould(t *testing.T) {
	ts, _ := start(t, nil)
	tools := `"tools":[{"type":"function","function":{"name":"f"}}]`
	for _, c := range []struct {
		name, body, ctype, want string
		status                  int
		soft                    bool
	}{
		{"normalized-200",
			`{"request":{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":"https://x/y.png"}]}],` + tools + `,"tool_choice":"any","x":{"k":[1,2]}},"prompt_tokens":1000,"context_len":32768,"max_total_tokens":100000,"flags":{"para_chat_default_max_tokens":32768,"normalize_tool_choice":true}}`,
			"application/json",
			`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"auto"}}]}],` + tools + `,"tool_choice":"required","x":{"k":[1,2]},"max_tokens":31767}`,
			200, true},
		{"s1-413-non-streaming",
			`{"request":{"messages":[]},"prompt_tokens":9000,"context_len":8192,"max_total_tokens":100000}`,
			"application/json",
			`{"object":"error","message":"The input (9000 tokens) is longer than the model's context length (8192 tokens).","type":"PayloadTooLargeError","param":null,"code":413}`,
			413, false},
		{"s1-scheduler-413",
			`{"request":{"prompt":"hi"},"prompt_tokens":8190,"context_len":8192,"max_total_tokens":100000}`,
			"application/json",
			`{"object":"error","message":"The input (8190 tokens) is longer than the model's context length (8185 tokens).","type":"PayloadTooLargeError","param":null,"code":413}`,
			413, false},
		{"s1-streaming-in-stream-chunk",
			`{"request":{"messages":[],"stream":true},"prompt_tokens":9000,"context_len":8192,"max_total_tokens":100000}`,
			"text/event-stream",
			"data: {\"error\": {\"object\": \"error\", \"message\": \"The input (9000 tokens) is longer than the model's context length (8192 tokens).\", \"type\": \"PayloadTooLargeError\", \"param\": null, \"code\": 413}}\n\ndata: [DONE]\n\n",
			200, false},
		{"s2.5-streaming-preflight-413",
			`{"request":{"messages":[],"stream":true},"prompt_tokens":9000,"context_len":8192,"max_total_tokens":100000,"flags":{"stream_first_chunk_preflight":true}}`,
			"application/json",
			`{"object":"error","message":"The input (9000 tokens) is longer than the model's context length (8192 tokens).","type":"PayloadTooLargeError","param":null,"code":413}`,
			413, false},
		{"s2.3-400",
			`{"request":{"messages":[],` + tools + `,"tool_choice":"g"},"prompt_tokens":1,"context_len":8192,"max_total_tokens":100000,"flags":{"normalize_tool_choice":true}}`,
			"application/json",
			`{"object":"error","message":"tool_choice \"g\" is not one of auto, none, required, any or a tool name","type":"BadRequestError","param":null,"code":400}`,
			400, false},
	} {
		for _, impl := range []string{"ref", "fast"} {
			r := post(t, ts, server.PreflightPath+"?impl="+impl, c.body)
			got := string(r.body)
			if c.status == 200 && c.ctype == "application/json" {
				got = compact(t, r.body)
			}
			if r.status != c.status || r.header.Get("Content-Type") != c.ctype || got != c.want {
				t.Errorf("%s on %s: got %d %s\n%s\nwant %d %s\n%s", c.name, impl, r.status, r.header.Get("Content-Type"), got, c.status, c.ctype, c.want)
			}
			if soft := r.header.Get("X-Kvtwin-Max-Tokens") == "soft"; soft != c.soft {
				t.Errorf("%s on %s: soft header %v, want %v", c.name, impl, soft, c.soft)
			}
		}
	}
}

// TestPreflightRejectsMalformedEnvelopes with kvtwin's own 400 naming the field.
func TestPreflightRejectsMalformedEnvelopes(t *testing.T) {
	ts, _ := start(t, nil)
	for body, field := range map[string]string{
		`{"request":[],"prompt_tokens":1,"context_len":10,"max_total_tokens":10}`:                                                      "request",
		`{"request":{"messages":[]},"prompt_tokens":"1","context_len":10,"max_total_tokens":10}`:                                       "prompt_tokens",
		`{"request":{"messages":[]},"prompt_tokens":1,"context_len":10,"max_total_tokens":10,"flags":{"nope":true}}`:                   "flags",
		`{"request":{"messages":[]},"prompt_tokens":1,"context_len":10,"max_total_tokens":10,"extra":1}`:                               "extra",
		`{"request":{"model":"m"},"prompt_tokens":1,"context_len":10,"max_total_tokens":10}`:                                           "request",
		`{"request":{"messages":[]},"prompt_tokens":-1,"context_len":100,"max_total_tokens":100}`:                                      "prompt_tokens",
		`{"request":{"messages":[]},"prompt_tokens":1,"context_len":10,"max_total_tokens":10,"flags":{"openai_compat_family":"glm4"}}`: "flags.openai_compat_family",
	} {
		r := post(t, ts, server.PreflightPath, body)
		e := openAIError(t, r, http.StatusBadRequest, "BadRequestError")
		if param(e) != field {
			t.Errorf("%s: param %q, want %q", body, param(e), field)
		}
	}
	// The envelope is validated in the same pass that reads it: invalid
	// JSON anywhere (deep in the request, after the object, or nested past
	// encoding/json's 10,000 levels) is the generic bad_json at "$".
	deep := strings.Repeat("[", 10001) + strings.Repeat("]", 10001)
	for _, body := range []string{
		`{"request":{"messages":[{"role":"user","content":"a` + "\x01" + `"}]},"prompt_tokens":1,"context_len":10,"max_total_tokens":10}`,
		`{"request":{"messages":[]},"prompt_tokens":1,"context_len":10,"max_total_tokens":10} {}`,
		`{"request":{"messages":[],"x":` + deep + `},"prompt_tokens":1,"context_len":10,"max_total_tokens":10}`,
		`[1,2]`,
	} {
		r := post(t, ts, server.PreflightPath, body)
		if e := openAIError(t, r, http.StatusBadRequest, "BadRequestError"); param(e) != "$" {
			t.Errorf("%.60s: param %q, want $ (bad_json)", body, param(e))
		}
	}
	// A repeated request member: the last one is the request (Python's json.loads).
	r := post(t, ts, server.PreflightPath, `{"request":{"messages":[]},"request":{"prompt":"p"},"prompt_tokens":1,"context_len":10,"max_total_tokens":10}`)
	if r.status != http.StatusOK || compact(t, r.body) != `{"prompt":"p"}` {
		t.Errorf("repeated request: %d %s, want 200 with the last request", r.status, r.body)
	}
	if r := post(t, ts, server.PreflightPath+"?impl=cuda", `{}`); r.status != 400 {
		t.Errorf("impl=cuda: %d, want 400 (no silent fallback)", r.status)
	}
	if r := get(t, ts, server.PreflightPath); r.status != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", r.status)
	}
}
