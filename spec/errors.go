package spec

import (
	"errors"
	"fmt"
)

// Sentinel is a class of rejected input. Twins must fail on the same input
// with the same Sentinel (compare with errors.Is); its Code is the stable
// machine-readable name used in fixtures and HTTP error bodies.
type Sentinel struct {
	code string
	text string
}

// Error returns the sentinel's human-readable description.
func (s *Sentinel) Error() string { return s.text }

// Code returns the stable snake_case identifier of the sentinel (e.g. "bad_cp_rank").
func (s *Sentinel) Code() string { return s.code }

// NewSentinel declares a sentinel; packages call it once per class of
// failure, at package initialisation.
func NewSentinel(code, text string) *Sentinel { return &Sentinel{code: code, text: text} }

// Input-error sentinels shared by every family. Each op documents which ones
// it returns; the spec section that defines them is noted beside each.
var (
	// ErrNegative: a count, offset, page id or slot is below zero (every spec's bad-input table).
	ErrNegative = NewSentinel("negative", "value must not be negative")
	// ErrOverflow: an index or address computation would overflow its integer type.
	ErrOverflow = NewSentinel("overflow", "arithmetic overflow")
	// ErrTooLarge: the output would exceed the configured Limits.
	ErrTooLarge = NewSentinel("too_large", "output exceeds the configured limit")
	// ErrCanceled: the run was stopped by Limits.Done (its deadline passed or
	// its caller left) before it finished; not the input's fault, so the
	// server answers it 503, not 400.
	ErrCanceled = NewSentinel("canceled", "the run was canceled before it finished")
	// ErrLengthMismatch: two parallel lists have different lengths (docs/spec/transfer.md §2, §3).
	ErrLengthMismatch = NewSentinel("length_mismatch", "parallel lists differ in length")
	// ErrItemLenMismatch: item lens that must agree differ — MLA entries, whose
	// upstream path uses item_lens[0] for every layer (docs/spec/transfer.md §3.2), or a
	// state-buffer pair (docs/spec/transfer.md §6.2 rule 5).
	ErrItemLenMismatch = NewSentinel("item_len_mismatch", "item lens differ")
	// ErrBadEnum: a string option is not one of its allowed values.
	ErrBadEnum = NewSentinel("bad_enum", "unknown option value")

	// ErrBadCPSize: cp_size < 1 (docs/spec/transfer.md §1.5).
	ErrBadCPSize = NewSentinel("bad_cp_size", "cp_size must be >= 1")
	// ErrBadCPRank: cp_rank outside [0, cp_size) (docs/spec/transfer.md §1.5).
	ErrBadCPRank = NewSentinel("bad_cp_rank", "cp_rank out of range")
	// ErrChunkOutOfRange: positional policy with the chunk not inside [0, total_pages) (docs/spec/transfer.md §1.5).
	ErrChunkOutOfRange = NewSentinel("chunk_out_of_range", "chunk not inside the request's pages")
	// ErrTotalPagesRequired: positional policy without the request's total page count (docs/spec/transfer.md §1.5).
	ErrTotalPagesRequired = NewSentinel("total_pages_required", "position_range needs total_pages")
)

// InputError is the error every op returns for bad input: which field, the
// offending value, and the bound it broke. It wraps a *Sentinel.
type InputError struct {
	// Err is the sentinel class of the failure.
	Err *Sentinel
	// Field is the JSON path of the offending input field, e.g. "kv[3]".
	Field string
	// Value is the offending value (a number, string or small struct).
	Value any
	// Bound says what the value must satisfy, e.g. "< cp_size (4)".
	Bound string
}

// Error renders "field = value: want bound (sentinel text)".
func (e *InputError) Error() string {
	return fmt.Sprintf("%s = %v: want %s (%s)", e.Field, e.Value, e.Bound, e.Err.text)
}

// Unwrap exposes the sentinel to errors.Is.
func (e *InputError) Unwrap() error { return e.Err }

// Reject builds an *InputError; twins call it with identical arguments so
// their canonical errors are byte-equal.
func Reject(s *Sentinel, field string, value any, bound string) error {
	return &InputError{Err: s, Field: field, Value: value, Bound: bound}
}

// AsInputError returns err's *InputError, if it has one.
func AsInputError(err error) (*InputError, bool) {
	var ie *InputError
	ok := errors.As(err, &ie)
	return ie, ok
}

// ErrorObject is the canonical encoding of a rejected input: the same bytes
// for every twin that rejects the input the same way. Script ops embed it
// in their traces for steps that fail.
type ErrorObject struct {
	// Code is the sentinel's code ("internal" for errors that are not input errors).
	Code string `json:"code"`
	// Field is the JSON path of the offending field.
	Field string `json:"field,omitempty"`
	// Value is the offending value.
	Value any `json:"value,omitempty"`
	// Bound is what the value must satisfy.
	Bound string `json:"bound,omitempty"`
	// Message is the full error text.
	Message string `json:"message"`
}

// ErrorObjectOf converts err to its canonical error object.
func ErrorObjectOf(err error) ErrorObject {
	if ie, ok := AsInputError(err); ok {
		return ErrorObject{Code: ie.Err.Code(), Field: ie.Field, Value: ie.Value, Bound: ie.Bound, Message: ie.Error()}
	}
	return ErrorObject{Code: "internal", Message: err.Error()}
}

// ErrLayerOutOfOrder: a layer index outside [0, L), or not the next layer
// in order (docs/spec/radix-acks.md §3.6, §5.2, §5.3).
var ErrLayerOutOfOrder = NewSentinel("layer_out_of_order", "layer out of range or out of order")
