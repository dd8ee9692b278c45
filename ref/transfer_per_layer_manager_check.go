package ref

import "fmt"

// Validation for the per-layer transfer (docs/spec/transfer.md §4): sentinels, bound, config, register and on_layer_end.

// Per-layer transfer sentinels (docs/spec/transfer.md §4).
var (
	// ErrBadGroupSize: K < 1 (§4.1).
	ErrBadGroupSize = NewSentinel("bad_group_size", "group size K must be >= 1")
	// errRegisterDuringForward: Register after the forward's first layer hook could fire (§4.4 precondition).
	errRegisterDuringForward = NewSentinel("register_during_forward", "register must happen before the forward")
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

// CheckOnLayerEnd validates a hook call: inside a forward, l in [0, H).
func CheckOnLayerEnd(cfg PerLayerConfig, forward bool, l int) error {
	if !forward {
		return Reject(ErrForwardState, "layer", l, "a layer hook inside a forward")
	}
	if l < 0 || l >= cfg.Hooked {
		return Reject(ErrLayerOutOfOrder, "layer", l, fmt.Sprintf("in [0, hooked=%d)", cfg.Hooked))
	}
	return nil
}

// CheckRegister validates Register's arguments: outside a forward, chunk
// key >= 0, infos >= 0.
func CheckRegister(forward bool, chunkKey int64, infos int) error {
	if forward {
		return Reject(errRegisterDuringForward, "chunk", chunkKey, "register before forward_begin")
	}
	if chunkKey < 0 {
		return Reject(ErrNegative, "chunk", chunkKey, ">= 0")
	}
	if infos < 0 {
		return Reject(ErrNegative, "infos", infos, ">= 0")
	}
	return nil
}
