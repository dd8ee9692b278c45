package spec

import (
	"fmt"
)

// MaxCPSize is the largest CP size a tree or an owner count accepts. Page
// owners are stored as uint16 (§4.2) and every node holds one count per
// rank, so the bound keeps both small; real CP groups have a few ranks.
const MaxCPSize = 1024

// ErrMetadataStale: a node's owner metadata disagrees with its key — the
// page count, the count list's length or its sum (docs/spec/radix-acks.md §4.5). The
// fixed trees never hold stale metadata; it is how a split that forgot to
// split the metadata (§4.6 B4.b) fails fast instead of planning on lies.
var ErrMetadataStale = NewSentinel("metadata_stale", "node owner metadata disagrees with its key")

// validateCP rejects CP sizes outside [1, MaxCPSize] (0 is off), a draft
// size without a main one, and a draft size equal to the main one.
func (c TreeConfig) validateCP() error {
	if c.CPSize < 0 || c.CPSize > MaxCPSize {
		return Reject(ErrBadCPSize, "cp_size", c.CPSize, fmt.Sprintf("0 (off) or in [1, %d]", MaxCPSize))
	}
	if c.CPDraftSize == 0 {
		return nil
	}
	if c.CPSize == 0 || c.CPDraftSize < 0 || c.CPDraftSize > MaxCPSize || c.CPDraftSize == c.CPSize {
		return Reject(ErrBadCPSize, "cp_draft_size", c.CPDraftSize,
			fmt.Sprintf("0 (none), or in [1, %d] and != cp_size (%d) when cp_size is set", MaxCPSize, c.CPSize))
	}
	return nil
}
