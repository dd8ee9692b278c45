package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/events/zmq"
	"github.com/kvtwin/kvtwin/prefix"
	"github.com/kvtwin/kvtwin/server"
	"github.com/kvtwin/kvtwin/spec"
)

// Sources at run time (docs/events.md "Sources at run time",
// docs/spec/kv-events.md §2.10 A11): PUT and DELETE
// /v1/events/sources/{name} on a real server fed by real publishers
// (scripts/kvev_publisher.py).

// capturedIndex serves cfg on the fast index and keeps it, so a test can
// read the index's whole State() (pages included), which no route shows.
func capturedIndex(t *testing.T, cfg *server.Config) *spec.KVEvIndex {
	t.Helper()
	newFast, err := catalog.KVEvIndex(catalog.Fast)
	if err != nil {
		t.Fatal(err)
	}
	ix := new(spec.KVEvIndex)
	cfg.NewKVEvIndex = func(c spec.KVEvConfig, streams []spec.KVEvStream) (spec.KVEvIndex, error) {
		i, err := newFast(c, streams)
		*ix = i
		return i, err
	}
	return ix
}

// engineJSON is the JSON of the engines the named stream feeds in st,
// pages and all: what must not change when another source comes or goes.
func engineJSON(t *testing.T, st spec.KVEvState, stream string) string {
	t.Helper()
	var mine []spec.KVEvEngineState
	for _, en := range st.Engines {
		if en.Stream == stream {
			mine = append(mine, en)
		}
	}
	b, err := json.Marshal(mine)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// listed is GET /v1/events/sources by source name.
func listed(t *testing.T, base string) map[string]server.EventSource {
	t.Helper()
	var got server.EventSources
	if code := httpJSON(t, http.MethodGet, base+"/v1/events/sources", "", &got); code != http.StatusOK {
		t.Fatalf("GET /v1/events/sources: %d", code)
	}
	out := map[string]server.EventSource{}
	for _, s := range got.Sources {
		out[s.Name] = s
	}
	return out
}

// scoredEngines is the engines (source/dp_rank) /v1/prefix:score answers
// for tokens, with their blocks.
func scoredEngines(t *testing.T, base string, tokens []int) map[string]int {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"tokens": tokens})
	var res server.ScoreResult
	if code := httpJSON(t, http.MethodPost, base+"/v1/prefix:score", string(body), &res); code != http.StatusOK {
		t.Fatalf("score: %d", code)
	}
	out := map[string]int{}
	for _, e := range res.Engines {
		out[fmt.Sprintf("%s/%d", e.Source, e.DPRank)] = e.Blocks
	}
	return out
}

// sourceBody is a PUT body for p.
func sourceBody(p *publisher, topic string) string {
	b, _ := json.Marshal(map[string]any{"endpoint": p.pub, "replay": p.replay, "topic": topic})
	return string(b)
}

