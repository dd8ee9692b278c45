package spec

// MaxAdmitTokens bounds every token count, budget and coefficient of the
// adder's input (2^40), so sums over up to MaxAdmitEntries entries cannot
// overflow int64 and stay exact in float64.
const MaxAdmitTokens int64 = 1 << 40

// MaxAdmitEntries bounds len(queue) + len(running) of one round (2^20).
const MaxAdmitEntries = 1 << 20

// MaxLinearBufferCoeff bounds each LinearBuffer coefficient (bytes per unit).
const MaxLinearBufferCoeff int64 = 1 << 16

// Admission sentinels (§A1.14).
var (
	// ErrAdmitConfig: an AdderConfig or CP knob outside its range.
	ErrAdmitConfig = NewSentinel("admission_config", "prefill adder configuration out of range")
	// ErrAdmitRequest: a request whose lengths are inconsistent.
	ErrAdmitRequest = NewSentinel("admission_request", "request lengths are inconsistent")
	// ErrDuplicateRID: two requests of one round share a rid.
	ErrDuplicateRID = NewSentinel("duplicate_rid", "duplicate rid in one round")
	// ErrEvictableShort: a request would lock more evictable slots than the pool holds.
	ErrEvictableShort = NewSentinel("evictable_exceeds_pool", "l1_prefix_evictable exceeds pool.evictable at lock time")
	// ErrSecondChunk: a second chunk cut in one round (truncation_align_size not a multiple of page_size).
	ErrSecondChunk = NewSentinel("second_chunk", "second chunked request in one round")
)
