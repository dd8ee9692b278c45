package equiv

import (
	"fmt"
	"math"
	"slices"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/spec"
)

// TransferPrebuiltSlice is the differential spec of transfer.prebuilt_slice (docs/spec/transfer.md §5).
func TransferPrebuiltSlice() *Spec[spec.TransferPrebuiltSliceInput, spec.TransferPrebuiltSliceOutput] {
	return &Spec[spec.TransferPrebuiltSliceInput, spec.TransferPrebuiltSliceOutput]{
		Op:          catalog.TransferPrebuiltSlice(),
		Valid:       rapid.Custom(prebuiltValid),
		Invalid:     rapid.Custom(prebuiltInvalid),
		Boundary:    prebuiltBoundary(),
		Regressions: prebuiltRegressions(),
		Props: []Prop[spec.TransferPrebuiltSliceInput, spec.TransferPrebuiltSliceOutput]{
			{"length-is-extend-total", prebuiltLength},
			{"segment-at-offset-is-the-suffix", prebuiltSegments},
			{"per-request-lengths", prebuiltLengthLists},
			{"from-zero-agrees-iff-no-prefix", prebuiltFromZeroAgreesIffNoPrefix},
		},
	}
}

// prebuiltValid draws a decode batch shaped like real ones: a few requests,
// half of them cache hits, rows laid out in pages of 1, 4 or 16 slots at
// scattered page ids (sometimes arbitrary slots with repeats), a little
// unused tail on the row, and num_outputs mostly 1 as after a prefill.
func prebuiltValid(t *rapid.T) spec.TransferPrebuiltSliceInput {
	pageSize := rapid.SampledFrom([]int64{1, 4, 16}).Draw(t, "page_size")
	n := rapid.IntRange(0, 5).Draw(t, "requests")
	in := spec.TransferPrebuiltSliceInput{Requests: []spec.PrebuiltRequest{}}
	var sum int64
	for range n {
		r := prebuiltRequest(t, pageSize)
		sum += r.ExtendLen
		in.Requests = append(in.Requests, r)
	}
	if rapid.Bool().Draw(t, "with_total") {
		in.ExtendNumTokens = &sum
	}
	return in
}

func prebuiltRequest(t *rapid.T, pageSize int64) spec.PrebuiltRequest {
	lens := rapid.Int64Range(0, 3*pageSize+1)
	prefix := rapid.OneOf(rapid.Just(int64(0)), lens).Draw(t, "prefix_len")
	extend := rapid.OneOf(rapid.Int64Range(1, 3*pageSize+1), rapid.Just(int64(0))).Draw(t, "extend_len")
	used := prefix + extend
	row := rowSlots(t, used+rapid.Int64Range(0, pageSize).Draw(t, "tail"), pageSize)
	if rapid.IntRange(0, 3).Draw(t, "stale_tail") == 0 {
		for k := used; k < int64(len(row)); k++ {
			row[k] = -1 // never read: only the copied range must hold slots
		}
	}
	outputs := rapid.SampledFrom([]int64{1, 1, 0, 2, 3}).Draw(t, "num_outputs")
	origin := used
	if outputs > 1 {
		origin = max(0, used-(outputs-1))
	}
	if outputs > 0 && rapid.IntRange(0, 3).Draw(t, "free_origin") == 0 {
		origin = rapid.Int64Range(0, used+4).Draw(t, "origin_len")
	}
	return spec.PrebuiltRequest{Row: row, PrefixLen: prefix, ExtendLen: extend, OriginLen: origin, NumOutputs: outputs}
}

// rowSlots draws a req_to_token row of n slots: whole pages at distinct,
// scattered page ids (shuffled or ascending), or arbitrary small slots
// with repeats.
func rowSlots(t *rapid.T, n, pageSize int64) []int64 {
	row := make([]int64, n)
	if rapid.IntRange(0, 4).Draw(t, "arbitrary_slots") == 0 {
		for k := range row {
			row[k] = rapid.Int64Range(0, 2*n+2).Draw(t, "slot")
		}
		return row
	}
	pages := (n + pageSize - 1) / pageSize
	ids := make([]int64, pages)
	next := rapid.Int64Range(0, 1<<20).Draw(t, "first_page")
	for p := range ids {
		ids[p] = next
		next += rapid.Int64Range(1, 8).Draw(t, "page_gap")
	}
	if rapid.Bool().Draw(t, "shuffle_pages") {
		for p := len(ids) - 1; p > 0; p-- {
			q := rapid.IntRange(0, p).Draw(t, "swap")
			ids[p], ids[q] = ids[q], ids[p]
		}
	}
	for k := range row {
		row[k] = ids[int64(k)/pageSize]*pageSize + int64(k)%pageSize
	}
	return row
}

