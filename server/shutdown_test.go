package server_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/server"
)

// serving is a Server running Serve on a real loopback listener.
type serving struct {
	s      *server.Server
	url    string
	cancel context.CancelFunc
	done   chan error
	client *http.Client
}

func serve(t *testing.T, edit func(*server.Config)) *serving {
	t.Helper()
	cfg := testConfig(&logBuffer{})
	if edit != nil {
		edit(&cfg)
	}
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sv := &serving{s: s, url: "http://" + ln.Addr().String(), cancel: cancel, done: make(chan error, 1),
		client: &http.Client{Transport: &http.Transport{}}}
	go func() { sv.done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		sv.client.CloseIdleConnections()
	})
	return sv
}

// local answers a request through the server's handler, as a request
// arriving during the drain on a connection that is still open would be.
func (sv *serving) local(method, path, body string) response {
	rec := httptest.NewRecorder()
	sv.s.Handler().ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	return response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

func (sv *serving) waitDraining(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if sv.local(http.MethodGet, "/readyz", "").status == http.StatusServiceUnavailable {
			return
		}
	}
	t.Fatal("/readyz never answered 503 after the context was cancelled")
}

func (sv *serving) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-sv.done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
		return nil
	}
}

func TestServeDrainsInFlightRequestsAndReturnsNil(t *testing.T) {
	g := newGate()
	defer g.open()
	sv := serve(t, func(c *server.Config) {
		c.Entries = []catalog.Entry{blockingOp(g)}
		c.ShutdownTimeout = 10 * time.Second
		c.OpTimeout = 9 * time.Second
	})
	if r := postNoFatal(sv.client, sv.url+"/readyz", ""); r.status != http.StatusMethodNotAllowed {
		t.Fatalf("server not up: %d %s", r.status, r.body)
	}
	inFlight := make(chan response, 1)
	go func() { inFlight <- postNoFatal(sv.client, sv.url+"/v1/ops/test.block", `{"n":5}`) }()
	<-g.started
	sv.cancel()
	sv.waitDraining(t)

	rd := sv.local(http.MethodGet, "/readyz", "")
	if !strings.Contains(string(rd.body), `"status":"draining"`) {
		t.Errorf("/readyz while draining: %s", rd.body)
	}
	r := sv.local(http.MethodPost, "/v1/ops/test.block", `{"n":6}`)
	openAIError(t, r, http.StatusServiceUnavailable, "ServiceUnavailableError")
	openAIError(t, sv.local(http.MethodGet, "/v1/ops", ""), http.StatusServiceUnavailable, "ServiceUnavailableError")
	if h := sv.local(http.MethodGet, "/healthz", ""); h.status != http.StatusOK {
		t.Errorf("/healthz while draining: %d; the process is still alive", h.status)
	}
	select {
	case err := <-sv.done:
		t.Fatalf("Serve returned %v with a request in flight", err)
	default:
	}

	g.open()
	if got := <-inFlight; got.status != http.StatusOK || string(got.body) != `{"n":5}`+"\n" {
		t.Errorf("the in-flight request: %d %s, want it to finish with 200", got.status, got.body)
	}
	if err := sv.wait(t); err != nil {
		t.Errorf("Serve after a clean drain: %v, want nil", err)
	}
	if _, err := sv.client.Get(sv.url + "/healthz"); err == nil {
		t.Error("the listener still accepts connections after Serve returned")
	}
}

// An op that ignores its deadline (it never polls Limits.Canceled) cannot
// hold a drain past ShutdownTimeout: its request answers 503 at OpTimeout,
// which Config requires to be below ShutdownTimeout, and Serve returns
// cleanly (issue 15, found 3: a spinning op outlived SIGTERM's drain).
func TestDrainFinishesWhenAnOpIgnoresItsDeadline(t *testing.T) {
	g := newGate()
	defer g.open()
	sv := serve(t, func(c *server.Config) {
		c.Entries = []catalog.Entry{blockingOp(g)}
		c.OpTimeout = 100 * time.Millisecond
		c.ShutdownTimeout = 2 * time.Second
	})
	inFlight := make(chan response, 1)
	go func() { inFlight <- postNoFatal(sv.client, sv.url+"/v1/ops/test.block", `{"n":1}`) }()
	<-g.started
	began := time.Now()
	sv.cancel()
	if err := sv.wait(t); err != nil {
		t.Errorf("Serve = %v, want a clean drain", err)
	}
	if took := time.Since(began); took > time.Second {
		t.Errorf("the drain took %v, want about OpTimeout (100ms)", took)
	}
	got := <-inFlight
	openAIError(t, got, http.StatusServiceUnavailable, "ServiceUnavailableError")
	if !strings.Contains(string(got.body), "OpTimeout (100ms)") {
		t.Errorf("503 body %s does not name OpTimeout", got.body)
	}
}

func TestServeRunsOnce(t *testing.T) {
	sv := serve(t, nil)
	sv.cancel()
	if err := sv.wait(t); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := sv.s.Serve(context.Background(), ln); !errors.Is(err, server.ErrServed) {
		t.Errorf("second Serve = %v, want ErrServed", err)
	}
	if _, err := ln.Accept(); err == nil {
		t.Error("the second Serve left its listener open")
	}
}

func TestListenAndServeBindsConfigAddrUntilCancelled(t *testing.T) {
	cfg := testConfig(&logBuffer{})
	s, err := server.New(cfg) // 127.0.0.1:0
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ListenAndServe(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ListenAndServe = %v, want nil after cancel", err)
	}

	cfg.Addr = "256.0.0.1:1"
	cfg.Auth.InsecureNoAuth = true // past New's refusal of an unauthenticated non-loopback address
	s, err = server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ListenAndServe(context.Background()); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Errorf("ListenAndServe on an unusable address = %v, want a listen error", err)
	}
}
