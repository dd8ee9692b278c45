package server_test

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/events/pypub"
	"github.com/kvtwin/kvtwin/events/zmq"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/server"
	"github.com/kvtwin/kvtwin/spec"
)

// publisher is scripts/kvev_publisher.py, a real vLLM-style PUB + ROUTER
// replay publisher, driven over its stdin (events/pypub).
type publisher struct {
	t        *testing.T
	p        *pypub.Publisher
	pub      string
	replay   string
	topic    string
	recorded []spec.KVEvStep
}

func startPublisher(t *testing.T, topic string) *publisher {
	t.Helper()
	// XPUB, so the test can wait for the server's subscription before it
	// publishes (a PUB drops what it sends before a subscriber joins).
	p := pypub.Start(t, "../scripts/kvev_publisher.py", "--topic", topic, "--layout", "3", "--socket", "xpub")
	return &publisher{t: t, p: p, pub: p.Pub, replay: p.Replay, topic: topic}
}

// send runs one command and records, for an emit or a lose, the live
// message it numbered, so the test can build the script of every batch.
func (p *publisher) send(cmd map[string]any) {
	p.t.Helper()
	var ack struct {
		Seq     *uint64
		Payload string
	}
	p.p.Do(cmd, &ack)
	p.pub, p.replay = p.p.Pub, p.p.Replay
	if ack.Seq == nil {
		return
	}
	payload, err := hex.DecodeString(ack.Payload)
	if err != nil {
		p.t.Fatal(err)
	}
	seq := binary.BigEndian.AppendUint64(nil, *ack.Seq)
	p.recorded = append(p.recorded, spec.KVEvStep{Op: spec.KVStepLive, Stream: "engine-a",
		Frames: []spec.HexBytes{[]byte(p.topic), seq, payload}})
}

// serveEvents runs a real Server (Serve, so its subscriber runs) with the
// given event sources until the test ends.
func serveEvents(t *testing.T, sources []zmq.Source) string {
	t.Helper()
	cfg := testConfig(&logBuffer{})
	cfg.Events = sources
	cfg.EventsOptions = zmq.Options{ReconnectMin: 20 * time.Millisecond, ReconnectMax: 200 * time.Millisecond,
		ReplayTimeout: 2 * time.Second, ReplayCooldown: time.Second}
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return "http://" + serveLoopback(t, s)
}

func httpJSON(t *testing.T, method, url, body string, v any) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s %s: %v: %s", method, url, err, b)
		}
	}
	return resp.StatusCode
}

