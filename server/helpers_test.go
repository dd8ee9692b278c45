package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/server"
	"github.com/kvtwin/kvtwin/spec"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const filterOp = "transfer.filter_cp_rank"

// logBuffer collects a server's JSON log lines; slog handlers may write
// from any request goroutine.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// records returns the log lines decoded.
func (b *logBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var recs []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(b.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		recs = append(recs, m)
	}
	return recs
}

// find returns the first record at level with msg.
func (b *logBuffer) find(t *testing.T, level, msg string) map[string]any {
	t.Helper()
	for _, r := range b.records(t) {
		if r["level"] == level && r["msg"] == msg {
			return r
		}
	}
	return nil
}

// testConfig is DefaultConfig on an ephemeral port, logging everything to logs.
func testConfig(logs *logBuffer) server.Config {
	cfg := server.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return cfg
}

// start builds a server from cfg (after edit) behind httptest.
func start(t *testing.T, edit func(*server.Config)) (*httptest.Server, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	cfg := testConfig(logs)
	if edit != nil {
		edit(&cfg)
	}
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts, logs
}

// response is a finished HTTP exchange.
type response struct {
	status int
	header http.Header
	body   []byte
}

func do(t *testing.T, ts *httptest.Server, method, path, body string) response {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

func post(t *testing.T, ts *httptest.Server, path, body string) response {
	t.Helper()
	return do(t, ts, http.MethodPost, path, body)
}

func get(t *testing.T, ts *httptest.Server, path string) response {
	t.Helper()
	return do(t, ts, http.MethodGet, path, "")
}

// openAIError asserts r is an OpenAI-style error with status: the members
// in the order of docs/spec/admission-serving.md S1.3, code equal to the status, and
// the type of the status. It returns the decoded body.
func openAIError(t *testing.T, r response, status int, typ string) server.ErrorBody {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	if !bytes.HasPrefix(r.body, []byte(`{"object":"error","message":`)) {
		t.Errorf("body does not start with the OpenAI error members: %s", r.body)
	}
	for _, key := range []string{`"message":`, `"type":`, `"param":`, `"code":`} {
		if !bytes.Contains(r.body, []byte(key)) {
			t.Errorf("body lacks %s: %s", key, r.body)
		}
	}
	order := []int{bytes.Index(r.body, []byte(`"message":`)), bytes.Index(r.body, []byte(`"type":`)),
		bytes.Index(r.body, []byte(`"param":`)), bytes.Index(r.body, []byte(`"code":`))}
	for i := 1; i < len(order); i++ {
		if order[i] < order[i-1] {
			t.Errorf("members out of order (message, type, param, code): %s", r.body)
		}
	}
	var e server.ErrorBody
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("error body does not decode: %v: %s", err, r.body)
	}
	if e.Object != "error" || e.Code != status || e.Type != typ || e.Message == "" {
		t.Errorf("error body %+v, want object error, code %d, type %s and a message", e, status, typ)
	}
	return e
}

func param(e server.ErrorBody) string {
	if e.Param == nil {
		return "<null>"
	}
	return *e.Param
}

// metric returns the value of the sample line starting with series in the
// /metrics text, or -1 when there is none.
func metric(t *testing.T, ts *httptest.Server, series string) float64 {
	t.Helper()
	r := get(t, ts, "/metrics")
	if r.status != http.StatusOK {
		t.Fatalf("/metrics: %d %s", r.status, r.body)
	}
	if v, ok := sample(t, r.body, series); ok {
		return v
	}
	return -1
}

// sample finds the sample line of series in a /metrics text and returns
// its value.
func sample(t *testing.T, text []byte, series string) (float64, bool) {
	t.Helper()
	for line := range strings.SplitSeq(string(text), "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", line, err)
			}
			return v, true
		}
	}
	return 0, false
}

// serveLoopback serves s on a fresh 127.0.0.1 listener until the test
// ends, failing it if Serve returns an error, and returns the address.
func serveLoopback(t testing.TB, s *server.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// Test-only ops, registered through Config.Entries.

type num struct {
	N int `json:"n"`
}

func testOp(name string, refFn, fastFn catalog.Func[num, num]) catalog.Entry {
	return &catalog.Op[num, num]{OpName: name, SpecRef: "server test", Summary: "test op " + name,
		Ref: refFn, Fast: fastFn, Sample: num{N: 1}}
}

func identity(_ spec.Limits, in num) (num, error) { return in, nil }

// panicOp panics on fast and answers on ref: the panic must become a 500.
func panicOp() catalog.Entry {
	return testOp("test.panic", identity, func(spec.Limits, num) (num, error) { panic("boom: a bug in a twin") })
}

// brokenOp fails with an error that is not an input error.
func brokenOp() catalog.Entry {
	broken := func(spec.Limits, num) (num, error) { return num{}, errors.New("disk on fire") }
	return testOp("test.broken", broken, broken)
}

// disagreeOp's fast twin is off by one: compare must say so.
func disagreeOp() catalog.Entry {
	return testOp("test.disagree", identity, func(_ spec.Limits, in num) (num, error) { return num{N: in.N + 1}, nil })
}

// gate holds a blockingOp's calls until released.
type gate struct {
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

func newGate() *gate { return &gate{started: make(chan struct{}, 16), release: make(chan struct{})} }

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

// blockingOp signals on g.started, then waits for g.release.
func blockingOp(g *gate) catalog.Entry {
	block := func(_ spec.Limits, in num) (num, error) {
		g.started <- struct{}{}
		<-g.release
		return in, nil
	}
	return testOp("test.block", block, block)
}

// countingEntry wraps an entry and counts its Run calls, to prove a request
// was refused before any op decoded it.
type countingEntry struct {
	catalog.Entry
	runs *atomic.Int64
}

func (c countingEntry) Run(impl catalog.Impl, lim spec.Limits, in []byte) ([]byte, error) {
	c.runs.Add(1)
	return c.Entry.Run(impl, lim, in)
}
