package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/events/zmq"
	"github.com/kvtwin/kvtwin/server"
)

// vLLM's snapshot bootstrap (docs/events.md "Snapshot bootstrap",
// docs/spec/kv-events.md §2.10 A13) through the server: a source's
// snapshot= endpoint is taken at start and at run time and listed; an
// index wrapper that cannot take a snapshot (--verify-state's shadow) is
// refused at start, naming the option.

// TestASourceWithASnapshotEndpointIsListedWithIt: --events …,snapshot= and
// a PUT with "snapshot" both show the endpoint in /v1/events/sources.
func TestASourceWithASnapshotEndpointIsListedWithIt(t *testing.T) {
	ts, _ := start(t, func(c *server.Config) {
		c.Events = []zmq.Source{{Name: "a", Endpoint: "tcp://127.0.0.1:1", Snapshot: "tcp://127.0.0.1:2"}}
		c.EventsIndex.MaxEnginesPerStream = 2
	})
	if r := do(t, ts, http.MethodPut, "/v1/events/sources/b", `{"endpoint":"tcp://127.0.0.1:3","snapshot":"tcp://127.0.0.1:4"}`); r.status != http.StatusCreated {
		t.Fatalf("PUT b with a snapshot endpoint: %d %s", r.status, r.body)
	}
	r := get(t, ts, "/v1/events/sources")
	for _, want := range []string{`"snapshot":"tcp://127.0.0.1:2"`, `"snapshot":"tcp://127.0.0.1:4"`} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("GET /v1/events/sources lacks %s: %s", want, r.body)
		}
	}
}

// TestVerifyStateRefusesASnapshotSource: the --verify-state shadow does
// not forward the bootstrap, so a snapshot= source is refused at start
// with the option and the reason, rather than holding its messages.
func TestVerifyStateRefusesASnapshotSource(t *testing.T) {
	cfg := testConfig(&logBuffer{})
	cfg.Events = []zmq.Source{{Name: "a", Endpoint: "tcp://127.0.0.1:1", Snapshot: "tcp://127.0.0.1:2"}}
	cfg.Verify.Rate, cfg.Verify.CPUShare, cfg.Verify.State = 1, 1, true
	_, err := server.New(cfg)
	if err == nil || !strings.Contains(err.Error(), "source[a].snapshot") || !strings.Contains(err.Error(), "spec.KVEvBootstrapper") {
		t.Errorf("server.New: %v; want a refusal naming source[a].snapshot and spec.KVEvBootstrapper", err)
	}
}
