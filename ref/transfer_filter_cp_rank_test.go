package ref_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestTransferFilterCPRankWorkedExamples pins docs/spec/transfer.md §1.3 E1–E4 and §1.6.
func TestTransferFilterCPRankWorkedExamples(t *testing.T) {
	six := int64(6)
	e4 := []int64{10, 2, 30, 4, 50, 6}
	cases := []struct {
		name string
		in   spec.TransferFilterCPRankInput
		want spec.TransferFilterCPRankOutput
	}{
		{"E1 rank 0", spec.TransferFilterCPRankInput{KV: []int64{40, 41, 42, 43, 44}, CPRank: 0, CPSize: 2},
			spec.TransferFilterCPRankOutput{Owned: []int64{40, 41, 42}, Positions: []int64{0, 1, 2}}},
		{"E1 rank 1", spec.TransferFilterCPRankInput{KV: []int64{40, 41, 42, 43, 44}, CPRank: 1, CPSize: 2},
			spec.TransferFilterCPRankOutput{Owned: []int64{43, 44}, Positions: []int64{3, 4}}},
		{"E2 rank 0", spec.TransferFilterCPRankInput{KV: []int64{40, 41, 42, 43, 44}, ChunkPageStart: 8, CPRank: 0, CPSize: 2},
			spec.TransferFilterCPRankOutput{Owned: []int64{40, 41, 42}, Positions: []int64{8, 9, 10}}},
		{"E2 rank 1", spec.TransferFilterCPRankInput{KV: []int64{40, 41, 42, 43, 44}, ChunkPageStart: 8, CPRank: 1, CPSize: 2},
			spec.TransferFilterCPRankOutput{Owned: []int64{43, 44}, Positions: []int64{11, 12}}},
		{"E3 rank 0", spec.TransferFilterCPRankInput{KV: []int64{40, 41}, CPRank: 0, CPSize: 4},
			spec.TransferFilterCPRankOutput{Owned: []int64{40}, Positions: []int64{0}}},
		{"E3 rank 1", spec.TransferFilterCPRankInput{KV: []int64{40, 41}, CPRank: 1, CPSize: 4},
			spec.TransferFilterCPRankOutput{Owned: []int64{41}, Positions: []int64{1}}},
		{"E3 rank 2", spec.TransferFilterCPRankInput{KV: []int64{40, 41}, CPRank: 2, CPSize: 4},
			spec.TransferFilterCPRankOutput{Owned: []int64{}, Positions: []int64{}}},
		{"E4 value range rank 0", spec.TransferFilterCPRankInput{KV: e4, CPRank: 0, CPSize: 2},
			spec.TransferFilterCPRankOutput{Owned: []int64{2, 30, 4}, Positions: []int64{1, 2, 3}}},
		{"E4 value range rank 1", spec.TransferFilterCPRankInput{KV: e4, CPRank: 1, CPSize: 2},
			spec.TransferFilterCPRankOutput{Owned: []int64{6}, Positions: []int64{5}}},
		{"E4 position range rank 0", spec.TransferFilterCPRankInput{KV: e4, TotalPages: &six, CPRank: 0, CPSize: 2, Policy: spec.PositionRange},
			spec.TransferFilterCPRankOutput{Owned: []int64{10, 2, 30}, Positions: []int64{0, 1, 2}}},
		{"E4 position range rank 1", spec.TransferFilterCPRankInput{KV: e4, TotalPages: &six, CPRank: 1, CPSize: 2, Policy: spec.PositionRange},
			spec.TransferFilterCPRankOutput{Owned: []int64{4, 50, 6}, Positions: []int64{3, 4, 5}}},
		{"§1.6 chunk 1 lands on request pages 2..3", spec.TransferFilterCPRankInput{KV: []int64{12, 13}, ChunkPageStart: 2, CPRank: 0, CPSize: 1},
			spec.TransferFilterCPRankOutput{Owned: []int64{12, 13}, Positions: []int64{2, 3}}},
	}
	for _, c := range cases {
		got, err := ref.TransferFilterCPRank(spec.DefaultLimits(), c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, d)
		}
	}
}

// TestTransferFilterCPRankRejectsBadInputNamingFieldAndBound pins docs/spec/transfer.md §1.5.
func TestTransferFilterCPRankRejectsBadInputNamingFieldAndBound(t *testing.T) {
	four := int64(4)
	cases := []struct {
		in    spec.TransferFilterCPRankInput
		want  *spec.Sentinel
		field string
	}{
		{spec.TransferFilterCPRankInput{CPSize: 0}, spec.ErrBadCPSize, "cp_size"},
		{spec.TransferFilterCPRankInput{CPSize: 4, CPRank: 4}, spec.ErrBadCPRank, "cp_rank"},
		{spec.TransferFilterCPRankInput{CPSize: 1, ChunkPageStart: -1}, spec.ErrNegative, "chunk_page_start"},
		{spec.TransferFilterCPRankInput{CPSize: 1, KV: []int64{1, -2}}, spec.ErrNegative, "kv[1]"},
		{spec.TransferFilterCPRankInput{CPSize: 1, KV: []int64{1}, ChunkPageStart: 1<<63 - 1}, spec.ErrOverflow, "chunk_page_start"},
		{spec.TransferFilterCPRankInput{CPSize: 2, KV: []int64{1}, Policy: spec.PositionRange}, spec.ErrTotalPagesRequired, "total_pages"},
		{spec.TransferFilterCPRankInput{CPSize: 2, KV: []int64{1, 2}, ChunkPageStart: 3, TotalPages: &four, Policy: spec.PositionRange}, spec.ErrChunkOutOfRange, "chunk_page_start"},
		{spec.TransferFilterCPRankInput{CPSize: 2, Policy: "positional"}, spec.ErrBadEnum, "policy"},
	}
	for _, c := range cases {
		_, err := ref.TransferFilterCPRank(spec.DefaultLimits(), c.in)
		ie, ok := spec.AsInputError(err)
		if !ok || !errors.Is(err, c.want) || ie.Field != c.field || ie.Bound == "" {
			t.Errorf("%+v: got %v, want %s on field %s with a bound", c.in, err, c.want.Code(), c.field)
		}
	}
}
