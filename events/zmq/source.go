package zmq

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/kvtwin/kvtwin/spec"
)

// ErrBadSource is the sentinel of every source and options error: ParseSource,
// New and Options name the part, its value and the bound.
var ErrBadSource = spec.NewSentinel("bad_source", "invalid KV-event source")

// ErrUnknownSource is RemoveSource's error for a name that is not one of
// the subscriber's current sources (a caller answers it as "not found",
// unlike ErrBadSource's invalid input).
var ErrUnknownSource = spec.NewSentinel("unknown_source", "no such KV-event source")

// Bounds of a source.
const (
	// MaxNameLen bounds a source name, in bytes.
	MaxNameLen = 128
	// MaxTopicLen bounds a topic prefix, in bytes.
	MaxTopicLen = 255
	// MaxRank bounds a configured DP rank.
	MaxRank = 65535
	// MaxSources bounds the sources of one Subscriber, those added at run
	// time included.
	MaxSources = 1024
)

// Source is one publisher stream (docs/spec/kv-events.md §1.1): one PUB
// socket of one engine process, its optional replay ROUTER, and its
// optional snapshot service (§3.5, §2.10 A13).
type Source struct {
	// Name is the stream's name: the index's stream and, unless the topic
	// has the kv@<source>@<model> form, its engines' source (§2.10 A2).
	Name string `json:"name"`
	// Endpoint is the publisher's PUB socket, tcp://HOST:PORT; the
	// subscriber connects to it.
	Endpoint string `json:"endpoint"`
	// Replay is the publisher's replay ROUTER socket, tcp://HOST:PORT, or ""
	// when the publisher has none (§3.2).
	Replay string `json:"replay,omitzero"`
	// Snapshot is the publisher's snapshot service (vLLM's REP socket,
	// §3.5 [uncertain]), tcp://HOST:PORT, or "" when it has none. With it
	// the index tracks the publisher id, asks for a snapshot when a gap
	// cannot be replayed, and the subscriber reports a live socket silent
	// past Options.HeartbeatTimeout (§2.10 A13). It needs an index that
	// implements spec.KVEvBootstrapper.
	Snapshot string `json:"snapshot,omitzero"`
	// Rank is the DP rank of batches whose data_parallel_rank is nil.
	Rank int64 `json:"rank,omitzero"`
	// Topic is the SUB prefix; "" receives every message.
	Topic string `json:"topic,omitzero"`
}

// Stream is the index's configuration of the source (spec.KVEvStream): build
// the index over Streams(sources) so the index emits replay requests only
// for sources that have a replay endpoint, and snapshot requests only for
// sources that have a snapshot endpoint.
func (s Source) Stream() spec.KVEvStream {
	return spec.KVEvStream{Name: s.Name, Rank: s.Rank, Replay: s.Replay != "", Snapshot: s.Snapshot != ""}
}

// Streams returns the index streams of sources, in order.
func Streams(sources []Source) []spec.KVEvStream {
	out := make([]spec.KVEvStream, len(sources))
	for i, s := range sources {
		out[i] = s.Stream()
	}
	return out
}

// ParseSource reads the flag form
//
//	NAME=tcp://HOST:PORT[,replay=tcp://HOST:PORT][,snapshot=tcp://HOST:PORT][,rank=N][,topic=PREFIX]
//
// Options may come in any order, each at most once. A topic cannot contain
// a comma. Errors are *spec.InputError wrapping ErrBadSource and name the
// part (source.name, source[NAME].endpoint, .replay, .snapshot, .rank,
// .topic).
func ParseSource(sp string) (Source, error) {
	name, rest, ok := strings.Cut(sp, "=")
	if !ok {
		return Source{}, spec.Reject(ErrBadSource, "source", sp, sourceForm)
	}
	if err := checkName(name); err != nil {
		return Source{}, err
	}
	parts := strings.Split(rest, ",")
	s := Source{Name: name, Endpoint: parts[0]}
	seen := map[string]bool{}
	for _, p := range parts[1:] {
		key, val, ok := strings.Cut(p, "=")
		if !ok || seen[key] {
			return Source{}, spec.Reject(ErrBadSource, fieldOf(name, "option"), p, optionsBound)
		}
		seen[key] = true
		switch key {
		case "replay":
			s.Replay = val
			if val == "" {
				return Source{}, spec.Reject(ErrBadSource, fieldOf(name, "replay"), val, "tcp://HOST:PORT with PORT in [1, 65535]")
			}
		case "snapshot":
			s.Snapshot = val
			if val == "" {
				return Source{}, spec.Reject(ErrBadSource, fieldOf(name, "snapshot"), val, "tcp://HOST:PORT with PORT in [1, 65535]")
			}
		case "rank":
			r, err := strconv.ParseInt(val, 10, 64)
			if err != nil {
				return Source{}, spec.Reject(ErrBadSource, fieldOf(name, "rank"), val, fmt.Sprintf("an integer in [0, %d]", MaxRank))
			}
			s.Rank = r
		case "topic":
			s.Topic = val
		default:
			return Source{}, spec.Reject(ErrBadSource, fieldOf(name, "option"), p, optionsBound)
		}
	}
	return s, s.Validate()
}

