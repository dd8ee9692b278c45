package ref

import "fmt"

// Validation for the LayerDoneCounter (docs/spec/radix-acks.md §5.3): sentinels, bound, argument checks and rejections.

// LayerDoneCounter sentinels (docs/spec/radix-acks.md §0.3, §5.3).
var (
	// ErrSlotBusy: the producer wrapped onto a slot whose op is still loading.
	ErrSlotBusy = NewSentinel("slot_busy", "slot's previous load op is still loading")
	// errBadSlot: a slot outside the ring [designed].
	errBadSlot = NewSentinel("bad_slot", "slot outside the counter's ring")
)

// MaxCounterLayers bounds L [designed]: 16 bits per slot count lets the
// fast counter publish its whole state in one atomic word.
const MaxCounterLayers = 1<<16 - 1

// CheckCounterLayers rejects a counter of fewer than one or more than
// MaxCounterLayers layers.
func CheckCounterLayers(layers int) error {
	if layers < 1 || layers > MaxCounterLayers {
		return Reject(ErrBadLoadPools, "layers", layers, fmt.Sprintf("in [1, %d]", MaxCounterLayers))
	}
	return nil
}

// CheckSlot rejects a slot outside the ring (and -1 unless allowNone).
func CheckSlot(slot int, allowNone bool) error {
	lo := 0
	if allowNone {
		lo = -1
	}
	if slot >= lo && slot < CounterSlots {
		return nil
	}
	bound := fmt.Sprintf("in [0, %d)", CounterSlots)
	if allowNone {
		bound = "-1 or " + bound
	}
	return Reject(errBadSlot, "slot", slot, bound)
}

// CheckReadyLayer rejects a layer outside [0, L): waiting for it would
// never end.
func CheckReadyLayer(l, layers int) error {
	if l < 0 || l >= layers {
		return Reject(ErrLayerOutOfOrder, "layer", l, fmt.Sprintf("in [0, layers (%d))", layers))
	}
	return nil
}

// SlotBusyError rejects a producer update onto slot p, done of layers loaded.
func SlotBusyError(p, done, layers int) error {
	return Reject(ErrSlotBusy, "slot", p, fmt.Sprintf("a complete slot (it has %d of %d layers)", done, layers))
}

// CompleteOrderError rejects Complete(slot, l) on a slot at done of layers.
func CompleteOrderError(l, done, layers int) error {
	return Reject(ErrLayerOutOfOrder, "layer", l, fmt.Sprintf("== the slot's done count (%d), < layers (%d)", done, layers))
}
