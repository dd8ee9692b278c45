package tracegen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/kvtwin/kvtwin/internal/bounded"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// Bounds of an events file when reading (docs/replay.md). The
// file is read a line at a time and every bound is checked before the
// bytes past it are kept, so /dev/zero or an endless line costs at most
// the line bound.
const (
	// DefaultMaxLineBytes bounds one line: 32 MiB, 7.6 times the longest
	// line the Mooncake conversation trace emits at --emit-events' defaults
	// (4.2 MB, a step's BlockStored batch of 512-token blocks).
	DefaultMaxLineBytes = 32 << 20
	// DefaultMaxFileBytes bounds one file: 2 GiB, twice what --emit-events
	// writes for that trace at its defaults (1.0 GB). Load holds the
	// whole file, so this bounds its memory too.
	DefaultMaxFileBytes = 2 << 30
	// MaxDepth bounds a line's nesting of arrays and objects; the header
	// and steps nest 4 deep.
	MaxDepth = 64
)

// Limits bounds what a Reader accepts (`kvtwin bench events`
// --max-line-bytes, --max-file-bytes).
type Limits struct {
	// MaxLineBytes bounds one line, its newline excluded; >= 1.
	MaxLineBytes int
	// MaxFileBytes bounds the whole file, newlines included; >= 1.
	MaxFileBytes int64
}

// DefaultLimits returns DefaultMaxLineBytes and DefaultMaxFileBytes.
func DefaultLimits() Limits {
	return Limits{MaxLineBytes: DefaultMaxLineBytes, MaxFileBytes: DefaultMaxFileBytes}
}

// Reader reads an events file line by line: Header first, then Next until io.EOF.
type Reader struct {
	lines *bounded.Lines
	hdr   Header
}

// NewReader reads the header line of an events file under DefaultLimits.
func NewReader(r io.Reader) (*Reader, error) { return NewReaderLimited(r, DefaultLimits()) }

// NewReaderLimited reads the header line of an events file under lim.
func NewReaderLimited(r io.Reader, lim Limits) (*Reader, error) {
	rd := &Reader{lines: bounded.NewLines(r, bounded.Limits{
		MaxLineBytes: lim.MaxLineBytes, MaxBytes: lim.MaxFileBytes, MaxDepth: MaxDepth,
		LineName: "--max-line-bytes", BytesName: "--max-file-bytes",
	})}
	b, err := rd.readLine()
	if err == io.EOF {
		return nil, errors.New("events file: empty (want a {config, streams} header line)")
	}
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, errors.New("events file line 1: blank: want a {config, streams} header line")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rd.hdr); err != nil {
		return nil, fmt.Errorf("events file line 1: header: %w", err)
	}
	if len(rd.hdr.Streams) == 0 {
		return nil, errors.New("events file line 1: header names no streams")
	}
	return rd, nil
}

// Header is the file's {config, streams}.
func (rd *Reader) Header() Header { return rd.hdr }

// Next returns the next step, or io.EOF after the last.
func (rd *Reader) Next() (spec.KVEvStep, error) {
	for {
		b, err := rd.readLine()
		if err != nil {
			return spec.KVEvStep{}, err
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		var s spec.KVEvStep
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			return spec.KVEvStep{}, fmt.Errorf("events file line %d: %w", rd.lines.Line(), err)
		}
		return s, nil
	}
}

// readLine is the next line; a refusal or read error says "events file line N: …".
func (rd *Reader) readLine() ([]byte, error) {
	b, err := rd.lines.Next()
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("events file %w", err)
	}
	return b, err
}

// Load reads a whole events file into a kvev.apply input, under
// DefaultLimits.
func Load(r io.Reader) (spec.KVEvApplyInput, error) { return LoadLimited(r, DefaultLimits()) }

// LoadLimited is Load under lim.
func LoadLimited(r io.Reader, lim Limits) (spec.KVEvApplyInput, error) {
	rd, err := NewReaderLimited(r, lim)
	if err != nil {
		return spec.KVEvApplyInput{}, err
	}
	in := spec.KVEvApplyInput{Config: rd.hdr.Config, Streams: rd.hdr.Streams, Steps: []spec.KVEvStep{}}
	for {
		s, err := rd.Next()
		if err == io.EOF {
			return in, nil
		}
		if err != nil {
			return spec.KVEvApplyInput{}, err
		}
		in.Steps = append(in.Steps, s)
	}
}

// LoadFile is Load on a file.
func LoadFile(path string) (spec.KVEvApplyInput, error) {
	return LoadFileLimited(path, DefaultLimits())
}

// LoadFileLimited is LoadLimited on a file (a directory is refused); errors
// name the path.
func LoadFileLimited(path string, lim Limits) (spec.KVEvApplyInput, error) {
	f, err := bounded.Open(path)
	if err != nil {
		return spec.KVEvApplyInput{}, err
	}
	defer f.Close()
	in, err := LoadLimited(f, lim)
	if err != nil {
		return spec.KVEvApplyInput{}, fmt.Errorf("%s: %w", path, err)
	}
	return in, nil
}

