package spec

import (
	"fmt"
	"math"
)

// ErrMessageBudget: a message past the bounds of one message (§2.10 A10):
// more events than max_events, or a decoded cost past max_decode_ratio ×
// its payload's bytes plus the floor. A decoding error (§2.7): the batch
// is lost whole and the stream's engines go stale (A3).
var ErrMessageBudget = NewSentinel("message_budget", "a message holds at most max_events events and decodes within max_decode_ratio times its bytes")

// Decoded cost of §2.10 A10, in bytes: what the decoded message's Go values
// cost on a 64-bit platform. A KVEvent is 152 bytes and its optional values
// one more allocation of 72 bytes (80 with the allocator's size class):
// 232, rounded up to 256. A hash is a uint64 and a token a uint32.
const (
	KVEventCost = 256
	KVHashCost  = 8
	KVTokenCost = 4
	// KVDecodeFloor is the decoded cost every message may have whatever
	// its size, so a short batch of small events always decodes.
	KVDecodeFloor = 64 << 10
)

// Defaults and caps of the A10 bounds and of max_held_bytes (A7). A
// configuration past a cap is refused, so none can make a bound so large
// that it stops bounding.
const (
	// defaultKVMaxEvents is max_events' default, 2^18: eight times the
	// most events a real engine puts in one batch (§2.10 A10).
	defaultKVMaxEvents = 1 << 18
	// MaxKVEvents caps max_events.
	MaxKVEvents = 1 << 24
	// DefaultKVMaxDecodeRatio is max_decode_ratio's default: above the 9.4
	// bytes per payload byte of the costliest real event (§2.10 A10).
	DefaultKVMaxDecodeRatio = 16
	// MaxKVDecodeRatio caps max_decode_ratio.
	MaxKVDecodeRatio = 1 << 10
	// defaultKVMaxHeldBytes is max_held_bytes' default, 64 MiB (§2.10 A7).
	defaultKVMaxHeldBytes = 64 << 20
	// MaxKVHeldBytes caps max_held_bytes.
	MaxKVHeldBytes = 1 << 40
)

// KVDecodeLimits are the bounds of one message (§2.10 A10). Zero fields
// take their defaults (withDefaults); Validate refuses negatives and
// values past the caps.
type KVDecodeLimits struct {
	// MaxEvents bounds the events array's declared length.
	MaxEvents int `json:"max_events,omitzero"`
	// MaxDecodeRatio bounds the decoded cost per payload byte, beyond
	// KVDecodeFloor.
	MaxDecodeRatio int64 `json:"max_decode_ratio,omitzero"`
}

// withDefaults returns l with its zero fields set to the defaults: 2^18
// events, a decoded cost of 16 bytes per payload byte beyond the 64 KiB
// floor.
func (l KVDecodeLimits) withDefaults() KVDecodeLimits {
	if l.MaxEvents == 0 {
		l.MaxEvents = defaultKVMaxEvents
	}
	if l.MaxDecodeRatio == 0 {
		l.MaxDecodeRatio = DefaultKVMaxDecodeRatio
	}
	return l
}

// Validate refuses a negative bound or one past its cap (ErrTooLarge),
// naming <prefix>.<field>: "limits" for kvev.decode, "config" for an index.
func (l KVDecodeLimits) Validate(prefix string) error {
	if l.MaxEvents < 0 || l.MaxEvents > MaxKVEvents {
		return Reject(ErrTooLarge, prefix+".max_events", l.MaxEvents, fmt.Sprintf("in [0, %d]", MaxKVEvents))
	}
	if l.MaxDecodeRatio < 0 || l.MaxDecodeRatio > MaxKVDecodeRatio {
		return Reject(ErrTooLarge, prefix+".max_decode_ratio", l.MaxDecodeRatio, fmt.Sprintf("in [0, %d]", MaxKVDecodeRatio))
	}
	return nil
}

