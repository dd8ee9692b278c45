package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// KVEvSnapshot registers kvev.snapshot (docs/spec/kv-events.md §2.10
// A12): a kvev.apply script's final index, snapshotted in A12's
// canonical encoding and restored, with the restored index's state.
func KVEvSnapshot() *Op[spec.KVEvSnapshotInput, spec.KVEvSnapshotOutput] {
	sample := KVEvApply().Sample
	return &Op[spec.KVEvSnapshotInput, spec.KVEvSnapshotOutput]{
		OpName:  "kvev.snapshot",
		SpecRef: "kv-events.md §2.10",
		Summary: "event-fed index snapshot: a kvev.apply script's final index in A12's canonical bytes (tagged with the stream sequence it covers), restored",
		Ref:     ref.KVEvSnapshot,
		Fast:    fast.KVEvSnapshot,
		Work:    Cost{PerInputByte: 200, PerOutputByte: 8, Fixed: 4 << 20},
		// kvev.apply's sample (§5.1 E1 then E2), covering stream sequence 2.
		Sample: spec.KVEvSnapshotInput{Streams: sample.Streams, Steps: sample.Steps, Covers: 2},
		Shapes: []Shape[spec.KVEvSnapshotInput]{
			// 4,096 blocks through the index, then one snapshot and restore.
			{Name: "snapshot-4096-blocks", Make: func() spec.KVEvSnapshotInput {
				in := kvevIngestScript(64, 64, 8, 4)
				return spec.KVEvSnapshotInput{Streams: in.Streams, Steps: in.Steps, Covers: uint64(len(in.Steps))}
			}},
		},
	}
}
