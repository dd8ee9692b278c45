package scaleout

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kvtwin/kvtwin/spec"
)

// Warm replicas (docs/spec/kv-events.md §4.3 option (a), amendment
// 2026-12-06): a replica writes its index's A12 snapshot, wrapped in an
// envelope that carries the apply rule's per-source state, to a JetStream
// object store, and a starting replica restores from the newest usable one.
// This file holds the options, the envelope's bytes and the object names;
// snapstore.go writes and loads them.

// SnapshotOptions configure a replica's snapshots (§4.3 option (a)). The
// zero value writes and loads none.
type SnapshotOptions struct {
	// Bucket is the JetStream object store (1 to 128 characters of
	// [A-Za-z0-9_-]); empty: no snapshots. The replica creates it (file
	// storage) when it writes the first snapshot. Replicas of one stream
	// and the same sources may share a bucket: each finds the others'
	// snapshots (§4.3: same stream prefix, same state).
	Bucket string
	// Every writes a snapshot after this many applied messages; 0: the
	// default (1,000,000), negative: never by count.
	Every int64
	// Interval writes a snapshot this long after the last one taken (when
	// a message was applied since); 0: the default (5 min), negative:
	// never by time. Every and Interval cannot both be off.
	Interval time.Duration
	// Keep is how many snapshots of the replica's stream and sources the
	// bucket keeps: older ones are deleted after each successful upload.
	// 0: the default, 3.
	Keep int
	// MaxBytes bounds an object the loader reads, checked against its
	// size before any byte is read and again while reading; 0: the
	// default, 1 GiB.
	MaxBytes int64
	// UploadTimeout bounds one upload (0: the default, 10 min).
	UploadTimeout time.Duration
	// Restore builds an index from an A12 snapshot (catalog's twin:
	// ref.RestoreKVEvIndex or fast's); required with a Bucket.
	Restore spec.RestoreKVEvIndexFunc
	// IndexConfig is the configuration the replica's index was built
	// with: the restore checks the snapshot's against it (A12 refusal 2).
	IndexConfig spec.KVEvConfig
}

// Defaults and bounds of SnapshotOptions.
const (
	defaultSnapshotEvery         int64 = 1_000_000
	defaultSnapshotInterval            = 5 * time.Minute
	defaultSnapshotKeep                = 3
	defaultSnapshotMaxBytes      int64 = 1 << 30
	defaultSnapshotUploadTimeout       = 10 * time.Minute
	maxSnapshotKeep                    = 100
	maxSnapshotMaxBytes          int64 = 1 << 40
)

func (o SnapshotOptions) withDefaults() (SnapshotOptions, error) {
	if o.Bucket == "" {
		return o, nil
	}
	if !validToken(o.Bucket) {
		return o, spec.Reject(ErrBadOption, "snapshots.bucket", strconv.Quote(o.Bucket), fmt.Sprintf("1 to %d characters of [A-Za-z0-9_-] (a JetStream object store name)", maxTokenLen))
	}
	if o.Every == 0 {
		o.Every = defaultSnapshotEvery
	}
	if o.Interval == 0 {
		o.Interval = defaultSnapshotInterval
	}
	if o.Interval > 0 && o.Interval < time.Second/10 {
		return o, spec.Reject(ErrBadOption, "snapshots.interval", o.Interval, ">= 100ms (0: the default, 5m0s; negative: off)")
	}
	if o.Every < 0 && o.Interval < 0 {
		return o, spec.Reject(ErrBadOption, "snapshots.every", o.Every, "positive, or snapshots.interval positive: a snapshot needs a trigger")
	}
	if o.Keep == 0 {
		o.Keep = defaultSnapshotKeep
	}
	if o.Keep < 1 || o.Keep > maxSnapshotKeep {
		return o, spec.Reject(ErrBadOption, "snapshots.keep", o.Keep, fmt.Sprintf("in [1, %d] (0: the default, %d)", maxSnapshotKeep, defaultSnapshotKeep))
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = defaultSnapshotMaxBytes
	}
	if o.MaxBytes < envelopeMinBytes || o.MaxBytes > maxSnapshotMaxBytes {
		return o, spec.Reject(ErrBadOption, "snapshots.max_bytes", o.MaxBytes, fmt.Sprintf("in [%d, %d] (0: the default, %d)", envelopeMinBytes, maxSnapshotMaxBytes, defaultSnapshotMaxBytes))
	}
	if o.UploadTimeout == 0 {
		o.UploadTimeout = defaultSnapshotUploadTimeout
	}
	if o.UploadTimeout < time.Second {
		return o, spec.Reject(ErrBadOption, "snapshots.upload_timeout", o.UploadTimeout, ">= 1s (0: the default, 10m0s)")
	}
	if o.Restore == nil {
		return o, spec.Reject(ErrBadOption, "snapshots.restore", "nil", "the index twin's restore function (A12)")
	}
	return o, nil
}

