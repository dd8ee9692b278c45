package spec

// Wanted types, the bound of a wrong-type error, one per place of §1.3-§1.5.
const (
	WantBatch     = "an array of 2 to 4 elements, or a map"
	WantTS        = "a finite number"
	WantEvents    = "an array"
	WantRank      = "nil or an int in [0, 2^63)"
	WantEvent     = "an array whose element 0 is a str, or a map with a str \"type\""
	WantKey       = "a str key not seen before in this map"
	WantHashes    = "an array"
	WantHash      = "an int, or a bin of 1 or more bytes"
	WantTokens    = "an array"
	WantToken     = "an int"
	WantBlockSize = "an int >= 1"
	WantIntOrNil  = "nil or an int within int64"
	WantStrOrNil  = "nil or a str"
	WantPubID     = "nil or a bin"
	// WantValue is the bound of an error inside a value the decoder skips
	// (an unknown key, a position past the table): any well-formed msgpack
	// value within MaxMsgpackDepth.
	WantValue = "a msgpack value"
)

// Truncated is the Value of an error at a place where the payload ended
// (or a declared length ran past its end) before the value did.
const Truncated = "truncated"
