package ref

import "github.com/kvtwin/kvtwin/spec"

// ExpectedCurrentRows is the row count contract c expects (docs/spec/cp-layout.md
// §7.5's table): Σ L_b for global_valid, Σ_r Rv(r) or Σ_r R(r) for the
// local contracts, cp·M with a static stride.
func ExpectedCurrentRows(lay *spec.Layout, c spec.CurrentContract, lens []int, m int) int {
	if c == spec.ContractGlobalValid {
		n := 0
		for _, l := range lens {
			n += l
		}
		return n
	}
	if m > 0 {
		return lay.CP * m
	}
	n := 0
	for r := range lay.CP {
		n += lay.RankPayload(r, contractSrc(c))
	}
	return n
}

func contractSrc(c spec.CurrentContract) spec.SrcKind {
	if c == spec.ContractLocalValid {
		return spec.SrcValid
	}
	return spec.SrcCompute
}

// NormalizeCurrent returns the current rows in global valid order
// (docs/spec/cp-layout.md §7.5's table): as given for global_valid, Rerange with
// src = valid or compute for the local contracts (packed rows are first
// laid out at stride max_r n_r).
func NormalizeCurrent(plan spec.FP8ComposePlan, cur spec.Rows, m int) (spec.Rows, error) {
	if plan.Contract == spec.ContractGlobalValid {
		return cur, nil
	}
	lay, src := *plan.Lay, contractSrc(plan.Contract)
	if m == 0 {
		for r := range lay.CP {
			m = max(m, lay.RankPayload(r, src))
		}
		g := NewRows(cur.W, lay.CP*m)
		at := 0
		for r := range lay.CP {
			nr := lay.RankPayload(r, src)
			copy(g.B[r*m*cur.W:], cur.B[at*cur.W:(at+nr)*cur.W])
			at += nr
		}
		cur = g
	}
	return Rerange(lay, cur, m, src)
}

// FP8ComposeCurrent is fp8.compose_current (docs/spec/cp-layout.md §7.5): per request,
// the raw pool rows at its prefix slots, then its current rows (global
// valid order, OutBase(b)+t) quantized (div_fp32). The current slots are
// never read: the suffix comes from the fresh rows, not the cache.
func FP8ComposeCurrent(lim spec.Limits, in spec.FP8ComposeCurrentInput) (spec.FP8ComposeCurrentOutput, error) {
	plan, err := ValidateFP8ComposeCurrent(lim, in)
	if err != nil {
		return spec.FP8ComposeCurrentOutput{}, err
	}
	cur, err := NormalizeCurrent(plan, in.Current, in.M)
	if err != nil {
		return spec.FP8ComposeCurrentOutput{}, err
	}
	q, err := FP8QuantizeRow(lim, spec.FP8QuantizeRowInput{X: cur})
	if err != nil {
		return spec.FP8ComposeCurrentOutput{}, err
	}
	out := NewRows(spec.FP8RowBytes, plan.Total)
	row, base := 0, 0
	for b, ps := range in.PrefixSlots {
		for _, s := range ps {
			if err := lim.Poll(row, "prefix_slots"); err != nil {
				return spec.FP8ComposeCurrentOutput{}, err
			}
			copy(out.Row(row), in.Pool.Rows.Row(int(s)))
			row++
		}
		for t := range in.Lens[b] {
			copy(out.Row(row), q.Rows.Row(base+t))
			row++
		}
		base += in.Lens[b]
	}
	return spec.FP8ComposeCurrentOutput{Rows: out}, nil
}
