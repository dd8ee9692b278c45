package ref

import (
	"github.com/kvtwin/kvtwin/spec"
)

// CheckNonNegative rejects the first negative element of xs with ErrNegative,
// naming it as field[i].
func CheckNonNegative(field string, xs []int64) error {
	for i, x := range xs {
		if x < 0 {
			return spec.Reject(spec.ErrNegative, spec.Idx(field, i), x, ">= 0")
		}
	}
	return nil
}
