package ref

import (
	"github.com/kvtwin/kvtwin/spec"
)

// NewRows returns n zero rows of width w with a non-nil buffer (so an empty
// buffer encodes as "" rather than null). The caller has bounded n·w.
func NewRows(w, n int) spec.Rows { return spec.Rows{W: w, B: make([]byte, n*w)} }

// BuildLayoutAt builds the layout sp names within lim (buildWithin), as an
// op input field called field (e.g. "layout"): a rejection from the builder
// names the JSON path inside the op's input ("layout.lens[2]"), not the
// builder's own argument.
func BuildLayoutAt(lim spec.Limits, field string, sp spec.LayoutSpec) (spec.Layout, error) {
	lay, err := sp.BuildWithin(lim)
	if ie, ok := spec.AsInputError(err); ok {
		return spec.Layout{}, spec.Reject(ie.Err, field+"."+ie.Field, ie.Value, ie.Bound)
	}
	return lay, err
}
