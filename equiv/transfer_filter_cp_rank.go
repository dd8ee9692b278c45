package equiv

import (
	"fmt"
	"math"
	"slices"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TransferFilterCPRank is the differential spec of transfer.filter_cp_rank (docs/spec/transfer.md §1).
func TransferFilterCPRank() *Spec[spec.TransferFilterCPRankInput, spec.TransferFilterCPRankOutput] {
	return &Spec[spec.TransferFilterCPRankInput, spec.TransferFilterCPRankOutput]{
		Op:          catalog.TransferFilterCPRank(),
		Valid:       rapid.Custom(filterValid),
		Invalid:     rapid.Custom(filterInvalid),
		Boundary:    filterBoundary(),
		Regressions: filterRegressions(),
		Props: []Prop[spec.TransferFilterCPRankInput, spec.TransferFilterCPRankOutput]{
			{"shape", filterShape},
			{"range-mask-equivalence", filterRangeMask},
			{"shift-equivariance", filterShift},
			{"cp-size-one-identity", filterIdentity},
			{"contiguous-run-tiling", filterTilingContiguous},
			{"position-range-tiling", filterTilingPositional},
		},
	}
}

func filterValid(t *rapid.T) spec.TransferFilterCPRankInput {
	cpSize := rapid.IntRange(1, 9).Draw(t, "cp_size")
	in := spec.TransferFilterCPRankInput{
		CPSize: cpSize,
		CPRank: rapid.IntRange(0, cpSize-1).Draw(t, "cp_rank"),
		Policy: rapid.SampledFrom([]spec.OwnershipPolicy{"", spec.ValueRange, spec.PositionRange}).Draw(t, "policy"),
	}
	n := rapid.IntRange(0, 3*cpSize+4).Draw(t, "n")
	in.KV = pageIDs(t, n)
	in.ChunkPageStart = rapid.Int64Range(0, 1<<20).Draw(t, "chunk_page_start")
	end := in.ChunkPageStart + int64(n)
	switch {
	case in.Policy == spec.PositionRange:
		total := end + rapid.Int64Range(0, int64(2*cpSize)).Draw(t, "extra_pages")
		in.TotalPages = &total
	case rapid.Bool().Draw(t, "explicit_total"):
		total := rapid.Int64Range(0, int64(2*n+cpSize)).Draw(t, "total_pages")
		in.TotalPages = &total
	}
	return in
}

// pageIDs draws n page ids shaped like real chunks: mostly contiguous
// ascending runs, sometimes shuffled, sometimes arbitrary with duplicates,
// occasionally near MaxInt64.
func pageIDs(t *rapid.T, n int) []int64 {
	base := rapid.OneOf(rapid.Int64Range(0, 1<<16), rapid.Int64Range(math.MaxInt64-1<<10, math.MaxInt64-int64(3*n+3))).Draw(t, "base")
	kv := make([]int64, n)
	switch rapid.IntRange(0, 3).Draw(t, "layout") {
	case 0, 1:
		for i := range kv {
			kv[i] = base + int64(i)
		}
	case 2:
		for i := range kv {
			kv[i] = base + int64(i)
		}
		for i := len(kv) - 1; i > 0; i-- {
			j := rapid.IntRange(0, i).Draw(t, "swap")
			kv[i], kv[j] = kv[j], kv[i]
		}
	default:
		for i := range kv {
			kv[i] = base + rapid.Int64Range(0, int64(2*n+2)).Draw(t, "id")
		}
	}
	return kv
}

func filterInvalid(t *rapid.T) Bad[spec.TransferFilterCPRankInput] {
	in := filterValid(t)
	n := int64(len(in.KV))
	switch rapid.IntRange(0, 8).Draw(t, "violation") {
	case 0:
		in.CPSize = rapid.IntRange(-3, 0).Draw(t, "bad_cp_size")
		return Bad[spec.TransferFilterCPRankInput]{in, spec.ErrBadCPSize}
	case 1:
		in.CPRank = rapid.OneOf(rapid.IntRange(-4, -1), rapid.IntRange(in.CPSize, in.CPSize+4)).Draw(t, "bad_cp_rank")
		return Bad[spec.TransferFilterCPRankInput]{in, spec.ErrBadCPRank}
	case 2:
		in.ChunkPageStart = rapid.Int64Range(math.MinInt64, -1).Draw(t, "negative_start")
		return Bad[spec.TransferFilterCPRankInput]{in, spec.ErrNegative}
	case 3:
		total := rapid.Int64Range(math.MinInt64, -1).Draw(t, "negative_total")
		in.TotalPages = &total
		return Bad[spec.TransferFilterCPRankInput]{in, spec.ErrNegative}
	case 4:
		if n == 0 {
			in.KV = []int64{0}
			if in.TotalPages != nil && in.Policy == spec.PositionRange {
				*in.TotalPages = in.ChunkPageStart + 1
			}
		}
		i := rapid.IntRange(0, len(in.KV)-1).Draw(t, "negative_at")
		in.KV[i] = rapid.Int64Range(math.MinInt64, -1).Draw(t, "negative_id")
		return Bad[spec.TransferFilterCPRankInput]{in, spec.ErrNegative}
	case 5:
		if n == 0 {
			in.KV = []int64{7}
		}
		in.ChunkPageStart = math.MaxInt64 - int64(len(in.KV)) + rapid.Int64Range(1, int64(len(in.KV))).Draw(t, "past_max")
		return Bad[spec.TransferFilterCPRankInput]{in, spec.ErrOverflow}
	case 6:
		in.Policy = spec.OwnershipPolicy(rapid.SampledFrom([]string{"value", "positional", "VALUE_RANGE", "x"}).Draw(t, "bad_policy"))
		return Bad[spec.TransferFilterCPRankInput]{in, spec.ErrBadEnum}
	case 7:
		in.Policy, in.TotalPages = spec.PositionRange, nil
		return Bad[spec.TransferFilterCPRankInput]{in, spec.ErrTotalPagesRequired}
	default:
		in.Policy = spec.PositionRange
		if n == 0 && in.ChunkPageStart == 0 {
			in.ChunkPageStart = 1
		}
		total := rapid.Int64Range(0, in.ChunkPageStart+n-1).Draw(t, "short_total")
		in.TotalPages = &total
		return Bad[spec.TransferFilterCPRankInput]{in, spec.ErrChunkOutOfRange}
	}
}

// filterBoundary: chunk sizes straddling cp_size and 2×cp_size, for the
// first and last rank, under both policies; plus the spec's worked examples.
func filterBoundary() []Case[spec.TransferFilterCPRankInput] {
	var cs []Case[spec.TransferFilterCPRankInput]
	for _, cp := range []int{1, 2, 3, 4, 8} {
		for _, n := range []int{cp - 1, cp, cp + 1, 2*cp - 1, 2 * cp, 2*cp + 1} {
			for _, rank := range []int{0, cp - 1} {
				for _, pol := range []spec.OwnershipPolicy{spec.ValueRange, spec.PositionRange} {
					total := int64(n + 64)
					in := spec.TransferFilterCPRankInput{KV: run(100, n), ChunkPageStart: 64, TotalPages: &total, CPRank: rank, CPSize: cp, Policy: pol}
					if pol == spec.ValueRange {
						in.TotalPages = nil
					}
					cs = append(cs, Case[spec.TransferFilterCPRankInput]{fmt.Sprintf("cp%d-n%d-rank%d-%s", cp, n, rank, pol), in})
				}
			}
		}
	}
	e4 := []int64{10, 2, 30, 4, 50, 6}
	six := int64(6)
	for rank := range 2 {
		cs = append(cs,
			Case[spec.TransferFilterCPRankInput]{fmt.Sprintf("E1-rank%d", rank), spec.TransferFilterCPRankInput{KV: run(40, 5), CPRank: rank, CPSize: 2}},
			Case[spec.TransferFilterCPRankInput]{fmt.Sprintf("E2-rank%d", rank), spec.TransferFilterCPRankInput{KV: run(40, 5), ChunkPageStart: 8, CPRank: rank, CPSize: 2}},
			Case[spec.TransferFilterCPRankInput]{fmt.Sprintf("E4-value-range-rank%d", rank), spec.TransferFilterCPRankInput{KV: e4, CPRank: rank, CPSize: 2}},
			Case[spec.TransferFilterCPRankInput]{fmt.Sprintf("E4-position-range-rank%d", rank), spec.TransferFilterCPRankInput{KV: e4, TotalPages: &six, CPRank: rank, CPSize: 2, Policy: spec.PositionRange}},
		)
	}
	for rank := range 4 {
		cs = append(cs, Case[spec.TransferFilterCPRankInput]{fmt.Sprintf("E3-rank%d", rank), spec.TransferFilterCPRankInput{KV: run(40, 2), CPRank: rank, CPSize: 4}})
	}
	// Ids at the top of int64: rank 1's lower bound min(kv)+ls lies past
	// MaxInt64, so it owns nothing (fast's shortcut; ref compares v−m).
	four := int64(4)
	for rank := range 2 {
		cs = append(cs, Case[spec.TransferFilterCPRankInput]{fmt.Sprintf("ids-near-int64-max-rank%d", rank),
			spec.TransferFilterCPRankInput{KV: []int64{math.MaxInt64 - 1, math.MaxInt64}, TotalPages: &four, CPRank: rank, CPSize: 2}})
	}
	return cs
}

// filterRegressions: §1.6's minimal input. The per-layer registration passed
// chunk_page_start = 0, so chunk 1 ([12,13] at request pages 2..3) was sent
// to positions [0,1], over chunk 0's decode pages.
func filterRegressions() []Case[spec.TransferFilterCPRankInput] {
	return []Case[spec.TransferFilterCPRankInput]{
		{"chunk-page-start-zero", spec.TransferFilterCPRankInput{KV: []int64{12, 13}, ChunkPageStart: 2, CPRank: 0, CPSize: 1}},
	}
}

// run returns n consecutive page ids from first (none when n <= 0).
func run(first int64, n int) []int64 {
	kv := make([]int64, max(n, 0))
	for i := range kv {
		kv[i] = first + int64(i)
	}
	return kv
}

func policyOf(in spec.TransferFilterCPRankInput) spec.OwnershipPolicy {
	if in.Policy == "" {
		return spec.ValueRange
	}
	return in.Policy
}

// filterShape is §1.4.2: equal lengths, positions ascending by one inside
// the chunk, and owned[i] == kv[positions[i]-s].
func filterShape(_ spec.Limits, in spec.TransferFilterCPRankInput, out spec.TransferFilterCPRankOutput) error {
	if len(out.Owned) != len(out.Positions) {
		return fmt.Errorf("len(owned)=%d != len(positions)=%d", len(out.Owned), len(out.Positions))
	}
	s, n := in.ChunkPageStart, int64(len(in.KV))
	for i, p := range out.Positions {
		if i > 0 && p != out.Positions[i-1]+1 {
			return fmt.Errorf("positions[%d]=%d does not follow %d", i, p, out.Positions[i-1])
		}
		if p < s || p >= s+n {
			return fmt.Errorf("positions[%d]=%d outside the chunk [%d,%d)", i, p, s, s+n)
		}
		if out.Owned[i] != in.KV[p-s] {
			return fmt.Errorf("owned[%d]=%d but kv[%d]=%d", i, out.Owned[i], p-s, in.KV[p-s])
		}
	}
	return nil
}

// filterRangeMask is §1.4.1 (isin equivalence): the span of the plain range
// mask, computed here independently, equals the result.
func filterRangeMask(_ spec.Limits, in spec.TransferFilterCPRankInput, out spec.TransferFilterCPRankOutput) error {
	if policyOf(in) != spec.ValueRange || in.CPSize == 1 || len(in.KV) == 0 {
		return nil
	}
	total := int64(len(in.KV))
	if in.TotalPages != nil {
		total = *in.TotalPages
	}
	ls, le := ref.RankPageBounds(total, in.CPRank, in.CPSize)
	m := slices.Min(in.KV)
	first, last := -1, -1
	for i, v := range in.KV {
		if d := v - m; ls <= d && d < le {
			if first < 0 {
				first = i
			}
			last = i + 1
		}
	}
	want := []int64{}
	if first >= 0 {
		want = in.KV[first:last]
	}
	if !slices.Equal(want, out.Owned) {
		return fmt.Errorf("range-mask span %v != owned %v", want, out.Owned)
	}
	return nil
}

// filterShift is §1.4.3 under ValueRange: positions(s) == positions(0)+s
// and owned(s) == owned(0).
func filterShift(lim spec.Limits, in spec.TransferFilterCPRankInput, out spec.TransferFilterCPRankOutput) error {
	if policyOf(in) != spec.ValueRange {
		return nil
	}
	at0 := in
	at0.ChunkPageStart = 0
	base, err := ref.TransferFilterCPRank(lim, at0)
	if err != nil {
		return fmt.Errorf("ref at s=0: %v", err)
	}
	if !slices.Equal(base.Owned, out.Owned) {
		return fmt.Errorf("owned(s)=%v != owned(0)=%v", out.Owned, base.Owned)
	}
	for i, p := range base.Positions {
		if out.Positions[i] != p+in.ChunkPageStart {
			return fmt.Errorf("positions(s)[%d]=%d != positions(0)[%d]+s=%d", i, out.Positions[i], i, p+in.ChunkPageStart)
		}
	}
	return nil
}

// filterIdentity is §1.4.6: cp_size 1 sends the whole chunk.
func filterIdentity(_ spec.Limits, in spec.TransferFilterCPRankInput, out spec.TransferFilterCPRankOutput) error {
	if in.CPSize != 1 {
		return nil
	}
	if !slices.Equal(out.Owned, in.KV) && !(len(out.Owned) == 0 && len(in.KV) == 0) {
		return fmt.Errorf("cp_size 1: owned %v != kv %v", out.Owned, in.KV)
	}
	return nil
}

// allRanks runs ref for every rank of in's CP group.
func allRanks(lim spec.Limits, in spec.TransferFilterCPRankInput) ([]spec.TransferFilterCPRankOutput, error) {
	outs := make([]spec.TransferFilterCPRankOutput, in.CPSize)
	for r := range outs {
		x := in
		x.CPRank = r
		o, err := ref.TransferFilterCPRank(lim, x)
		if err != nil {
			return nil, fmt.Errorf("rank %d: %v", r, err)
		}
		outs[r] = o
	}
	return outs, nil
}

// filterTilingContiguous is §1.4.4: for a contiguous ascending run with
// T = n, the ranks' shares concatenate to kv, their positions tile the
// chunk once, and rank r gets base + (r < rem) pages.
func filterTilingContiguous(lim spec.Limits, in spec.TransferFilterCPRankInput, out spec.TransferFilterCPRankOutput) error {
	n := int64(len(in.KV))
	if policyOf(in) != spec.ValueRange || (in.TotalPages != nil && *in.TotalPages != n) || !isRun(in.KV) {
		return nil
	}
	outs, err := allRanks(lim, in)
	if err != nil {
		return err
	}
	base, rem := n/int64(in.CPSize), n%int64(in.CPSize)
	var owned, pos []int64
	for r, o := range outs {
		want := base
		if int64(r) < rem {
			want++
		}
		if int64(len(o.Owned)) != want {
			return fmt.Errorf("rank %d got %d pages, want %d", r, len(o.Owned), want)
		}
		owned, pos = append(owned, o.Owned...), append(pos, o.Positions...)
	}
	return tiles(in, owned, pos)
}

// filterTilingPositional: under PositionRange the ranks always tile the
// chunk exactly once, whatever the page ids (the policy's reason to exist, E4).
func filterTilingPositional(lim spec.Limits, in spec.TransferFilterCPRankInput, out spec.TransferFilterCPRankOutput) error {
	if policyOf(in) != spec.PositionRange {
		return nil
	}
	outs, err := allRanks(lim, in)
	if err != nil {
		return err
	}
	var owned, pos []int64
	for _, o := range outs {
		owned, pos = append(owned, o.Owned...), append(pos, o.Positions...)
	}
	return tiles(in, owned, pos)
}

func tiles(in spec.TransferFilterCPRankInput, owned, pos []int64) error {
	if !slices.Equal(owned, in.KV) && !(len(owned) == 0 && len(in.KV) == 0) {
		return fmt.Errorf("ranks' owned pages %v do not concatenate to kv %v", owned, in.KV)
	}
	for i, p := range pos {
		if p != in.ChunkPageStart+int64(i) {
			return fmt.Errorf("ranks' positions %v do not tile [%d,%d)", pos, in.ChunkPageStart, in.ChunkPageStart+int64(len(in.KV)))
		}
	}
	return nil
}

func isRun(kv []int64) bool {
	for i := 1; i < len(kv); i++ {
		if kv[i] != kv[i-1]+1 {
			return false
		}
	}
	return true
}
