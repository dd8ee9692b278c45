package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/events/pypub"
	"github.com/kvtwin/kvtwin/events/zmq"
	"github.com/kvtwin/kvtwin/server"
)

// The reload of serve's --events-file (docs/events.md "Sources at run
// time"): a changed file is applied as a diff of its sources, a broken one
// changes nothing, on a poll and on SIGHUP.

// Write implements io.Writer for a slog handler, one line a record.
func (l *lockedLines) Write(p []byte) (int, error) {
	for line := range strings.SplitSeq(strings.TrimRight(string(p), "\n"), "\n") {
		l.add(line)
	}
	return len(p), nil
}

// findAll returns every JSON line logged at level with msg, decoded.
func (l *lockedLines) findAll(level, msg string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range l.lines {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["level"] == level && rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// writeAtomically replaces path with body the way a ConfigMap update or an
// editor's save does: a new file renamed over the old, so a reader never
// sees it half written.
func writeAtomically(t *testing.T, path, body string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// eventsDoc is an --events-file document: the sources, one flow mapping
// each, and the index mapping.
func eventsDoc(index string, sources ...string) string {
	return "sources:\n  - " + strings.Join(sources, "\n  - ") + "\nindex: " + index + "\n"
}

// serveWithEventsFile runs a real server in this process as `kvtwin serve
// --events flagSpecs... --events-file file --events-file-poll poll` does,
// until the test ends, and returns its base URL and its logs.
func serveWithEventsFile(t *testing.T, file string, flagSpecs []string, poll time.Duration) (string, *lockedLines) {
	t.Helper()
	logs := &lockedLines{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := server.DefaultConfig()
	cfg.Addr, cfg.Logger, cfg.EventsRuntime = "127.0.0.1:0", logger, true
	cfg.EventsOptions = zmq.Options{ReconnectMin: 20 * time.Millisecond, ReconnectMax: 100 * time.Millisecond}
	srcs, doc, err := eventSourcesAndFile(flagSpecs, file, &cfg.EventsIndex)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Events = srcs
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := newEventsFileWatch(file, doc, flagSpecs, srv, logger)
	return serveAlongside(t, srv, func(ctx context.Context) func() { return w.start(ctx, poll) }), logs
}

// serveAlongside serves srv on a loopback port in this process, with
// watcher (a file watch, a DNS discovery) started under the same context,
// as serve runs them, until the test ends; it returns the base URL. At the
// end the context is cancelled, the watcher waited for, then Serve.
func serveAlongside(t *testing.T, srv *server.Server, watcher func(context.Context) (wait func())) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	wait := watcher(ctx)
	t.Cleanup(func() {
		cancel()
		wait()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// sourcesNow is GET /v1/events/sources by name.
func sourcesNow(t *testing.T, base string) map[string]server.EventSource {
	t.Helper()
	resp, err := http.Get(base + "/v1/events/sources")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got server.EventSources
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/events/sources: %d %v", resp.StatusCode, err)
	}
	out := map[string]server.EventSource{}
	for _, s := range got.Sources {
		out[s.Name] = s
	}
	return out
}

// endpoints is every listed source's name=endpoint, sorted.
func endpoints(srcs map[string]server.EventSource) []string {
	var out []string
	for name, s := range srcs {
		ep := "?"
		if s.Subscriber != nil {
			ep = s.Subscriber.Endpoint
		}
		out = append(out, name+"="+ep)
	}
	slices.Sort(out)
	return out
}

// waitUntil polls cond every 10 ms for up to 15 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 15 s", what)
		}
	}
}

// putSource sends PUT /v1/events/sources/{name}.
func putSource(t *testing.T, base, name, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, base+"/v1/events/sources/"+name, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestAChangedEventsFileIsAppliedAsADiffAndABrokenOneChangesNothing: a
// reload removes the sources the file no longer lists, replaces those it
// changed, adds the new ones and keeps the unchanged ones with their
// connection (a real publisher's); sources of --events and of the API are
// left alone unless the file names them; a changed `index` mapping is
// logged and ignored; a file that does not parse, has an invalid source
// or names an --events source is logged at ERROR and changes nothing.
func TestAChangedEventsFileIsAppliedAsADiffAndABrokenOneChangesNothing(t *testing.T) {
	pub := pypub.Start(t, filepath.Join("..", "..", "scripts", "kvev_publisher.py"), "--topic", "kv@pod-3@m", "--socket", "xpub")
	f3 := fmt.Sprintf(`{name: f3, endpoint: %q}`, pub.Pub)
	file := filepath.Join(t.TempDir(), "events.yaml")
	writeAtomically(t, file, eventsDoc("{max_engines: 64, max_engines_per_stream: 8}",
		`{name: f1, endpoint: "tcp://127.0.0.1:1"}`, `{name: f2, endpoint: "tcp://127.0.0.1:2"}`, f3))
	base, logs := serveWithEventsFile(t, file, []string{"flag=tcp://127.0.0.1:9"}, 20*time.Millisecond)
	connected := func() bool { s := sourcesNow(t, base)["f3"].Subscriber; return s != nil && s.Connected }
	waitUntil(t, "f3 connected", connected)
	if code := putSource(t, base, "api", `{"endpoint":"tcp://127.0.0.1:7"}`); code != http.StatusCreated {
		t.Fatalf("PUT api: %d", code)
	}

	v2 := []string{`{name: f2, endpoint: "tcp://127.0.0.1:22"}`, f3, `{name: f4, endpoint: "tcp://127.0.0.1:4"}`}
	const index2 = "{max_engines: 64, max_engines_per_stream: 4}"
	writeAtomically(t, file, eventsDoc(index2, v2...))
	want := []string{"api=tcp://127.0.0.1:7", "f2=tcp://127.0.0.1:22", "f3=" + pub.Pub, "f4=tcp://127.0.0.1:4", "flag=tcp://127.0.0.1:9"}
	waitUntil(t, "the file's diff applied", func() bool { return slices.Equal(endpoints(sourcesNow(t, base)), want) })
	waitUntil(t, "the reload logged", func() bool { return logs.find("INFO", "--events-file reloaded") != nil })
	rec := logs.find("INFO", "--events-file reloaded")
	if rec["added"] != 1.0 || rec["replaced"] != 1.0 || rec["unchanged"] != 1.0 || rec["removed"] != 1.0 || rec["failed"] != 0.0 {
		t.Errorf("reload record %v, want 1 added, 1 replaced, 1 unchanged, 1 removed", rec)
	}
	if logs.find("WARN", "--events-file: the index bounds cannot change while serve runs; the change is ignored until a restart") == nil {
		t.Error("the changed index mapping was not logged")
	}
	if s := sourcesNow(t, base)["f3"]; s.Subscriber == nil || s.Subscriber.Connects != 1 || s.Subscriber.Reconnects != 0 || s.MaxEngines != 8 {
		t.Errorf("f3 after the reload: %+v, max_engines %d; want its one connection and the share set at start (8)", s.Subscriber, s.MaxEngines)
	}

	for i, broken := range []struct{ body, err string }{
		{"", "EOF"},
		{"sources: [{name: f2", "--events-file " + file},
		{eventsDoc(index2, v2[0], v2[1], `{name: f4, endpoint: "udp://127.0.0.1:4"}`), "source[f4].endpoint"},
		{eventsDoc(index2, append(v2, `{name: flag, endpoint: "tcp://127.0.0.1:10"}`)...), "no --events source has"},
		{eventsDoc(index2, append(v2, `{name: f4, endpoint: "tcp://127.0.0.1:44"}`)...), "a name no other source has"},
	} {
		writeAtomically(t, file, broken.body)
		waitUntil(t, fmt.Sprintf("broken file %d logged", i), func() bool {
			return slices.ContainsFunc(logs.findAll("ERROR", "--events-file reload failed; no source changed"), func(r map[string]any) bool {
				return strings.Contains(fmt.Sprint(r["err"]), broken.err)
			})
		})
		if got := endpoints(sourcesNow(t, base)); !slices.Equal(got, want) {
			t.Errorf("broken file %d changed the sources: %v", i, got)
		}
	}
	if n := len(logs.findAll("INFO", "--events-file reloaded")); n != 1 {
		t.Errorf("%d reloads applied, want 1: every broken file must change nothing", n)
	}

	// A file that names an API source makes it the file's.
	writeAtomically(t, file, eventsDoc(index2, append(v2, `{name: api, endpoint: "tcp://127.0.0.1:77"}`)...))
	waitUntil(t, "api taken over by the file", func() bool {
		s := sourcesNow(t, base)["api"].Subscriber
		return s != nil && s.Endpoint == "tcp://127.0.0.1:77"
	})
	writeAtomically(t, file, eventsDoc(index2, v2...))
	waitUntil(t, "api removed with the file's entry", func() bool { _, ok := sourcesNow(t, base)["api"]; return !ok })
}

// TestServeReloadsItsEventsFileOnSIGHUP: the real binary with
// --events-file-poll 0 applies a changed file only when it gets SIGHUP,
// and exits cleanly afterwards.
func TestServeReloadsItsEventsFileOnSIGHUP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	file := filepath.Join(t.TempDir(), "events.yaml")
	writeAtomically(t, file, "sources:\n  - {name: a, endpoint: \"tcp://127.0.0.1:1\"}\nindex: {max_engines_per_stream: 4}\n")
	sb := startServeBinary(t, "--events-file", file, "--events-file-poll", "0")
	if got := endpoints(sourcesNow(t, sb.base)); !slices.Equal(got, []string{"a=tcp://127.0.0.1:1"}) {
		t.Fatalf("sources at start: %v", got)
	}
	writeAtomically(t, file, "sources:\n  - {name: a, endpoint: \"tcp://127.0.0.1:1\"}\n  - {name: b, endpoint: \"tcp://127.0.0.1:2\"}\nindex: {max_engines_per_stream: 4}\n")
	time.Sleep(300 * time.Millisecond)
	if got := endpoints(sourcesNow(t, sb.base)); len(got) != 1 {
		t.Fatalf("the file was applied without SIGHUP under --events-file-poll 0: %v", got)
	}
	if err := sb.proc.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "b added on SIGHUP", func() bool { return len(sourcesNow(t, sb.base)) == 2 })
	if sb.logs.find("INFO", "--events-file reloaded") == nil {
		t.Error("the reload was not logged")
	}
	sb.stop()
}

// TestServeWithAnEngineShareAndNoSourceTakesThemAtRunTime: `kvtwin serve
// --events-max-engines-per-source 2` with no source builds an empty index
// (GET lists none, 200) that PUT fills; plain `kvtwin serve` has none (404).
func TestServeWithAnEngineShareAndNoSourceTakesThemAtRunTime(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	sb := startServeBinary(t, "--events-max-engines-per-source", "2")
	if got := sourcesNow(t, sb.base); len(got) != 0 {
		t.Fatalf("sources at start: %v", got)
	}
	for _, name := range []string{"a", "b"} {
		if code := putSource(t, sb.base, name, `{"endpoint":"tcp://127.0.0.1:1"}`); code != http.StatusCreated {
			t.Fatalf("PUT %s: %d", name, code)
		}
	}
	if got := sourcesNow(t, sb.base); len(got) != 2 || got["b"].MaxEngines != 2 {
		t.Errorf("sources after two PUTs: %+v", got)
	}
	sb.stop()

	base, stop := serveBinary(t)
	resp, err := http.Get(base + "/v1/events/sources")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("plain serve: GET /v1/events/sources %d, want 404", resp.StatusCode)
	}
	stop()
}
