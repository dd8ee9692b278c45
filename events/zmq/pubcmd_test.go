package zmq

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The publishers' command language (scripts/kvev_publisher.py's docstring):
// the Go publisher runs the same commands and encodes batches with the same
// rules, byte for byte (TestPublishersEncodeAlike).

// pubCmd is one publisher command.
type pubCmd struct {
	Op      string
	Events  []pubEvent
	Form    string // event form: "array" (default) or "map"
	Batch   string // batch form: "array" (default) or "map"
	Rank    *int64 // nil: the publisher's rank
	NoRank  bool   // send a nil rank (SGLang)
	Payload []byte // raw payload instead of events
	Seconds float64
	N       int
	Timeout float64
}

func (c pubCmd) MarshalJSON() ([]byte, error) {
	m := map[string]any{"op": c.Op}
	if c.Events != nil {
		m["events"] = c.Events
	}
	if c.Form != "" {
		m["form"] = c.Form
	}
	if c.Batch != "" {
		m["batch"] = c.Batch
	}
	switch {
	case c.NoRank:
		m["rank"] = nil
	case c.Rank != nil:
		m["rank"] = *c.Rank
	}
	if c.Payload != nil {
		m["payload"] = hex.EncodeToString(c.Payload)
	}
	if c.Seconds != 0 {
		m["seconds"] = c.Seconds
	}
	if c.N != 0 {
		m["n"] = c.N
	}
	if c.Timeout != 0 {
		m["timeout"] = c.Timeout
	}
	return json.Marshal(m)
}

// pubAck is a command's answer.
type pubAck struct {
	Op          string `json:"op"`
	Error       string `json:"error"`
	Seq         uint64 `json:"seq"`
	Payload     string `json:"payload"`
	Subscribers int    `json:"subscribers"`
	Pub         string `json:"pub"`
	Replay      string `json:"replay"`
	// stats
	Sent            int `json:"sent"`
	Lost            int `json:"lost"`
	Dropped         int `json:"dropped"`
	ReplayAnswered  int `json:"replay_answered"`
	ReplayIgnored   int `json:"replay_ignored"`
	ReplayedBatches int `json:"replayed_batches"`
}

// pubHash is a block hash as a publisher sends it: an unsigned or negative
// int, or bytes.
type pubHash struct {
	u   uint64
	neg int64 // < 0 when the hash is a negative int
	bin []byte
}

func hu(v uint64) pubHash  { return pubHash{u: v} }
func hneg(v int64) pubHash { return pubHash{neg: v} }
func hbin(b []byte) pubHash {
	return pubHash{bin: b}
}

func (h pubHash) MarshalJSON() ([]byte, error) {
	switch {
	case h.bin != nil:
		return json.Marshal(map[string]string{"bin": hex.EncodeToString(h.bin)})
	case h.neg < 0:
		return []byte(strconv.FormatInt(h.neg, 10)), nil
	}
	return []byte(strconv.FormatUint(h.u, 10)), nil
}

// field is one event field; V is nil, int64, string, []uint32, pubHash or []pubHash.
type field struct {
	Name string
	V    any
}

// pubEvent is an event with its fields in the order given.
type pubEvent struct {
	Type   string
	Fields []field
	Form   string // this event's form, overriding the command's
}

