package ref

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/spec"
)

// snapHex joins hex words, ignoring spaces, for hand-written bytes.
func snapHex(t *testing.T, words ...string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(strings.Join(words, ""), " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// withSum appends A12's trailer.
func withSum(b []byte) []byte {
	s := sha256.Sum256(b)
	return append(b, s[:]...)
}

// The header of A12 written out by hand from the spec text: an index with
// no stream and the default config (share 256 over no streams, which count
// as one), covering sequence 7.
func TestKVEvSnapshotHeaderIsA12(t *testing.T) {
	want := withSum(snapHex(t,
		"4b565457534e4150",  // magic "KVTWSNAP"
		"01000000",          // version 1, u32
		"0700000000000000",  // covers 7
		"0001000000000000",  // max_engines 256
		"0001000000000000",  // max_engines_per_stream 256
		"0000400000000000",  // max_tokens_per_engine 4 Mi
		"1027000000000000",  // max_held 10,000
		"0000000400000000",  // max_held_bytes 64 MiB
		"0000040000000000",  // max_events 2^18
		"1000000000000000",  // max_decode_ratio 16
		"0000000000000000",  // streams: 0
		"0000000000000000")) // engines: 0
	ix, err := NewKVEvIndex(spec.KVEvConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ix.(spec.KVEvSnapshotter).Snapshot(7)
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(got) != hex.EncodeToString(want) {
		t.Fatalf("snapshot\n got %x\nwant %x", got, want)
	}
	if len(got) != spec.KVEvSnapshotMinBytes {
		t.Fatalf("len %d, want KVEvSnapshotMinBytes %d", len(got), spec.KVEvSnapshotMinBytes)
	}
	rx, covers, err := RestoreKVEvIndex(spec.KVEvConfig{}, got)
	if err != nil || covers != 7 || rx.Digest() != ix.Digest() {
		t.Fatalf("restore: covers %d, err %v", covers, err)
	}
}

// One stream "s", rank 2, one engine s/0 with one pool (group 0, GPU, page
// size 2) of one page, tokens 5 6, hash 0x11 bound once; written by hand.
func TestKVEvSnapshotBodyIsA12(t *testing.T) {
	header := "4b565457534e4150 01000000 0000000000000000" +
		"0001000000000000 0001000000000000 0000400000000000 1027000000000000 0000000400000000 0000040000000000 1000000000000000"
	stream := "0100000000000000 73" + // name "s"
		"0200000000000000 00" + // rank 2, replay 0
		"00 0000000000000000" + // snapshot 0, publisher_id "" (A13)
		"01 0100000000000000 00 0000000000000000" + // known, next 1, past_end 0, last_live 0
		"00 00 00" + // replaying 0, snapshotting 0, resync 0 (A13)
		"0000000000000000 00 0000000000000000" + // target 0, stale_set 0, stale_since 0
		"0100000000000000" + strings.Repeat("0000000000000000", 13) + // batches 1, thirteen zero counters
		"0000000000000000" // held 0
	engine := "0100000000000000 73 0000000000000000 0100000000000000 73 0000000000000000" + // source s, rank 0, stream s, model ""
		"00 0000000000000000" + // stale 0, stale_since 0
		"0100000000000000" + strings.Repeat("0000000000000000", 6) + // stored 1, six zeros
		"0100000000000000" + // pools 1
		"0000000000000000 0300000000000000 475055 0200000000000000 0100000000000000" + // group 0, tier GPU, page size 2, pages 1
		"0000000000000000 0000000000000000 0200000000000000 05000000 06000000" + // depth 0, ns "", 2 tokens 5 6
		"0100000000000000 1100000000000000 0100000000000000" // 1 binding: hash 0x11, count 1
	b := withSum(snapHex(t, header, "0100000000000000", stream, "0100000000000000", engine))
	c, err := DecodeKVEvSnapshot(spec.KVEvConfig{}, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Streams) != 1 || c.Streams[0].Config.Rank != 2 || len(c.Engines) != 1 ||
		c.Engines[0].Pools[0].Pages[0].Resident != 1 || c.Engines[0].Tokens != 2 ||
		len(c.Streams[0].State.Engines) != 1 || c.Streams[0].State.Counters.Batches != 1 {
		t.Fatalf("decoded %+v", c)
	}
	if again := EncodeKVEvSnapshot(c); string(again) != string(b) {
		t.Fatalf("re-encoded\n got %x\nwant %x", again, b)
	}
}

// Each refusal of the framing, by hand.
func TestKVEvSnapshotFramingRefusals(t *testing.T) {
	ix, _ := NewKVEvIndex(spec.KVEvConfig{}, nil)
	good, _ := ix.(spec.KVEvSnapshotter).Snapshot(0)
	flip := func(i int) []byte {
		b := append([]byte(nil), good...)
		b[i] ^= 1
		return b
	}
	huge := append([]byte(nil), good[:len(good)-32-8]...)
	huge = withSum(append(huge, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f)) // engines: 2^63-1
	for _, c := range []struct {
		name, field string
		b           []byte
	}{
		{"empty", "snapshot", nil},
		{"one-short", "snapshot", good[:len(good)-1]},
		{"magic", "magic", flip(0)},
		{"version", "version", flip(8)},
		{"checksum", "checksum", flip(len(good) - 1)},
		{"covers-flipped", "checksum", flip(12)},
		{"engine-count-huge", "engines", huge},
	} {
		_, _, err := RestoreKVEvIndex(spec.KVEvConfig{}, c.b)
		ie, ok := spec.AsInputError(err)
		if !errors.Is(err, spec.ErrBadSnapshot) || !ok || ie.Field != c.field {
			t.Errorf("%s: %v, want bad_snapshot at %s", c.name, err, c.field)
		}
	}
	// A config other than the snapshot's is refused at its field.
	_, _, err := RestoreKVEvIndex(spec.KVEvConfig{MaxHeld: 5}, good)
	if ie, ok := spec.AsInputError(err); !ok || ie.Field != "config.max_held" {
		t.Errorf("config: %v", err)
	}
}
