package ref_test

import (
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/ref"
)

func i64(v int64) *int64 { return &v }

// TestTransferPrebuiltSliceStartsAtThePrefix pins docs/spec/transfer.md §5's example: r1's
// cached prefix [7,8] is skipped, r2 has no prefix; the buggy row[:extend]
// would have given [7,8,20,21,22].
func TestTransferPrebuiltSliceStartsAtThePrefix(t *testing.T) {
	in := ref.TransferPrebuiltSliceInput{Requests: []ref.PrebuiltRequest{
		{Row: []int64{7, 8, 9, 10}, PrefixLen: 2, ExtendLen: 2, OriginLen: 4, NumOutputs: 1},
		{Row: []int64{20, 21, 22}, PrefixLen: 0, ExtendLen: 3, OriginLen: 3, NumOutputs: 1},
	}, ExtendNumTokens: i64(5)}
	want := ref.TransferPrebuiltSliceOutput{OutCacheLoc: []int64{9, 10, 20, 21, 22}, SeqLens: []int64{4, 3},
		PrefixLens: []int64{2, 0}, ExtendLens: []int64{2, 3}, ExtendNumTokens: 5}
	got, err := ref.TransferPrebuiltSlice(ref.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestTransferPrebuiltSliceSeqLenCountsDecodedOutputs pins seq_len = origin_len +
// max(0, num_outputs−1), and that the seq_len rule binds only with no outputs.
func TestTransferPrebuiltSliceSeqLenCountsDecodedOutputs(t *testing.T) {
	in := ref.TransferPrebuiltSliceInput{Requests: []ref.PrebuiltRequest{
		{Row: []int64{1, 2, 3}, PrefixLen: 1, ExtendLen: 2, OriginLen: 3, NumOutputs: 0},
		{Row: []int64{4, 5, 6}, PrefixLen: 0, ExtendLen: 3, OriginLen: 2, NumOutputs: 1},
		{Row: []int64{7, 8, 9}, PrefixLen: 0, ExtendLen: 3, OriginLen: 2, NumOutputs: 4},
	}}
	got, err := ref.TransferPrebuiltSlice(ref.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]int64{3, 2, 5}, got.SeqLens); d != "" {
		t.Errorf("seq_lens (-want +got):\n%s", d)
	}
}

// TestTransferPrebuiltSliceOfAnEmptyBatchEncodesEmptyLists: no requests still
// yields [] lists, never null.
func TestTransferPrebuiltSliceOfAnEmptyBatchEncodesEmptyLists(t *testing.T) {
	got, err := ref.TransferPrebuiltSlice(ref.DefaultLimits(), ref.TransferPrebuiltSliceInput{})
	if err != nil {
		t.Fatal(err)
	}
	if got.OutCacheLoc == nil || got.SeqLens == nil || got.PrefixLens == nil || got.ExtendLens == nil {
		t.Errorf("nil list in %+v", got)
	}
}

// TestTransferPrebuiltSliceIgnoresSlotsOutsideTheCopiedRange: only the slots that
// are copied are checked; a stale prefix slot is never read.
func TestTransferPrebuiltSliceIgnoresSlotsOutsideTheCopiedRange(t *testing.T) {
	in := ref.TransferPrebuiltSliceInput{Requests: []ref.PrebuiltRequest{
		{Row: []int64{-1, 5, 6, -1}, PrefixLen: 1, ExtendLen: 2, OriginLen: 3, NumOutputs: 1},
	}}
	if _, err := ref.TransferPrebuiltSlice(ref.DefaultLimits(), in); err != nil {
		t.Fatal(err)
	}
}

// TestTransferPrebuiltSliceRejectsBadInputNamingFieldAndBound pins docs/spec/transfer.md §5's
// bad-input list and the check order.
func TestTransferPrebuiltSliceRejectsBadInputNamingFieldAndBound(t *testing.T) {
	req := func(row []int64, p, e, o, n int64) ref.PrebuiltRequest {
		return ref.PrebuiltRequest{Row: row, PrefixLen: p, ExtendLen: e, OriginLen: o, NumOutputs: n}
	}
	ok := req([]int64{1, 2}, 0, 2, 2, 1)
	cases := []struct {
		name  string
		lim   ref.Limits
		in    ref.TransferPrebuiltSliceInput
		want  *ref.Sentinel
		field string
	}{
		{"negative total", ref.DefaultLimits(), ref.TransferPrebuiltSliceInput{ExtendNumTokens: i64(-1)}, ref.ErrNegative, "extend_num_tokens"},
		{"negative prefix", ref.DefaultLimits(), ref.TransferPrebuiltSliceInput{Requests: []ref.PrebuiltRequest{ok, req(nil, -1, 0, 0, 1)}}, ref.ErrNegative, "requests[1].prefix_len"},
		{"negative extend", ref.DefaultLimits(), ref.TransferPrebuiltSliceInput{Requests: []ref.PrebuiltRequest{req(nil, 0, -2, 0, 1)}}, ref.ErrNegative, "requests[0].extend_len"},
		{"negative origin", ref.DefaultLimits(), ref.TransferPrebuiltSliceInput{Requests: []ref.PrebuiltRequest{req(nil, 0, 0, -1, 1)}}, ref.ErrNegative, "requests[0].origin_len"},
		{"negative outputs", ref.DefaultLimits(), ref.TransferPrebuiltSliceInput{Requests: []ref.PrebuiltRequest{req(nil, 0, 0, 0, -1)}}, ref.ErrNegative, "requests[0].num_outputs"},
		{"prefix+extend overflows", ref.DefaultLimits(), ref.TransferPrebuiltSliceInput{Requests: []ref.PrebuiltRequest{req(nil, math.MaxInt64, 1, 0, 1)}}, ref.ErrOverflow, "requests[0].extend_len"},
		{"row too short", ref.DefaultLimits(), ref.TransferPrebuiltSliceInput{Requests: []ref.PrebuiltRequest{req([]int64{1, 2, 3}, 2, 2, 4, 0)}}, ref.ErrRowTooShort, "requests[0].row"},
		{"seq_len overflows", ref.DefaultLimits(), ref.TransferPrebuiltSliceInput{Requests: []ref.PrebuiltRequest{req(nil, 0, 0, math.MaxInt64, 2)}}, ref.ErrOverflow, "requests[0].origin_len"},
		{"seq_len mismatch", ref.DefaultLimits(), ref.TransferPrebuiltSliceInput{Requests: []ref.PrebuiltRequest{req([]int64{1, 2, 3}, 1, 2, 4, 0)}}, ref.ErrSeqLenMismatch, "requests[0].origin_len"},
		{"total exceeded at a request", ref.DefaultLimits(), ref.TransferPrebuiltSliceInput{Requests: []ref.PrebuiltRequest{ok, ok, ok}, ExtendNumTokens: i64(3)}, ref.ErrExceedsTotal, "requests[1].extend_len"},
		{"total not reached", ref.DefaultLimits(), ref.TransferPrebuiltSliceInput{Requests: []ref.PrebuiltRequest{ok}, ExtendNumTokens: i64(3)}, ref.ErrExceedsTotal, "extend_num_tokens"},
		{"output over the limit", ref.Limits{MaxOutputBytes: 15}, ref.TransferPrebuiltSliceInput{Requests: []ref.PrebuiltRequest{ok}}, ref.ErrTooLarge, "extend_num_tokens"},
		{"negative copied slot", ref.DefaultLimits(), ref.TransferPrebuiltSliceInput{Requests: []ref.PrebuiltRequest{ok, req([]int64{0, 4, -3}, 1, 2, 3, 1)}}, ref.ErrNegative, "requests[1].row[2]"},
		{"lengths before slots", ref.DefaultLimits(), ref.TransferPrebuiltSliceInput{Requests: []ref.PrebuiltRequest{req([]int64{-1}, 0, 1, 1, 1), req(nil, 0, 1, 1, 1)}}, ref.ErrRowTooShort, "requests[1].row"},
	}
	for _, c := range cases {
		_, err := ref.TransferPrebuiltSlice(c.lim, c.in)
		ie, ok := ref.AsInputError(err)
		if !ok || !errors.Is(err, c.want) || ie.Field != c.field || ie.Bound == "" {
			t.Errorf("%s: got %v, want %s on field %s with a bound", c.name, err, c.want.Code(), c.field)
		}
	}
}
