package scaleout

import (
	"encoding/binary"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/spec"
)

// TestSnapshotCostAtScale measures a warm replica's costs at a realistic
// size (docs/events.md "Warm replicas"): a replica whose index holds
// 1M 16-token blocks of one engine takes a snapshot (the ingest pause),
// uploads it to the object store, and a second replica downloads,
// checks and restores it. Long form only (KVTWIN_HOSTILE=long, not under
// -race): it takes tens of seconds and ~120 MB of store.
func TestSnapshotCostAtScale(t *testing.T) {
	if os.Getenv("KVTWIN_HOSTILE") != "long" || raceEnabled {
		t.Skip("long form: KVTWIN_HOSTILE=long, without -race")
	}
	defer goleak.VerifyNone(t, goleakOpts...)
	ns := startNATS(t)
	defer ns.stop()
	nc, js := ns.connect(t)
	defer nc.Close()
	createStream(t, js, StreamOptions{})

	const blocks = 1_000_000
	cfg := spec.KVEvConfig{MaxTokensPerEngine: 1 << 25}
	sources := []string{"pod-a"}
	streams, err := ReplicaStreams(sources)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := fast.NewKVEvIndex(cfg, streams)
	if err != nil {
		t.Fatal(err)
	}
	// Fill the index directly (the stream would take minutes): seqs
	// 0..n-1, then the stream carries seq n.
	g := newGen(11, 16, new(int64), blocks)
	g.clearOdds = 0
	var seq uint64
	t0 := time.Now()
	for len(g.resident) < blocks {
		ix.Live("pod-a", [][]byte{nil, binary.BigEndian.AppendUint64(nil, seq), g.batch(1000)})
		seq++
	}
	t.Logf("filled %d resident blocks in %v", len(g.resident), time.Since(t0))
	snaps := func(o *ReplicaOptions) {
		o.Snapshots = SnapshotOptions{Bucket: "snaps", Every: -1, Interval: 200 * time.Millisecond, Restore: fast.RestoreKVEvIndex, IndexConfig: cfg, MaxBytes: 1 << 30}
	}
	o := ReplicaOptions{URL: ns.url, ID: "writer", Sources: sources, Logger: testLogger(t), RetryMin: 10 * time.Millisecond, RetryMax: 200 * time.Millisecond, ReadIdle: time.Second}
	snaps(&o)
	r, err := NewReplica(ix, o)
	if err != nil {
		t.Fatal(err)
	}
	w := &runningReplica{r: r, ix: ix, running: goRun(r.Run)}
	defer w.cancel()
	publishAll(t, js, []relayed{{token: "pod-a", seq: seq, payload: g.batch(10)}})
	waitApplied(t, w, 1, 20*time.Second)
	waitFor(t, 120*time.Second, "the snapshot's upload", func() bool { return snapStatus(w).Uploads >= 1 })
	sn := snapStatus(w)
	want := w.r.Index().Digest()
	w.stop(t)

	late := startReplica(t, ns.url, "late", sources, func(o *ReplicaOptions) { snaps(o) })
	defer late.cancel()
	waitFor(t, 120*time.Second, "the restore", func() bool { return late.r.Status().Phase == PhaseConsuming })
	ls := snapStatus(late)
	if ls.RestoredCovers != 1 || late.r.Index().Digest() != want {
		t.Errorf("restored %+v: want covers 1 and the writer's digest", ls)
	}
	late.stop(t)
	t.Logf("%d blocks: snapshot %d bytes (%.1f a block; index %d), ingest pause (freeze) %.3f s, encode %.3f s, upload %.3f s, download+check+restore %.3f s",
		blocks, sn.LastBytes, float64(sn.LastBytes)/blocks, sn.LastIndexBytes, sn.LastPauseSeconds, sn.LastEncodeSeconds, sn.LastUploadSeconds, ls.RestoreSeconds)
}
