package spec

var (
	// ErrSlotBusy: the producer wrapped onto a slot whose op is still loading.
	ErrSlotBusy = NewSentinel("slot_busy", "slot's previous load op is still loading")
)

// MaxCounterLayers bounds L [designed]: 16 bits per slot count lets the
// fast counter publish its whole state in one atomic word.
const MaxCounterLayers = 1<<16 - 1