// The envelope (§4.3 amendment 2026-12-06): what a replica stores in an
// object. Integers little-endian fixed width as in A12; a string is a u64
// length and its bytes; a flag one byte, 0 or 1.
//
//	magic "KVTWREPL", version u32 (1), covers u64, stream (string),
//	sources: u64 count, per source token (string), rank (i64),
//	  epoch_known (flag), epoch (u64), seq_known (flag), seq (u64),
//	index: the A12 snapshot (string),
//	trailer: SHA-256 of every byte before it.
const (
	envelopeMagic   = "KVTWREPL"
	envelopeVersion = 1
	// envelopeMinBytes: magic, version, covers, three lengths/counts
	// (stream, sources, index) and the trailer.
	envelopeMinBytes = 8 + 4 + 8 + 8 + 8 + 8 + sha256.Size
	// envelopeSourceMinBytes is a source's smallest encoding: a
	// one-byte token (8 + 1), rank 8, two flags and two u64s.
	envelopeSourceMinBytes = 9 + 8 + 1 + 8 + 1 + 8
)

// ruleState is one source's apply-rule state (applier.go): what a restored
// replica needs to apply the next message as the writer would have.
type ruleState struct {
	Token      string
	Rank       int64
	EpochKnown bool
	Epoch      uint64
	SeqKnown   bool
	Seq        uint64
}

// envelope is a decoded envelope.
type envelope struct {
	Covers  uint64
	Stream  string
	Sources []ruleState // sorted by token
	Index   []byte      // A12 bytes, opaque here
}

// encodeEnvelope writes e (sources sorted by token) as one byte string.
func encodeEnvelope(e envelope) []byte {
	p := envelopeOf(e)
	return slices.Concat(p.head, p.index, p.trailer)
}

// envelopeParts is an envelope as the three pieces it is written in: the
// header (through the index's length), the A12 bytes as they were
// encoded, and the SHA-256 trailer over both. An upload reads them in
// order, so the index's bytes (a gigabyte at 10M blocks) are never copied
// into a second buffer.
type envelopeParts struct {
	head, index, trailer []byte
}

// envelopeOf splits e into its parts, hashing the index where it lies.
func envelopeOf(e envelope) envelopeParts {
	n := envelopeMinBytes - sha256.Size + len(e.Stream)
	for _, s := range e.Sources {
		n += envelopeSourceMinBytes - 1 + len(s.Token)
	}
	b := make([]byte, 0, n)
	b = append(b, envelopeMagic...)
	b = binary.LittleEndian.AppendUint32(b, envelopeVersion)
	b = binary.LittleEndian.AppendUint64(b, e.Covers)
	b = appendString(b, e.Stream)
	src := slices.Clone(e.Sources)
	slices.SortFunc(src, func(x, y ruleState) int { return strings.Compare(x.Token, y.Token) })
	b = binary.LittleEndian.AppendUint64(b, uint64(len(src)))
	for _, s := range src {
		b = appendString(b, s.Token)
		b = binary.LittleEndian.AppendUint64(b, uint64(s.Rank))
		b = appendFlag(b, s.EpochKnown)
		b = binary.LittleEndian.AppendUint64(b, s.Epoch)
		b = appendFlag(b, s.SeqKnown)
		b = binary.LittleEndian.AppendUint64(b, s.Seq)
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(len(e.Index)))
	h := sha256.New()
	h.Write(b)
	h.Write(e.Index)
	return envelopeParts{head: b, index: e.Index, trailer: h.Sum(nil)}
}

