package main

import (
	"bytes"
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"

	"github.com/kvtwin/kvtwin/internal/bounded"
	"github.com/kvtwin/kvtwin/kvevsub"
	"github.com/kvtwin/kvtwin/ref"
)

// eventsFile is the --events-file document: the sources and the index's
// bounds. YAML is a superset of JSON, so either works.
type eventsFile struct {
	// Sources are the publishers, as --events would give them.
	Sources []kvevsub.Source `yaml:"sources"`
	// Index bounds the event-fed index; a flag set on the command line wins.
	Index *ref.KVEvConfig `yaml:"index"`
}

// maxEventsFileBytes bounds --events-file: a thousand sources fit in far less.
const maxEventsFileBytes = 1 << 20

// eventSources parses the --events flags and the --events-file document
// (flags first, then the file's sources) and fills the index bounds the
// command line left at zero from the file.
func eventSources(specs []string, file string, idx *ref.KVEvConfig) ([]kvevsub.Source, error) {
	var out []kvevsub.Source
	for _, spec := range specs {
		src, err := kvevsub.ParseSource(spec)
		if err != nil {
			return nil, fmt.Errorf("--events %q: %w", spec, err)
		}
		out = append(out, src)
	}
	if file == "" {
		return out, nil
	}
	doc, err := readEventsFile(file)
	if err != nil {
		return nil, err
	}
	for i, src := range doc.Sources {
		if err := src.Validate(); err != nil {
			return nil, fmt.Errorf("--events-file %s: sources[%d]: %w", file, i, err)
		}
	}
	if doc.Index != nil {
		if idx.MaxEngines == 0 {
			idx.MaxEngines = doc.Index.MaxEngines
		}
		if idx.MaxTokensPerEngine == 0 {
			idx.MaxTokensPerEngine = doc.Index.MaxTokensPerEngine
		}
		if idx.MaxHeld == 0 {
			idx.MaxHeld = doc.Index.MaxHeld
		}
		if idx.MaxEnginesPerStream == 0 {
			idx.MaxEnginesPerStream = doc.Index.MaxEnginesPerStream
		}
	}
	return append(out, doc.Sources...), nil
}

// maxEventsFileDepth bounds the nesting of an --events-file written as
// JSON (which is also YAML's flow style); the document nests 3 deep.
// Block-style YAML is left to the YAML parser's own bound (10,000).
const maxEventsFileDepth = 64

// readEventsFile reads and strictly decodes file (unknown keys are errors,
// so a misspelt bound is never silently ignored). The file is read with a
// one-byte probe past maxEventsFileBytes, so a FIFO or /dev/zero is
// refused as surely as a large regular file.
func readEventsFile(file string) (eventsFile, error) {
	var doc eventsFile
	b, err := bounded.ReadFile(file, bounded.Limits{MaxBytes: maxEventsFileBytes, MaxDepth: maxEventsFileDepth, BytesName: "the --events-file bound"})
	if err != nil {
		return doc, fmt.Errorf("--events-file: %w", err)
	}
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
