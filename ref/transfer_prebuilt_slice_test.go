package ref_test

import (
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

func i64(v int64) *int64 { return &v }

// TestTransferPrebuiltSliceStartsAtThePrefix pins docs/spec/transfer.md §5's example: r1's
// cached prefix [7,8] is skipped, r2 has no prefix; the buggy row[:extend]
// would have given [7,8,20,21,22].
func TestTransferPrebuiltSliceStartsAtThePrefix(t *testing.T) {
	in := spec.TransferPrebuiltSliceInput{Requests: []spec.PrebuiltRequest{
		{Row: []int64{7, 8, 9, 10}, PrefixLen: 2, ExtendLen: 2, OriginLen: 4, NumOutputs: 1},
		{Row: []int64{20, 21, 22}, PrefixLen: 0, ExtendLen: 3, OriginLen: 3, NumOutputs: 1},
	}, ExtendNumTokens: i64(5)}
	want := spec.TransferPrebuiltSliceOutput{OutCacheLoc: []int64{9, 10, 20, 21, 22}, SeqLens: []int64{4, 3},
		PrefixLens: []int64{2, 0}, ExtendLens: []int64{2, 3}, ExtendNumTokens: 5}
	got, err := ref.TransferPrebuiltSlice(spec.DefaultLimits(), in)
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
	in := spec.TransferPrebuiltSliceInput{Requests: []spec.PrebuiltRequest{
		{Row: []int64{1, 2, 3}, PrefixLen: 1, ExtendLen: 2, OriginLen: 3, NumOutputs: 0},
		{Row: []int64{4, 5, 6}, PrefixLen: 0, ExtendLen: 3, OriginLen: 2, NumOutputs: 1},
		{Row: []int64{7, 8, 9}, PrefixLen: 0, ExtendLen: 3, OriginLen: 2, NumOutputs: 4},
	}}
	got, err := ref.TransferPrebuiltSlice(spec.DefaultLimits(), in)
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
	got, err := ref.TransferPrebuiltSlice(spec.DefaultLimits(), spec.TransferPrebuiltSliceInput{})
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
	in := spec.TransferPrebuiltSliceInput{Requests: []spec.PrebuiltRequest{
		{Row: []int64{-1, 5, 6, -1}, PrefixLen: 1, ExtendLen: 2, OriginLen: 3, NumOutputs: 1},
	}}
	if _, err := ref.TransferPrebuiltSlice(spec.DefaultLimits(), in); err != nil {
		t.Fatal(err)
	}
}

// TestTransferPrebuiltSliceRejectsBadInputNamingFieldAndBound pins docs/spec/transfer.md §5's
// bad-input list and the check order.
func TestTransferPrebuiltSliceRejectsBadInputNamingFieldAndBound(t *testing.T) {
	req := func(row []int64, p, e, o, n int64) spec.PrebuiltRequest {
		return spec.PrebuiltRequest{Row: row, PrefixLen: p, ExtendLen: e, OriginLen: o, NumOutputs: n}
	}
	ok := req([]int64{1, 2}, 0, 2, 2, 1)
	cases := []struct {
		name  string
		lim   spec.Limits
		in    spec.TransferPrebuiltSliceInput
		want  *spec.Sentinel
		field string
	}{
		{"negative total", spec.DefaultLimits(), spec.TransferPrebuiltSliceInput{ExtendNumTokens: i64(-1)}, spec.ErrNegative, "extend_num_tokens"},
		{"negative prefix", spec.DefaultLimits(), spec.TransferPrebuiltSliceInput{Requests: []spec.PrebuiltRequest{ok, req(nil, -1, 0, 0, 1)}}, spec.ErrNegative, "requests[1].prefix_len"},
		{"negative extend", spec.DefaultLimits(), spec.TransferPrebuiltSliceInput{Requests: []spec.PrebuiltRequest{req(nil, 0, -2, 0, 1)}}, spec.ErrNegative, "requests[0].extend_len"},
		{"negative origin", spec.DefaultLimits(), spec.TransferPrebuiltSliceInput{Requests: []spec.PrebuiltRequest{req(nil, 0, 0, -1, 1)}}, spec.ErrNegative, "requests[0].origin_len"},
		{"negative outputs", spec.DefaultLimits(), spec.TransferPrebuiltSliceInput{Requests: []spec.PrebuiltRequest{req(nil, 0, 0, 0, -1)}}, spec.ErrNegative, "requests[0].num_outputs"},
		{"prefix+extend overflows", spec.DefaultLimits(), spec.TransferPrebuiltSliceInput{Requests: []spec.PrebuiltRequest{req(nil, math.MaxInt64, 1, 0, 1)}}, spec.ErrOverflow, "requests[0].extend_len"},
		{"row too short", spec.DefaultLimits(), spec.TransferPrebuiltSliceInput{Requests: []spec.PrebuiltRequest{req([]int64{1, 2, 3}, 2, 2, 4, 0)}}, spec.ErrRowTooShort, "requests[0].row"},
		{"seq_len overflows", spec.DefaultLimits(), spec.TransferPrebuiltSliceInput{Requests: []spec.PrebuiltRequest{req(nil, 0, 0, math.MaxInt64, 2)}}, spec.ErrOverflow, "requests[0].origin_len"},
		{"seq_len mismatch", spec.DefaultLimits(), spec.TransferPrebuiltSliceInput{Requests: []spec.PrebuiltRequest{req([]int64{1, 2, 3}, 1, 2, 4, 0)}}, spec.ErrSeqLenMismatch, "requests[0].origin_len"},
		{"total exceeded at a request", spec.DefaultLimits(), spec.TransferPrebuiltSliceInput{Requests: []spec.PrebuiltRequest{ok, ok, ok}, ExtendNumTokens: i64(3)}, spec.ErrExceedsTotal, "requests[1].extend_len"},
		{"total not reached", spec.DefaultLimits(), spec.TransferPrebuiltSliceInput{Requests: []spec.PrebuiltRequest{ok}, ExtendNumTokens: i64(3)}, spec.ErrExceedsTotal, "extend_num_tokens"},
		{"output over the limit", spec.Limits{MaxOutputBytes: 15}, spec.TransferPrebuiltSliceInput{Requests: []spec.PrebuiltRequest{ok}}, spec.ErrTooLarge, "extend_num_tokens"},
		{"negative copied slot", spec.DefaultLimits(), spec.TransferPrebuiltSliceInput{Requests: []spec.PrebuiltRequest{ok, req([]int64{0, 4, -3}, 1, 2, 3, 1)}}, spec.ErrNegative, "requests[1].row[2]"},
		{"lengths before slots", spec.DefaultLimits(), spec.TransferPrebuiltSliceInput{Requests: []spec.PrebuiltRequest{req([]int64{-1}, 0, 1, 1, 1), req(nil, 0, 1, 1, 1)}}, spec.ErrRowTooShort, "requests[1].row"},
	}
	for _, c := range cases {
		_, err := ref.TransferPrebuiltSlice(c.lim, c.in)
		ie, ok := spec.AsInputError(err)
		if !ok || !errors.Is(err, c.want) || ie.Field != c.field || ie.Bound == "" {
			t.Errorf("%s: got %v, want %s on field %s with a bound", c.name, err, c.want.Code(), c.field)
		}
	}
}