// size is the envelope's length in bytes.
func (p envelopeParts) size() int { return len(p.head) + len(p.index) + len(p.trailer) }

// reader reads the envelope's bytes in order.
func (p envelopeParts) reader() io.Reader {
	return io.MultiReader(bytes.NewReader(p.head), bytes.NewReader(p.index), bytes.NewReader(p.trailer))
}

func appendString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

func appendFlag(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// badEnvelope is the refusal of an envelope field (spec.ErrBadSnapshot,
// field "envelope.<field>").
func badEnvelope(field string, value any, bound string) error {
	return spec.Reject(spec.ErrBadSnapshot, "envelope."+field, value, bound)
}

// decodeEnvelope checks and decodes an envelope. Refusals, the first in
// this order: the length, magic, version and checksum; then the body in
// encoding order, each count checked against the bytes left before
// anything is allocated for it; the index's bytes are not looked into.
func decodeEnvelope(b []byte) (envelope, error) {
	var e envelope
	if len(b) < envelopeMinBytes {
		return e, badEnvelope("length", len(b), fmt.Sprintf(">= %d bytes", envelopeMinBytes))
	}
	if string(b[:8]) != envelopeMagic {
		return e, badEnvelope("magic", hex.EncodeToString(b[:8]), hex.EncodeToString([]byte(envelopeMagic))+" ("+envelopeMagic+")")
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != envelopeVersion {
		return e, badEnvelope("version", v, strconv.Itoa(envelopeVersion))
	}
	body, trailer := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if sum := sha256.Sum256(body); string(sum[:]) != string(trailer) {
		return e, badEnvelope("checksum", hex.EncodeToString(trailer), "the SHA-256 of the bytes before it, "+hex.EncodeToString(sum[:]))
	}
	d := envDecoder{b: body, off: 12}
	e.Covers = d.u64("covers")
	e.Stream = d.str("stream", maxTokenLen)
	if d.err == nil && !validToken(e.Stream) {
		return e, badEnvelope("stream", strconv.Quote(e.Stream), fmt.Sprintf("1 to %d characters of [A-Za-z0-9_-]", maxTokenLen))
	}
	n := d.count("sources", envelopeSourceMinBytes, maxReplicaSources)
	if d.err == nil {
		e.Sources = make([]ruleState, 0, n)
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		f := fmt.Sprintf("sources[%d].", i)
		s := ruleState{Token: d.str(f+"token", maxTokenLen)}
		s.Rank = int64(d.u64(f + "rank"))
		s.EpochKnown = d.flag(f + "epoch_known")
		s.Epoch = d.u64(f + "epoch")
		s.SeqKnown = d.flag(f + "seq_known")
		s.Seq = d.u64(f + "seq")
		if d.err != nil {
			break
		}
		switch {
		case !validToken(s.Token):
			d.fail(f+"token", strconv.Quote(s.Token), fmt.Sprintf("1 to %d characters of [A-Za-z0-9_-]", maxTokenLen))
		case i > 0 && s.Token <= e.Sources[i-1].Token:
			d.fail(f+"token", s.Token, "after "+e.Sources[i-1].Token+": sources sorted by token, each once")
		case s.Rank < 0 || s.Rank > maxSourceRank:
			d.fail(f+"rank", s.Rank, fmt.Sprintf("in [0, %d]", maxSourceRank))
		case !s.EpochKnown && (s.Epoch != 0 || s.SeqKnown):
			d.fail(f+"epoch_known", 0, "1 when epoch or seq_known is set")
		case !s.SeqKnown && s.Seq != 0:
			d.fail(f+"seq", s.Seq, "0 when seq_known is 0")
		}
		e.Sources = append(e.Sources, s)
	}
	ixLen := d.u64("index.length")
	if d.err == nil && ixLen != uint64(len(body)-d.off) {
		d.fail("index.length", ixLen, fmt.Sprintf("the %d bytes between it and the trailer", len(body)-d.off))
	}
	if d.err != nil {
		return envelope{}, d.err
	}
	e.Index = body[d.off:]
	return e, nil
}

// envDecoder reads an envelope's body; the first failure sticks.
type envDecoder struct {
	b   []byte
	off int
	err error
}

func (d *envDecoder) fail(field string, value any, bound string) {
	if d.err == nil {
		d.err = badEnvelope(field, value, bound)
	}
}

func (d *envDecoder) take(field string, n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)-d.off) {
		d.fail(field, "truncated", fmt.Sprintf("%d bytes left", len(d.b)-d.off))
		return nil
	}
	p := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	return p
}

