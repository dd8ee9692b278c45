package ref

import (
	"fmt"
	"math"
	"strconv"
)

// The kvev decoders' errors (docs/spec/kv-events.md §1, §2.10 A6), built
// here so that both twins, which read the msgpack bytes each its own way,
// report byte-equal errors: each twin decides which check failed and where,
// and these functions decide the words.

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

// msgpackTypeName names the msgpack format family that starts with byte b,
// the Value of a wrong-type error: nil, bool, uint (positive fixint,
// 0xcc-0xcf), int (negative fixint, 0xd0-0xd3), float32, float64, str, bin,
// array, map, ext, or reserved (0xc1).
func msgpackTypeName(b byte) string {
	switch {
	case b <= 0x7f, b >= 0xcc && b <= 0xcf:
		return "uint"
	case b >= 0xe0, b >= 0xd0 && b <= 0xd3:
		return "int"
	case b >= 0x80 && b <= 0x8f, b == 0xde, b == 0xdf:
		return "map"
	case b >= 0x90 && b <= 0x9f, b == 0xdc, b == 0xdd:
		return "array"
	case b >= 0xa0 && b <= 0xbf, b >= 0xd9 && b <= 0xdb:
		return "str"
	case b == 0xc0:
		return "nil"
	case b == 0xc2, b == 0xc3:
		return "bool"
	case b >= 0xc4 && b <= 0xc6:
		return "bin"
	case b == 0xca:
		return "float32"
	case b == 0xcb:
		return "float64"
	case b == 0xc1:
		return "reserved"
	}
	return "ext" // 0xc7-0xc9, 0xd4-0xd8
}

// Truncated is the Value of an error at a place where the payload ended
// (or a declared length ran past its end) before the value did.
const Truncated = "truncated"

// KVFrameCountError: a live message of n frames (§1.2).
func KVFrameCountError(n int) error { return Reject(ErrFrameCount, "frames", n, "3 frames") }

// KVSeqWidthError: a seq frame of n bytes (§1.2).
func KVSeqWidthError(n int) error { return Reject(ErrSeqWidth, "frames[1]", n, "8 bytes") }

// KVTrailingError: n bytes after the batch's msgpack value (§1.3).
func KVTrailingError(n int) error {
	return Reject(ErrTrailingBytes, "payload", n, "no bytes after the batch")
}

// KVTypeError: the value at field starts with byte first (got: false when
// the payload ended there) and is not the wanted type; s is the place's
// sentinel (ErrBatchShape, ErrEventShape, ErrFieldType, ErrHashEncoding).
func KVTypeError(s *Sentinel, field string, first byte, got bool, want string) error {
	v := Truncated
	if got {
		v = msgpackTypeName(first)
	}
	return Reject(s, field, v, want)
}

// KVLengthError: a container at field declares n elements (a map: n
// entries) but only left bytes follow its header; an array needs at least
// n bytes and a map 2n (§2.10 A6). s is the place's sentinel.
func KVLengthError(s *Sentinel, field string, n uint64, left int) error {
	return Reject(s, field, n, fmt.Sprintf("a length the %d bytes left can hold", left))
}

// KVDepthError: a value at field nests deeper than MaxMsgpackDepth (§2.10 A6).
func KVDepthError(s *Sentinel, field string) error {
	return Reject(s, field, fmt.Sprintf("nesting deeper than %d", MaxMsgpackDepth), fmt.Sprintf("nesting depth <= %d", MaxMsgpackDepth))
}

// KVDuplicateKeyError: key appears twice in the map at field (§2.10 A6);
// the key is reported made valid UTF-8 (KVValidString), like every decoded
// string the output carries.
func KVDuplicateKeyError(s *Sentinel, field, key string) error {
	return Reject(s, field, KVValidString([]byte(key)), WantKey)
}

// KVMissingError: the required field is absent (§1.4 rule 3).
func KVMissingError(field string) error {
	return Reject(ErrMissingField, field, "absent", "present")
}

// KVEmptyHashesError: block_hashes at field is empty (§1.4 rule 4).
func KVEmptyHashesError(field string) error {
	return Reject(ErrEmptyHashes, field, 0, "at least 1 hash")
}

// KVRangeError: an int at field outside its range; v is the value as read
// (int64 or uint64), want is WantRank, WantBlockSize or WantIntOrNil.
func KVRangeError(s *Sentinel, field string, v any, want string) error {
	return Reject(s, field, v, want)
}

// KVTokenRangeError: the token at field is v, outside [0, 2^32) (§1.4 rule 4).
func KVTokenRangeError(field string, v any) error {
	return Reject(ErrTokenRange, field, v, "in [0, 2^32)")
}

// CheckKVTS refuses a ts that is NaN or infinite (§2.10 A6): a float can
// carry one, and a canonical JSON encoding has no way to write it.
func CheckKVTS(ts float64) error {
	if math.IsNaN(ts) || math.IsInf(ts, 0) {
		return Reject(ErrBatchShape, "payload.ts", strconv.FormatFloat(ts, 'g', -1, 64), WantTS)
	}
	return nil
}
