package spec

import (
	"fmt"
)

// Rows is a buffer of opaque rows of W bytes each (docs/spec/cp-layout.md §0.1): the
// layout ops (§1–§4) move rows without reading them, so they are
// dtype-agnostic and byte-exact. In JSON it is {"w": W, "b": base64 bytes}.
// A well-formed buffer has W >= 1 and len(B) a multiple of W; CheckRows
// rejects any other with ErrRowCount before an op reads it.
type Rows struct {
	// W is the row width in bytes, >= 1.
	W int `json:"w"`
	// B holds the rows back to back, len(B) == N()·W.
	B []byte `json:"b"`
}

// N is the number of rows, len(B)/W (0 for a malformed width; call
// CheckRows first).
func (x Rows) N() int {
	if x.W < 1 {
		return 0
	}
	return len(x.B) / x.W
}

// Row returns row i as a sub-slice of B (shared, not copied).
func (x Rows) Row(i int) []byte { return x.B[i*x.W : (i+1)*x.W] }

// Span returns rows [i, i+n) as one sub-slice of B (shared, not copied).
func (x Rows) Span(i, n int) []byte { return x.B[i*x.W : (i+n)*x.W] }

// checkShape rejects a buffer with a width below 1 or a length that is not
// a whole number of rows (a ragged buffer) with ErrRowCount naming field.
func (x Rows) CheckShape(field string) error {
	if x.W < 1 {
		return Reject(ErrRowCount, field+".w", x.W, ">= 1")
	}
	if len(x.B)%x.W != 0 {
		return Reject(ErrRowCount, field+".b", len(x.B), fmt.Sprintf("a multiple of w (%d) bytes", x.W))
	}
	return nil
}

// CheckRows is checkShape plus an exact row count: a buffer of other than
// want rows is rejected with ErrRowCount naming field.
func (x Rows) CheckRows(field string, want int) error {
	if err := x.CheckShape(field); err != nil {
		return err
	}
	if n := x.N(); n != want {
		return Reject(ErrRowCount, field, n, fmt.Sprintf("%d rows", want))
	}
	return nil
}
