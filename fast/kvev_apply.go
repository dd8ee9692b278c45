package fast

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
	return newKVEvIndexWithFaults(cfg, streams, fault.KVEv{})
}

// newKVEvIndexWithFaults is NewKVEvIndex with the historic consumer bugs f
// selects put back, for the bug zoo only: fault.Hooks hands it to
// equiv/mutants (hooks.go). Called with the zero value it is NewKVEvIndex.
func newKVEvIndexWithFaults(cfg ref.KVEvConfig, streams []ref.KVEvStream, f fault.KVEv) (ref.KVEvIndex, error) {
	ix, err := newKVIndex(cfg, streams, f)
	if err != nil {
		return nil, err
	}
	return ix, nil
}
