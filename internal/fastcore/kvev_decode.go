package fastcore

import (
	"errors"

	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
)

// KVEvDecode is the fast twin of kvev.decode (docs/spec/kv-events.md §1).
func KVEvDecode(lim ref.Limits, in ref.KVEvDecodeInput) (ref.KVMessage, error) {
	return KVEvDecodeWithFaults(lim, in, fault.KVEv{})
}

// KVEvDecodeWithFaults is KVEvDecode with the historic decoder bugs f
// selects put back; for the bug zoo only (the production function is
// KVEvDecode).
func KVEvDecodeWithFaults(lim ref.Limits, in ref.KVEvDecodeInput, f fault.KVEv) (ref.KVMessage, error) {
	return ref.KVMessage{}, errors.New("fast kvev decode: not implemented yet")
}
