package fastcore

import (
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
)

// KVEvApply is the fast twin of kvev.apply (docs/spec/kv-events.md §2-§3):
// the shared script interpreter run on the fast index.
func KVEvApply(lim ref.Limits, in ref.KVEvApplyInput) (ref.KVEvApplyOutput, error) {
	return ref.RunKVEvApply(lim, in, NewKVEvIndex)
}

// NewKVEvIndex builds the production event-fed index over streams.
func NewKVEvIndex(cfg ref.KVEvConfig, streams []ref.KVEvStream) (ref.KVEvIndex, error) {
	return NewKVEvIndexWithFaults(cfg, streams, fault.KVEv{})
}

// NewKVEvIndexWithFaults is NewKVEvIndex with the historic consumer bugs f
// selects put back; for the bug zoo only (the production function is
// NewKVEvIndex).
func NewKVEvIndexWithFaults(cfg ref.KVEvConfig, streams []ref.KVEvStream, f fault.KVEv) (ref.KVEvIndex, error) {
	ix, err := newKVIndex(cfg, streams, f)
	if err != nil {
		return nil, err
	}
	return ix, nil
}
