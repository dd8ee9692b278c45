package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/server"
)

// The log-level contract of docs/spec/admission-serving.md §S5 applied to kvtwin's own
// server: hot-path request success at DEBUG only, every failure at WARN
// (at least one record, never ERROR, since the server recovers from
// it), one-time start-up and shutdown at INFO. The records come from the
// real handlers and Serve through a recording slog.Handler.

// record is one captured log record.
type record struct {
	level slog.Level
	msg   string
}

// recorder is a slog.Handler that keeps every record at or above min.
// Handlers derived by WithAttrs/WithGroup share its store.
type recorder struct {
	min  slog.Level
	mu   *sync.Mutex
	recs *[]record
}

func newRecorder(min slog.Level) recorder {
	return recorder{min: min, mu: &sync.Mutex{}, recs: &[]record{}}
}

func (h recorder) Enabled(_ context.Context, l slog.Level) bool { return l >= h.min }

func (h recorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.recs = append(*h.recs, record{r.Level, r.Message})
	return nil
}

func (h recorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recorder) WithGroup(string) slog.Handler      { return h }

// taken returns the records so far and forgets them.
func (h recorder) taken() []record {
	h.mu.Lock()
	defer h.mu.Unlock()
	recs := *h.recs
	*h.recs = nil
	return recs
}

// count counts records at level.
func count(recs []record, level slog.Level) int {
	n := 0
	for _, r := range recs {
		if r.level == level {
			n++
		}
	}
	return n
}

// recordingServer serves entries (nil: the catalog) through h's logger.
func recordingServer(t *testing.T, h recorder, entries ...catalog.Entry) *httptest.Server {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Logger = slog.New(h)
	if len(entries) > 0 {
		cfg.Entries = entries
	}
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts
}

// hotPath is a run of successful requests: ops, compare, prefix pools,
// listing and probes.
func hotPath(t *testing.T, ts *httptest.Server) {
	t.Helper()
	for i := range 5 {
		mustStatus(t, post(t, ts, "/v1/ops/test.ok", fmt.Sprintf(`{"n":%d}`, i)), http.StatusOK)
		mustStatus(t, post(t, ts, "/v1/ops/test.ok?compare=1", `{"n":1}`), http.StatusOK)
	}
	mustStatus(t, post(t, ts, "/v1/prefix/p", `{"page_size":1,"capacity_tokens":64}`), http.StatusCreated)
	mustStatus(t, post(t, ts, "/v1/prefix/p/insert", `{"tokens":[1,2,3]}`), http.StatusOK)
	mustStatus(t, post(t, ts, "/v1/prefix/p/match", `{"tokens":[1,2,9]}`), http.StatusOK)
	mustStatus(t, get(t, ts, "/v1/ops"), http.StatusOK)
	mustStatus(t, get(t, ts, "/healthz"), http.StatusOK)
	mustStatus(t, get(t, ts, "/readyz"), http.StatusOK)
}

func mustStatus(t *testing.T, r response, want int) {
	t.Helper()
	if r.status != want {
		t.Fatalf("status %d, want %d: %s", r.status, want, r.body)
	}
}

// TestSuccessfulRequestsLogNothingAtInfo is §S5 PL1 for the server: with
// the logger at INFO a run of successful requests leaves zero records, and
// at DEBUG each request served leaves its DEBUG record and nothing above.
func TestSuccessfulRequestsLogNothingAtInfo(t *testing.T) {
	ok := testOp("test.ok", identity, identity)
	info := newRecorder(slog.LevelInfo)
	hotPath(t, recordingServer(t, info, ok))
	if recs := info.taken(); len(recs) != 0 {
		t.Fatalf("successful requests logged at INFO or above: %v", recs)
	}
	debug := newRecorder(slog.LevelDebug)
	hotPath(t, recordingServer(t, debug, ok))
	recs := debug.taken()
	// 10 op requests, 3 prefix requests; listing and probes log nothing.
	if n := count(recs, slog.LevelDebug); n != 13 || len(recs) != 13 {
		t.Fatalf("got %d DEBUG of %d records, want 13 DEBUG and nothing else: %v", n, len(recs), recs)
	}
}

// TestFailedRequestsLogOneWarning is §S5 PL2 and §S5.3 (2), (3) for the
// server: every failed request, client error or server fault alike, logs
// at WARN naming it, once; a recovered panic adds its own WARN record with
// the stack; nothing is ever ERROR, because the server carries on.
func TestFailedRequestsLogOneWarning(t *testing.T) {
	cases := []struct {
		name, path, body string
		entry            catalog.Entry
		status, warnings int
	}{
		{"bad json", "/v1/ops/test.ok", `{"n":`, testOp("test.ok", identity, identity), http.StatusBadRequest, 1},
		{"unknown op", "/v1/ops/test.nope", `{}`, testOp("test.ok", identity, identity), http.StatusNotFound, 1},
		{"internal error", "/v1/ops/test.broken", `{"n":1}`, brokenOp(), http.StatusInternalServerError, 1},
		{"panic", "/v1/ops/test.panic", `{"n":1}`, panicOp(), http.StatusInternalServerError, 2},
		{"twins disagree", "/v1/ops/test.disagree?compare=1", `{"n":1}`, disagreeOp(), http.StatusOK, 1},
		{"prefix pool missing", "/v1/prefix/none/match", `{"tokens":[1]}`, testOp("test.ok", identity, identity), http.StatusNotFound, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newRecorder(slog.LevelInfo)
			ts := recordingServer(t, h, c.entry)
			mustStatus(t, post(t, ts, c.path, c.body), c.status)
			recs := h.taken()
			if n := count(recs, slog.LevelWarn); n != c.warnings || len(recs) != c.warnings {
				t.Fatalf("got %v, want exactly %d WARN records and nothing else", recs, c.warnings)
			}
		})
	}
}

// TestServeLogsStartupAndShutdownOnceAtInfo is §S5 HC2 for the server:
// Serve logs its start-up once at INFO, requests in between add nothing at
// INFO, and a clean shutdown logs the drain and its end at INFO, once
// each, with no WARN or ERROR.
func TestServeLogsStartupAndShutdownOnceAtInfo(t *testing.T) {
	h := newRecorder(slog.LevelInfo)
	cfg := server.DefaultConfig()
	cfg.Logger = slog.New(h)
	cfg.Entries = []catalog.Entry{testOp("test.ok", identity, identity)}
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	client := &http.Client{Transport: &http.Transport{}}
	for i := range 20 {
		resp, err := client.Post("http://"+ln.Addr().String()+"/v1/ops/test.ok", "application/json", strings.NewReader(fmt.Sprintf(`{"n":%d}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	client.CloseIdleConnections()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, r := range h.taken() {
		if r.level != slog.LevelInfo {
			t.Errorf("record %q at %s, want INFO only", r.msg, r.level)
		}
		msgs = append(msgs, r.msg)
	}
	if got := strings.Join(msgs, " | "); got != "serving | draining | shut down cleanly" {
		t.Fatalf("records %q, want serving, draining, shut down cleanly once each", got)
	}
}
