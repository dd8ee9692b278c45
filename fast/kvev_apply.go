package fast

import (
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// KVEvApply is the fast twin of kvev.apply (docs/spec/kv-events.md §2-§3):
// the shared script interpreter run on the fast index.
func KVEvApply(lim spec.Limits, in spec.KVEvApplyInput) (spec.KVEvApplyOutput, error) {
	return ref.RunKVEvApply(lim, in, NewKVEvIndex)
}

// NewKVEvIndex builds the production event-fed index over streams.
func NewKVEvIndex(cfg spec.KVEvConfig, streams []spec.KVEvStream) (spec.KVEvIndex, error) {
	return newKVEvIndexWithFaults(cfg, streams, fault.KVEv{})
}

// newKVEvIndexWithFaults is NewKVEvIndex with the historic consumer bugs f
// selects put back, for the bug zoo only: fault.Hooks hands it to
// equiv/mutants (hooks.go). Called with the zero value it is NewKVEvIndex.
func newKVEvIndexWithFaults(cfg spec.KVEvConfig, streams []spec.KVEvStream, f fault.KVEv) (spec.KVEvIndex, error) {
	ix, err := newKVIndex(cfg, streams, f)
	if err != nil {
		return nil, err
	}
	return ix, nil
}
