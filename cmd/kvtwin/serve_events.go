package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/kvtwin/kvtwin/events/zmq"
	"github.com/kvtwin/kvtwin/internal/bounded"
	"github.com/kvtwin/kvtwin/spec"
)

// eventsFile is the --events-file document: the sources and the index's
// bounds. YAML is a superset of JSON, so either works.
type eventsFile struct {
	// Sources are the publishers, as --events would give them.
	Sources []zmq.Source `yaml:"sources"`
	// Index bounds the event-fed index; a flag set on the command line wins.
	// Its keys are spec.KVEvConfig's JSON names (max_engines, max_held_bytes,
	// ...), decoded by indexConfig: yaml would want Go's field names.
	Index yaml.Node `yaml:"index"`
}

// indexConfig decodes the document's index mapping into a KVEvConfig by
// its JSON names, refusing unknown keys.
func (doc eventsFile) indexConfig() (*spec.KVEvConfig, error) {
	if doc.Index.Kind == 0 {
		return nil, nil // no index mapping
	}
	var m map[string]any
	if err := doc.Index.Decode(&m); err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var c spec.KVEvConfig
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	return &c, nil
}

// maxEventsFileBytes bounds --events-file: a thousand sources fit in far less.
const maxEventsFileBytes = 1 << 20

// eventSources parses the --events flags and the --events-file document
// (flags first, then the file's sources) and fills the index bounds the
// command line left at zero from the file.
func eventSources(specs []string, file string, idx *spec.KVEvConfig) ([]zmq.Source, error) {
	srcs, _, err := eventSourcesAndFile(specs, file, idx)
	return srcs, err
}

// eventSourcesAndFile is eventSources that also returns the file as read
// (its zero value without --events-file), for serve's reload of it.
func eventSourcesAndFile(specs []string, file string, idx *spec.KVEvConfig) ([]zmq.Source, eventsFileDoc, error) {
	var out []zmq.Source
	for _, sp := range specs {
		src, err := zmq.ParseSource(sp)
		if err != nil {
			return nil, eventsFileDoc{}, fmt.Errorf("--events %q: %w", sp, err)
		}
		out = append(out, src)
	}
	if file == "" {
		return out, eventsFileDoc{}, nil
	}
	b, err := readEventsFileBytes(file)
	if err != nil {
		return nil, eventsFileDoc{}, err
	}
	doc, err := loadEventsFile(file, b)
	if err != nil {
		return nil, eventsFileDoc{}, err
	}
	if fileIdx := doc.index; fileIdx != nil {
		fillZero(&idx.MaxEngines, fileIdx.MaxEngines)
		fillZero(&idx.MaxTokensPerEngine, fileIdx.MaxTokensPerEngine)
		fillZero(&idx.MaxHeld, fileIdx.MaxHeld)
		fillZero(&idx.MaxEvents, fileIdx.MaxEvents)
		fillZero(&idx.MaxDecodeRatio, fileIdx.MaxDecodeRatio)
		fillZero(&idx.MaxHeldBytes, fileIdx.MaxHeldBytes)
		fillZero(&idx.MaxEnginesPerStream, fileIdx.MaxEnginesPerStream)
	}
	return append(out, doc.sources...), doc, nil
}

// eventsFileDoc is an --events-file read and checked: its sources, its
// index mapping (nil when it has none) and the digest of its bytes, which
// serve's reload compares to notice a change.
type eventsFileDoc struct {
	sources []zmq.Source
	index   *spec.KVEvConfig
	digest  [sha256.Size]byte
}

// loadEventsFile decodes b, the bytes of file, and checks every part of
// it before any is used: each source valid (zmq.Source.Validate), no two
// sources with one name, the index mapping's keys known. At start a
// failure stops serve; on a reload it changes nothing.
func loadEventsFile(file string, b []byte) (eventsFileDoc, error) {
	raw, err := decodeEventsFile(file, b)
	if err != nil {
		return eventsFileDoc{}, err
	}
	seen := make(map[string]int, len(raw.Sources))
	for i, src := range raw.Sources {
		if err := src.Validate(); err != nil {
			return eventsFileDoc{}, fmt.Errorf("--events-file %s: sources[%d]: %w", file, i, err)
		}
		if j, dup := seen[src.Name]; dup {
			return eventsFileDoc{}, fmt.Errorf("--events-file %s: sources[%d].name = %s: want a name no other source has (sources[%d] has it)", file, i, src.Name, j)
		}
		seen[src.Name] = i
	}
	if len(raw.Sources) > zmq.MaxSources {
		return eventsFileDoc{}, fmt.Errorf("--events-file %s: sources: %d sources: want at most %d", file, len(raw.Sources), zmq.MaxSources)
	}
	idx, err := raw.indexConfig()
	if err != nil {
		return eventsFileDoc{}, fmt.Errorf("--events-file %s: %w", file, err)
	}
	return eventsFileDoc{sources: raw.Sources, index: idx, digest: sha256.Sum256(b)}, nil
}

// maxEventsFileDepth bounds the nesting of an --events-file written as
// JSON (which is also YAML's flow style); the document nests 3 deep.
// Block-style YAML is left to the YAML parser's own bound (10,000).
const maxEventsFileDepth = 64

