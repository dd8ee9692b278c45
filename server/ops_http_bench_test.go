package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/server"
)

// largestFixtureInput is the largest input among op's golden fixture cases
// that succeed: what the op's route is measured on.
func largestFixtureInput(b *testing.B, op string) []byte {
	b.Helper()
	f, err := os.Open(filepath.Join("..", "fixtures", "testdata", op+".jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	var best []byte
	for sc.Scan() {
		var c struct {
			In  json.RawMessage `json:"in"`
			Err json.RawMessage `json:"err"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			b.Fatal(err)
		}
		if (len(c.Err) == 0 || string(c.Err) == "null") && len(c.In) > len(best) {
			best = c.In
		}
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return best
}

// BenchmarkOpsHTTPOverInProcess is what the HTTP route adds to each op: on
// the op's largest succeeding golden fixture, POST /v1/ops/{name} over
// loopback (the fast twin, one client, keep-alive) against the same input
// run in process through the catalog (catalog.Entry.Run on fast: decode,
// run, encode), alternately in one loop. It reports both times (µs),
// their ratio and the input's size (KiB).
func BenchmarkOpsHTTPOverInProcess(b *testing.B) {
	cfg := server.DefaultConfig()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := server.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	addr := "http://" + serveLoopback(b, s)
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	lim := cfg.Limits
	for _, e := range catalog.All() {
		in := largestFixtureInput(b, e.Name())
		if in == nil {
			continue
		}
		b.Run("op="+e.Name(), func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			var local, remote time.Duration
			for b.Loop() {
				t0 := time.Now()
				if _, err := e.Run(catalog.Fast, lim, in); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				resp, err := client.Post(addr+"/v1/ops/"+e.Name(), "application/json", bytes.NewReader(in))
				if err != nil {
					b.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				remote += time.Since(t1)
				local += t1.Sub(t0)
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("%d %.300s", resp.StatusCode, body)
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64(local.Microseconds())/n, "inproc-µs")
			b.ReportMetric(float64(remote.Microseconds())/n, "http-µs")
			b.ReportMetric(float64(remote)/float64(local), "http/inproc")
			b.ReportMetric(float64(len(in))/1024, "in-KiB")
		})
	}
}
