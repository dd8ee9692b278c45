package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// GlobalPageInverse is docs/spec/cp-layout.md §6.4: the materialize path built one
// batch-global inverse inv[page] = slot by scattering every row's
// descriptors, so with a logical page shared by two rows the last writer
// won and a row's lookup landed in another row's compact slot (the GSM8K
// warm-cache corruption). Row ids are still validated, then ignored.
func GlobalPageInverse() equiv.Killable {
	return &equiv.Mutant[spec.CPRemapLocsInput, spec.CPRemapLocsOutput]{
		Spec:    equiv.CPRemapLocs(),
		ID:      "global-page-inverse",
		Section: "cp-layout.md §6.4",
		About:   "batch-global page inverse, last writer wins: a page shared across rows remaps into another row's compact slot",
		Fn: func(lim spec.Limits, in spec.CPRemapLocsInput) (spec.CPRemapLocsOutput, error) {
			if in.Global {
				return fast.CPRemapLocs(lim, in)
			}
			compact, err := ref.CheckRemapScalars(in)
			if err != nil {
				return spec.CPRemapLocsOutput{}, err
			}
			inv, base := map[int64]int64{}, int64(0)
			for _, row := range in.Pages {
				for j, p := range row {
					inv[p] = base + int64(j)
				}
				base += int64(len(row))
			}
			out := make([]int64, len(in.Locs))
			for e, loc := range in.Locs {
				if err := ref.CheckLoc(e, loc); err != nil {
					return spec.CPRemapLocsOutput{}, err
				}
				if err := ref.CheckRowID(e, in.RowIDs[e], len(in.Pages)); err != nil {
					return spec.CPRemapLocsOutput{}, err
				}
				if loc == -1 {
					out[e] = -1
					continue
				}
				slot, ok := inv[loc/in.PageSize]
				if !ok {
					return spec.CPRemapLocsOutput{}, ref.RejectPageNotInRow(e, loc, in.PageSize, in.RowIDs[e])
				}
				out[e] = slot*in.PageSize + loc%in.PageSize
			}
			return spec.CPRemapLocsOutput{Locs: out, CompactRows: compact}, nil
		},
	}
}
