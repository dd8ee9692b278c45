package server_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/events/zmq"
	"github.com/kvtwin/kvtwin/spec"
)

// shareSource is the part of a /v1/events/sources element this test reads,
// decoded from the JSON names docs/events.md documents.
type shareSource struct {
	Name       string `json:"name"`
	MaxEngines int    `json:"max_engines"`
	Stream     struct {
		Next     uint64 `json:"next"`
		Counters struct {
			Batches        uint64 `json:"batches"`
			DecodeErrors   uint64 `json:"decode_errors"`
			EnginesRefused uint64 `json:"engines_refused"`
		} `json:"counters"`
	} `json:"stream"`
	Engines []struct {
		Source string `json:"source"`
		DPRank int64  `json:"dp_rank"`
		Stale  bool   `json:"stale"`
	} `json:"engines"`
}

// shareSources polls /v1/events/sources until every source's cursor has
// reached its seq in next, and returns the sources by name.
func shareSources(t *testing.T, base string, next map[string]uint64) map[string]shareSource {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got struct {
			Sources []shareSource `json:"sources"`
		}
		httpJSON(t, http.MethodGet, base+"/v1/events/sources", "", &got)
		by := map[string]shareSource{}
		done := true
		for _, s := range got.Sources {
			by[s.Name] = s
			done = done && s.Stream.Next >= next[s.Name]
		}
		if done {
			return by
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sources never reached %v: %+v", next, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestEventsOneSourceCannotTakeAnotherSourcesEngines is finding 2 of
// issue 27 on the real server fed by two real publishers over ZeroMQ
// (scripts/kvev_publisher.py): source a cycles through 300
// data_parallel_rank values, past the 256 engines the whole index holds;
// source b, which publishes afterwards, still gets its engines and is
// scored by /v1/prefix:score, and none of its batches is a decode error.
// Under the default config two sources get a share of 256 / 2 = 128
// engines each, so a's other 172 batches are refused for their engine and
// counted per source in the listing and in /metrics, not as decode
// errors. (Before the share, a took all 256 engines and b's every store
// was counted as a decode error, with b missing from every score.)
func TestEventsOneSourceCannotTakeAnotherSourcesEngines(t *testing.T) {
	const ranks = 300
	a, b := startPublisher(t, "kv@pod-a@llama"), startPublisher(t, "kv@pod-b@llama")
	base := serveEvents(t, []zmq.Source{
		{Name: "a", Endpoint: a.pub, Replay: a.replay},
		{Name: "b", Endpoint: b.pub, Replay: b.replay},
	})
	a.send(map[string]any{"op": "await_subscribers", "n": 1, "timeout": 15})
	b.send(map[string]any{"op": "await_subscribers", "n": 1, "timeout": 15})
	for r := range ranks {
		a.send(map[string]any{"op": "emit", "rank": r, "events": []any{stored([]int64{int64(r + 1)}, nil, []int{1, 2, 3, 4})}})
	}
	shareSources(t, base, map[string]uint64{"a": ranks})
	b.send(map[string]any{"op": "emit", "rank": 0, "events": []any{stored([]int64{7, 9}, nil, []int{1, 2, 3, 4, 5, 6, 7, 8})}})
	b.send(map[string]any{"op": "emit", "rank": 1, "events": []any{stored([]int64{8}, nil, []int{1, 2, 3, 4})}})
	got := shareSources(t, base, map[string]uint64{"a": ranks, "b": 2})

	sa, sb := got["a"], got["b"]
	if sa.MaxEngines != 128 || sb.MaxEngines != 128 {
		t.Errorf("max_engines a %d, b %d: want the fair share 256 / 2 = 128", sa.MaxEngines, sb.MaxEngines)
	}
	if c := sa.Stream.Counters; len(sa.Engines) != 128 || c.EnginesRefused != ranks-128 || c.DecodeErrors != 0 || c.Batches != ranks {
		t.Errorf("source a: %d engines, counters %+v; want 128 engines and %d engine refusals, no decode error", len(sa.Engines), c, ranks-128)
	}
	if c := sb.Stream.Counters; len(sb.Engines) != 2 || c.EnginesRefused != 0 || c.DecodeErrors != 0 {
		t.Errorf("source b: engines %+v, counters %+v; want its 2 engines, no refusal", sb.Engines, c)
	}

	var res struct {
		Engines []spec.KVEvScore `json:"engines"`
	}
	if code := httpJSON(t, http.MethodPost, base+"/v1/prefix:score", `{"tokens":[1,2,3,4,5,6,7,8]}`, &res); code != http.StatusOK {
		t.Fatalf("score: %d", code)
	}
	bScores := map[int64]spec.KVEvScore{}
	for _, s := range res.Engines {
		if s.Source == "pod-b" {
			bScores[s.DPRank] = s
		}
	}
	if s := bScores[0]; s.Blocks != 2 || s.Stale {
		t.Errorf("pod-b/0 scored %+v; want 2 fresh blocks (all of %v)", s, res.Engines)
	}
	if s := bScores[1]; s.Blocks != 1 || s.Stale {
		t.Errorf("pod-b/1 scored %+v; want 1 fresh block", s)
	}

	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, line := range []string{
		fmt.Sprintf(`kvtwin_events_engines_refused_total{source="a"} %d`, ranks-128),
		`kvtwin_events_engines_refused_total{source="b"} 0`,
		`kvtwin_events_decode_errors_total{source="a"} 0`,
		`kvtwin_events_decode_errors_total{source="b"} 0`,
		`kvtwin_events_engines{source="a"} 128`,
		`kvtwin_events_engines{source="b"} 2`,
		`kvtwin_events_max_engines{source="b"} 128`,
	} {
		if !strings.Contains(string(body), line+"\n") {
			t.Errorf("/metrics lacks %q", line)
		}
	}
}
