package ref

import (
	"fmt"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for the LayerDoneCounter (docs/spec/radix-acks.md §5.3): sentinels, bound, argument checks and rejections.

// LayerDoneCounter sentinels (docs/spec/radix-acks.md §0.3, §5.3).
var (
	// errBadSlot: a slot outside the ring [designed].
	errBadSlot = spec.NewSentinel("bad_slot", "slot outside the counter's ring")
)

// CheckCounterLayers rejects a counter of fewer than one or more than
// MaxCounterLayers layers.
func CheckCounterLayers(layers int) error {
	if layers < 1 || layers > spec.MaxCounterLayers {
		return spec.Reject(spec.ErrBadLoadPools, "layers", layers, fmt.Sprintf("in [1, %d]", spec.MaxCounterLayers))
	}
	return nil
}

// CheckSlot rejects a slot outside the ring (and -1 unless allowNone).
func CheckSlot(slot int, allowNone bool) error {
	lo := 0
	if allowNone {
		lo = -1
	}
	if slot >= lo && slot < spec.CounterSlots {
		return nil
	}
	bound := fmt.Sprintf("in [0, %d)", spec.CounterSlots)
	if allowNone {
		bound = "-1 or " + bound
	}
	return spec.Reject(errBadSlot, "slot", slot, bound)
}

// CheckReadyLayer rejects a layer outside [0, L): waiting for it would
// never end.
func CheckReadyLayer(l, layers int) error {
	if l < 0 || l >= layers {
		return spec.Reject(spec.ErrLayerOutOfOrder, "layer", l, fmt.Sprintf("in [0, layers (%d))", layers))
	}
	return nil
}

// SlotBusyError rejects a producer update onto slot p, done of layers loaded.
func SlotBusyError(p, done, layers int) error {
	return spec.Reject(spec.ErrSlotBusy, "slot", p, fmt.Sprintf("a complete slot (it has %d of %d layers)", done, layers))
}

// CompleteOrderError rejects Complete(slot, l) on a slot at done of layers.
func CompleteOrderError(l, done, layers int) error {
	return spec.Reject(spec.ErrLayerOutOfOrder, "layer", l, fmt.Sprintf("== the slot's done count (%d), < layers (%d)", done, layers))
}
