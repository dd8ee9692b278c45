package fast

import (
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// FP8ComposeCurrent is the twin of ref.FP8ComposeCurrent (docs/spec/cp-layout.md
// §7.5): the current rows are normalized once, quantized in one pass
// straight into the output buffer, and the prefix gathered in runs of
// consecutive slots.
func FP8ComposeCurrent(lim spec.Limits, in spec.FP8ComposeCurrentInput) (spec.FP8ComposeCurrentOutput, error) {
	plan, err := ref.ValidateFP8ComposeCurrent(lim, in)
	if err != nil {
		return spec.FP8ComposeCurrentOutput{}, err
	}
	cur, err := ref.NormalizeCurrent(plan, in.Current, in.M)
	if err != nil {
		return spec.FP8ComposeCurrentOutput{}, err
	}
	const w, cw = spec.FP8RowBytes, spec.MLABF16RowBytes
	out := make([]byte, plan.Total*w)
	src := in.Pool.Rows.B
	row, base := 0, 0
	for b, ps := range in.PrefixSlots {
		if err := lim.Canceled("prefix_slots"); err != nil {
			return spec.FP8ComposeCurrentOutput{}, err
		}
		for i := 0; i < len(ps); {
			j := i + 1
			for j < len(ps) && ps[j] == ps[j-1]+1 {
				j++
			}
			copy(out[(row+i)*w:(row+j)*w], src[ps[i]*w:(ps[i]+int64(j-i))*w])
			i = j
		}
		row += len(ps)
		l := in.Lens[b]
		// Validation proved every value finite, so no row is rejected here.
		QuantizeRows656(out[row*w:(row+l)*w], cur.B[base*cw:(base+l)*cw], spec.ScaleDivFP32)
		row += l
		base += l
	}
	return spec.FP8ComposeCurrentOutput{Rows: spec.Rows{W: w, B: out}}, nil
}