// The flag form of a source and its options, for errors.
const (
	sourceForm   = "NAME=tcp://HOST:PORT[,replay=tcp://HOST:PORT][,snapshot=tcp://HOST:PORT][,rank=N][,topic=PREFIX]"
	optionsBound = "one of replay=, snapshot=, rank=, topic=, each at most once"
)

// ParseSources parses each spec and rejects duplicate names.
func ParseSources(specs []string) ([]Source, error) {
	out := make([]Source, 0, len(specs))
	for _, sp := range specs {
		s, err := ParseSource(sp)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, validateSources(out)
}

// Validate checks the source's bounds, naming the part.
func (s Source) Validate() error {
	if err := checkName(s.Name); err != nil {
		return err
	}
	if err := checkEndpoint(fieldOf(s.Name, "endpoint"), s.Endpoint); err != nil {
		return err
	}
	if s.Replay != "" {
		if err := checkEndpoint(fieldOf(s.Name, "replay"), s.Replay); err != nil {
			return err
		}
	}
	if s.Snapshot != "" {
		if err := checkEndpoint(fieldOf(s.Name, "snapshot"), s.Snapshot); err != nil {
			return err
		}
	}
	if s.Rank < 0 || s.Rank > MaxRank {
		return spec.Reject(ErrBadSource, fieldOf(s.Name, "rank"), s.Rank, fmt.Sprintf("an integer in [0, %d]", MaxRank))
	}
	if len(s.Topic) > MaxTopicLen {
		return spec.Reject(ErrBadSource, fieldOf(s.Name, "topic"), len(s.Topic), fmt.Sprintf("at most %d bytes", MaxTopicLen))
	}
	return nil
}

// validateSources checks each source and that no two share a name. No
// sources is allowed: a subscriber built empty takes its sources at run
// time (Subscriber.AddSource; §2.10 A11).
func validateSources(sources []Source) error {
	if len(sources) > MaxSources {
		return spec.Reject(ErrBadSource, "sources", len(sources), fmt.Sprintf("at most %d sources", MaxSources))
	}
	seen := make(map[string]bool, len(sources))
	for _, s := range sources {
		if err := s.Validate(); err != nil {
			return err
		}
		if seen[s.Name] {
			return spec.Reject(ErrBadSource, "source.name", s.Name, "a name no other source has")
		}
		seen[s.Name] = true
	}
	return nil
}

func fieldOf(name, part string) string { return "source[" + name + "]." + part }

// checkName accepts 1..MaxNameLen bytes of [A-Za-z0-9._:-]: a name is a log
// field, a metrics label and a JSON key, and the flag form splits on = and ,.
func checkName(name string) error {
	bound := fmt.Sprintf("1 to %d characters of [A-Za-z0-9._:-]", MaxNameLen)
	if name == "" || len(name) > MaxNameLen {
		return spec.Reject(ErrBadSource, "source.name", strconv.Quote(name), bound)
	}
	for _, c := range []byte(name) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return spec.Reject(ErrBadSource, "source.name", strconv.Quote(name), bound)
		}
	}
	return nil
}

// checkEndpoint accepts tcp://HOST:PORT with a non-empty host that is not a
// wildcard (the subscriber connects) and PORT in [1, 65535].
func checkEndpoint(field, ep string) error {
	const bound = "tcp://HOST:PORT with a HOST to connect to and PORT in [1, 65535]"
	addr, ok := strings.CutPrefix(ep, "tcp://")
	if !ok {
		return spec.Reject(ErrBadSource, field, strconv.Quote(ep), bound)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || host == "*" || strings.ContainsAny(host, "/?#@ ") {
		return spec.Reject(ErrBadSource, field, strconv.Quote(ep), bound)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return spec.Reject(ErrBadSource, field, strconv.Quote(ep), bound)
	}
	return nil
}
