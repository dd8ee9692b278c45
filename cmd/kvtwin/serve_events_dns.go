package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kvtwin/kvtwin/events/zmq"
	"github.com/kvtwin/kvtwin/server"
)

// This file is serve's DNS discovery of event sources, --events-dns
// (docs/events.md "Sources at run time"; the choices are in
// docs/decisions.md, "DNS discovery of event sources"): every
// --events-dns-interval each NAME's records are resolved and the server's
// sources made to follow them, one ZeroMQ source per resolved address.

// dnsSuffixLen is the longest suffix a discovered source's name adds to its
// NAME: "-", an IPv6 address's 39 characters, "-" and a 5-digit port.
const dnsSuffixLen = 1 + 39 + 1 + 5

// maxDNSNameLen bounds an --events-dns NAME so that every name it yields
// is a valid source name (zmq.MaxNameLen).
const maxDNSNameLen = zmq.MaxNameLen - dnsSuffixLen

// maxDNSSources bounds the sources one --events-dns NAME may create: the
// subscriber's own bound on all its sources. Records past it are refused
// (logged at ERROR), never silently dropped.
const maxDNSSources = zmq.MaxSources

// dnsLookupTimeout bounds the lookups of one NAME in one round: past it
// the round's answer for that NAME is a failure, which changes nothing.
const dnsLookupTimeout = 5 * time.Second

// dnsTarget is one --events-dns flag, parsed: what to look up and the
// options every source it yields gets.
type dnsTarget struct {
	// flag is the flag's value as given, for errors and logs.
	flag string
	// name is NAME, the prefix of every source name it yields.
	name string
	// srv is the rooted SRV name to look up; "" when host is used.
	srv string
	// host is the rooted host name of a HOST:PORT target (or an IP
	// literal); port is its port.
	host string
	port uint16
	// replayPort is the replay port on each address (0: no replay).
	replayPort uint16
	// rank and topic are the sources' rank and topic (zmq.Source).
	rank  int64
	topic string
}

// dnsFlagSyntax is the --events-dns form, quoted in its errors.
const dnsFlagSyntax = "NAME=_SRV.NAME[,option...] or NAME=HOST:PORT[,option...], options replay-port=N, rank=N, topic=T"

// parseDNSTargets parses every --events-dns flag; two flags of one NAME
// are an error.
func parseDNSTargets(specs []string) ([]dnsTarget, error) {
	out := make([]dnsTarget, 0, len(specs))
	seen := map[string]bool{}
	for _, sp := range specs {
		t, err := parseDNSTarget(sp)
		if err != nil {
			return nil, err
		}
		if seen[t.name] {
			return nil, fmt.Errorf("--events-dns %q: NAME %s: want a NAME no other --events-dns has", sp, t.name)
		}
		seen[t.name] = true
		out = append(out, t)
	}
	return out, nil
}

// parseDNSTarget reads one --events-dns value, NAME=TARGET[,option...];
// errors name the flag, the value, the part and what it must be.
func parseDNSTarget(sp string) (dnsTarget, error) {
	bad := func(part string, v any, want string) error {
		return fmt.Errorf("--events-dns %q: %s %v: want %s", sp, part, v, want)
	}
	name, rest, ok := strings.Cut(sp, "=")
	if !ok {
		return dnsTarget{}, bad("value", strconv.Quote(sp), dnsFlagSyntax)
	}
	if !validDNSName(name) {
		return dnsTarget{}, bad("NAME", strconv.Quote(name), fmt.Sprintf("1 to %d characters of [A-Za-z0-9._:-]", maxDNSNameLen))
	}
	parts := strings.Split(rest, ",")
	t := dnsTarget{flag: sp, name: name}
	if err := t.setTarget(parts[0], bad); err != nil {
		return dnsTarget{}, err
	}
	set := map[string]bool{}
	for _, opt := range parts[1:] {
		key, val, _ := strings.Cut(opt, "=")
		if set[key] {
			return dnsTarget{}, bad("option", strconv.Quote(key), "each option at most once")
		}
		set[key] = true
		if err := t.setOption(key, val, bad); err != nil {
			return dnsTarget{}, err
		}
	}
	return t, t.check(bad)
}

// badPart builds a parse error of one part of a flag value.
type badPart func(part string, v any, want string) error

