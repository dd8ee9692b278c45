package server_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/events/zmq"
	"github.com/kvtwin/kvtwin/prefix"
	"github.com/kvtwin/kvtwin/server"
	"github.com/kvtwin/kvtwin/spec"
)

// restartsOnCue is the served event index with a test fault: once cued,
// its next live message is preceded by a restart nobody observed, as if
// the index had lost an engine's state on its own.
type restartsOnCue struct {
	spec.KVEvIndex
	cue *atomic.Bool
}

func (r restartsOnCue) Live(stream string, frames [][]byte) spec.KVEvStepResult {
	if r.cue.Swap(false) {
		r.KVEvIndex.Restart(stream)
	}
	return r.KVEvIndex.Live(stream, frames)
}

// TestVerifyStateShadowsTheEventFedIndex: with --verify-state the event-fed
// index fed by a real publisher (python3-zmq) has a reference shadow that
// agrees on every message, score and digest; once a test fault loses the
// served index's state, the shadow flags it in /readyz (which stays 200)
// and in kvtwin_events_shadow_diverged.
func TestVerifyStateShadowsTheEventFedIndex(t *testing.T) {
	pub := startPublisher(t, "kv@engine-a@llama")
	var cue atomic.Bool
	base := serveEventsWith(t, []zmq.Source{{Name: "engine-a", Endpoint: pub.pub, Replay: pub.replay}}, func(c *server.Config) {
		c.Verify.Rate, c.Verify.CPUShare, c.Verify.State = 1, 1, true
		c.Verify.DigestInterval = time.Nanosecond // a digest after every message
		c.NewKVEvIndex = func(cfg spec.KVEvConfig, streams []spec.KVEvStream) (spec.KVEvIndex, error) {
			newFast, _ := catalog.KVEvIndex(catalog.Fast)
			ix, err := newFast(cfg, streams)
			return restartsOnCue{ix, &cue}, err
		}
	})
	pub.send(map[string]any{"op": "await_subscribers", "n": 1, "timeout": 15})
	pub.send(map[string]any{"op": "emit", "form": "array", "events": []any{stored([]int64{11, 12}, nil, []int{1, 2, 3, 4, 5, 6, 7, 8})}})
	pub.send(map[string]any{"op": "emit", "form": "map", "events": []any{stored([]int64{13}, 12, []int{9, 10, 11, 12})}})
	waitApplied(t, base, 2)
	if code := httpJSON(t, http.MethodPost, base+"/v1/prefix:score", `{"tokens":[1,2,3,4,5,6,7,8,9]}`, nil); code != http.StatusOK {
		t.Fatalf("score: %d", code)
	}
	shadow := func() prefix.ShadowStatus { return eventsShadow(t, base) }
	// Two messages, their two digests and the score.
	eventually(t, "the shadow compares every call", func() bool { return shadow().Compared >= 5 })
	if s := shadow(); s.State != prefix.ShadowAgree {
		t.Fatalf("a sound index: %+v", s)
	}
	cue.Store(true)
	pub.send(map[string]any{"op": "emit", "form": "array", "events": []any{stored([]int64{14}, 13, []int{13, 14, 15, 16})}})
	waitApplied(t, base, 3)
	eventually(t, "the shadow flags the index", func() bool { return shadow().State == prefix.ShadowDiverged })
	if v := metricOf(t, http.DefaultClient, base, "", "kvtwin_events_shadow_diverged"); v != 1 {
		t.Errorf("kvtwin_events_shadow_diverged = %v, want 1", v)
	}
	t.Logf("flagged: %s", shadow().Detail)
}

// TestReadyzWaitsForTheEventSourcesToCatchUp: a server fed by a real
// publisher answers /readyz 503 catching_up, naming the source and why,
// until the source has applied a live message; then 200 for good. With
// no grace it is ready at once and lists the lagging source.
func TestReadyzWaitsForTheEventSourcesToCatchUp(t *testing.T) {
	pub := startPublisher(t, "kv@engine-a@llama")
	base := serveEventsWith(t, []zmq.Source{{Name: "engine-a", Endpoint: pub.pub, Replay: pub.replay}}, func(c *server.Config) {})
	var rd server.Readiness
	if code := httpJSON(t, http.MethodGet, base+"/readyz", "", &rd); code != http.StatusServiceUnavailable || rd.Status != "catching_up" ||
		rd.Events == nil || len(rd.Events.Sources) != 1 || rd.Events.Sources[0].Name != "engine-a" {
		t.Fatalf("before any message: %d %+v %+v, want 503 catching_up naming engine-a", code, rd.Status, rd.Events)
	}
	pub.send(map[string]any{"op": "await_subscribers", "n": 1, "timeout": 15})
	pub.send(map[string]any{"op": "emit", "form": "array", "events": []any{stored([]int64{11}, nil, []int{1, 2, 3, 4})}})
	waitApplied(t, base, 1)
	if code := httpJSON(t, http.MethodGet, base+"/readyz", "", &rd); code != http.StatusOK || rd.Status != "ready" || !rd.Events.CaughtUp {
		t.Fatalf("after the first message: %d %+v %+v, want 200 ready", code, rd.Status, rd.Events)
	}

	idle := startPublisher(t, "kv@engine-b@llama")
	base = serveEventsWith(t, []zmq.Source{{Name: "engine-b", Endpoint: idle.pub, Replay: idle.replay}}, func(c *server.Config) { c.EventsReadyGrace = 0 })
	if code := httpJSON(t, http.MethodGet, base+"/readyz", "", &rd); code != http.StatusOK || rd.Events.CaughtUp || len(rd.Events.Sources) != 1 {
		t.Fatalf("no grace: %d %+v, want 200 with engine-b listed as lagging", code, rd.Events)
	}
}

// eventsShadow is the event-fed index's reference shadow as /readyz
// reports it; the server must be ready and have one.
func eventsShadow(t *testing.T, base string) prefix.ShadowStatus {
	t.Helper()
	var rd server.Readiness
	if code := httpJSON(t, http.MethodGet, base+"/readyz", "", &rd); code != http.StatusOK || rd.Shadows == nil || rd.Shadows.Events == nil {
		t.Fatalf("/readyz %d %+v: want ready with the events shadow", code, rd.Shadows)
	}
	return *rd.Shadows.Events
}
