package main

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strings"
)

// This file builds the well-behaved preflight envelopes (docs/api.md,
// POST /v1/openai/preflight): chat and completions requests of realistic
// sizes, most within the context (200), some over it (413, or the in-stream
// error chunk with 200 when streaming).

// Envelope and request shapes, marshalled once at start-up.
type (
	pfPart struct {
		Type     string `json:"type"`
		Text     string `json:"text,omitempty"`
		ImageURL string `json:"image_url,omitempty"`
	}
	pfMessage struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	}
	pfRequest struct {
		Model    string      `json:"model"`
		Messages []pfMessage `json:"messages,omitempty"`
		Prompt   string      `json:"prompt,omitempty"`
		Stream   bool        `json:"stream,omitempty"`
	}
	pfEnvelope struct {
		Request        pfRequest      `json:"request"`
		PromptTokens   int64          `json:"prompt_tokens"`
		ContextLen     int64          `json:"context_len"`
		MaxTotalTokens int64          `json:"max_total_tokens"`
		Flags          map[string]int `json:"flags,omitempty"`
	}
)

// preflightContext is the context length every envelope declares.
const preflightContext = 32768

// preflightBodies builds n envelopes: 1 in 8 over the context.
func preflightBodies(rng *rand.Rand, n int) []preflightBody {
	out := make([]preflightBody, 0, n)
	for i := range n {
		env := pfEnvelope{ContextLen: preflightContext, MaxTotalTokens: 1 << 20}
		env.Request = preflightRequest(rng, i)
		env.PromptTokens = int64(100 + rng.IntN(preflightContext/2))
		want := http.StatusOK
		if i%8 == 7 {
			env.PromptTokens = preflightContext + int64(rng.IntN(4096)) + 1
			if !env.Request.Stream {
				want = http.StatusRequestEntityTooLarge
			} // a stream gets its 413 as an in-stream chunk, with 200
		}
		if i%3 == 0 {
			env.Flags = map[string]int{"para_chat_default_max_tokens": preflightContext}
		}
		b, err := json.Marshal(env)
		if err != nil {
			panic(err) // unreachable: strings, ints and maps of them
		}
		out = append(out, preflightBody{body: b, want: want})
	}
	return out
}

// preflightRequest is a completions request (1 in 5) or a chat of 1 to 8
// messages of up to 16 KiB of text, some with an image part.
func preflightRequest(rng *rand.Rand, i int) pfRequest {
	r := pfRequest{Model: "m", Stream: i%16 == 15}
	if i%5 == 4 {
		r.Prompt = prose(rng, 64+rng.IntN(16<<10))
		return r
	}
	for m := range 1 + rng.IntN(8) {
		role := "user"
		if m%2 == 1 {
			role = "assistant"
		}
		var content any = prose(rng, 64+rng.IntN(16<<10))
		if role == "user" && rng.IntN(4) == 0 {
			content = []pfPart{{Type: "text", Text: prose(rng, 256)}, {Type: "image_url", ImageURL: "https://example.invalid/x.png"}}
		}
		r.Messages = append(r.Messages, pfMessage{Role: role, Content: content})
	}
	return r
}

// prose is about n bytes of space-separated words.
func prose(rng *rand.Rand, n int) string {
	words := []string{"the", "cache", "prefix", "token", "page", "layer", "request", "model", "of", "a", "and", "kv"}
	var b strings.Builder
	b.Grow(n + 8)
	for b.Len() < n {
		b.WriteString(words[rng.IntN(len(words))])
		b.WriteByte(' ')
	}
	return b.String()
}
