package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvtwin/kvtwin/events/scaleout"
	"github.com/kvtwin/kvtwin/server"
)

// TestServeRefusesSnapshotFlagsWithoutAReplica: the snapshot flags belong
// to a JetStream replica; serve stops before it starts anything.
func TestServeRefusesSnapshotFlagsWithoutAReplica(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--events-snapshot-bucket", "snaps"}, "--events-from"},
		{[]string{"--events-snapshot-every", "10"}, "--events-snapshot-bucket"},
		{[]string{"--events-from", "nats://127.0.0.1:1", "--events-snapshot-bucket", "snaps", "--events-snapshot-max-bytes", "lots"}, "--events-snapshot-max-bytes"},
		{[]string{"--events-from", "nats://127.0.0.1:1", "--events-from-source", "a", "--events-snapshot-bucket", "a.b"}, "snapshots.bucket"},
		{[]string{"--events-from", "nats://127.0.0.1:1", "--events-from-source", "a", "--events-snapshot-bucket", "s", "--events-snapshot-keep", "1000"}, "snapshots.keep"},
	} {
		cmd := newServeCmd()
		cmd.SetArgs(append(c.args, "--addr", "127.0.0.1:0"))
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("serve %v: %v, want an error naming %s", c.args, err, c.want)
		}
	}
}

// replicaSources is GET /v1/events/sources' replica status.
func replicaSources(t *testing.T, base string) scaleout.ReplicaStatus {
	t.Helper()
	return *servedEventSources(t, base).Replica
}

// servedEventSources is GET /v1/events/sources.
func servedEventSources(t *testing.T, base string) server.EventSources {
	t.Helper()
	resp, err := http.Get(base + "/v1/events/sources")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got server.EventSources
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || got.Replica == nil {
		t.Fatalf("GET /v1/events/sources: %d %v, replica %v", resp.StatusCode, err, got.Replica)
	}
	return got
}

// TestServeWarmReplicaThroughTheBinary: `kvtwin serve --events-from …
// --events-snapshot-bucket` stores a snapshot covering the stream's one
// message; after the stream is purged, a second replica (another id)
// restores it, serves the index it restored, resumes after it, and says
// so in /v1/events/sources.
func TestServeWarmReplicaThroughTheBinary(t *testing.T) {
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: scaleout.DefaultStream, Subjects: []string{scaleout.SubjectFilter}})
	if err != nil {
		t.Fatal(err)
	}
	// The relay's reset of pod-a, epoch 0: one message, headers only.
	m := nats.NewMsg(scaleout.Subject("pod-a"))
	m.Header.Set(scaleout.HeaderReset, "1")
	m.Header.Set(scaleout.HeaderEpoch, "0")
	if _, err := js.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	flags := func(id string) []string {
		return []string{"--events-from", ns.ClientURL(), "--events-from-source", "pod-a", "--events-from-id", id,
			"--events-snapshot-bucket", "snaps", "--events-snapshot-interval", "100ms", "--events-snapshot-every", "-1"}
	}
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	first := startServeBinary(t, flags("r1")...)
	wait("a snapshot covering seq 1", func() bool {
		sn := replicaSources(t, first.base).Snapshot
		return sn != nil && sn.Uploads >= 1 && sn.LastCovers == 1
	})
	first.stop()
	if err := s.Purge(ctx); err != nil {
		t.Fatal(err)
	}

	second := startServeBinary(t, flags("r2")...)
	var st scaleout.ReplicaStatus
	wait("the second replica to consume", func() bool {
		st = replicaSources(t, second.base)
		return st.Phase == scaleout.PhaseConsuming
	})
	if sn := st.Snapshot; sn == nil || sn.RestoredCovers != 1 || !strings.HasSuffix(sn.RestoredFrom, "/00000000000000000001") || st.HistoryTruncated || st.AppliedSeq != 1 {
		t.Errorf("second replica %+v, snapshot %+v: want restored from covers 1, history complete", st, sn)
	}
	// The served index is the restored one: pod-a's restart is the
	// snapshot's (the second replica applied no message of its own).
	if src := servedEventSources(t, second.base).Sources; len(src) != 1 || src[0].Stream.Counters.Restarts != 1 {
		t.Errorf("served sources %+v: want pod-a with the snapshot's restart", src)
	}
	if second.logs.find("INFO", "index restored from a snapshot") == nil {
		t.Error("no INFO line \"index restored from a snapshot\"")
	}
	second.stop()
}
