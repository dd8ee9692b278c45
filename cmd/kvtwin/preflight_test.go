package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRealBinaryPreflight runs the built binary and asks POST
// /v1/openai/preflight for each of its outcomes over loopback
// (docs/spec/admission-serving.md S1.3, S2; docs/api.md).
func TestRealBinaryPreflight(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	base, stop := serveBinary(t)
	client := &http.Client{Timeout: 10 * time.Second}
	for _, c := range []struct {
		name, body, want string
		status           int
	}{
		{"normalized", `{"request":{"messages":[{"role":"user","content":[{"type":"image_url","image_url":"https://x/y.png"}]}]},"prompt_tokens":1000,"context_len":32768,"max_total_tokens":100000,"flags":{"para_chat_default_max_tokens":32768}}`,
			`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"auto"}}]}],"max_tokens":31767}`, 200},
		{"413", `{"request":{"messages":[]},"prompt_tokens":8190,"context_len":8192,"max_total_tokens":100000}`,
			`{"object":"error","message":"The input (8190 tokens) is longer than the model's context length (8185 tokens).","type":"PayloadTooLargeError","param":null,"code":413}`, 413},
		{"in-stream", `{"request":{"messages":[],"stream":true},"prompt_tokens":9000,"context_len":8192,"max_total_tokens":100000}`,
			"data: {\"error\": {\"object\": \"error\", \"message\": \"The input (9000 tokens) is longer than the model's context length (8192 tokens).\", \"type\": \"PayloadTooLargeError\", \"param\": null, \"code\": 413}}\n\ndata: [DONE]\n\n", 200},
		{"400", `{"request":{"messages":[],"tool_choice":"any"},"prompt_tokens":1,"context_len":8192,"max_total_tokens":100000}`,
			`{"object":"error","message":"tool_choice must be \"none\", \"auto\", \"required\" or {\"type\":\"function\",\"function\":{\"name\":...}}","type":"BadRequestError","param":null,"code":400}`, 400},
	} {
		resp, err := client.Post(base+"/v1/openai/preflight", "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != c.status || string(b) != c.want {
			t.Errorf("%s: got %d %q (%v)\nwant %d %q", c.name, resp.StatusCode, b, err, c.status, c.want)
		}
	}
	stop()
}