// setTarget reads TARGET: an SRV name (it starts with '_') or HOST:PORT.
func (t *dnsTarget) setTarget(target string, bad badPart) error {
	if strings.HasPrefix(target, "_") {
		if !validHostName(target) {
			return bad("TARGET", strconv.Quote(target), "an SRV name (_service._proto.name: dot-separated labels of 1 to 63 characters, 253 at most)")
		}
		t.srv = rooted(target)
		return nil
	}
	host, port, err := net.SplitHostPort(target)
	if err != nil || !(validHostName(host) || isIPLiteral(host)) {
		return bad("TARGET", strconv.Quote(target), "an SRV name starting with _ or HOST:PORT with a host name or IP address")
	}
	p, err := parsePort(port)
	if err != nil {
		return bad("TARGET port", strconv.Quote(port), "an integer in [1, 65535]")
	}
	t.host, t.port = host, p
	if !isIPLiteral(host) {
		t.host = rooted(host)
	}
	return nil
}

// setOption reads one option, key=val.
func (t *dnsTarget) setOption(key, val string, bad badPart) error {
	switch key {
	case "replay-port":
		p, err := parsePort(val)
		if err != nil {
			return bad("replay-port", strconv.Quote(val), "an integer in [1, 65535]")
		}
		t.replayPort = p
	case "rank":
		r, err := strconv.ParseInt(val, 10, 64)
		if err != nil || r < 0 || r > zmq.MaxRank {
			return bad("rank", strconv.Quote(val), fmt.Sprintf("an integer in [0, %d]", zmq.MaxRank))
		}
		t.rank = r
	case "topic":
		t.topic = val
	default:
		return bad("option", strconv.Quote(key), "replay-port=N, rank=N or topic=T")
	}
	return nil
}

// check validates the source an address would yield, so that every
// round's sources are valid (the topic's bound, chiefly).
func (t dnsTarget) check(bad badPart) error {
	probe := t.source(netip.AddrPortFrom(netip.IPv6Loopback(), 65535))
	if err := probe.Validate(); err != nil {
		return bad("source", strconv.Quote(t.flag), "a valid source: "+err.Error())
	}
	return nil
}

// parsePort reads a port in [1, 65535].
func parsePort(s string) (uint16, error) {
	p, err := strconv.ParseUint(s, 10, 16)
	if err != nil || p == 0 {
		return 0, errors.New("bad port")
	}
	return uint16(p), nil
}

// validDNSName reports whether name is a valid --events-dns NAME: 1 to
// maxDNSNameLen characters of a source name's alphabet.
func validDNSName(name string) bool {
	if name == "" || len(name) > maxDNSNameLen {
		return false
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// validHostName reports whether h is a DNS name kvtwin will look up:
// labels of 1 to 63 bytes of [A-Za-z0-9_-], at most 253 bytes in all, an
// optional final dot.
func validHostName(h string) bool {
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return false
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range []byte(label) {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
				return false
			}
		}
	}
	return true
}

// isIPLiteral reports whether h is an IP address, looked up as itself.
func isIPLiteral(h string) bool {
	_, err := netip.ParseAddr(h)
	return err == nil
}

// rooted is h with a final dot: names are taken as absolute, so the
// resolver's search domains never multiply a round's queries.
func rooted(h string) string {
	if strings.HasSuffix(h, ".") {
		return h
	}
	return h + "."
}

// source is the source t yields for one resolved address: named
// NAME-<address>-<port> (sourceNameOf), connecting to tcp://ADDR:PORT,
// replaying from tcp://ADDR:replay-port when set.
func (t dnsTarget) source(ap netip.AddrPort) zmq.Source {
	src := zmq.Source{Name: t.name + "-" + addrPortName(ap), Endpoint: "tcp://" + ap.String(), Rank: t.rank, Topic: t.topic}
	if t.replayPort != 0 {
		src.Replay = "tcp://" + netip.AddrPortFrom(ap.Addr(), t.replayPort).String()
	}
	return src
}

// addrPortName is ap as a source name's suffix: the address's canonical
// text with '.' and ':' made '-', then '-' and the port. 10.0.0.5:5557 is
// 10-0-0-5-5557, [fd00::1]:5557 is fd00--1-5557. It is one-to-one: an
// IPv4 address gives five '-'-separated decimal groups, an IPv6 one either
// "--" (its "::") or nine groups.
func addrPortName(ap netip.AddrPort) string {
	a := strings.NewReplacer(".", "-", ":", "-").Replace(ap.Addr().String())
	return a + "-" + strconv.Itoa(int(ap.Port()))
}

// newDNSResolver is the resolver of the lookups: the system's, or, with
// server (HOST:PORT) set, Go's own resolver asking that server only.
func newDNSResolver(server string) *net.Resolver {
	if server == "" {
		return net.DefaultResolver
	}
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, server)
	}}
}