// ensureRequest makes sure the batch has a request with extend_len > 0 and
// returns its index, keeping extend_num_tokens consistent.
func ensureRequest(in *spec.TransferPrebuiltSliceInput) int {
	for i, r := range in.Requests {
		if r.ExtendLen > 0 {
			return i
		}
	}
	in.Requests = append(in.Requests, spec.PrebuiltRequest{Row: []int64{40}, ExtendLen: 1, OriginLen: 1, NumOutputs: 1})
	if in.ExtendNumTokens != nil {
		total := *in.ExtendNumTokens + 1
		in.ExtendNumTokens = &total
	}
	return len(in.Requests) - 1
}

// prebuiltInvalid breaks one rule of docs/spec/transfer.md §5 in a valid batch. Each
// violation sits in a request whose earlier fields, and every earlier
// request, are valid, so it is the first violation ref meets.
func prebuiltInvalid(t *rapid.T) Bad[spec.TransferPrebuiltSliceInput] {
	in := prebuiltValid(t)
	type bad = Bad[spec.TransferPrebuiltSliceInput]
	neg := rapid.Int64Range(math.MinInt64, -1)
	v := rapid.IntRange(0, 10).Draw(t, "violation")
	if v == 0 {
		total := neg.Draw(t, "negative_total")
		in.ExtendNumTokens = &total
		return bad{in, spec.ErrNegative}
	}
	if v == 9 {
		return prebuiltBadTotal(t, in)
	}
	i := ensureRequest(&in)
	if v != 10 {
		i = rapid.IntRange(0, len(in.Requests)-1).Draw(t, "request")
	}
	r := &in.Requests[i]
	switch v {
	case 1:
		r.PrefixLen = neg.Draw(t, "negative_prefix")
		return bad{in, spec.ErrNegative}
	case 2:
		r.ExtendLen = neg.Draw(t, "negative_extend")
		return bad{in, spec.ErrNegative}
	case 3:
		r.OriginLen = neg.Draw(t, "negative_origin")
		return bad{in, spec.ErrNegative}
	case 4:
		r.NumOutputs = neg.Draw(t, "negative_outputs")
		return bad{in, spec.ErrNegative}
	case 5:
		r.ExtendLen = max(r.ExtendLen, 1)
		r.PrefixLen = math.MaxInt64 - r.ExtendLen + rapid.Int64Range(1, r.ExtendLen).Draw(t, "past_max")
		return bad{in, spec.ErrOverflow}
	case 6:
		r.PrefixLen += int64(len(r.Row)) - r.PrefixLen - r.ExtendLen + rapid.Int64Range(1, 4).Draw(t, "past_row")
		return bad{in, spec.ErrRowTooShort}
	case 7:
		r.NumOutputs = max(r.NumOutputs, 2)
		r.OriginLen = math.MaxInt64 - (r.NumOutputs - 1) + rapid.Int64Range(1, r.NumOutputs-1).Draw(t, "past_max")
		return bad{in, spec.ErrOverflow}
	case 8:
		used := r.PrefixLen + r.ExtendLen
		r.NumOutputs = 0
		r.OriginLen = rapid.Int64Range(0, used+4).Filter(func(o int64) bool { return o != used }).Draw(t, "mismatched_origin")
		return bad{in, spec.ErrSeqLenMismatch}
	default:
		k := rapid.Int64Range(r.PrefixLen, r.PrefixLen+r.ExtendLen-1).Draw(t, "negative_at")
		r.Row[k] = neg.Draw(t, "negative_slot")
		return bad{in, spec.ErrNegative}
	}
}

// prebuiltBadTotal sets extend_num_tokens above Σ extend_len (caught after
// the last request) or below it (caught at the request that crosses it).
func prebuiltBadTotal(t *rapid.T, in spec.TransferPrebuiltSliceInput) Bad[spec.TransferPrebuiltSliceInput] {
	var sum int64
	for _, r := range in.Requests {
		sum += r.ExtendLen
	}
	total := sum + rapid.Int64Range(1, 8).Draw(t, "over")
	if sum > 0 && rapid.Bool().Draw(t, "short_total") {
		total = sum - rapid.Int64Range(1, sum).Draw(t, "under")
	}
	in.ExtendNumTokens = &total
	return Bad[spec.TransferPrebuiltSliceInput]{in, spec.ErrExceedsTotal}
}

