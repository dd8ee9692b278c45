package ref

import (
	"fmt"
	"math"
	"strconv"

	"github.com/kvtwin/kvtwin/spec"
)

// The kvev decoders' errors (docs/spec/kv-events.md §1, §2.10 A6), built
// here so that both twins, which read the msgpack bytes each its own way,
// report byte-equal errors: each twin decides which check failed and where,
// and these functions decide the words.

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

// KVFrameCountError: a live message of n frames (§1.2).
func KVFrameCountError(n int) error { return spec.Reject(spec.ErrFrameCount, "frames", n, "3 frames") }

// KVSeqWidthError: a seq frame of n bytes (§1.2).
func KVSeqWidthError(n int) error { return spec.Reject(spec.ErrSeqWidth, "frames[1]", n, "8 bytes") }

// KVTrailingError: n bytes after the batch's msgpack value (§1.3).
func KVTrailingError(n int) error {
	return spec.Reject(spec.ErrTrailingBytes, "payload", n, "no bytes after the batch")
}

// KVTypeError: the value at field starts with byte first (got: false when
// the payload ended there) and is not the wanted type; s is the place's
// sentinel (ErrBatchShape, ErrEventShape, ErrFieldType, ErrHashEncoding).
func KVTypeError(s *spec.Sentinel, field string, first byte, got bool, want string) error {
	v := spec.Truncated
	if got {
		v = msgpackTypeName(first)
	}
	return spec.Reject(s, field, v, want)
}

// KVLengthError: a container at field declares n elements (a map: n
// entries) but only left bytes follow its header; an array needs at least
// n bytes and a map 2n (§2.10 A6). s is the place's sentinel.
func KVLengthError(s *spec.Sentinel, field string, n uint64, left int) error {
	return spec.Reject(s, field, n, fmt.Sprintf("a length the %d bytes left can hold", left))
}

// KVDepthError: a value at field nests deeper than MaxMsgpackDepth (§2.10 A6).
func KVDepthError(s *spec.Sentinel, field string) error {
	return spec.Reject(s, field, fmt.Sprintf("nesting deeper than %d", spec.MaxMsgpackDepth), fmt.Sprintf("nesting depth <= %d", spec.MaxMsgpackDepth))
}

// KVDuplicateKeyError: key appears twice in the map at field (§2.10 A6);
// the key is reported made valid UTF-8 (KVValidString), like every decoded
// string the output carries.
func KVDuplicateKeyError(s *spec.Sentinel, field, key string) error {
	return spec.Reject(s, field, KVValidString([]byte(key)), spec.WantKey)
}

// KVMissingError: the required field is absent (§1.4 rule 3).
func KVMissingError(field string) error {
	return spec.Reject(spec.ErrMissingField, field, "absent", "present")
}

// KVEmptyHashesError: block_hashes at field is empty (§1.4 rule 4).
func KVEmptyHashesError(field string) error {
	return spec.Reject(spec.ErrEmptyHashes, field, 0, "at least 1 hash")
}

// KVRangeError: an int at field outside its range; v is the value as read
// (int64 or uint64), want is WantRank, WantBlockSize or WantIntOrNil.
func KVRangeError(s *spec.Sentinel, field string, v any, want string) error {
	return spec.Reject(s, field, v, want)
}

// KVTokenRangeError: the token at field is v, outside [0, 2^32) (§1.4 rule 4).
func KVTokenRangeError(field string, v any) error {
	return spec.Reject(spec.ErrTokenRange, field, v, "in [0, 2^32)")
}

// CheckKVTS refuses a ts that is NaN or infinite (§2.10 A6): a float can
// carry one, and a canonical JSON encoding has no way to write it.
func CheckKVTS(ts float64) error {
	if math.IsNaN(ts) || math.IsInf(ts, 0) {
		return spec.Reject(spec.ErrBatchShape, "payload.ts", strconv.FormatFloat(ts, 'g', -1, 64), spec.WantTS)
	}
	return nil
}
