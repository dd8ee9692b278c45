package fault

// Transfer selects the historic per-layer transfer bugs
// (docs/spec/transfer.md §4.7) that Hooks.NewPerLayerManager puts back;
// the zero value is the fixed manager.
type Transfer struct {
	// FinishRequiresAll is docs/spec/transfer.md §4.7 B1: completion waits
	// for all N layers instead of the count enqueued, and the layers the
	// notifier never fired (the MTP layer) get no synchronous fallback.
	FinishRequiresAll bool
	// NoEnqueueDedup is docs/spec/transfer.md §4.7 B2: NoteEnqueued counts
	// every hook fire, so the completion target grows by H per forward.
	NoEnqueueDedup bool
	// RegisterOverwrites is docs/spec/transfer.md §4.7 B3: Register of an
	// active (room, chunk) rebuilds and overwrites the registered context,
	// orphaning it.
	RegisterOverwrites bool
	// RegisterAnyInfos is docs/spec/transfer.md §4.7 B5: Register accepts
	// any number of non-dummy infos, so one context is finished once per
	// info.
	RegisterAnyInfos bool
	// OneContextPerRoom is docs/spec/transfer.md §4.7 B6: a room holds one
	// context; registering another chunk replaces it and Finish pops it
	// whatever its key.
	OneContextPerRoom bool
}