// prebuiltBoundary: prefix and extend lengths straddling a 16-slot page
// (0, 1, P−1, P, P+1) on tight rows, the same batched with a declared
// total, the num_outputs cases of the seq_len rule, an empty batch, stale
// slots outside the copied range, and §5's worked example.
func prebuiltBoundary() []Case[spec.TransferPrebuiltSliceInput] {
	const p = 16
	sizes := []int64{0, 1, p - 1, p, p + 1}
	var cs []Case[spec.TransferPrebuiltSliceInput]
	var batch []spec.PrebuiltRequest
	var batchTotal int64
	for _, prefix := range sizes {
		for _, extend := range sizes {
			r := spec.PrebuiltRequest{Row: pageRow(100*p, prefix+extend), PrefixLen: prefix, ExtendLen: extend, OriginLen: prefix + extend, NumOutputs: 1}
			cs = append(cs, Case[spec.TransferPrebuiltSliceInput]{fmt.Sprintf("prefix%d-extend%d", prefix, extend), spec.TransferPrebuiltSliceInput{Requests: []spec.PrebuiltRequest{r}}})
			batch = append(batch, r)
			batchTotal += extend
		}
	}
	cs = append(cs,
		Case[spec.TransferPrebuiltSliceInput]{"batch-of-25-with-total", spec.TransferPrebuiltSliceInput{Requests: batch, ExtendNumTokens: &batchTotal}},
		Case[spec.TransferPrebuiltSliceInput]{"empty-batch", spec.TransferPrebuiltSliceInput{Requests: []spec.PrebuiltRequest{}}},
		Case[spec.TransferPrebuiltSliceInput]{"empty-batch-zero-total", spec.TransferPrebuiltSliceInput{ExtendNumTokens: new(int64)}},
		Case[spec.TransferPrebuiltSliceInput]{"num-outputs-0-1-2", spec.TransferPrebuiltSliceInput{Requests: []spec.PrebuiltRequest{
			{Row: pageRow(32, 20), PrefixLen: 16, ExtendLen: 4, OriginLen: 20, NumOutputs: 0},
			{Row: pageRow(64, 20), PrefixLen: 16, ExtendLen: 4, OriginLen: 20, NumOutputs: 1},
			{Row: pageRow(96, 20), PrefixLen: 16, ExtendLen: 4, OriginLen: 19, NumOutputs: 2},
		}}},
		Case[spec.TransferPrebuiltSliceInput]{"stale-slots-outside-copied-range", spec.TransferPrebuiltSliceInput{Requests: []spec.PrebuiltRequest{
			{Row: []int64{-1, -1, 70, 71, -1}, PrefixLen: 2, ExtendLen: 2, OriginLen: 4, NumOutputs: 1},
		}}},
		Case[spec.TransferPrebuiltSliceInput]{"spec-example", prebuiltSpecExample()},
	)
	return cs
}

// pageRow is n consecutive slots from first.
func pageRow(first, n int64) []int64 {
	row := make([]int64, n)
	for k := range row {
		row[k] = first + int64(k)
	}
	return row
}

// prebuiltSpecExample is docs/spec/transfer.md §5's example: fixed [9,10,20,21,22],
// buggy [7,8,20,21,22].
func prebuiltSpecExample() spec.TransferPrebuiltSliceInput {
	five := int64(5)
	return spec.TransferPrebuiltSliceInput{Requests: []spec.PrebuiltRequest{
		{Row: []int64{7, 8, 9, 10}, PrefixLen: 2, ExtendLen: 2, OriginLen: 4, NumOutputs: 1},
		{Row: []int64{20, 21, 22}, PrefixLen: 0, ExtendLen: 3, OriginLen: 3, NumOutputs: 1},
	}, ExtendNumTokens: &five}
}

// prebuiltRegressions: §5's example is the minimal input on which slicing
// from 0 differs (the seed's bug).
func prebuiltRegressions() []Case[spec.TransferPrebuiltSliceInput] {
	return []Case[spec.TransferPrebuiltSliceInput]{{"prebuilt-slice-from-zero", prebuiltSpecExample()}}
}

