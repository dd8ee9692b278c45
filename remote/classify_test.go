package remote

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// hostileHTTP answers each op the way the exec role of the same name does
// (exec_test.go's playAdapter), in HTTP's terms.
func hostileHTTP(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// read whole, so the server notices a client that hangs up (r.Context)
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		switch strings.TrimPrefix(r.URL.Path, "/v1/ops/") {
		case "echo":
			_, _ = w.Write(b)
		case "reject":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"detail":{"code":"bad_cp_rank","message":"no"}}`))
		case "missing":
			http.NotFound(w, r)
		case "garbage":
			_, _ = w.Write([]byte("Traceback (most recent call last): oops\n"))
		case "utf8":
			_, _ = w.Write([]byte("{\"s\":\"\xff\"}"))
		case "errstring":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"detail":"boom"}`))
		case "neither":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"x"}`))
		case "huge": // no Content-Length: refused after the bound
			chunk := []byte(strings.Repeat("x", 1<<20))
			for range 4 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		case "huge-declared": // refused before a byte is read
			w.Header().Set("Content-Length", "1073741824")
			w.WriteHeader(http.StatusOK)
		case "midline", "crash":
			conn, buf, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			if r.URL.Path == "/v1/ops/midline" {
				_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"a\":")
				_ = buf.Flush()
			}
			_ = conn.Close()
		case "silent":
			<-r.Context().Done()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestEveryReplyGetsOneClassificationOnEveryTransport pins the table of
// docs/adapters.md "How replies are classified": the same reply, sent over
// exec and over HTTP, is the same answer or the same Kind of transport
// error (no reply at all is a timeout over both:
// TestHungOpIsUnavailableAfterThreeTimeoutsOverExecAndHTTP). (It used to differ: a reply that is not JSON was a transport error
// over exec and an answer — so a mismatch — over HTTP, and invalid UTF-8
// was decoded as U+FFFD over both.)
func TestEveryReplyGetsOneClassificationOnEveryTransport(t *testing.T) {
	// a timeout long enough for a restart on a loaded machine: the timeout
	// kind has its own test (TestHungOpIsUnavailableAfterThreeTimeouts…)
	o := Options{Timeout: 5 * time.Second, MaxReplyBytes: 1 << 20, UnavailableAfter: 1000}
	viaExec := openRole(t, o)
	viaHTTP, err := Open(hostileHTTP(t).URL, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = viaHTTP.Close() })
	for _, c := range []struct {
		op   string
		kind Kind // "" for an answer
	}{
		{"echo", ""},
		{"reject", ""},
		{"garbage", KindMalformed},
		{"utf8", KindMalformed},
		{"errstring", KindMalformed},
		{"neither", KindMalformed},
		{"huge", KindTooLarge},
		{"midline", KindExited},
		{"crash", KindExited},
	} {
		for _, r := range []Impl{viaExec, viaHTTP} {
			transport := strings.SplitN(r.Name(), ":", 2)[0]
			res, err := r.Run(c.op, []byte(`{"x":1}`))
			if got := KindOf(err); got != c.kind {
				t.Errorf("%s over %s: kind %q (%v), want %q", c.op, transport, got, err, c.kind)
			}
			if c.kind == "" && (err != nil || len(res.Bytes) == 0) {
				t.Errorf("%s over %s: %+v, %v; want an answer", c.op, transport, res, err)
			}
		}
	}
	for _, r := range []Impl{viaExec, viaHTTP} {
		if _, err := r.Run("missing", []byte(`{}`)); !errors.Is(err, ErrNotImplemented) {
			t.Errorf("missing over %s: %v, want ErrNotImplemented", r.Name(), err)
		}
	}
	if _, err := viaHTTP.Run("huge-declared", []byte(`{}`)); KindOf(err) != KindTooLarge || !strings.Contains(err.Error(), "1073741824") {
		t.Errorf("a body declared at 1 GiB: %v, want too_large naming the length", err)
	}
}

// TestExecSecondReplyIsRecordedAndTheStreamGoesOn: a second reply to an
// answered call is ignored — the call has its answer, the calls in flight
// beside it keep theirs — and recorded as a failure outside every call
// (Log.Unattributed, naming the call and its op), so the audit fails on
// the adapter rather than on an innocent call or not at all.
func TestExecSecondReplyIsRecordedAndTheStreamGoesOn(t *testing.T) {
	r := openRole(t, Options{Timeout: 5 * time.Second})
	if res, err := r.Run("twice", []byte(`{}`)); err != nil || string(res.Bytes) != `{}` {
		t.Fatalf("the first reply: %s, %v", res.Bytes, err)
	}
	if res, err := r.Run("echo", []byte(`{"n":2}`)); err != nil || string(res.Bytes) != `{"n":2}` {
		t.Errorf("the call after a second reply: %s, %v", res.Bytes, err)
	}
	log := r.Log()
	if log.Runs != 1 || log.Unattributed != 1 || !strings.Contains(log.FirstUnattributed, "process 1: protocol: second reply to call 1 (twice)") {
		t.Errorf("log %+v, want one process and one second reply recorded", log)
	}
}
