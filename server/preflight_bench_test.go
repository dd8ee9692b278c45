package server_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/server"
)

// BenchmarkPreflightHandler is POST /v1/openai/preflight through the
// server's whole handler (routing, drain gate, envelope, twins, metrics),
// without the network: the per-request overhead the endpoint adds to
// serving.chat_normalize (docs/perf.md). The body is the 32 KB request of
// BenchmarkPreflight32K with every S2 flag on.
func BenchmarkPreflightHandler(b *testing.B) {
	cfg := server.DefaultConfig()
	cfg.Logger = slog.New(slog.DiscardHandler)
	s, err := server.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	body := append(append([]byte(`{"request":`), catalog.ChatRequest32K("any")...),
		`,"prompt_tokens":1000,"context_len":131072,"max_total_tokens":200000,`+
			`"flags":{"para_chat_default_max_tokens":32768,"normalize_tool_choice":true,"flatten_tool_role_content":true}}`...)
	h := s.Handler()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, server.PreflightPath, bytes.NewReader(body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code, w.Body.String())
		}
	}
}
