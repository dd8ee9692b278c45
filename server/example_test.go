package server_test

import (
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
