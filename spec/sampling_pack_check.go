package spec

var (
	// ErrNonFinite: a float parameter is NaN or ±Inf, or a temperature too
	// large to convert to a finite float32 (docs/spec/transfer.md §8 [designed]; a NaN
	// temperature would pass upstream's "< 0" check).
	ErrNonFinite = NewSentinel("non_finite", "float parameter must be finite, also as float32")
	// ErrTopKOverflow: top_k after normalisation does not fit the int32 top_k buffer (docs/spec/transfer.md §8 [designed]).
	ErrTopKOverflow = NewSentinel("top_k_overflow", "top_k must fit in int32")
	// ErrBadTemperature: temperature < 0 (docs/spec/transfer.md §8 verify).
	ErrBadTemperature = NewSentinel("bad_temperature", "temperature must be >= 0")
	// ErrBadTopP: top_p outside (0, 1] (docs/spec/transfer.md §8 verify).
	ErrBadTopP = NewSentinel("bad_top_p", "top_p must be in (0, 1]")
	// ErrBadMinP: min_p outside [0, 1] (docs/spec/transfer.md §8 verify).
	ErrBadMinP = NewSentinel("bad_min_p", "min_p must be in [0, 1]")
	// ErrBadTopK: top_k < 1 after normalisation, i.e. 0 or below -1 on a
	// non-greedy request (docs/spec/transfer.md §8 verify).
	ErrBadTopK = NewSentinel("bad_top_k", "top_k must be >= 1 after normalisation (-1 means all)")
)

// Float32Overflow is the smallest magnitude float32 conversion rounds to
// ±Inf: halfway between MaxFloat32 and 2^128, where the tie goes to the
// even neighbour 2^128 (= Inf). Temperatures must stay below it ([designed],
// docs/spec/transfer.md §8): the packed buffer is float32 and JSON cannot carry Inf.
const Float32Overflow = 0x1p128 - 0x1p103
