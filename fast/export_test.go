package fast

import (
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/spec"
)

// This file exports to fast's own external tests what no other package
// needs: the per-layer manager's real mode and the radix tree under another
// CP owner rule (Go's export_test.go idiom; the rest of the module sees one
// constructor per type).

// PerLayerOptions configures NewPerLayerManagerWithOptions (perLayerOptions).
type PerLayerOptions = perLayerOptions

// NewPerLayerManagerWithOptions is the production per-layer manager with
// opts.Workers worker goroutines (docs/spec/transfer.md §4.4), which no op
// drives: NewPerLayerManager is the deterministic mode (Workers = 0).
func NewPerLayerManagerWithOptions(opts PerLayerOptions) (*PerLayerManager, error) {
	return newPerLayerManager(opts, fault.Transfer{})
}

// NewRadixTreeOwned is NewRadixTree with the page → owner rule owner
// (docs/spec/radix-acks.md §4.1, §6 item 1), as the concrete tree.
func NewRadixTreeOwned(cfg spec.TreeConfig, owner spec.OwnerFn) (*RadixTree, error) {
	return newRadixTreeOwned(cfg, owner)
}
