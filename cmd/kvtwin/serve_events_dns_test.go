package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/events/pypub"
	"github.com/kvtwin/kvtwin/events/zmq"
	"github.com/kvtwin/kvtwin/server"
	"github.com/kvtwin/kvtwin/spec"
)

// serve's DNS discovery of event sources, --events-dns (docs/events.md
// "Sources at run time"), against a real DNS server (miekg/dns on
// loopback UDP) whose records each test changes between rounds.

// srvRecord is one SRV record's target and port.
type srvRecord struct {
	target string
	port   uint16
}

// testDNS is a DNS server answering SRV and A queries from records the
// test sets; every other name is NXDOMAIN, and servfail answers every
// query SERVFAIL.
type testDNS struct {
	addr     string
	mu       sync.Mutex
	srv      map[string][]srvRecord
	a        map[string][]string
	servfail bool
}

// startTestDNS serves on 127.0.0.1:0 (UDP) until the test ends.
func startTestDNS(t *testing.T) *testDNS {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &testDNS{addr: pc.LocalAddr().String(), srv: map[string][]srvRecord{}, a: map[string][]string{}}
	started := make(chan struct{})
	s := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(d.answer), NotifyStartedFunc: func() { close(started) }}
	served := make(chan error, 1)
	go func() { served <- s.ActivateAndServe() }()
	<-started
	t.Cleanup(func() {
		if err := s.Shutdown(); err != nil {
			t.Errorf("dns shutdown: %v", err)
		}
		<-served
	})
	return d
}

// set replaces the records: SRV records by name, A records by host.
func (d *testDNS) set(srv map[string][]srvRecord, a map[string][]string, servfail bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.srv, d.a, d.servfail = srv, a, servfail
}

// answer answers one query from the records.
func (d *testDNS) answer(w dns.ResponseWriter, r *dns.Msg) {
	d.mu.Lock()
	defer d.mu.Unlock()
	m := new(dns.Msg)
	m.SetReply(r)
	q := r.Question[0]
	name := strings.ToLower(q.Name)
	hdr := dns.RR_Header{Name: q.Name, Class: dns.ClassINET, Rrtype: q.Qtype}
	srvs, isSRV := d.srv[name]
	ips, isHost := d.a[name]
	switch {
	case d.servfail:
		m.Rcode = dns.RcodeServerFailure
	case !isSRV && !isHost:
		m.Rcode = dns.RcodeNameError
	case q.Qtype == dns.TypeSRV:
		for _, s := range srvs {
			m.Answer = append(m.Answer, &dns.SRV{Hdr: hdr, Port: s.port, Target: s.target})
		}
	case q.Qtype == dns.TypeA:
		for _, ip := range ips {
			m.Answer = append(m.Answer, &dns.A{Hdr: hdr, A: net.ParseIP(ip)})
		}
	}
	_ = w.WriteMsg(m)
}

// fakeSink is the server's sources as a map, recording each change.
type fakeSink struct {
	srcs map[string]zmq.Source
	ops  []string
}

// PutEventSource adds or replaces src.
func (f *fakeSink) PutEventSource(src zmq.Source) (server.SourceChange, error) {
	old, had := f.srcs[src.Name]
	f.srcs[src.Name] = src
	f.ops = append(f.ops, "put "+src.Name)
	switch {
	case !had:
		return server.SourceChange{Name: src.Name, Action: server.SourceAdded, Source: src}, nil
	case old == src:
		return server.SourceChange{Name: src.Name, Action: server.SourceUnchanged, Source: src}, nil
	}
	return server.SourceChange{Name: src.Name, Action: server.SourceReplaced, Source: src}, nil
}

// DeleteEventSource removes the named source.
func (f *fakeSink) DeleteEventSource(name string) (server.SourceChange, error) {
	old, had := f.srcs[name]
	if !had {
		return server.SourceChange{}, spec.Reject(zmq.ErrUnknownSource, "source.name", name, "a source")
	}
	delete(f.srcs, name)
	f.ops = append(f.ops, "delete "+name)
	return server.SourceChange{Name: name, Action: server.SourceRemoved, Source: old}, nil
}