// TestEventSourcesAddedReplacedAndRemovedAtRunTimeLeaveTheOthersUntouched
// is issue 32 item 1 on a real server fed by three real publishers: a
// source added through the API is connected, listed with its engines and
// scored; a PUT of the same configuration keeps its connection; a PUT of
// another configuration replaces it (its engines dropped, then fed anew,
// healed by replay); a DELETE removes it from the listing and the scores;
// and through all of it source a keeps its one connection, its cursor and,
// byte for byte, its engines and pages.
func TestEventSourcesAddedReplacedAndRemovedAtRunTimeLeaveTheOthersUntouched(t *testing.T) {
	pa, pb, pc := startPublisher(t, "kv@pod-a@llama"), startPublisher(t, "kv@pod-b@llama"), startPublisher(t, "kv@pod-c@llama")
	cfg := testConfig(&logBuffer{})
	cfg.Events = []zmq.Source{{Name: "a", Endpoint: pa.pub, Replay: pa.replay}, {Name: "b", Endpoint: pb.pub, Replay: pb.replay}}
	cfg.EventsIndex = spec.KVEvConfig{MaxEngines: 12, MaxEnginesPerStream: 4} // room for a third source, not a fourth
	cfg.EventsOptions = zmq.Options{ReconnectMin: 20 * time.Millisecond, ReconnectMax: 200 * time.Millisecond, ReplayTimeout: 2 * time.Second}
	ix := capturedIndex(t, &cfg)
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + serveLoopback(t, s)
	pa.send(map[string]any{"op": "await_subscribers", "n": 1, "timeout": 15})
	pb.send(map[string]any{"op": "await_subscribers", "n": 1, "timeout": 15})
	pa.send(map[string]any{"op": "emit", "events": []any{stored([]int64{11, 12}, nil, []int{1, 2, 3, 4, 5, 6, 7, 8})}})
	pa.send(map[string]any{"op": "emit", "rank": 1, "events": []any{stored([]int64{13}, nil, []int{1, 2, 3, 4})}})
	pb.send(map[string]any{"op": "emit", "events": []any{stored([]int64{21}, nil, []int{1, 2, 3, 4})}})
	shareSources(t, base, map[string]uint64{"a": 2, "b": 1})
	aEngines, aStream := engineJSON(t, (*ix).State(), "a"), listed(t, base)["a"].Stream

	// Added: 201, connected, listed with its engine, scored.
	put := func(name, body string) response {
		return doURL(t, http.MethodPut, base+"/v1/events/sources/"+name, body)
	}
	if r := put("c", sourceBody(pc, "")); r.status != http.StatusCreated || !strings.Contains(string(r.body), `"action":"added"`) {
		t.Fatalf("PUT c: %d %s", r.status, r.body)
	}
	pc.send(map[string]any{"op": "await_subscribers", "n": 1, "timeout": 15})
	pc.send(map[string]any{"op": "emit", "events": []any{stored([]int64{31, 32}, nil, []int{1, 2, 3, 4, 5, 6, 7, 8})}})
	got := shareSources(t, base, map[string]uint64{"a": 2, "b": 1, "c": 1})
	if c := got["c"]; len(c.Engines) != 1 || c.Engines[0].Source != "pod-c" || c.MaxEngines != 4 {
		t.Errorf("source c listed as %+v, want its engine pod-c and the share 4", c)
	}
	if sc := scoredEngines(t, base, []int{1, 2, 3, 4, 5, 6, 7, 8}); sc["pod-c/0"] != 2 || sc["pod-a/0"] != 2 || sc["pod-b/0"] != 1 {
		t.Errorf("scores %v, want pod-c/0 with 2 blocks beside pod-a's and pod-b's", sc)
	}

	// The same configuration again: 200, nothing changes.
	if r := put("c", sourceBody(pc, "")); r.status != http.StatusOK || !strings.Contains(string(r.body), `"action":"unchanged"`) {
		t.Fatalf("PUT c again: %d %s", r.status, r.body)
	}
	if sub := listed(t, base)["c"].Subscriber; sub == nil || sub.Connects != 1 {
		t.Errorf("c's subscriber after an identical PUT: %+v, want its one connection", sub)
	}

	// A fourth source finds no room: 409 naming the flag.
	r := put("d", `{"endpoint":"tcp://127.0.0.1:1"}`)
	if e := openAIError(t, r, http.StatusConflict, "ConflictError"); !strings.Contains(e.Message, "--events-max-engines-per-source") ||
		!strings.Contains(string(e.Detail), `"code":"too_large"`) {
		t.Errorf("PUT d past the shares: %s", r.body)
	}

	// Replaced: 200, its engines dropped, then fed anew through the new
	// subscription (the publisher's next seq opens a gap that replay heals).
	if r := put("b", sourceBody(pb, "kv@pod-b")); r.status != http.StatusOK || !strings.Contains(string(r.body), `"action":"replaced"`) {
		t.Fatalf("PUT b with a topic: %d %s", r.status, r.body)
	}
	if eng := engineJSON(t, (*ix).State(), "b"); eng != "null" {
		t.Errorf("b's engines outlived its replacement: %s", eng)
	}
	pb.send(map[string]any{"op": "await_subscribers", "n": 2, "timeout": 15})
	pb.send(map[string]any{"op": "emit", "events": []any{stored([]int64{22}, 21, []int{5, 6, 7, 8})}})
	got = shareSources(t, base, map[string]uint64{"b": 2})
	if b := got["b"]; len(b.Engines) != 1 || b.Engines[0].Stale {
		t.Errorf("b after its replacement: %+v, want its engine fresh again", b)
	}
	if sub := listed(t, base)["b"].Subscriber; sub == nil || sub.Topic != "kv@pod-b" {
		t.Errorf("b's subscriber %+v, want the new topic", sub)
	}

	// Removed: 200 with the removed source, gone from the listing and the scores.
	r = doURL(t, http.MethodDelete, base+"/v1/events/sources/c", "")
	var ch server.SourceChange
	if err := json.Unmarshal(r.body, &ch); r.status != http.StatusOK || err != nil || ch.Name != "c" || ch.Action != server.SourceRemoved || ch.Source.Endpoint != pc.pub {
		t.Fatalf("DELETE c: %d %s", r.status, r.body)
	}
	if _, ok := listed(t, base)["c"]; ok {
		t.Error("c is still listed after its removal")
	}
	if sc := scoredEngines(t, base, []int{1, 2, 3, 4, 5, 6, 7, 8}); sc["pod-c/0"] != 0 {
		t.Errorf("pod-c still scored after its removal: %v", sc)
	}
	openAIError(t, doURL(t, http.MethodDelete, base+"/v1/events/sources/c", ""), http.StatusNotFound, "NotFoundError")

	// a was never touched.
	if eng := engineJSON(t, (*ix).State(), "a"); eng != aEngines {
		t.Errorf("a's engines changed while the others came and went:\nbefore %s\nafter  %s", aEngines, eng)
	}
	a := listed(t, base)["a"]
	if a.Subscriber == nil || a.Subscriber.Connects != 1 || a.Subscriber.Reconnects != 0 {
		t.Errorf("a's subscriber %+v, want its one connection", a.Subscriber)
	}
	if fmt.Sprint(a.Stream) != fmt.Sprint(aStream) {
		t.Errorf("a's stream changed:\nbefore %+v\nafter  %+v", aStream, a.Stream)
	}
}

