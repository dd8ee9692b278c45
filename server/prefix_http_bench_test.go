package server_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/prefix"
	"github.com/kvtwin/kvtwin/server"
)

// scoreServer serves, on loopback, 8 pools of page size 64 that each hold
// a prompt of n tokens as a 16-node path (the shape of prefix's
// BenchmarkScore240K8Pools), and returns the address and the prompt.
func scoreServer(b *testing.B, n int) (string, []int64) {
	b.Helper()
	cfg := server.DefaultConfig()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg.MaxConcurrent = 64 // 50 clients must not meet 429s
	cfg.Prefix = prefix.Limits{MaxPools: 8, MaxPoolCapacity: n, MaxRequestTokens: n, MaxBytes: 1 << 40}
	s, err := server.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	addr := "http://" + serveLoopback(b, s)
	prompt := make([]int64, n)
	for i := range prompt {
		prompt[i] = int64(i + 1)
	}
	for p := range 8 {
		name := fmt.Sprintf("pool%d", p)
		postJSON(b, addr+"/v1/prefix/"+name, map[string]any{"page_size": 64, "capacity_tokens": n}, http.StatusCreated)
		for j := 1; j <= 16; j++ {
			postJSON(b, addr+"/v1/prefix/"+name+"/insert", map[string]any{"tokens": prompt[:n*j/16]}, http.StatusOK)
		}
	}
	return addr, prompt
}

func postJSON(b *testing.B, url string, v any, status int) {
	b.Helper()
	body, _ := json.Marshal(v)
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		b.Fatalf("%s: %d %s", url, resp.StatusCode, got)
	}
}

// BenchmarkPrefixScoreHTTP is what a router waits for: POST
// /v1/prefix:score of an 8K, 64K or 240K-token prompt against 8 pools that
// hold all of it, over loopback HTTP with keep-alive, from 1 or 50
// concurrent clients, the prompt as JSON or as a binary token list
// (server.TokensContentType). It reports each request's latency as p50 and
// p99 (µs) and the requests per second; every answer must be 200 with all
// 8 pools matching the whole prompt. Each row's yardstick=read-only twin
// sends the same requests from the same client to a net/http handler that
// only reads the body: the transfer's share of the latency.
func BenchmarkPrefixScoreHTTP(b *testing.B) {
	for _, n := range []int{8_192, 65_536, 240_000} {
		addr, prompt := scoreServer(b, n)
		jsonBody, _ := json.Marshal(map[string]any{"tokens": prompt})
		binBody := make([]byte, 0, 4*n)
		for _, t := range prompt {
			binBody = binary.LittleEndian.AppendUint32(binBody, uint32(t))
		}
		want := fmt.Sprintf(`"matched_tokens":%d`, n)
		// The floor: the same bodies to a net/http handler that reads them
		// whole and answers the same 8 scores, nothing decoded or scored.
		floor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, strings.Repeat(`{"pool":"p","matched_tokens":`+strconv.Itoa(n)+`},`, 8))
		}))
		b.Cleanup(floor.Close)
		for _, clients := range []int{1, 50} {
			for _, enc := range []struct {
				name, ctype string
				body        []byte
			}{{"json", "application/json", jsonBody}, {"binary", server.TokensContentType, binBody}} {
				b.Run(fmt.Sprintf("tokens=%d/clients=%d/body=%s", n, clients, enc.name), func(b *testing.B) {
					scoreLoad(b, addr+"/v1/prefix:score", enc.ctype, enc.body, clients, want)
				})
				b.Run(fmt.Sprintf("tokens=%d/clients=%d/body=%s/yardstick=read-only", n, clients, enc.name), func(b *testing.B) {
					scoreLoad(b, floor.URL, enc.ctype, enc.body, clients, want)
				})
			}
		}
	}
}

// scoreLoad sends b.N requests from clients goroutines and reports the
// latency percentiles and the throughput.
func scoreLoad(b *testing.B, url, ctype string, body []byte, clients int, want string) {
	b.SetBytes(int64(len(body)))
	loadRun(b, clients, func(int) (string, string, []byte) { return url, ctype, body },
		func(got []byte) bool { return bytes.Count(got, []byte(want)) == 8 })
}

// loadRun sends b.N requests, the i-th being req(i), from clients
// goroutines, each answer 200 and passing ok, and reports each request's
// p50 and p99 latency and the requests per second.
func loadRun(b *testing.B, clients int, req func(i int) (url, ctype string, body []byte), ok func([]byte) bool) {
	tr := &http.Transport{MaxIdleConnsPerHost: clients, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) || failed.Load() != nil {
					return
				}
				url, ctype, body := req(int(i))
				t0 := time.Now()
				resp, err := client.Post(url, ctype, bytes.NewReader(body))
				if err != nil {
					failed.Store(err.Error())
					return
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				lat[i] = time.Since(t0)
				if err != nil || resp.StatusCode != http.StatusOK || !ok(got) {
					failed.Store(fmt.Sprintf("%s: %d %.200s %v", url, resp.StatusCode, got, err))
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if f := failed.Load(); f != nil {
		b.Fatal(f)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
}