// isNotFound reports whether err says the name has no records (NXDOMAIN
// or no answer): an empty set, not a failure.
func isNotFound(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound
}

// resolve is the addresses t names now, sorted and without repeats. A
// name that is not found gives none; any other failure is an error, for
// the caller to leave the sources as they are.
func (t dnsTarget) resolve(ctx context.Context, r *net.Resolver) ([]netip.AddrPort, error) {
	var out []netip.AddrPort
	if t.srv == "" {
		addrs, err := hostAddrs(ctx, r, t.host)
		for _, a := range addrs {
			out = append(out, netip.AddrPortFrom(a, t.port))
		}
		return sortedAddrPorts(out), err
	}
	_, recs, err := r.LookupSRV(ctx, "", "", t.srv)
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, rec := range recs {
		if rec.Port == 0 {
			continue
		}
		addrs, err := hostAddrs(ctx, r, rec.Target)
		if err != nil {
			return nil, err
		}
		for _, a := range addrs {
			out = append(out, netip.AddrPortFrom(a, rec.Port))
		}
	}
	return sortedAddrPorts(out), nil
}

// hostAddrs is host's A and AAAA addresses, IPv4-mapped ones unmapped;
// none when it is not found.
func hostAddrs(ctx context.Context, r *net.Resolver, host string) ([]netip.Addr, error) {
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for i, a := range addrs {
		addrs[i] = a.Unmap().WithZone("")
	}
	return addrs, nil
}

// sortedAddrPorts sorts aps and drops repeats.
func sortedAddrPorts(aps []netip.AddrPort) []netip.AddrPort {
	slices.SortFunc(aps, netip.AddrPort.Compare)
	return slices.Compact(aps)
}

// discoverySink is what discovery changes and reads: the server's sources.
type discoverySink interface {
	sourceSetter
	EventSourceConfig(name string) (zmq.Source, bool)
}

// dnsDiscovery keeps the server's sources following --events-dns. Only
// its own goroutine uses it once started.
type dnsDiscovery struct {
	targets  []dnsTarget
	resolver *net.Resolver
	srv      discoverySink
	log      *slog.Logger
	// owned is, per target (same index), the sources discovery put and
	// that are still in force as it put them, by name: what its removals
	// are computed against. A source it did not put is never touched.
	owned []map[string]zmq.Source
	// foreign is the names found held by another source (--events,
	// --events-file, the API), logged once each while they are.
	foreign map[string]bool
}

// newDNSDiscovery discovers targets' sources for srv, asking resolver.
func newDNSDiscovery(targets []dnsTarget, resolver *net.Resolver, srv discoverySink, log *slog.Logger) *dnsDiscovery {
	d := &dnsDiscovery{targets: targets, resolver: resolver, srv: srv, log: log, foreign: map[string]bool{}}
	for range targets {
		d.owned = append(d.owned, map[string]zmq.Source{})
	}
	return d
}

// start runs a round now and then one every interval (> 0) until ctx
// ends; the returned function waits for the discovery to end.
func (d *dnsDiscovery) start(ctx context.Context, interval time.Duration) (wait func()) {
	var wg sync.WaitGroup
	wg.Go(func() {
		d.round(ctx)
		runEvery(ctx, interval, nil, func(bool) { d.round(ctx) })
	})
	return wg.Wait
}

// round resolves every target and applies what changed; a target whose
// lookup fails (not "not found") is logged at WARN and keeps its sources.
func (d *dnsDiscovery) round(ctx context.Context) {
	for i, t := range d.targets {
		lctx, cancel := context.WithTimeout(ctx, dnsLookupTimeout)
		aps, err := t.resolve(lctx, d.resolver)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			d.log.Warn("--events-dns: lookup failed; its sources are kept as they are", "dns", t.name, "target", t.srv+t.host, "err", err.Error())
			continue
		}
		d.apply(i, d.desired(t, aps))
	}
}

// desired is the sources t yields for aps, in address order, at most
// maxDNSSources: the rest are refused with an ERROR naming the bound.
func (d *dnsDiscovery) desired(t dnsTarget, aps []netip.AddrPort) []zmq.Source {
	if len(aps) > maxDNSSources {
		d.log.Error(fmt.Sprintf("--events-dns: %d addresses: want at most %d sources for one NAME; the rest are not added", len(aps), maxDNSSources),
			"dns", t.name, "refused", len(aps)-maxDNSSources, "first_refused", aps[maxDNSSources].String())
		aps = aps[:maxDNSSources]
	}
	out := make([]zmq.Source, len(aps))
	for i, ap := range aps {
		out[i] = t.source(ap)
	}
	return out
}