// waitApplied polls /v1/events/sources until the stream has applied every
// seq below next and no replay is outstanding.
func waitApplied(t *testing.T, base string, next uint64) server.EventSources {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var got server.EventSources
		httpJSON(t, http.MethodGet, base+"/v1/events/sources", "", &got)
		if s := got.Sources[0].Stream; s.Next >= next && !s.Replaying {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream never reached seq %d: %+v", next, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func stored(hashes []int64, parent any, tokens []int) map[string]any {
	return map[string]any{"type": "BlockStored", "block_hashes": hashes, "parent_block_hash": parent,
		"token_ids": tokens, "block_size": 4, "lora_id": nil, "medium": "GPU"}
}

// TestEventFedScoresMatchTheReferenceOnThePythonPublisher is the issue's
// "done when": a server subscribed to a real vLLM-style publisher
// (python3-zmq, both event encodings, a batch lost on the wire and healed
// by replay) answers /v1/prefix:score with the scores the reference index
// computes from the same batches, and reports the source fresh.
func TestEventFedScoresMatchTheReferenceOnThePythonPublisher(t *testing.T) {
	pub := startPublisher(t, "kv@engine-a@llama")
	base := serveEvents(t, []zmq.Source{{Name: "engine-a", Endpoint: pub.pub, Replay: pub.replay}})
	pub.send(map[string]any{"op": "await_subscribers", "n": 1, "timeout": 15})

	pub.send(map[string]any{"op": "emit", "form": "array", "events": []any{stored([]int64{11, 12}, nil, []int{1, 2, 3, 4, 5, 6, 7, 8})}})
	pub.send(map[string]any{"op": "emit", "form": "map", "events": []any{stored([]int64{-13}, 12, []int{9, 10, 11, 12})}})
	// Lost on the wire (buffered for replay, never sent): the next live
	// batch reveals the gap and the subscriber heals it by replay.
	pub.send(map[string]any{"op": "lose", "form": "array", "events": []any{stored([]int64{21}, nil, []int{1, 2, 3, 9})}})
	pub.send(map[string]any{"op": "emit", "form": "map", "events": []any{
		stored([]int64{22}, 21, []int{5, 5, 5, 5}),
		map[string]any{"type": "BlockRemoved", "block_hashes": []int64{12}, "medium": "GPU"},
	}})
	got := waitApplied(t, base, 4)

	prompts := [][]int64{{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {1, 2, 3, 9, 5, 5, 5, 5, 0}, {7}}
	script := spec.KVEvApplyInput{Streams: []spec.KVEvStream{{Name: "engine-a", Replay: true}}, Steps: pub.recorded}
	for _, p := range prompts {
		script.Steps = append(script.Steps, spec.KVEvStep{Op: spec.KVStepScore, Tokens: p})
	}
	want, err := ref.KVEvApply(spec.DefaultLimits(), script)
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest != want.State.Digest {
		t.Errorf("digest %s, want the reference's %s", got.Digest, want.State.Digest)
	}
	src := got.Sources[0]
	if len(src.Engines) != 1 || src.Engines[0].Stale || src.Engines[0].Source != "engine-a" || src.Engines[0].Model != "llama" {
		t.Errorf("engines %+v, want one fresh engine engine-a of model llama", src.Engines)
	}
	if src.Stream.Counters.ReplaysOK < 1 {
		t.Errorf("replays_ok %d: the lost batch was not healed by replay", src.Stream.Counters.ReplaysOK)
	}
	for i, p := range prompts {
		body, _ := json.Marshal(map[string]any{"tokens": p})
		var res server.ScoreResult
		if code := httpJSON(t, http.MethodPost, base+"/v1/prefix:score", string(body), &res); code != http.StatusOK {
			t.Fatalf("score: %d", code)
		}
		wantScores := want.Trace[len(pub.recorded)+i].Scores
		if diff := cmp.Diff(wantScores, res.Engines); diff != "" {
			t.Errorf("prompt %v (-ref +server):\n%s", p, diff)
		}
	}
}

// TestEventSourcesAnswer404WithoutSources keeps the route honest on a
// server with no event source.
func TestEventSourcesAnswer404WithoutSources(t *testing.T) {
	ts, _ := start(t, nil)
	r := get(t, ts, "/v1/events/sources")
	if r.status != http.StatusNotFound {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
}

// TestEventsAndEventsFromAreExclusive: a server is fed by ZeroMQ sources or
// by a JetStream stream, never both; New says which field to drop.
func TestEventsAndEventsFromAreExclusive(t *testing.T) {
	cfg := testConfig(&logBuffer{})
	cfg.Events = []zmq.Source{{Name: "a", Endpoint: "tcp://127.0.0.1:5557"}}
	cfg.EventsFrom.URL = "nats://127.0.0.1:4222"
	_, err := server.New(cfg)
	ie, ok := spec.AsInputError(err)
	if !ok || ie.Field != "EventsFrom" {
		t.Fatalf("got %v, want a bad_config error naming EventsFrom", err)
	}
}

// TestEventBoundsAreConfiguredAndExported: the index's bounds of one
// message and of held bytes come from EventsIndex, the subscriber's byte
// budget from EventsOptions, and /metrics and /v1/events/sources report
// the budget, what is held in it and the refusals.
func TestEventBoundsAreConfiguredAndExported(t *testing.T) {
	base := serveEventsWith(t, []zmq.Source{{Name: "a", Endpoint: "tcp://127.0.0.1:1"}}, func(cfg *server.Config) {
		cfg.EventsOptions.MaxBufferedBytes = 96 << 20
		cfg.EventsIndex.MaxEvents = -1
	})
	if base != "" {
		t.Fatal("a negative max_events was accepted")
	}
	base = serveEventsWith(t, []zmq.Source{{Name: "a", Endpoint: "tcp://127.0.0.1:1"}}, func(cfg *server.Config) {
		cfg.EventsOptions.MaxBufferedBytes = 96 << 20
		cfg.EventsIndex.MaxEvents = 7
	})
	var got server.EventSources
	httpJSON(t, http.MethodGet, base+"/v1/events/sources", "", &got)
	if s := got.Sources[0].Subscriber; s == nil || s.BufferedBytes != 0 || s.OversizedMessages != 0 {
		t.Fatalf("source %+v", got.Sources[0].Subscriber)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		"kvtwin_events_buffer_budget_bytes 1.00663296e+08",
		"kvtwin_events_buffer_in_use_bytes 0",
		`kvtwin_events_buffered_bytes{source="a"} 0`,
		`kvtwin_events_oversized_messages_total{source="a"} 0`,
		`kvtwin_events_buffer_overflows_total{source="a"} 0`,
		`kvtwin_events_held_overflow_total{source="a"} 0`,
		`kvtwin_events_log_suppressed_total{source="a"} 0`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// serveEventsWith is serveEvents with the config edited first; "" when New
// refuses the config.
func serveEventsWith(t *testing.T, sources []zmq.Source, edit func(*server.Config)) string {
	t.Helper()
	cfg := testConfig(&logBuffer{})
	cfg.Events = sources
	edit(&cfg)
	s, err := server.New(cfg)
	if err != nil {
		if ie, ok := spec.AsInputError(err); !ok || !strings.HasPrefix(ie.Field, "EventsIndex.") {
			t.Fatalf("New: %v, want a bad_config error naming EventsIndex", err)
		}
		return ""
	}
	return "http://" + serveLoopback(t, s)
}