// EventSourceConfig is the named source.
func (f *fakeSink) EventSourceConfig(name string) (zmq.Source, bool) {
	s, ok := f.srcs[name]
	return s, ok
}

// names is the sink's source names, sorted.
func (f *fakeSink) names() []string {
	var out []string
	for n := range f.srcs {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// jsonLogger logs JSON lines into a fresh lockedLines.
func jsonLogger() (*slog.Logger, *lockedLines) {
	logs := &lockedLines{}
	return slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), logs
}

// mustTargets parses specs or fails the test.
func mustTargets(t *testing.T, specs ...string) []dnsTarget {
	t.Helper()
	ts, err := parseDNSTargets(specs)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// TestDNSDiscoveryFollowsTheRecordsAsADiff: SRV and A records change
// between rounds and each round's desired set and diff follow them
// (added, removed, unchanged left untouched); a SERVFAIL round changes
// nothing; NXDOMAIN empties the set; a name another source holds is never
// touched.
func TestDNSDiscoveryFollowsTheRecordsAsADiff(t *testing.T) {
	d := startTestDNS(t)
	srvA := map[string][]srvRecord{"_kv._tcp.vllm.test.": {{"pod-a.vllm.test.", 5557}, {"pod-b.vllm.test.", 5557}}}
	a1 := map[string][]string{"pod-a.vllm.test.": {"10.0.0.1"}, "pod-b.vllm.test.": {"10.0.0.2"}, "pod-c.vllm.test.": {"10.0.0.3"},
		"sglang.test.": {"10.0.1.1", "10.0.1.2"}}
	d.set(srvA, a1, false)
	targets := mustTargets(t, "vllm=_kv._tcp.vllm.test,replay-port=5558,rank=1", "sg=sglang.test:6000,topic=kv@")
	sink := &fakeSink{srcs: map[string]zmq.Source{"sg-10-0-1-3-6000": {Name: "sg-10-0-1-3-6000", Endpoint: "tcp://10.9.9.9:1"}}}
	logger, logs := jsonLogger()
	disc := newDNSDiscovery(targets, newDNSResolver(d.addr), sink, logger)
	round := func() []string {
		sink.ops = nil
		disc.round(context.Background())
		return sink.ops
	}

	ops := round()
	want := []string{"sg-10-0-1-1-6000", "sg-10-0-1-2-6000", "sg-10-0-1-3-6000", "vllm-10-0-0-1-5557", "vllm-10-0-0-2-5557"}
	if got := sink.names(); !slices.Equal(got, want) {
		t.Fatalf("round 1 sources %v, want %v (ops %v)", got, want, ops)
	}
	if got, want := sink.srcs["vllm-10-0-0-1-5557"], (zmq.Source{Name: "vllm-10-0-0-1-5557", Endpoint: "tcp://10.0.0.1:5557", Replay: "tcp://10.0.0.1:5558", Rank: 1}); got != want {
		t.Errorf("vllm source %+v, want %+v", got, want)
	}
	if got := sink.srcs["sg-10-0-1-2-6000"]; got.Endpoint != "tcp://10.0.1.2:6000" || got.Topic != "kv@" || got.Replay != "" {
		t.Errorf("sg source %+v", got)
	}

	// pod-a goes, pod-c comes on another port; sglang moves one address;
	// the foreign sg-10-0-1-3-6000 is now listed but stays as it is.
	d.set(map[string][]srvRecord{"_kv._tcp.vllm.test.": {{"pod-b.vllm.test.", 5557}, {"pod-c.vllm.test.", 5560}}},
		map[string][]string{"pod-b.vllm.test.": {"10.0.0.2"}, "pod-c.vllm.test.": {"10.0.0.3"}, "sglang.test.": {"10.0.1.2", "10.0.1.3"}}, false)
	ops = round()
	if want := []string{"delete vllm-10-0-0-1-5557", "put vllm-10-0-0-3-5560", "delete sg-10-0-1-1-6000"}; !slices.Equal(ops, want) {
		t.Errorf("round 2 ops %v, want %v: unchanged sources untouched, the foreign one left alone", ops, want)
	}
	if got := sink.srcs["sg-10-0-1-3-6000"].Endpoint; got != "tcp://10.9.9.9:1" {
		t.Errorf("the foreign source was changed: %s", got)
	}
	if logs.find("WARN", "--events-dns: a source not discovered holds the name; it is left alone") == nil {
		t.Error("the foreign name was not logged")
	}
	if rec := logs.find("INFO", "--events-dns: source removed"); rec == nil || rec["source"] != "vllm-10-0-0-1-5557" || rec["endpoint"] != "tcp://10.0.0.1:5557" {
		t.Errorf("removal logged as %v", rec)
	}
	after2 := sink.names()

	d.set(nil, nil, true)
	if ops := round(); len(ops) != 0 || !slices.Equal(sink.names(), after2) {
		t.Errorf("a SERVFAIL round changed the sources: ops %v", ops)
	}
	if rec := logs.find("WARN", "--events-dns: lookup failed; its sources are kept as they are"); rec == nil || rec["dns"] != "vllm" {
		t.Errorf("SERVFAIL logged as %v", rec)
	}

	d.set(nil, nil, false) // NXDOMAIN for every name: the pods are gone
	round()
	if got := sink.names(); !slices.Equal(got, []string{"sg-10-0-1-3-6000"}) {
		t.Errorf("after NXDOMAIN: %v, want only the foreign source", got)
	}
}

// TestDiffSourcesSplitsAddedRemovedAndUnchanged: the diff against what is
// in force, in name order; a changed configuration is an add (a put).
func TestDiffSourcesSplitsAddedRemovedAndUnchanged(t *testing.T) {
	s := func(name, ep string) zmq.Source { return zmq.Source{Name: name, Endpoint: ep} }
	owned := map[string]zmq.Source{"a": s("a", "tcp://h:1"), "b": s("b", "tcp://h:2"), "c": s("c", "tcp://h:3")}
	d := diffSources(owned, []zmq.Source{s("d", "tcp://h:4"), s("b", "tcp://h:2"), s("c", "tcp://h:33")})
	names := func(srcs []zmq.Source) (out []string) {
		for _, x := range srcs {
			out = append(out, x.Name)
		}
		return out
	}
	if !slices.Equal(names(d.add), []string{"c", "d"}) || !slices.Equal(names(d.remove), []string{"a"}) || !slices.Equal(d.unchanged, []string{"b"}) {
		t.Errorf("diff %+v", d)
	}
}

// TestAddrPortNamesAreValidAndDistinct: the naming rule on IPv4 and IPv6.
func TestAddrPortNamesAreValidAndDistinct(t *testing.T) {
	tg := mustTargets(t, strings.Repeat("n", maxDNSNameLen)+"=h.test:1")[0]
	seen := map[string]string{}
	for _, ap := range []string{"10.0.0.5:5557", "[fd00::1]:5557", "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535", "1.2.3.4:5", "[::1:2:3:4]:5"} {
		src := tg.source(netip.MustParseAddrPort(ap))
		if err := src.Validate(); err != nil {
			t.Errorf("%s: %v", ap, err)
		}
		if other, dup := seen[src.Name]; dup {
			t.Errorf("%s and %s share the name %s", ap, other, src.Name)
		}
		seen[src.Name] = ap
	}
	if got := addrPortName(netip.MustParseAddrPort("[fd00::1]:5557")); got != "fd00--1-5557" {
		t.Errorf("fd00::1 named %s", got)
	}
}

// TestEventsDNSFlagErrorsNameTheFlagValueAndBound: every malformed
// --events-dns is refused with the flag, the value and what it must be.
func TestEventsDNSFlagErrorsNameTheFlagValueAndBound(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{"vllm", `--events-dns "vllm": value "vllm": want NAME=_SRV.NAME`},
		{"=_kv._tcp.x", `NAME "": want 1 to 82 characters of [A-Za-z0-9._:-]`},
		{"a b=_kv._tcp.x", `NAME "a b"`},
		{strings.Repeat("n", 83) + "=_kv._tcp.x", "want 1 to 82 characters"},
		{"v=_kv..x", `TARGET "_kv..x": want an SRV name`},
		{"v=host", `TARGET "host": want an SRV name starting with _ or HOST:PORT`},
		{"v=host:0", `TARGET port "0": want an integer in [1, 65535]`},
		{"v=host:65536", `TARGET port "65536"`},
		{"v=_kv._tcp.x,replay-port=x", `replay-port "x": want an integer in [1, 65535]`},
		{"v=_kv._tcp.x,rank=-1", `rank "-1": want an integer in [0,`},
		{"v=_kv._tcp.x,port=1", `option "port": want replay-port=N, rank=N or topic=T`},
		{"v=_kv._tcp.x,rank=1,rank=2", `option "rank": want each option at most once`},
		{"v=_kv._tcp.x,topic=" + strings.Repeat("t", zmq.MaxTopicLen+1), "want a valid source"},
	} {
		_, err := parseDNSTargets([]string{c.spec})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want it to say %q", c.spec, err, c.want)
		}
	}
	if _, err := parseDNSTargets([]string{"v=_kv._tcp.x", "v=h:1"}); err == nil || !strings.Contains(err.Error(), "want a NAME no other --events-dns has") {
		t.Errorf("two flags of one NAME: %v", err)
	}
	for _, c := range []struct {
		flags   dnsFlags
		replica bool
		share   int
		want    string
	}{
		{dnsFlags{specs: []string{"v=h:1"}, interval: time.Second}, true, 4, "--events-dns: a JetStream replica (--events-from)"},
		{dnsFlags{specs: []string{"v=h:1"}}, false, 4, "--events-dns-interval 0s: want > 0"},
		{dnsFlags{specs: []string{"v=h:1"}, interval: time.Second}, false, 0, "want --events-max-engines-per-source"},
		{dnsFlags{specs: []string{"v=h:1"}, interval: time.Second, server: "10.0.0.10"}, false, 4, `--events-dns-server "10.0.0.10": want HOST:PORT`},
	} {
		if _, err := c.flags.targets(c.replica, c.share); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want it to say %q", c.flags, err, c.want)
		}
	}
}