// sourceDiff is what one round changes for one target: the sources to
// add, those to remove, and the names kept as they are.
type sourceDiff struct {
	add, remove []zmq.Source
	unchanged   []string
}

// diffSources compares owned (what is in force) with desired (what the
// records say), both keyed by name; the result is in name order.
func diffSources(owned map[string]zmq.Source, desired []zmq.Source) sourceDiff {
	var d sourceDiff
	want := make(map[string]bool, len(desired))
	for _, src := range desired {
		want[src.Name] = true
		if old, ok := owned[src.Name]; ok && old == src {
			d.unchanged = append(d.unchanged, src.Name)
		} else {
			d.add = append(d.add, src)
		}
	}
	for name, src := range owned {
		if !want[name] {
			d.remove = append(d.remove, src)
		}
	}
	byName := func(a, b zmq.Source) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(d.add, byName)
	slices.SortFunc(d.remove, byName)
	slices.Sort(d.unchanged)
	return d
}

// apply makes target i's sources follow desired: the sources discovery
// put that are no longer in force as it put them are forgotten, then the
// diff is applied, removals first (freeing their engine shares). A name
// held by a source discovery did not put is left alone. A change the
// server refuses is logged at ERROR and tried again next round.
func (d *dnsDiscovery) apply(i int, desired []zmq.Source) sourceDiff {
	owned, t := d.owned[i], d.targets[i]
	for name, src := range owned {
		if cur, ok := d.srv.EventSourceConfig(name); !ok || cur != src {
			delete(owned, name) // removed or replaced by someone else
		}
	}
	diff := diffSources(owned, desired)
	for _, src := range diff.remove {
		if _, err := d.srv.DeleteEventSource(src.Name); err != nil && !errors.Is(err, zmq.ErrUnknownSource) {
			d.log.Error("--events-dns: source not removed", "dns", t.name, "source", src.Name, "err", err.Error())
			continue
		}
		delete(owned, src.Name)
		d.log.Info("--events-dns: source removed", "dns", t.name, "source", src.Name, "endpoint", src.Endpoint)
	}
	for _, src := range diff.add {
		d.add(t, owned, src)
	}
	return diff
}

// add puts src for t unless another source holds its name, recording it
// in owned when it is in force.
func (d *dnsDiscovery) add(t dnsTarget, owned map[string]zmq.Source, src zmq.Source) {
	if _, held := d.srv.EventSourceConfig(src.Name); held {
		if !d.foreign[src.Name] {
			d.foreign[src.Name] = true
			d.log.Warn("--events-dns: a source not discovered holds the name; it is left alone", "dns", t.name, "source", src.Name)
		}
		return
	}
	delete(d.foreign, src.Name)
	ch, err := d.srv.PutEventSource(src)
	if err != nil {
		d.log.Error("--events-dns: source not added", "dns", t.name, "source", src.Name, "endpoint", src.Endpoint, "err", err.Error())
		return
	}
	owned[src.Name] = src
	if ch.Action == server.SourceAdded {
		d.log.Info("--events-dns: source added", "dns", t.name, "source", src.Name, "endpoint", src.Endpoint)
	}
}

// dnsFlags are serve's --events-dns flags as given.
type dnsFlags struct {
	specs    []string
	interval time.Duration
	server   string
}

// targets checks the flags and parses the targets; none without
// --events-dns. replica says the server is a JetStream replica
// (--events-from), whose sources cannot change; share is each source's
// engine share (--events-max-engines-per-source), which must be set.
func (f dnsFlags) targets(replica bool, share int) ([]dnsTarget, error) {
	if len(f.specs) == 0 {
		return nil, nil
	}
	if replica {
		return nil, errors.New("--events-dns: a JetStream replica (--events-from) serves the relay's sources and cannot discover its own: drop --events-dns, or --events-from")
	}
	if f.interval <= 0 {
		return nil, fmt.Errorf("--events-dns-interval %v: want > 0", f.interval)
	}
	if share <= 0 {
		return nil, errors.New("--events-dns: want --events-max-engines-per-source (or the --events-file index's max_engines_per_stream) > 0: each discovered source's engine share, fixed at start (e.g. 8), without which the first source would take the whole index")
	}
	if f.server != "" {
		if _, _, err := net.SplitHostPort(f.server); err != nil {
			return nil, fmt.Errorf("--events-dns-server %q: want HOST:PORT", f.server)
		}
	}
	return parseDNSTargets(f.specs)
}