// DecodeLimits are the bounds of one message c's index decodes with.
func (c KVEvConfig) DecodeLimits() KVDecodeLimits {
	return KVDecodeLimits{MaxEvents: c.MaxEvents, MaxDecodeRatio: c.MaxDecodeRatio}.withDefaults()
}

// withBoundDefaults sets the zero A7 and A10 fields of c; withDefaults calls it.
func (c KVEvConfig) withBoundDefaults() KVEvConfig {
	l := c.DecodeLimits()
	c.MaxEvents, c.MaxDecodeRatio = l.MaxEvents, l.MaxDecodeRatio
	if c.MaxHeldBytes == 0 {
		c.MaxHeldBytes = defaultKVMaxHeldBytes
	}
	return c
}

// validateBounds checks the A7 and A10 fields of c; Validate calls it.
func (c KVEvConfig) validateBounds() error {
	if err := (KVDecodeLimits{MaxEvents: c.MaxEvents, MaxDecodeRatio: c.MaxDecodeRatio}).Validate("config"); err != nil {
		return err
	}
	if c.MaxHeldBytes < 0 || c.MaxHeldBytes > MaxKVHeldBytes {
		return Reject(ErrTooLarge, "config.max_held_bytes", c.MaxHeldBytes, fmt.Sprintf("in [0, %d]", int64(MaxKVHeldBytes)))
	}
	return nil
}

// kvDecodeBound is the decoded cost a payload of n bytes may have under
// ratio (§2.10 A10): ratio × n + KVDecodeFloor, saturating.
func kvDecodeBound(ratio int64, n int) int64 {
	if n < 0 {
		n = 0
	}
	if MulOverflows(ratio, int64(n)) || AddOverflows(ratio*int64(n), KVDecodeFloor) {
		return math.MaxInt64
	}
	return ratio*int64(n) + KVDecodeFloor
}

// KVDecodeBudget is the running decoded cost of one payload against its
// bound (§2.10 A10). Both decoder twins keep one per payload and charge
// each array they build at its header.
type KVDecodeBudget struct {
	lim   KVDecodeLimits
	n     int   // payload bytes
	bound int64 // kvDecodeBound(lim.MaxDecodeRatio, n)
	cost  int64 // the running total
}

// NewKVDecodeBudget is the budget of a payload of n bytes under lim (its
// zero fields taking their defaults).
func NewKVDecodeBudget(lim KVDecodeLimits, n int) KVDecodeBudget {
	lim = lim.withDefaults()
	return KVDecodeBudget{lim: lim, n: n, bound: kvDecodeBound(lim.MaxDecodeRatio, n)}
}

// Events is A10's check of the events array's header declaring n events:
// max_events first, then n × KVEventCost charged (Charge, CostError).
func (b *KVDecodeBudget) Events(field string, n uint64) error {
	if n > uint64(b.lim.MaxEvents) {
		return Reject(ErrMessageBudget, field, n, fmt.Sprintf("at most %d events (max_events)", b.lim.MaxEvents))
	}
	if !b.Charge(n, KVEventCost) {
		return b.CostError(field)
	}
	return nil
}

// Charge adds n elements of per bytes each, declared by an array's header,
// to the running total and reports whether it is still within the bound.
// When it is not, the caller refuses the message with CostError at the
// array's place (built only then: the fast twin's places are formatted
// lazily).
func (b *KVDecodeBudget) Charge(n uint64, per int64) bool {
	add := int64(math.MaxInt64)
	if n <= math.MaxInt64/uint64(per) {
		add = int64(n) * per
	}
	if AddOverflows(b.cost, add) {
		b.cost = math.MaxInt64
	} else {
		b.cost += add
	}
	return b.cost <= b.bound
}

// CostError is the refusal of a message whose running total passed the
// bound at the array at field; the value is the total with that array.
func (b *KVDecodeBudget) CostError(field string) error {
	return Reject(ErrMessageBudget, field, b.cost, fmt.Sprintf("a decoded cost of at most %d bytes: %d × %d payload bytes + %d (max_decode_ratio)",
		b.bound, b.lim.MaxDecodeRatio, b.n, KVDecodeFloor))
}