// doURL sends one request to an absolute URL.
func doURL(t *testing.T, method, url, body string) response {
	t.Helper()
	return call(t, http.DefaultClient, method, url, "", body)
}

// TestAPutOfAnInvalidSourceIs400WithTheCanonicalError: the body is checked
// as an --events-file entry (fields, types, endpoint, rank, a name that is
// the path's), and nothing changes.
func TestAPutOfAnInvalidSourceIs400WithTheCanonicalError(t *testing.T) {
	ts, _ := start(t, func(c *server.Config) {
		c.EventsRuntime = true
		c.EventsIndex.MaxEnginesPerStream = 2
	})
	for _, c := range []struct{ name, body, param, code string }{
		{"e", `{"endpoint":"udp://127.0.0.1:5557"}`, "source[e].endpoint", "bad_source"},
		{"e", `{"endpoint":"tcp://127.0.0.1:5557","rank":-1}`, "source[e].rank", "bad_source"},
		{"e", `{"endpoint":"tcp://127.0.0.1:5557","replay":"tcp://*:5558"}`, "source[e].replay", "bad_source"},
		{"e", `{}`, "source[e].endpoint", "bad_source"},
		{"e", `{"endpoint":5}`, "endpoint", "bad_json"},
		{"e", `{"endpoint":"tcp://127.0.0.1:5557","port":1}`, "port", "bad_json"},
		{"e", `{"name":"f","endpoint":"tcp://127.0.0.1:5557"}`, "name", "bad_source"},
		{"e", `[]`, "$", "bad_json"},
		{"e", `{"endpoint":"tcp://127.0.0.1:5557","Endpoint":"tcp://127.0.0.1:5558"}`, "$", "bad_json"}, // one member, twice
		{"e%20f", `{"endpoint":"tcp://127.0.0.1:5557"}`, "source.name", "bad_source"},
	} {
		r := do(t, ts, http.MethodPut, "/v1/events/sources/"+c.name, c.body)
		e := openAIError(t, r, http.StatusBadRequest, "BadRequestError")
		if param(e) != c.param || !strings.Contains(string(e.Detail), `"code":"`+c.code+`"`) {
			t.Errorf("PUT %s %s: param %s, detail %s; want %s, %s", c.name, c.body, param(e), e.Detail, c.param, c.code)
		}
	}
	var got server.EventSources
	if err := json.Unmarshal(get(t, ts, "/v1/events/sources").body, &got); err != nil || len(got.Sources) != 0 {
		t.Errorf("sources after the refusals: %+v (%v), want none", got, err)
	}
}

