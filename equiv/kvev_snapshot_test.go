package equiv_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// kvSnapTwin is one twin's index constructor and restore.
type kvSnapTwin struct {
	name    string
	build   spec.NewKVEvIndexFunc
	restore spec.RestoreKVEvIndexFunc
}

var kvSnapTwins = []kvSnapTwin{
	{"ref", ref.NewKVEvIndex, ref.RestoreKVEvIndex},
	{"fast", fast.NewKVEvIndex, fast.RestoreKVEvIndex},
}

// kvSnapApply runs a fleet script on tw's index and returns the index.
func kvSnapApply(t *rapid.T, tw kvSnapTwin, in spec.KVEvApplyInput) spec.KVEvIndex {
	var ix spec.KVEvIndex
	_, err := ref.RunKVEvApply(spec.DefaultLimits(), in, func(cfg spec.KVEvConfig, s []spec.KVEvStream) (spec.KVEvIndex, error) {
		x, err := tw.build(cfg, s)
		ix = x
		return x, err
	})
	if err != nil {
		t.Fatalf("%s: %v", tw.name, err)
	}
	return ix
}

// TestKVEvSnapshotRoundTripsOnFleets: on the fleet's scripts both twins
// write the same bytes, and each twin's restore of them has the applied
// index's state and digest and snapshots to the same bytes again (A12).
func TestKVEvSnapshotRoundTripsOnFleets(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := equiv.KVEvFleet(t, 60)
		covers := rapid.Uint64().Draw(t, "covers")
		var snaps [][]byte
		var want spec.KVEvState
		for i, tw := range kvSnapTwins {
			ix := kvSnapApply(t, tw, in)
			b, err := ix.(spec.KVEvSnapshotter).Snapshot(covers)
			if err != nil {
				t.Fatal(err)
			}
			snaps = append(snaps, b)
			if i == 0 {
				want = ix.State()
			}
		}
		if !bytes.Equal(snaps[0], snaps[1]) {
			t.Fatalf("ref and fast snapshots differ (%d and %d bytes)", len(snaps[0]), len(snaps[1]))
		}
		for _, tw := range kvSnapTwins {
			rx, c, err := tw.restore(in.Config, snaps[0])
			if err != nil {
				t.Fatalf("%s restore: %v", tw.name, err)
			}
			if d := cmp.Diff(want, rx.State()); d != "" || c != covers {
				t.Fatalf("%s restored state (covers %d):\n%s", tw.name, c, d)
			}
			again, _ := rx.(spec.KVEvSnapshotter).Snapshot(covers)
			if !bytes.Equal(again, snaps[0]) {
				t.Fatalf("%s: snapshot of the restored index differs", tw.name)
			}
		}
	})
}

// kvSnapOutcome restores b on both twins and fails unless they answer
// alike: the same error object, or states with the same digest. It
// returns the error, and checks that neither twin allocated more than a
// bound linear in len(b) (a declared length sizes nothing).
func kvSnapOutcome(t *testing.T, cfg spec.KVEvConfig, b []byte) error {
	t.Helper()
	var errs [2]error
	var digests [2][32]byte
	for i, tw := range kvSnapTwins {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		ix, _, err := tw.restore(cfg, b)
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20+64*uint64(len(b)) {
			t.Fatalf("%s allocated %d bytes restoring %d", tw.name, grew, len(b))
		}
		errs[i] = err
		if err == nil {
			digests[i] = ix.Digest()
		}
	}
	if (errs[0] == nil) != (errs[1] == nil) || errs[0] != nil && !cmp.Equal(spec.ErrorObjectOf(errs[0]), spec.ErrorObjectOf(errs[1])) {
		t.Fatalf("twins differ: ref %v, fast %v", errs[0], errs[1])
	}
	if errs[0] == nil && digests[0] != digests[1] {
		t.Fatal("twins' restored digests differ")
	}
	if errs[0] != nil && !errors.Is(errs[0], spec.ErrBadSnapshot) {
		t.Fatalf("refused with %v, want bad_snapshot", errs[0])
	}
	return errs[0]
}

// reseal replaces b's trailer with the SHA-256 of the rest, so that a
// corruption reaches the checks past the checksum.
func reseal(b []byte) []byte {
	body := b[:len(b)-sha256.Size]
	s := sha256.Sum256(body)
	return append(body, s[:]...)
}