func (d *envDecoder) u64(field string) uint64 {
	p := d.take(field, 8)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(p)
}

func (d *envDecoder) flag(field string) bool {
	p := d.take(field, 1)
	if p == nil {
		return false
	}
	if p[0] > 1 {
		d.fail(field, p[0], "0 or 1")
	}
	return p[0] == 1
}

// str reads a string of at most maxLen bytes, checked before it is taken.
func (d *envDecoder) str(field string, maxLen uint64) string {
	n := d.u64(field + ".length")
	if d.err == nil && n > maxLen {
		d.fail(field+".length", n, fmt.Sprintf("<= %d", maxLen))
	}
	return string(d.take(field, n))
}

// count reads a count, checked against the bytes left (each element at
// least minBytes) and then against maxN, before anything is allocated.
func (d *envDecoder) count(field string, minBytes, maxN uint64) uint64 {
	n := d.u64(field + ".count")
	if d.err != nil {
		return 0
	}
	if left := uint64(len(d.b) - d.off); n > left/minBytes {
		d.fail(field+".count", n, fmt.Sprintf("<= %d (%d bytes left, %d per element at least)", left/minBytes, left, minBytes))
	} else if n > maxN {
		d.fail(field+".count", n, fmt.Sprintf("<= %d", maxN))
	}
	return n
}

// Object names: snapshotPrefix(stream, sources) + covers as 20 decimal
// digits, so that names sort by covers and a replica lists only the
// snapshots of its own stream and sources.

// sourcesKey is the first 16 hex digits of the SHA-256 of the sources'
// "token,rank=N\n" lines sorted by token: replicas serving the same
// sources share a key whatever order their flags list them in.
func sourcesKey(sources []ReplicaSource) string {
	lines := make([]string, len(sources))
	for i, s := range sources {
		lines[i] = s.Token + ",rank=" + strconv.FormatInt(s.Rank, 10) + "\n"
	}
	slices.Sort(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "")))
	return hex.EncodeToString(sum[:8])
}

// snapshotPrefix is the name prefix of a stream's and sources' snapshots.
func snapshotPrefix(stream string, sources []ReplicaSource) string {
	return "kvtwin-snapshot/" + stream + "/" + sourcesKey(sources) + "/"
}

// snapshotName names the snapshot covering covers.
func snapshotName(prefix string, covers uint64) string {
	return fmt.Sprintf("%s%020d", prefix, covers)
}

// parseSnapshotName returns the covers of a name under prefix.
func parseSnapshotName(prefix, name string) (uint64, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok || len(rest) != 20 {
		return 0, false
	}
	c, err := strconv.ParseUint(rest, 10, 64)
	return c, err == nil
}
