package ref

import (
	"fmt"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for the per-layer transfer (docs/spec/transfer.md §4): sentinels, bound, config, register and on_layer_end.

// Per-layer transfer sentinels (docs/spec/transfer.md §4).
var (
	// errRegisterDuringForward: Register after the forward's first layer hook could fire (§4.4 precondition).
	errRegisterDuringForward = spec.NewSentinel("register_during_forward", "register must happen before the forward")
)

// CheckOnLayerEnd validates a hook call: inside a forward, l in [0, H).
func CheckOnLayerEnd(cfg spec.PerLayerConfig, forward bool, l int) error {
	if !forward {
		return spec.Reject(spec.ErrForwardState, "layer", l, "a layer hook inside a forward")
	}
	if l < 0 || l >= cfg.Hooked {
		return spec.Reject(spec.ErrLayerOutOfOrder, "layer", l, fmt.Sprintf("in [0, hooked=%d)", cfg.Hooked))
	}
	return nil
}

// CheckRegister validates Register's arguments: outside a forward, chunk
// key >= 0, infos >= 0.
func CheckRegister(forward bool, chunkKey int64, infos int) error {
	if forward {
		return spec.Reject(errRegisterDuringForward, "chunk", chunkKey, "register before forward_begin")
	}
	if chunkKey < 0 {
		return spec.Reject(spec.ErrNegative, "chunk", chunkKey, ">= 0")
	}
	if infos < 0 {
		return spec.Reject(spec.ErrNegative, "infos", infos, ">= 0")
	}
	return nil
}
