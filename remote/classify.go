package remote

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/kvtwin/kvtwin/fixtures"
)

// This file decides, once for every transport, what a reply is: an answer
// (an output value or an error object) or a *TransportError of one Kind.
// exec.go and http.go only take a reply off their wire and hand its parts
// here, so the same bytes are classified alike over exec and HTTP
// (docs/adapters.md "How replies are classified").

// Kind classifies a call that got no usable answer.
type Kind string

// The kinds of transport error, one per way an adapter can fail a call.
const (
	// KindTimeout: no whole reply within Options.Timeout (an exec adapter
	// is killed and restarted).
	KindTimeout Kind = "timeout"
	// KindTooLarge: the reply is longer than Options.MaxReplyBytes; it is
	// refused before more than the bound is held (an HTTP body declared
	// longer is not read at all).
	KindTooLarge Kind = "too_large"
	// KindMalformed: the reply is not UTF-8, not JSON, not the protocol's
	// shape (an exec envelope without an id, with neither or both of out
	// and err; an error object, or HTTP 400's detail, that is not an
	// object).
	KindMalformed Kind = "malformed"
	// KindProtocol: an exec reply to an id not in flight (a wrong id, a
	// second reply, a reply after its call timed out). The stream can no
	// longer be trusted: the adapter is killed and every call in flight
	// fails. HTTP has no ids, so no HTTP reply is of this kind.
	KindProtocol Kind = "protocol"
	// KindExited: the adapter went away before a whole reply (the process
	// exited, mid-line or not, or could not start; the connection was
	// refused or closed mid-body).
	KindExited Kind = "exited"
	// KindStatus: an HTTP status the protocol does not define (a 429 or
	// 503 that sheds load is asked again until the timeout first).
	KindStatus Kind = "status"
	// KindUnavailable: the op's breaker is open; the call was not sent.
	KindUnavailable Kind = "unavailable"
)

// failure is a transport error before it is tied to a call's op.
type failure struct {
	kind   Kind
	reason string
}

func (f *failure) Error() string { return string(f.kind) + ": " + f.reason }

func fail(kind Kind, format string, args ...any) *failure {
	return &failure{kind: kind, reason: fmt.Sprintf(format, args...)}
}

// transportError ties a failure (or any other error, KindExited) to op.
func transportError(op string, err error) *TransportError {
	var f *failure
	if errors.As(err, &f) {
		return &TransportError{Op: op, Kind: f.kind, Reason: f.reason}
	}
	return &TransportError{Op: op, Kind: KindExited, Reason: err.Error()}
}

// quoteMax is how many bytes of a bad reply a reason quotes.
const quoteMax = 120

// quote is a bounded, escaped excerpt of b for a reason: its first
// quoteMax bytes, invalid UTF-8 and control bytes escaped.
func quote(b []byte) string {
	if len(b) > quoteMax {
		return fmt.Sprintf("%q… (%d bytes)", b[:quoteMax], len(b))
	}
	return fmt.Sprintf("%q", b)
}

// checkJSON is the test every reply passes before it is read, over every
// transport: UTF-8 (RFC 8259 §8.1; encoding/json would otherwise replace
// bad bytes with U+FFFD silently and compare the result) and exactly one
// JSON value.
func checkJSON(b []byte, what string) *failure {
	if !utf8.Valid(b) {
		return fail(KindMalformed, "%s is not valid UTF-8 (first bad byte at offset %d): %s", what, invalidUTF8At(b), quote(b))
	}
	if !json.Valid(b) {
		var v json.RawMessage
		err := json.Unmarshal(b, &v)
		return fail(KindMalformed, "%s is not JSON (%v): %s", what, err, quote(b))
	}
	return nil
}

// invalidUTF8At is the offset of the first byte of b that does not start
// a valid UTF-8 sequence (len(b) when there is none).
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// answer is a reply's meaning once its transport has taken it off the
// wire: an error object (errObj non-nil) or an output value. An error
// object must be a JSON object; its code not_implemented says the op is
// missing (ErrNotImplemented). Both parts have passed checkJSON.
func answer(op string, out, errObj json.RawMessage) (fixtures.Result, error) {
	if errObj == nil {
		return fixtures.Result{Bytes: out}, nil
	}
	if t := bytes.TrimSpace(errObj); len(t) == 0 || t[0] != '{' {
		return fixtures.Result{}, transportError(op, fail(KindMalformed, "the error object is not a JSON object: %s", quote(errObj)))
	}
	var obj struct {
		Code string `json:"code"`
	}
	if json.Unmarshal(errObj, &obj) == nil && obj.Code == "not_implemented" {
		return fixtures.Result{}, fmt.Errorf("%s: %w", op, ErrNotImplemented)
	}
	return fixtures.Result{Bytes: errObj, Rejected: true}, nil
}