func (e pubEvent) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteString(`{"type":`)
	t, _ := json.Marshal(e.Type)
	b.Write(t)
	if e.Form != "" {
		b.WriteString(`,"form":"` + e.Form + `"`)
	}
	for _, f := range e.Fields {
		k, _ := json.Marshal(f.Name)
		v, err := json.Marshal(f.V)
		if err != nil {
			return nil, err
		}
		b.WriteByte(',')
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

func (e pubEvent) get(name string) (any, bool) {
	for _, f := range e.Fields {
		if f.Name == name {
			return f.V, true
		}
	}
	return nil, false
}

// with returns e with field name set to v.
func (e pubEvent) with(name string, v any) pubEvent {
	fs := slices.Clone(e.Fields)
	for i := range fs {
		if fs[i].Name == name {
			fs[i].V = v
			return pubEvent{e.Type, fs, e.Form}
		}
	}
	return pubEvent{e.Type, append(fs, field{name, v}), e.Form}
}

// stored is a vLLM BlockStored: lora_id, medium "GPU", lora_name.
func stored(hashes []pubHash, parent *pubHash, tokens []uint32, bs int64) pubEvent {
	var p any
	if parent != nil {
		p = *parent
	}
	return pubEvent{Type: "BlockStored", Fields: []field{
		{"block_hashes", hashes}, {"parent_block_hash", p}, {"token_ids", tokens},
		{"block_size", bs}, {"lora_id", nil}, {"medium", "GPU"}, {"lora_name", nil},
	}}
}

func removed(hashes ...pubHash) pubEvent {
	return pubEvent{Type: "BlockRemoved", Fields: []field{{"block_hashes", hashes}, {"medium", "GPU"}}}
}

func cleared() pubEvent { return pubEvent{Type: "AllBlocksCleared"} }

// declared is the publishers' declaration order (FIELDS in the script).
var declared = map[string][]string{
	"BlockStored": {"block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id",
		"medium", "lora_name", "extra_keys", "group_idx", "kv_cache_spec_kind", "kv_cache_spec_sliding_window"},
	"BlockRemoved":     {"block_hashes", "medium", "group_idx"},
	"AllBlocksCleared": {},
}

// encodeBatch is the script's encode_batch.
func encodeBatch(c pubCmd, rank int64) []byte {
	if c.Payload != nil {
		return c.Payload
	}
	form := c.Form
	if form == "" {
		form = "array"
	}
	var evs []any
	for _, e := range c.Events {
		f := form
		if e.Form != "" {
			f = e.Form
		}
		evs = append(evs, encodeEvent(e, f))
	}
	var r any = rank
	switch {
	case c.NoRank:
		r = nil
	case c.Rank != nil:
		r = *c.Rank
	}
	ts := 1757500000.25
	var enc mpEnc
	if c.Batch == "map" {
		enc.value(mpMap{{"ts", ts}, {"events", evs}, {"data_parallel_rank", r}})
	} else {
		enc.value([]any{ts, evs, r})
	}
	return enc.b
}

func encodeEvent(e pubEvent, form string) any {
	fields, ok := declared[e.Type]
	if !ok {
		for _, f := range e.Fields {
			fields = append(fields, f.Name)
		}
	}
	if form == "map" {
		m := mpMap{{"type", e.Type}}
		for _, name := range fields {
			if v, ok := e.get(name); ok {
				m = append(m, mpKV{name, v})
			}
		}
		return m
	}
	last := -1
	for i, name := range fields {
		if _, ok := e.get(name); ok {
			last = i
		}
	}
	arr := []any{e.Type}
	for _, name := range fields[:last+1] {
		v, _ := e.get(name)
		arr = append(arr, v)
	}
	return arr
}

// A msgpack encoder choosing the encodings msgpack-python's packb chooses
// (use_bin_type=True): the smallest int family, str8 for 32..255 bytes,
// float64 for floats.
type mpEnc struct{ b []byte }

type mpKV struct {
	k string
	v any
}
type mpMap []mpKV

func (e *mpEnc) value(v any) {
	switch v := v.(type) {
	case nil:
		e.b = append(e.b, 0xc0)
	case int64:
		e.int(v)
	case int:
		e.int(int64(v))
	case uint64:
		e.uint(v)
	case uint32:
		e.uint(uint64(v))
	case float64:
		e.b = append(e.b, 0xcb)
		e.b = binary.BigEndian.AppendUint64(e.b, math.Float64bits(v))
	case string:
		e.str(v)
	case []byte:
		e.bin(v)
	case pubHash:
		switch {
		case v.bin != nil:
			e.bin(v.bin)
		case v.neg < 0:
			e.int(v.neg)
		default:
			e.uint(v.u)
		}
	case []pubHash:
		e.arrayHeader(len(v))
		for _, x := range v {
			e.value(x)
		}
	case []uint32:
		e.arrayHeader(len(v))
		for _, x := range v {
			e.uint(uint64(x))
		}
	case []any:
		e.arrayHeader(len(v))
		for _, x := range v {
			e.value(x)
		}
	case mpMap:
		switch n := len(v); {
		case n < 16:
			e.b = append(e.b, 0x80|byte(n))
		default:
			e.b = append(e.b, 0xde)
			e.b = binary.BigEndian.AppendUint16(e.b, uint16(n))
		}
		for _, kv := range v {
			e.str(kv.k)
			e.value(kv.v)
		}
	default:
		panic("mpEnc: unsupported value")
	}
}

func (e *mpEnc) int(v int64) {
	switch {
	case v >= 0:
		e.uint(uint64(v))
	case v >= -32:
		e.b = append(e.b, byte(v))
	case v >= math.MinInt8:
		e.b = append(e.b, 0xd0, byte(v))
	case v >= math.MinInt16:
		e.b = append(e.b, 0xd1)
		e.b = binary.BigEndian.AppendUint16(e.b, uint16(v))
	case v >= math.MinInt32:
		e.b = append(e.b, 0xd2)
		e.b = binary.BigEndian.AppendUint32(e.b, uint32(v))
	default:
		e.b = append(e.b, 0xd3)
		e.b = binary.BigEndian.AppendUint64(e.b, uint64(v))
	}
}

func (e *mpEnc) uint(v uint64) {
	switch {
	case v < 128:
		e.b = append(e.b, byte(v))
	case v < 1<<8:
		e.b = append(e.b, 0xcc, byte(v))
	case v < 1<<16:
		e.b = append(e.b, 0xcd)
		e.b = binary.BigEndian.AppendUint16(e.b, uint16(v))
	case v < 1<<32:
		e.b = append(e.b, 0xce)
		e.b = binary.BigEndian.AppendUint32(e.b, uint32(v))
	default:
		e.b = append(e.b, 0xcf)
		e.b = binary.BigEndian.AppendUint64(e.b, v)
	}
}

func (e *mpEnc) str(s string) {
	switch n := len(s); {
	case n < 32:
		e.b = append(e.b, 0xa0|byte(n))
	case n < 1<<8:
		e.b = append(e.b, 0xd9, byte(n))
	default:
		e.b = append(e.b, 0xda)
		e.b = binary.BigEndian.AppendUint16(e.b, uint16(n))
	}
	e.b = append(e.b, s...)
}

func (e *mpEnc) bin(b []byte) {
	switch n := len(b); {
	case n < 1<<8:
		e.b = append(e.b, 0xc4, byte(n))
	default:
		e.b = append(e.b, 0xc5)
		e.b = binary.BigEndian.AppendUint16(e.b, uint16(n))
	}
	e.b = append(e.b, b...)
}

func (e *mpEnc) arrayHeader(n int) {
	switch {
	case n < 16:
		e.b = append(e.b, 0x90|byte(n))
	default:
		e.b = append(e.b, 0xdc)
		e.b = binary.BigEndian.AppendUint16(e.b, uint16(n))
	}
}