// BatchCount is what one payload carries, counted without the index.
type BatchCount struct {
	// Events is the batch's events.
	Events int
	// Stored and Removed are BlockStored / BlockRemoved events.
	Stored, Removed int
	// BlocksStored and BlocksRemoved are their block hashes.
	BlocksStored, BlocksRemoved int
	// Cleared is AllBlocksCleared events.
	Cleared int
}

// Add accumulates c into b.
func (b *BatchCount) Add(c BatchCount) {
	b.Events += c.Events
	b.Stored += c.Stored
	b.Removed += c.Removed
	b.BlocksStored += c.BlocksStored
	b.BlocksRemoved += c.BlocksRemoved
	b.Cleared += c.Cleared
}

// Blocks is the block hashes stored and removed.
func (b BatchCount) Blocks() int { return b.BlocksStored + b.BlocksRemoved }

// GenericEvent is one event of a payload decoded with msgpack's generic
// decoder (not a kvev twin), for counting and for tests.
type GenericEvent struct {
	// Type is the tag string.
	Type string
	// Form is "array" or "map".
	Form string
	// Fields are the event's fields by name (form A: the §1.4 names of its positions).
	Fields map[string]any
	// Len is the array's length (tag included) or the map's key count.
	Len int
}

var storedNames = []string{"block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium",
	"lora_name", "extra_keys", "group_idx", "kv_cache_spec_kind", "kv_cache_spec_sliding_window"}
var removedNames = []string{"block_hashes", "medium", "group_idx"}

// DecodeGeneric decodes a batch payload ([ts, events, rank]) with
// msgpack's generic decoder into its ts, events and rank.
func DecodeGeneric(payload []byte) (ts float64, events []GenericEvent, rank any, err error) {
	dec := msgpack.NewDecoder(bytes.NewReader(payload))
	dec.UseLooseInterfaceDecoding(false)
	v, err := dec.DecodeInterface()
	if err != nil {
		return 0, nil, nil, err
	}
	batch, ok := v.([]any)
	if !ok || len(batch) < 2 {
		return 0, nil, nil, fmt.Errorf("batch is %T, want an array of 2..4", v)
	}
	ts, ok = batch[0].(float64)
	if !ok {
		return 0, nil, nil, fmt.Errorf("ts is %T, want float64", batch[0])
	}
	evs, ok := batch[1].([]any)
	if !ok {
		return 0, nil, nil, fmt.Errorf("events is %T, want an array", batch[1])
	}
	if len(batch) > 2 {
		rank = batch[2]
	}
	for i, raw := range evs {
		var g GenericEvent
		switch ev := raw.(type) {
		case []any:
			tag, _ := ev[0].(string)
			g = GenericEvent{Type: tag, Form: EncodingArray, Len: len(ev), Fields: map[string]any{}}
			names := storedNames
			if tag == "BlockRemoved" {
				names = removedNames
			}
			for j, f := range ev[1:] {
				if j < len(names) {
					g.Fields[names[j]] = f
				}
			}
		case map[string]any:
			tag, _ := ev["type"].(string)
			g = GenericEvent{Type: tag, Form: EncodingMap, Len: len(ev), Fields: ev}
		default:
			return 0, nil, nil, fmt.Errorf("event %d is %T", i, raw)
		}
		events = append(events, g)
	}
	return ts, events, rank, nil
}

// CountPayload counts a batch payload's events and blocks.
func CountPayload(payload []byte) (BatchCount, error) {
	_, evs, _, err := DecodeGeneric(payload)
	if err != nil {
		return BatchCount{}, err
	}
	c := BatchCount{Events: len(evs)}
	for _, ev := range evs {
		hs, _ := ev.Fields["block_hashes"].([]any)
		switch ev.Type {
		case "BlockStored":
			c.Stored++
			c.BlocksStored += len(hs)
		case "BlockRemoved":
			c.Removed++
			c.BlocksRemoved += len(hs)
		case "AllBlocksCleared":
			c.Cleared++
		}
	}
	return c, nil
}

// NormHash normalises a generically decoded hash (§1.5): ints as two's
// complement, a bin by its last 8 bytes big-endian.
func NormHash(v any) (spec.EvHash, error) {
	switch h := v.(type) {
	case uint64:
		return spec.EvHash(h), nil
	case int64:
		return spec.EvHash(uint64(h)), nil
	case uint8:
		return spec.EvHash(h), nil
	case uint16:
		return spec.EvHash(h), nil
	case uint32:
		return spec.EvHash(h), nil
	case int8:
		return spec.EvHash(uint64(int64(h))), nil
	case int16:
		return spec.EvHash(uint64(int64(h))), nil
	case int32:
		return spec.EvHash(uint64(int64(h))), nil
	case []byte:
		if len(h) == 0 {
			return 0, errors.New("empty bin hash")
		}
		return ref.KVBinHash(h), nil
	}
	return 0, fmt.Errorf("hash of type %T", v)
}