// TestServeRefusesEventsDNSOnAReplica: the flag check reaches serve, which
// stops before it starts anything.
func TestServeRefusesEventsDNSOnAReplica(t *testing.T) {
	cmd := newServeCmd()
	cmd.SetArgs([]string{"--events-dns", "v=_kv._tcp.x", "--events-from", "nats://127.0.0.1:1", "--addr", "127.0.0.1:0"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--events-from") {
		t.Errorf("serve --events-dns --events-from: %v", err)
	}
}

// portOf is the port of a tcp://HOST:PORT endpoint.
func portOf(t *testing.T, ep string) uint16 {
	t.Helper()
	_, p, err := net.SplitHostPort(strings.TrimPrefix(ep, "tcp://"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		t.Fatal(err)
	}
	return uint16(n)
}

// streamEngines is the JSON of the engines stream feeds in ix's state.
func streamEngines(t *testing.T, ix spec.KVEvIndex, stream string) string {
	t.Helper()
	var mine []spec.KVEvEngineState
	for _, en := range ix.State().Engines {
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

// storeCmd is a publisher command storing one block of 4 tokens at rank.
func storeCmd(hash int, rank int) map[string]any {
	return map[string]any{"op": "emit", "rank": rank, "events": []any{map[string]any{"type": "BlockStored", "block_hashes": []int{hash},
		"parent_block_hash": nil, "token_ids": []int{hash, hash + 1, hash + 2, hash + 3}, "block_size": 4, "lora_id": nil, "medium": "GPU"}}}
}

// TestDNSDiscoveryFollowsRealPublishers is --events-dns end to end: two
// real publishers listed by SRV records are added and feed the index; the
// records then drop one and add a third: the dropped one's engines are
// gone, the kept one's engines and pages are byte-identical and its
// connection kept, and the third feeds the index.
func TestDNSDiscoveryFollowsRealPublishers(t *testing.T) {
	script := filepath.Join("..", "..", "scripts", "kvev_publisher.py")
	pubs := map[string]*pypub.Publisher{}
	for _, n := range []string{"a", "b", "c"} {
		pubs[n] = pypub.Start(t, script, "--topic", "kv@pod-"+n+"@m", "--socket", "xpub", "--no-replay")
	}
	d := startTestDNS(t)
	rec := func(n string) srvRecord { return srvRecord{"pod-" + n + ".vllm.test.", portOf(t, pubs[n].Pub)} }
	hosts := map[string][]string{"pod-a.vllm.test.": {"127.0.0.1"}, "pod-b.vllm.test.": {"127.0.0.1"}, "pod-c.vllm.test.": {"127.0.0.1"}}
	d.set(map[string][]srvRecord{"_kv._tcp.vllm.test.": {rec("a"), rec("b")}}, hosts, false)
	name := func(n string) string { return "vllm-127-0-0-1-" + strconv.Itoa(int(portOf(t, pubs[n].Pub))) }

	logger, logs := jsonLogger()
	cfg := server.DefaultConfig()
	cfg.Addr, cfg.Logger, cfg.EventsRuntime = "127.0.0.1:0", logger, true
	cfg.EventsIndex = spec.KVEvConfig{MaxEngines: 12, MaxEnginesPerStream: 4}
	cfg.EventsOptions = zmq.Options{ReconnectMin: 20 * time.Millisecond, ReconnectMax: 100 * time.Millisecond}
	newFast, err := catalog.KVEvIndex(catalog.Fast)
	if err != nil {
		t.Fatal(err)
	}
	var ix spec.KVEvIndex
	cfg.NewKVEvIndex = func(c spec.KVEvConfig, streams []spec.KVEvStream) (spec.KVEvIndex, error) {
		i, err := newFast(c, streams)
		ix = i
		return i, err
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	disc := newDNSDiscovery(mustTargets(t, "vllm=_kv._tcp.vllm.test"), newDNSResolver(d.addr), srv, logger)
	base := serveAlongside(t, srv, func(ctx context.Context) func() { return disc.start(ctx, 100*time.Millisecond) })

	want := []string{name("a") + "=" + pubs["a"].Pub, name("b") + "=" + pubs["b"].Pub}
	slices.Sort(want)
	waitUntil(t, "a and b discovered", func() bool { return slices.Equal(endpoints(sourcesNow(t, base)), want) })
	for _, n := range []string{"a", "b"} {
		pubs[n].Do(map[string]any{"op": "await_subscribers", "n": 1, "timeout": 15}, nil)
	}
	pubs["a"].Do(storeCmd(100, 0), nil)
	pubs["a"].Do(storeCmd(200, 1), nil)
	pubs["b"].Do(storeCmd(300, 0), nil)
	waitUntil(t, "a's and b's engines", func() bool {
		return strings.Count(streamEngines(t, ix, name("a")), `"dp_rank"`) == 2 && strings.Count(streamEngines(t, ix, name("b")), `"dp_rank"`) == 1
	})
	aBefore := streamEngines(t, ix, name("a"))

	d.set(map[string][]srvRecord{"_kv._tcp.vllm.test.": {rec("a"), rec("c")}}, hosts, false)
	want = []string{name("a") + "=" + pubs["a"].Pub, name("c") + "=" + pubs["c"].Pub}
	slices.Sort(want)
	waitUntil(t, "b dropped and c discovered", func() bool { return slices.Equal(endpoints(sourcesNow(t, base)), want) })
	pubs["c"].Do(map[string]any{"op": "await_subscribers", "n": 1, "timeout": 15}, nil)
	pubs["c"].Do(storeCmd(400, 0), nil)
	waitUntil(t, "c's engine", func() bool { return strings.Contains(streamEngines(t, ix, name("c")), `"source":"pod-c"`) })
	if got := streamEngines(t, ix, name("b")); got != "null" {
		t.Errorf("b's engines outlived its records: %s", got)
	}
	if got := streamEngines(t, ix, name("a")); got != aBefore {
		t.Errorf("a's engines changed while b and c came and went:\nbefore %s\nafter  %s", aBefore, got)
	}
	if s := sourcesNow(t, base)[name("a")].Subscriber; s == nil || s.Connects != 1 || s.Reconnects != 0 {
		t.Errorf("a's subscriber %+v, want its one connection", s)
	}
	if r := logs.find("INFO", "--events-dns: source removed"); r == nil || r["source"] != name("b") || r["endpoint"] != pubs["b"].Pub {
		t.Errorf("b's removal logged as %v", r)
	}
	if n := len(logs.findAll("INFO", "--events-dns: source added")); n != 3 {
		t.Errorf("%d additions logged, want 3", n)
	}
}

// TestServeDiscoversEventSourcesInDNS: the real binary with --events-dns
// and --events-dns-server lists the sources the records name and follows
// them when they change.
func TestServeDiscoversEventSourcesInDNS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	d := startTestDNS(t)
	d.set(map[string][]srvRecord{"_kv._tcp.vllm.test.": {{"pod.vllm.test.", 1}, {"pod.vllm.test.", 2}}}, map[string][]string{"pod.vllm.test.": {"127.0.0.1"}}, false)
	sb := startServeBinary(t, "--events-dns", "vllm=_kv._tcp.vllm.test,replay-port=3", "--events-dns-server", d.addr,
		"--events-dns-interval", "100ms", "--events-max-engines-per-source", "2")
	waitUntil(t, "two sources discovered", func() bool {
		return slices.Equal(endpoints(sourcesNow(t, sb.base)), []string{"vllm-127-0-0-1-1=tcp://127.0.0.1:1", "vllm-127-0-0-1-2=tcp://127.0.0.1:2"})
	})
	d.set(map[string][]srvRecord{"_kv._tcp.vllm.test.": {{"pod.vllm.test.", 2}}}, map[string][]string{"pod.vllm.test.": {"127.0.0.1"}}, false)
	waitUntil(t, "one source left", func() bool {
		return slices.Equal(endpoints(sourcesNow(t, sb.base)), []string{"vllm-127-0-0-1-2=tcp://127.0.0.1:2"})
	})
	sb.stop()
}

// TestDNSDiscoveryRefusesAddressesPastItsBoundWithAnError: one NAME
// yields at most maxDNSSources sources, the first in address order; the
// rest are refused with an ERROR naming the bound, never silently.
func TestDNSDiscoveryRefusesAddressesPastItsBoundWithAnError(t *testing.T) {
	logger, logs := jsonLogger()
	disc := newDNSDiscovery(mustTargets(t, "v=h.test:1"), nil, &fakeSink{srcs: map[string]zmq.Source{}}, logger)
	var aps []netip.AddrPort
	for i := maxDNSSources + 2; i > 0; i-- {
		aps = append(aps, netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}), 1))
	}
	got := disc.desired(disc.targets[0], sortedAddrPorts(aps))
	if len(got) != maxDNSSources || got[0].Name != "v-10-1-0-1-1" || got[len(got)-1].Name != "v-10-1-4-0-1" {
		t.Errorf("%d sources from %s to %s, want the first %d in address order", len(got), got[0].Name, got[len(got)-1].Name, maxDNSSources)
	}
	msg := "--events-dns: 1026 addresses: want at most 1024 sources for one NAME; the rest are not added"
	if rec := logs.find("ERROR", msg); rec == nil || rec["refused"] != 2.0 || rec["first_refused"] != "10.1.4.1:1" {
		t.Errorf("the refusal logged as %v", rec)
	}
}
