//go:build cuda

package cuda

import (
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// CPRestorePadded is the CUDA twin of ref.CPRestorePadded (docs/spec/cp-layout.md
// §4.2 step 4): the compacted rows are uploaded and one launch of
// cp_restore_padded_rows writes all R(r) local rows — each valid row from
// y, each padding row zero — from one run per lane slot. Validation is ref's.
func CPRestorePadded(lim spec.Limits, in spec.CPRestorePaddedInput) (spec.CPRestorePaddedOutput, error) {
	lay, err := ref.ValidateCPRestorePadded(lim, in)
	if err != nil {
		return spec.CPRestorePaddedOutput{}, err
	}
	runs, rows := restoreRuns(lay, in.Rank)
	out := ref.NewRows(in.Y.W, rows)
	if rows == 0 {
		return spec.CPRestorePaddedOutput{Rows: out}, nil // no work: no launch
	}
	err = run("cp.restore_padded", func(c *call) error {
		dy, err := c.upload(in.Y.B)
		if err != nil {
			return err
		}
		druns, err := c.uploadInt64s(runs)
		if err != nil {
			return err
		}
		ddst, err := c.alloc(int64(len(out.B)))
		if err != nil {
			return err
		}
		n := int64(rows)
		if err := c.launch("cp_restore_padded_rows", n*rowWords(out.W), ddst, dy, druns, int64(len(runs)/3), n,
			int64(out.W)); err != nil {
			return err
		}
		return c.download(out.B, ddst)
	})
	if err != nil {
		return spec.CPRestorePaddedOutput{}, err
	}
	return spec.CPRestorePaddedOutput{Rows: out}, nil
}

// restoreRuns lists cp_restore_padded_rows' runs {first local row, first y
// row, valid rows}, one per lane slot of rank r with compute rows, in local
// order (a run spans S[i][k] rows), and R(r).
func restoreRuns(lay spec.Layout, r int) ([]int64, int) {
	runs := make([]int64, 0, 6*lay.B())
	off, d := 0, 0
	for _, k := range lay.Lanes(r) {
		for i := range lay.L {
			s, v := lay.S[i][k], lay.V[i][k]
			if s == 0 {
				continue
			}
			runs = append(runs, int64(off), int64(d), int64(v))
			off += s
			d += v
		}
	}
	return runs, off
}
