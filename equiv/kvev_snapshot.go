package equiv

import (
	"bytes"
	"fmt"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// KVEvSnapshot is the differential spec of kvev.snapshot
// (docs/spec/kv-events.md §2.10 A12). Its valid generator is kvev.apply's
// simulated fleet (kvEvFleet) with a drawn covering sequence, so the
// twins' snapshots are compared byte for byte over realistic indexes:
// held messages, stale engines, holes, several tiers and namespaces. The
// properties restore the snapshot on the reference and compare.
func KVEvSnapshot() *Spec[spec.KVEvSnapshotInput, spec.KVEvSnapshotOutput] {
	return &Spec[spec.KVEvSnapshotInput, spec.KVEvSnapshotOutput]{
		Op: catalog.KVEvSnapshot(),
		Valid: rapid.Custom(func(t *rapid.T) spec.KVEvSnapshotInput {
			return kvSnapshotInput(kvEvFleet(t, 40, Coverage{}), rapid.Uint64().Draw(t, "covers"))
		}),
		Invalid: rapid.Custom(func(t *rapid.T) Bad[spec.KVEvSnapshotInput] {
			bad := kvApplyInvalid(t, Coverage{})
			return Bad[spec.KVEvSnapshotInput]{In: kvSnapshotInput(bad.In, 0), Want: bad.Want}
		}),
		Boundary: kvSnapshotBoundary(),
		Script:   stepsOf(func(in *spec.KVEvSnapshotInput) *[]spec.KVEvStep { return &in.Steps }),
		Props: []Prop[spec.KVEvSnapshotInput, spec.KVEvSnapshotOutput]{
			{"snapshot-round-trips", kvSnapshotRoundTrips},
			{"restored-state-is-applied-state", kvSnapshotRestoresAppliedState},
		},
	}
}

// kvSnapshotInput is a kvev.apply script as kvev.snapshot's input.
func kvSnapshotInput(in spec.KVEvApplyInput, covers uint64) spec.KVEvSnapshotInput {
	return spec.KVEvSnapshotInput{Config: in.Config, Streams: in.Streams, Steps: in.Steps, Covers: covers}
}

// kvSnapshotBoundary: an index with no stream and no engine, the largest
// covering sequence, and a replay outstanding with held messages.
func kvSnapshotBoundary() []Case[spec.KVEvSnapshotInput] {
	sample := catalog.KVEvSnapshot().Sample
	held := sample
	held.Streams = []spec.KVEvStream{{Name: "vllm-0", Replay: true}}
	held.Steps = []spec.KVEvStep{sample.Steps[0], sample.Steps[2]}
	held.Steps[1].Frames = []spec.HexBytes{held.Steps[1].Frames[0], {0, 0, 0, 0, 0, 0, 0, 5}, held.Steps[1].Frames[2]}
	return []Case[spec.KVEvSnapshotInput]{
		{"no-streams-no-engines", spec.KVEvSnapshotInput{Streams: []spec.KVEvStream{}, Steps: []spec.KVEvStep{}}},
		{"covers-2-pow-64-minus-1", spec.KVEvSnapshotInput{Streams: sample.Streams, Steps: sample.Steps, Covers: 1<<64 - 1}},
		{"replay-outstanding-one-message-held", held},
	}
}

// kvSnapshotRoundTrips: the snapshot decodes, re-encodes to the same
// bytes, restores on the reference to an index whose snapshot is the same
// bytes, and says it covers in.Covers.
func kvSnapshotRoundTrips(_ spec.Limits, in spec.KVEvSnapshotInput, out spec.KVEvSnapshotOutput) error {
	c, err := ref.DecodeKVEvSnapshot(in.Config, out.Snapshot)
	if err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if again := ref.EncodeKVEvSnapshot(c); !bytes.Equal(again, out.Snapshot) {
		return fmt.Errorf("encode(decode(b)) differs from b (%d vs %d bytes)", len(again), len(out.Snapshot))
	}
	ix, covers, err := ref.RestoreKVEvIndex(in.Config, out.Snapshot)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if covers != in.Covers || out.Covers != in.Covers {
		return fmt.Errorf("covers %d (output %d), want %d", covers, out.Covers, in.Covers)
	}
	b, err := ix.(spec.KVEvSnapshotter).Snapshot(in.Covers)
	if err != nil || !bytes.Equal(b, out.Snapshot) {
		return fmt.Errorf("snapshot of the restored index differs (%v)", err)
	}
	return nil
}

// kvSnapshotRestoresAppliedState: the restored index's state, digest
// included, is the state kvev.apply leaves.
func kvSnapshotRestoresAppliedState(lim spec.Limits, in spec.KVEvSnapshotInput, out spec.KVEvSnapshotOutput) error {
	applied, err := ref.KVEvApply(lim, spec.KVEvApplyInput{Config: in.Config, Streams: in.Streams, Steps: in.Steps})
	if err != nil {
		return err
	}
	if d := cmp.Diff(applied.State, out.State); d != "" {
		return fmt.Errorf("restored state differs from the applied state:\n%s", d)
	}
	return nil
}
