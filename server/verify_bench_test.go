package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/fixtures"
	"github.com/kvtwin/kvtwin/prefix"
	"github.com/kvtwin/kvtwin/server"
)

// verifyMixOps are the ops of BenchmarkVerifyCost's load: one per family,
// their golden fixtures' valid cases as the requests.
var verifyMixOps = []string{
	"transfer.group_contiguous", "transfer.per_layer_script", "cp.split", "cp.page_descriptors",
	"radix.script", "hicache.ack_script", "fp8.quantize_row", "sampling.pack",
	"nsa.index_plan", "serving.chat_normalize", "admission.round", "kvev.decode",
}

// verifyRequest is one request of the load.
type verifyRequest struct {
	path string
	body []byte
}

// verifyLoad is the mix: the ops' valid golden cases, and every fourth
// request an 8K-token prefix score against 8 pools.
func verifyLoad(b *testing.B) []verifyRequest {
	b.Helper()
	var reqs []verifyRequest
	for _, op := range verifyMixOps {
		cases, err := fixtures.ReadFile(filepath.Join("..", "fixtures", "testdata", op+".jsonl"))
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range cases {
			if strings.HasPrefix(c.Case, "valid/") {
				reqs = append(reqs, verifyRequest{"/v1/ops/" + op, c.In})
			}
		}
	}
	var mixed []verifyRequest
	for i, r := range reqs {
		mixed = append(mixed, r)
		if i%3 == 2 {
			mixed = append(mixed, verifyRequest{"/v1/prefix:score", nil}) // filled per server
		}
	}
	return mixed
}

// BenchmarkVerifyCost is serve --verify's cost at saturation: 16 loopback
// clients send the op mix and prefix scores as fast as answers come, at
// --verify 0, 0.01, 0.1 and 1 (one worker at the default CPU share). It
// reports req/s, each request's p50 and p99 latency (µs) and the share of
// samples dropped. Run the rates interleaved (-count) and compare each to
// rate=0 of the same round (docs/perf.md "serve --verify").
func BenchmarkVerifyCost(b *testing.B) {
	load := verifyLoad(b)
	prompt := make([]int64, 8192)
	for i := range prompt {
		prompt[i] = int64(i + 1)
	}
	score, _ := json.Marshal(map[string]any{"tokens": prompt})
	for _, rate := range []float64{0, 0.01, 0.1, 1} {
		b.Run(fmt.Sprintf("rate=%g", rate), func(b *testing.B) {
			base := verifyServer(b, rate)
			verifyBurst(b, base, load, score)
		})
	}
}

// verifyServer serves the default configuration at rate with 8 pools
// holding the 8K-token prompt.
func verifyServer(b *testing.B, rate float64) string {
	b.Helper()
	cfg := server.DefaultConfig()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError}))
	cfg.MaxConcurrent = 64
	cfg.Prefix = prefix.Limits{MaxPools: 8, MaxPoolCapacity: 8192, MaxRequestTokens: 8192, MaxBytes: 1 << 32}
	cfg.Verify.Rate = rate
	s, err := server.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	base := "http://" + serveLoopback(b, s)
	prompt := make([]int64, 8192)
	for i := range prompt {
		prompt[i] = int64(i + 1)
	}
	for p := range 8 {
		name := fmt.Sprintf("pool%d", p)
		postJSON(b, base+"/v1/prefix/"+name, map[string]any{"page_size": 64, "capacity_tokens": 8192}, http.StatusCreated)
		postJSON(b, base+"/v1/prefix/"+name+"/insert", map[string]any{"tokens": prompt}, http.StatusOK)
	}
	return base
}

// verifyBurst sends b.N requests of the load, round robin, from 16
// clients, and reports throughput, latency and the drop share.
func verifyBurst(b *testing.B, base string, load []verifyRequest, score []byte) {
	loadRun(b, 16, func(i int) (string, string, []byte) {
		r := load[i%len(load)]
		if r.body == nil {
			return base + r.path, "application/json", score
		}
		return base + r.path, "application/json", r.body
	}, func([]byte) bool { return true })
	resp, err := http.Get(base + "/v1/verify")
	if err != nil {
		b.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		var s server.VerifySummary
		if err := json.Unmarshal(body, &s); err != nil {
			b.Fatal(err)
		}
		if n := s.Total.Agree + s.Total.Diverge + s.Total.Dropped + s.Total.Error; n > 0 {
			b.ReportMetric(100*float64(s.Total.Dropped)/float64(n), "dropped-%")
		}
		if s.Total.Diverge+s.Total.Error > 0 {
			b.Fatalf("%+v: the twins disagree or a re-run failed", s.Total)
		}
	}
}