// TestAServerStartedWithoutSourcesTakesThemOnlyWithAnIndex: with
// EventsRuntime (`serve --events-max-engines-per-source`, or an
// --events-file) a server with no source lists none (200, not 404) and
// takes them at run time; without it there is no index, and a PUT is 409
// saying how to start one, a DELETE 404.
func TestAServerStartedWithoutSourcesTakesThemOnlyWithAnIndex(t *testing.T) {
	ts, _ := start(t, func(c *server.Config) {
		c.EventsRuntime = true
		c.EventsIndex.MaxEnginesPerStream = 2
	})
	r := get(t, ts, "/v1/events/sources")
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"sources":[]`) {
		t.Fatalf("GET with no source yet: %d %s", r.status, r.body)
	}
	for _, name := range []string{"pod-a", "pod-b"} {
		if r := do(t, ts, http.MethodPut, "/v1/events/sources/"+name, `{"endpoint":"tcp://127.0.0.1:1"}`); r.status != http.StatusCreated {
			t.Fatalf("PUT %s: %d %s", name, r.status, r.body)
		}
	}
	if r := get(t, ts, "/v1/events/sources"); !strings.Contains(string(r.body), `"name":"pod-b"`) {
		t.Errorf("pod-b not listed: %s", r.body)
	}

	bare, _ := start(t, nil)
	e := openAIError(t, do(t, bare, http.MethodPut, "/v1/events/sources/pod-a", `{"endpoint":"tcp://127.0.0.1:1"}`), http.StatusConflict, "ConflictError")
	if !strings.Contains(e.Message, "--events-max-engines-per-source") {
		t.Errorf("PUT without an index: %q, want it to say how to start one", e.Message)
	}
	openAIError(t, do(t, bare, http.MethodDelete, "/v1/events/sources/pod-a", ""), http.StatusNotFound, "NotFoundError")
}

// TestASecondSourceNeedsTheShareSetAtStart: a server started with one
// source and no --events-max-engines-per-source gave it every engine
// (§2.10 A5: 256 / 1), and A11 fixes that share, so a second source is
// refused with 409 naming the flag to set; set, the same add succeeds.
func TestASecondSourceNeedsTheShareSetAtStart(t *testing.T) {
	one := []zmq.Source{{Name: "a", Endpoint: "tcp://127.0.0.1:1"}}
	ts, _ := start(t, func(c *server.Config) { c.Events = one })
	r := do(t, ts, http.MethodPut, "/v1/events/sources/b", `{"endpoint":"tcp://127.0.0.1:2"}`)
	e := openAIError(t, r, http.StatusConflict, "ConflictError")
	for _, want := range []string{"source b", "256 engines", "--events-max-engines-per-source", "--events-max-engines 256", "at most 1 sources"} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("409 message %q lacks %q", e.Message, want)
		}
	}
	if param(e) != "config.max_engines" {
		t.Errorf("param %s, want config.max_engines", param(e))
	}
	ts, _ = start(t, func(c *server.Config) {
		c.Events = one
		c.EventsIndex.MaxEnginesPerStream = 8
	})
	if r := do(t, ts, http.MethodPut, "/v1/events/sources/b", `{"endpoint":"tcp://127.0.0.1:2"}`); r.status != http.StatusCreated {
		t.Errorf("PUT b with a share of 8: %d %s", r.status, r.body)
	}
}

// TestAReplicasSourcesCannotChange: a JetStream replica's sources are the
// relay's; PUT and DELETE are 409 saying so, before any connection.
func TestAReplicasSourcesCannotChange(t *testing.T) {
	ts, _ := start(t, func(c *server.Config) {
		c.EventsFrom.URL = "nats://127.0.0.1:1"
		c.EventsFrom.Sources = []string{"pod-a"}
		c.EventsFrom.ID = "r1"
	})
	for _, r := range []response{
		do(t, ts, http.MethodPut, "/v1/events/sources/pod-b", `{"endpoint":"tcp://127.0.0.1:1"}`),
		do(t, ts, http.MethodDelete, "/v1/events/sources/pod-a", ""),
	} {
		if e := openAIError(t, r, http.StatusConflict, "ConflictError"); !strings.Contains(e.Message, "--events-from") || !strings.Contains(e.Message, "relay") {
			t.Errorf("a replica's refusal: %q", e.Message)
		}
	}
}

// TestChangingAnEventSourceNeedsAdmin: PUT and DELETE
// /v1/events/sources/{name} need an admin token (a replacement drops the
// engines every router's scores rely on); read and write tokens get 403,
// no token 401, and GET stays read.
func TestChangingAnEventSourceNeedsAdmin(t *testing.T) {
	ts := startTokens(t, allScopesTokenFile, func(c *server.Config) {
		c.EventsRuntime = true
		c.EventsIndex.MaxEnginesPerStream = 2
	})
	url := ts.URL + "/v1/events/sources/pod-a"
	body := `{"endpoint":"tcp://127.0.0.1:1"}`
	for _, c := range []struct {
		method, token string
		want          int
	}{
		{http.MethodPut, "", http.StatusUnauthorized},
		{http.MethodPut, readToken, http.StatusForbidden},
		{http.MethodPut, writeToken, http.StatusForbidden},
		{http.MethodDelete, writeToken, http.StatusForbidden},
		{http.MethodPut, adminToken, http.StatusCreated},
		{http.MethodDelete, adminToken, http.StatusOK},
		{http.MethodPost, adminToken, http.StatusMethodNotAllowed},
	} {
		if r := call(t, ts.Client(), c.method, url, c.token, body); r.status != c.want {
			t.Errorf("%s with token %q: %d %s, want %d", c.method, c.token, r.status, r.body, c.want)
		}
	}
	if r := call(t, ts.Client(), http.MethodGet, ts.URL+"/v1/events/sources", readToken, ""); r.status != http.StatusOK {
		t.Errorf("GET with a read token: %d", r.status)
	}
}

// TestTheVerifyStateShadowFollowsSourcesChangedAtRunTime: under
// --verify-state the reference shadow repeats every add and removal at the
// same point of the call sequence, so it still agrees on each message and
// digest after a source is added, removed and added again under the same
// name (which starts it new, §2.10 A11).
func TestTheVerifyStateShadowFollowsSourcesChangedAtRunTime(t *testing.T) {
	pub := startPublisher(t, "kv@pod-a@llama")
	cfg := testConfig(&logBuffer{})
	cfg.EventsRuntime = true
	cfg.EventsIndex.MaxEnginesPerStream = 4
	cfg.Verify.Rate, cfg.Verify.CPUShare, cfg.Verify.State = 1, 1, true
	cfg.Verify.DigestInterval = time.Nanosecond // a digest after every call
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + serveLoopback(t, s)
	body := sourceBody(pub, "")
	if r := doURL(t, http.MethodPut, base+"/v1/events/sources/a", body); r.status != http.StatusCreated {
		t.Fatalf("PUT a: %d %s", r.status, r.body)
	}
	pub.send(map[string]any{"op": "await_subscribers", "n": 1, "timeout": 15})
	pub.send(map[string]any{"op": "emit", "events": []any{stored([]int64{11, 12}, nil, []int{1, 2, 3, 4, 5, 6, 7, 8})}})
	shareSources(t, base, map[string]uint64{"a": 1})
	if r := doURL(t, http.MethodDelete, base+"/v1/events/sources/a", ""); r.status != http.StatusOK {
		t.Fatalf("DELETE a: %d %s", r.status, r.body)
	}
	if r := doURL(t, http.MethodPut, base+"/v1/events/sources/a", body); r.status != http.StatusCreated {
		t.Fatalf("PUT a again: %d %s", r.status, r.body)
	}
	pub.send(map[string]any{"op": "await_subscribers", "n": 2, "timeout": 15})
	pub.send(map[string]any{"op": "emit", "events": []any{stored([]int64{13}, 12, []int{9, 10, 11, 12})}})
	shareSources(t, base, map[string]uint64{"a": 2})
	shadow := func() prefix.ShadowStatus { return eventsShadow(t, base) }
	// add, live, remove, add, live (gap), replay..., each with a digest.
	eventually(t, "the shadow compares every call", func() bool { return shadow().Compared >= 10 })
	if st := shadow(); st.State != prefix.ShadowAgree {
		t.Fatalf("the shadow after sources changed at run time: %+v", st)
	}
}
