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
	"github.com/kvtwin/kvtwin/spec"
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

// opsBench is a server with the default configuration (the fast twin,
// warnings only logged) on loopback and one keep-alive client: both sides
// of BenchmarkOpsHTTPOverInProcess and its Large sibling.
type opsBench struct {
	// addr is the server's base URL.
	addr string
	// client posts the requests, uncompressed.
	client *http.Client
	// lim are the server's op limits, which the in-process runs use too.
	lim spec.Limits
}

// startOpsBench starts the server of an opsBench; it stops with b.
func startOpsBench(b *testing.B) opsBench {
	cfg := server.DefaultConfig()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := server.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return opsBench{addr: "http://" + serveLoopback(b, s),
		client: &http.Client{Transport: &http.Transport{DisableCompression: true}}, lim: cfg.Limits}
}

// measure runs e on in alternately in process (catalog.Entry.Run on fast:
// decode, run, encode) and through POST /v1/ops/{name}, and reports both
// times (µs), their ratio and the input's size (KiB). Every answer must be
// a 200 whose body is the in-process output and its newline, byte for
// byte: the two sides are timed doing the same work.
func (o opsBench) measure(b *testing.B, e catalog.Entry, in []byte) {
	b.SetBytes(int64(len(in)))
	url := o.addr + "/v1/ops/" + e.Name()
	var local, remote time.Duration
	for b.Loop() {
		t0 := time.Now()
		out, err := e.Run(catalog.Fast, o.lim, in)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		resp, err := o.client.Post(url, "application/json", bytes.NewReader(in))
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		remote += time.Since(t1)
		local += t1.Sub(t0)
		if err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("%d %.300s", resp.StatusCode, body)
		}
		if !bytes.Equal(body, append(out, '\n')) {
			b.Fatalf("HTTP body (%d B) is not the in-process output (%d B) and a newline", len(body), len(out))
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(local.Microseconds())/n, "inproc-µs")
	b.ReportMetric(float64(remote.Microseconds())/n, "http-µs")
	b.ReportMetric(float64(remote)/float64(local), "http/inproc")
	b.ReportMetric(float64(len(in))/1024, "in-KiB")
}

// BenchmarkOpsHTTPOverInProcess is what the HTTP route adds to each op: on
// the op's largest succeeding golden fixture, POST /v1/ops/{name} over
// loopback (the fast twin, one client, keep-alive) against the same input
// run in process through the catalog, alternately in one loop (see
// opsBench.measure).
func BenchmarkOpsHTTPOverInProcess(b *testing.B) {
	o := startOpsBench(b)
	for _, e := range catalog.All() {
		in := largestFixtureInput(b, e.Name())
		if in == nil {
			continue
		}
		b.Run("op="+e.Name(), func(b *testing.B) { o.measure(b, e, in) })
	}
}

// BenchmarkOpsHTTPOverInProcessLarge is the target: the same
// measure as BenchmarkOpsHTTPOverInProcess on every op's large input, over
// 64 KiB (largeInputs), where no golden fixture is. An op whose input type
// cannot be that large is skipped with its computed bound (shown with -v,
// as the testing package hides skipped benchmarks otherwise).
func BenchmarkOpsHTTPOverInProcessLarge(b *testing.B) {
	o := startOpsBench(b)
	for _, e := range catalog.All() {
		in, whyNone, err := largeInputJSON(e)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("op="+e.Name(), func(b *testing.B) {
			if whyNone != "" {
				b.Skip(whyNone)
			}
			o.measure(b, e, in)
		})
	}
}
