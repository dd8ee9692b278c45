//go:build cuda

package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/fixtures"
	"github.com/kvtwin/kvtwin/server"
)

// cudaLoadReport is what TestCUDAServerUnderConcurrentLoad writes to
// $KVTWIN_GPU_LOAD_OUT for the GPU run's record (docs/gpu.md).
type cudaLoadReport struct {
	Clients    int      `json:"clients"`
	Requests   int      `json:"requests"`
	Ops        []string `json:"ops"`
	Seconds    float64  `json:"seconds"`
	PerSecond  float64  `json:"requests_per_second"`
	P50Micros  float64  `json:"p50_us"`
	P99Micros  float64  `json:"p99_us"`
	Mismatches int      `json:"mismatches"`
	// Verify is what --verify 1 (against ref, default CPU share) found in
	// the answers it reached; Diverge must be 0.
	Verify server.VerifyCounts `json:"verify"`
	Driver cuda.DriverInfo     `json:"driver"`
}

// TestCUDAServerUnderConcurrentLoad runs `kvtwin serve --impl cuda` (the
// handler, on a loopback listener) under many concurrent clients that
// replay every fixture of every op with a CUDA twin, and requires every
// response body to be byte-identical to the reference's fixture result.
// All requests share the process's single CUDA context, so this is also
// the concurrency stress of that context. It reports throughput and p50/p99
// latency; KVTWIN_GPU_LOAD_CLIENTS and KVTWIN_GPU_LOAD_ROUNDS size it.
func TestCUDAServerUnderConcurrentLoad(t *testing.T) {
	if err := catalog.CUDAStatus(); err != nil {
		t.Fatalf("the CUDA path is not available (a GPU run must not fall back): %v", err)
	}
	info, err := cuda.Info()
	if err != nil {
		t.Fatal(err)
	}
	cases := cudaFixtureCases(t)
	cfg := server.DefaultConfig()
	cfg.Impl = catalog.CUDA
	cfg.MaxConcurrent = 1 << 10
	cfg.Verify.Rate = 1 // the canary at full rate: what the workers reach must agree with ref
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + serveLoopback(t, srv)
	clients, rounds := envInt(t, "KVTWIN_GPU_LOAD_CLIENTS", 32), envInt(t, "KVTWIN_GPU_LOAD_ROUNDS", 2)
	lat, mismatches, elapsed := replayConcurrently(t, base, cases, clients, rounds)
	slices.Sort(lat)
	rep := cudaLoadReport{Clients: clients, Requests: len(lat), Ops: opsOf(cases), Seconds: elapsed.Seconds(),
		PerSecond: float64(len(lat)) / elapsed.Seconds(), P50Micros: quantile(lat, 0.50), P99Micros: quantile(lat, 0.99),
		Mismatches: len(mismatches), Driver: info, Verify: settled(t, base, int64(len(lat))).Total}
	rep.Driver.Kernels = nil
	t.Logf("cuda server (%s, %s): %d requests from %d clients in %.2fs: %.0f req/s, p50 %.0f µs, p99 %.0f µs, %d mismatches",
		info.Device, info.Driver, rep.Requests, rep.Clients, rep.Seconds, rep.PerSecond, rep.P50Micros, rep.P99Micros, rep.Mismatches)
	t.Logf("verify --verify 1 against ref: %+v", rep.Verify)
	writeLoadReport(t, rep)
	if rep.Verify.Diverge != 0 || rep.Verify.Error != 0 {
		t.Errorf("the canary found %d divergences and %d failed re-runs under load", rep.Verify.Diverge, rep.Verify.Error)
	}
	for i, m := range mismatches {
		if i == 5 {
			break
		}
		t.Error(m)
	}
}

// cudaFixtureCases reads the fixtures of every op that has a CUDA twin.
func cudaFixtureCases(t *testing.T) []fixtures.Case {
	t.Helper()
	var out []fixtures.Case
	for _, e := range catalog.All() {
		if !catalog.HasCUDATwin(e) {
			continue
		}
		cs, err := fixtures.ReadFile(filepath.Join("..", "fixtures", "testdata", e.Name()+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, cs...)
	}
	if len(out) == 0 {
		t.Fatal("no fixture of an op with a CUDA twin")
	}
	return out
}

// replayConcurrently sends every case rounds times, spread over clients
// goroutines, and returns each request's latency (µs), the mismatches and
// the wall time.
func replayConcurrently(t *testing.T, base string, cases []fixtures.Case, clients, rounds int) ([]float64, []string, time.Duration) {
	t.Helper()
	work := make(chan fixtures.Case)
	var mu sync.Mutex
	var lat []float64
	var bad []string
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Go(func() {
			r := &fixtures.HTTP{Base: base, Client: &http.Client{Timeout: time.Minute}}
			for c := range work {
				t0 := time.Now()
				got, err := r.Run(c.Op, c.In)
				d := float64(time.Since(t0).Microseconds())
				msg := compareResult(c, got, err)
				mu.Lock()
				lat = append(lat, d)
				if msg != "" {
					bad = append(bad, msg)
				}
				mu.Unlock()
			}
		})
	}
	for range rounds {
		for _, c := range cases {
			work <- c
		}
	}
	close(work)
	wg.Wait()
	return lat, bad, time.Since(start)
}

// compareResult is "" when got is the fixture's result byte for byte.
func compareResult(c fixtures.Case, got fixtures.Result, err error) string {
	if err != nil {
		return fmt.Sprintf("%s %s: %v", c.Op, c.Case, err)
	}
	if want := c.Want(); got.Rejected != want.Rejected || !bytes.Equal(got.Bytes, want.Bytes) {
		return fmt.Sprintf("%s %s: response differs from ref:\n%s", c.Op, c.Case, fixtures.DiffJSON(want, got))
	}
	return ""
}

// opsOf lists the cases' ops once each, in order.
func opsOf(cases []fixtures.Case) []string {
	var ops []string
	for _, c := range cases {
		if len(ops) == 0 || ops[len(ops)-1] != c.Op {
			ops = append(ops, c.Op)
		}
	}
	return ops
}

// quantile is the q-quantile of sorted values (nearest rank).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// envInt reads a positive integer from the environment, or def.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 1<<12 {
		t.Fatalf("%s = %q: want an integer in [1, 4096]", name, s)
	}
	return n
}

// writeLoadReport writes rep as JSON to $KVTWIN_GPU_LOAD_OUT when set.
func writeLoadReport(t *testing.T, rep cudaLoadReport) {
	t.Helper()
	path := os.Getenv("KVTWIN_GPU_LOAD_OUT")
	if path == "" {
		return
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