// TestKVEvSnapshotCorruptionsAreRefusedAlike: every truncation and every
// bit flip of a small fleet snapshot is refused with bad_snapshot by both
// twins; resealed with a correct checksum, every flip and every place
// overwritten with a huge length is refused alike or decodes to a state
// whose encoding is the corrupted bytes themselves (A12's canonicality);
// nothing panics and nothing allocates past a bound linear in the size.
func TestKVEvSnapshotCorruptionsAreRefusedAlike(t *testing.T) {
	gen := rapid.Custom(func(t *rapid.T) spec.KVEvApplyInput { return equiv.KVEvFleet(t, 12) })
	var b []byte
	for seed := 0; b == nil && seed < 100; seed++ {
		in := gen.Example(seed)
		ix, err := ref.NewKVEvIndex(in.Config, in.Streams)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ref.RunKVEvApply(spec.DefaultLimits(), in, func(spec.KVEvConfig, []spec.KVEvStream) (spec.KVEvIndex, error) { return ix, nil }); err != nil {
			t.Fatal(err)
		}
		if len(ix.State().Engines) > 0 {
			b, _ = ix.(spec.KVEvSnapshotter).Snapshot(3)
		}
	}
	if b == nil {
		t.Fatal("no script with an engine among 100 examples")
	}
	t.Logf("corrupting a %d-byte snapshot", len(b))
	cfg := spec.KVEvConfig{}
	for n := range len(b) {
		if kvSnapOutcome(t, cfg, b[:n]) == nil {
			t.Fatalf("truncation at %d accepted", n)
		}
	}
	for i := range len(b) {
		c := bytes.Clone(b)
		c[i] ^= 0x10
		if kvSnapOutcome(t, cfg, c) == nil {
			t.Fatalf("flip at %d accepted", i)
		}
		kvSnapCanonical(t, cfg, reseal(c))
		if i+8 <= len(b)-sha256.Size {
			h := bytes.Clone(b)
			binary.LittleEndian.PutUint64(h[i:], 1<<63-1)
			kvSnapCanonical(t, cfg, reseal(h))
		}
	}
}

// kvSnapCanonical: b is refused alike, or it is the encoding of what it
// decodes to.
func kvSnapCanonical(t *testing.T, cfg spec.KVEvConfig, b []byte) {
	t.Helper()
	if kvSnapOutcome(t, cfg, b) != nil {
		return
	}
	c, err := ref.DecodeKVEvSnapshot(cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ref.EncodeKVEvSnapshot(c), b) {
		t.Fatal("an accepted snapshot is not the encoding of its state")
	}
}

// kvSnapStep applies one script step that changes an index (a score, or
// any read, changes nothing and is skipped).
func kvSnapStep(ix spec.KVEvIndex, s spec.KVEvStep) {
	switch s.Op {
	case spec.KVStepLive:
		ix.Live(s.Stream, spec.FrameBytes(s.Frames))
	case spec.KVStepReplay:
		ix.Replay(s.Stream, spec.FrameBytes(s.Frames))
	case spec.KVStepReplayFailed:
		ix.ReplayFailed(s.Stream, s.Reason)
	case spec.KVStepRestart:
		ix.Restart(s.Stream)
	case spec.KVStepAddStream:
		_ = ix.AddStream(*s.Config) // a refusal is a step's result, as in the script
	case spec.KVStepRemoveStream:
		_ = ix.RemoveStream(s.Stream)
	}
}

// TestKVEvFrozenSnapshotIsTheFreezePoint: on the fleet's scripts, each
// twin frozen after a drawn step and then fed the rest of the script on
// another goroutine encodes, while it is fed, exactly the bytes of an
// index that stopped at that step (§2.10 A12, "taking a snapshot without
// stopping ingest"), through Encode and WriteTo alike, and again after
// the feed ended. Run it under -race: the encoding reads only the copy.
func TestKVEvFrozenSnapshotIsTheFreezePoint(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := equiv.KVEvFleet(t, 60)
		cut := rapid.IntRange(0, len(in.Steps)).Draw(t, "cut")
		covers := rapid.Uint64().Draw(t, "covers")
		head := in
		head.Steps = in.Steps[:cut]
		for _, tw := range kvSnapTwins {
			want, err := kvSnapApply(t, tw, head).(spec.KVEvSnapshotter).Snapshot(covers)
			if err != nil {
				t.Fatal(err)
			}
			ix := kvSnapApply(t, tw, head)
			fz, err := ix.(spec.KVEvFreezer).Freeze(covers)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				for _, s := range in.Steps[cut:] {
					kvSnapStep(ix, s)
				}
			}()
			got, err := fz.Encode()
			var streamed bytes.Buffer
			n, werr := fz.WriteTo(&streamed)
			<-done
			again, _ := fz.Encode()
			switch {
			case err != nil || werr != nil:
				t.Fatalf("%s: encode %v, write %v", tw.name, err, werr)
			case !bytes.Equal(got, want):
				t.Fatalf("%s: frozen at step %d, encoded during the feed: %d bytes, the stopped index's %d differ", tw.name, cut, len(got), len(want))
			case !bytes.Equal(streamed.Bytes(), want) || n != int64(len(want)):
				t.Fatalf("%s: WriteTo wrote %d bytes (said %d), not the stopped index's %d", tw.name, streamed.Len(), n, len(want))
			case !bytes.Equal(again, want):
				t.Fatalf("%s: encoded after the feed, the frozen bytes changed", tw.name)
			case fz.Covers() != covers:
				t.Fatalf("%s: covers %d, want %d", tw.name, fz.Covers(), covers)
			}
		}
	})
}
