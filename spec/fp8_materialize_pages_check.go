package spec

var (
	// ErrSlotOutOfRange: a pool slot (token loc) outside [0, numSlots)
	// (docs/spec/cp-layout.md §7.4, §7.5).
	ErrSlotOutOfRange = NewSentinel("slot_out_of_range", "slot outside the page-slot pool")
	// ErrDuplicateSlot: one store names the same slot twice; the GPU's write
	// order would be undefined (docs/spec/cp-layout.md §7.4).
	ErrDuplicateSlot = NewSentinel("duplicate_slot", "slot stored twice in one call")
)
