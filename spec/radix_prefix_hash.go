package spec

import (
	"fmt"
	"strconv"
)

// PrefixHash is the prefix hash of a key's page (docs/spec/radix-acks.md
// §1.14): XXH3-64 of the page's units seeded with the previous page's
// prefix hash, so equal hashes mean equal prefixes up to that page, up to
// 64-bit collisions. JSON carries it as 16 lower-case hex digits, because
// JSON numbers lose integers above 2^53.
type PrefixHash uint64

// MarshalJSON writes h as a 16-digit hex string.
func (h PrefixHash) MarshalJSON() ([]byte, error) {
	return fmt.Appendf(nil, `"%016x"`, uint64(h)), nil
}

// UnmarshalJSON reads a 16-digit hex string.
func (h *PrefixHash) UnmarshalJSON(b []byte) error {
	s, err := strconv.Unquote(string(b))
	if err != nil || len(s) != 16 {
		return fmt.Errorf("prefix hash %s: want a string of 16 hex digits", b)
	}
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return fmt.Errorf("prefix hash %s: want a string of 16 hex digits", b)
	}
	*h = PrefixHash(v)
	return nil
}