// prebuiltLength is §5 "len(out) == Σ extend_len": out_cache_loc has
// Σ extend_len slots, extend_num_tokens says so (and equals the declared
// total), and there is one length per request.
func prebuiltLength(_ spec.Limits, in spec.TransferPrebuiltSliceInput, out spec.TransferPrebuiltSliceOutput) error {
	var sum int64
	for _, r := range in.Requests {
		sum += r.ExtendLen
	}
	if int64(len(out.OutCacheLoc)) != sum || out.ExtendNumTokens != sum {
		return fmt.Errorf("len(out_cache_loc)=%d, extend_num_tokens=%d, Σ extend_len=%d", len(out.OutCacheLoc), out.ExtendNumTokens, sum)
	}
	if in.ExtendNumTokens != nil && *in.ExtendNumTokens != sum {
		return fmt.Errorf("accepted extend_num_tokens=%d != Σ extend_len=%d", *in.ExtendNumTokens, sum)
	}
	n := len(in.Requests)
	if len(out.SeqLens) != n || len(out.PrefixLens) != n || len(out.ExtendLens) != n {
		return fmt.Errorf("%d requests but %d/%d/%d seq/prefix/extend lens", n, len(out.SeqLens), len(out.PrefixLens), len(out.ExtendLens))
	}
	return nil
}

// prebuiltSegments is §5's segment property: request i's slots sit at
// offset Σ_{j<i} extend_len_j and equal row[prefix_len : prefix_len+extend_len].
func prebuiltSegments(_ spec.Limits, in spec.TransferPrebuiltSliceInput, out spec.TransferPrebuiltSliceOutput) error {
	var off int64
	for i, r := range in.Requests {
		want := r.Row[r.PrefixLen : r.PrefixLen+r.ExtendLen]
		if got := out.OutCacheLoc[off : off+r.ExtendLen]; !slices.Equal(got, want) {
			return fmt.Errorf("request %d at offset %d: %v, want row[%d:%d] = %v", i, off, got, r.PrefixLen, r.PrefixLen+r.ExtendLen, want)
		}
		off += r.ExtendLen
	}
	return nil
}

// prebuiltLengthLists is §5's per-request outputs: seq_len = origin_len +
// max(0, num_outputs−1) (so with no outputs seq_len − prefix_len ==
// extend_len), and the prefix and extend lengths as given.
func prebuiltLengthLists(_ spec.Limits, in spec.TransferPrebuiltSliceInput, out spec.TransferPrebuiltSliceOutput) error {
	for i, r := range in.Requests {
		seq := r.OriginLen
		if r.NumOutputs > 1 {
			seq += r.NumOutputs - 1
		}
		if out.SeqLens[i] != seq || out.PrefixLens[i] != r.PrefixLen || out.ExtendLens[i] != r.ExtendLen {
			return fmt.Errorf("request %d: seq/prefix/extend = %d/%d/%d, want %d/%d/%d", i,
				out.SeqLens[i], out.PrefixLens[i], out.ExtendLens[i], seq, r.PrefixLen, r.ExtendLen)
		}
		if r.NumOutputs == 0 && out.SeqLens[i]-out.PrefixLens[i] != out.ExtendLens[i] {
			return fmt.Errorf("request %d with no outputs: seq_len - prefix_len = %d != extend_len %d", i, out.SeqLens[i]-out.PrefixLens[i], out.ExtendLens[i])
		}
	}
	return nil
}

// prebuiltFromZeroAgreesIffNoPrefix is §5's last property: for a request
// whose slots are distinct and extend_len > 0, its segment equals the
// buggy row[:extend_len] exactly when prefix_len == 0 — so requests without
// a cache hit were never affected. Distinctness is needed only over
// row[:prefix_len+extend_len], the part both slicings read.
func prebuiltFromZeroAgreesIffNoPrefix(_ spec.Limits, in spec.TransferPrebuiltSliceInput, out spec.TransferPrebuiltSliceOutput) error {
	var off int64
	for i, r := range in.Requests {
		seg := out.OutCacheLoc[off : off+r.ExtendLen]
		off += r.ExtendLen
		if r.ExtendLen == 0 || !distinct(r.Row[:r.PrefixLen+r.ExtendLen]) {
			continue
		}
		if same := slices.Equal(seg, r.Row[:r.ExtendLen]); same != (r.PrefixLen == 0) {
			return fmt.Errorf("request %d (prefix_len %d): segment %v equal to row[:extend_len] is %v", i, r.PrefixLen, seg, same)
		}
	}
	return nil
}

func distinct(xs []int64) bool {
	s := slices.Clone(xs)
	slices.Sort(s)
	return len(slices.Compact(s)) == len(xs)
}
