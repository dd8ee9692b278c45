package server_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/kvtwin/kvtwin/server"
)

// Preflight a chat request: what the engine would answer before its first
// token. A prompt that fits gets 200 and the normalized request; one past
// the context length gets the engine's exact 413.
func Example_preflight() {
	cfg := server.DefaultConfig()
	cfg.Logger = slog.New(slog.DiscardHandler)
	srv, err := server.New(cfg)
	if err != nil {
		panic(err)
	}
	for _, promptTokens := range []int{100, 9000} {
		body := fmt.Sprintf(`{"request":{"model":"m","messages":[{"role":"user","content":"hi"}]},`+
			`"prompt_tokens":%d,"context_len":8192,"max_total_tokens":100000}`, promptTokens)
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, server.PreflightPath, strings.NewReader(body)))
		fmt.Printf("%d %s\n", rec.Code, strings.TrimSpace(rec.Body.String()))
	}
	// Output:
	// 200 {"model":"m","messages":[{"role":"user","content":"hi"}]}
	// 413 {"object":"error","message":"The input (9000 tokens) is longer than the model's context length (8192 tokens).","type":"PayloadTooLargeError","param":null,"code":413}
}

// Score a prompt against the prefix pools as a router would, the prompt
// sent as a binary token list (little-endian u32, the other members in the
// query): the same answer as its JSON body, without the text.
func Example_prefixScoreBinary() {
	cfg := server.DefaultConfig()
	cfg.Logger = slog.New(slog.DiscardHandler)
	srv, err := server.New(cfg)
	if err != nil {
		panic(err)
	}
	do := func(path, ctype string, body []byte) string {
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", ctype)
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		return fmt.Sprintf("%d %s", rec.Code, strings.TrimSpace(rec.Body.String()))
	}
	do("/v1/prefix/chat", "application/json", []byte(`{"page_size":2,"capacity_tokens":16}`))
	do("/v1/prefix/chat/insert", "application/json", []byte(`{"tokens":[1,2,3,4,5,6]}`))
	var prompt []byte
	for _, tok := range []uint32{1, 2, 3, 4, 9, 9} {
		prompt = binary.LittleEndian.AppendUint32(prompt, tok)
	}
	fmt.Println(do("/v1/prefix:score?pools=chat", server.TokensContentType, prompt))
	fmt.Println(do("/v1/prefix:score", "application/json", []byte(`{"tokens":[1,2,3,4,9,9],"pools":["chat"]}`)))
	// Output:
	// 200 {"scores":[{"pool":"chat","matched_tokens":4}]}
	// 200 {"scores":[{"pool":"chat","matched_tokens":4}]}
}
