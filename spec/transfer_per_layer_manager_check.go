package spec

import (
	"fmt"
)

var (
	// ErrBadGroupSize: K < 1 (§4.1).
	ErrBadGroupSize = NewSentinel("bad_group_size", "group size K must be >= 1")
	// ErrForwardState: forward_begin inside a forward, or forward_end / a layer hook outside one.
	ErrForwardState = NewSentinel("forward_state", "forward begin/end out of order")
	// ErrFinishOrder: finishing a chunk behind the room's front chunk (§4.4 Finish).
	ErrFinishOrder = NewSentinel("finish_order", "chunks finish in send order")
	// ErrEventPending: a deterministic worker step whose item's event has not completed.
	ErrEventPending = NewSentinel("event_pending", "the work item's event has not completed")
	// ErrNotStepping: WorkerStep on a manager that runs real workers.
	ErrNotStepping = NewSentinel("not_stepping", "worker steps need the deterministic mode (W = 0)")
)

// MaxTransferLayers bounds N and H, so the per-context bitsets stay small.
const MaxTransferLayers = 4096

// Validate rejects K < 1 and H outside [0, MaxTransferLayers].
func (c PerLayerConfig) Validate() error {
	if c.Group < 1 {
		return Reject(ErrBadGroupSize, "group", c.Group, ">= 1")
	}
	if c.Hooked < 0 || c.Hooked > MaxTransferLayers {
		return Reject(ErrLayerOutOfOrder, "hooked", c.Hooked, fmt.Sprintf("in [0, %d]", MaxTransferLayers))
	}
	return nil
}