// fillZero sets *flag to file's value when the command line left it 0.
func fillZero[T int | int64](flag *T, file T) {
	if *flag == 0 {
		*flag = file
	}
}

// addEventBoundFlags adds the flags of the event wire's bounds to f: the
// bounds of one message and of the bytes held during a replay, which the
// index enforces (docs/spec/kv-events.md §2.10 A7, A10), and the
// subscriber's byte budget, message size and refusal-log interval
// (docs/events.md). serve and events relay share them.
func addEventBoundFlags(f *pflag.FlagSet, idx *spec.KVEvConfig, sub *zmq.Options) {
	f.IntVar(&idx.MaxEvents, "events-max-events", 0, "most events of one message; a larger message is refused whole at its events header and its source's engines marked stale (0: 262144)")
	f.Int64Var(&idx.MaxDecodeRatio, "events-max-decode-ratio", 0, "most decoded bytes per message byte, beyond 64 KiB (256 per event, 8 per hash, 4 per token); past it the message is refused whole (0: 16)")
	f.Var(byteSizeFlag{&idx.MaxHeldBytes}, "events-max-held-bytes", "most bytes of the live messages a source holds while its replay runs, bytes or <n>{KB,MB,GB,KiB,MiB,GiB}; past it they are dropped and the source marked stale (0: 64MiB)")
	f.Var(byteSizeFlag{&sub.MaxBufferedBytes}, "events-max-buffered-bytes", "byte budget over everything the subscriber holds for all sources: queued frames, replay replies, held messages; a frame that finds no room within --events-buffer-wait closes its connection (0: 256MiB, at least --events-max-message-bytes)")
	f.Var(byteSizeFlag{&sub.MaxMessageBytes}, "events-max-message-bytes", "largest received message, frames together; a larger one closes its connection before it is read (0: 64MiB)")
	f.DurationVar(&sub.BufferWait, "events-buffer-wait", 0, "how long a frame waits for room in --events-max-buffered-bytes before its connection is closed (0: 2s)")
	f.DurationVar(&sub.LogInterval, "events-log-interval", 0, "least time between two log lines of one source about refused messages and step errors; the rest are counted (0: 10s)")
	f.DurationVar(&sub.ReplayTimeout, "events-replay-timeout", 0, "how long a replay may go without a reply before it fails and the source is marked stale (0: 5s)")
	f.DurationVar(&sub.ReplayMaxDuration, "events-replay-max-duration", 0, "longest a replay may run without its sentinel, however often the replay endpoint answers (0: 1m)")
	f.DurationVar(&sub.SnapshotTimeout, "events-snapshot-timeout", 0, "how long a snapshot request (a source's snapshot=) may wait for its reply before it fails and the source stays stale (0: 5s)")
	f.DurationVar(&sub.HeartbeatTimeout, "events-heartbeat-timeout", 0, "how long the live socket of a source with snapshot= may stay silent before its next message asks for a snapshot (0: 5s; the publisher's heartbeats must come more often)")
}

// byteSizeFlag is a flag of bytes, plain or with a binary unit
// (spec.ByteSize); 0 keeps the default.
type byteSizeFlag struct{ v *int64 }

func (f byteSizeFlag) String() string {
	if f.v == nil {
		return "0"
	}
	return strconv.FormatInt(*f.v, 10)
}

func (f byteSizeFlag) Set(s string) error {
	if s == "0" {
		*f.v = 0
		return nil
	}
	n, err := spec.ByteSize(s).Bytes("size")
	if err != nil {
		return fmt.Errorf("want bytes or <n>{KB,MB,GB,KiB,MiB,GiB} (binary), 0 for the default")
	}
	*f.v = n
	return nil
}

func (f byteSizeFlag) Type() string { return "bytes" }

// readEventsFileBytes reads file under the --events-file bounds: at most
// maxEventsFileBytes, read with a one-byte probe past it, so a FIFO or
// /dev/zero is refused as surely as a large regular file; UTF-8; JSON
// nesting at most maxEventsFileDepth.
func readEventsFileBytes(file string) ([]byte, error) {
	b, err := bounded.ReadFile(file, bounded.Limits{MaxBytes: maxEventsFileBytes, MaxDepth: maxEventsFileDepth, BytesName: "the --events-file bound"})
	if err != nil {
		return nil, fmt.Errorf("--events-file: %w", err)
	}
	return b, nil
}

// decodeEventsFile strictly decodes b, the bytes of file (unknown keys are
// errors, so a misspelt bound is never silently ignored). An empty file is
// an error too (io.EOF), not a file without sources: on a reload, a file
// caught half written would otherwise remove every source it gave.
func decodeEventsFile(file string, b []byte) (eventsFile, error) {
	var doc eventsFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		return doc, fmt.Errorf("--events-file %s: %w", file, err)
	}
	return doc, nil
}

// defaultReplicaID is the host name made a NATS consumer name (bytes
// outside [A-Za-z0-9_-] become _), so a restarted pod keeps its durable.
func defaultReplicaID() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "kvtwin"
	}
	b := []byte(h)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}
