package ref_test

import (
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestTransferGroupContiguousWorkedExamples pins docs/spec/transfer.md §2's examples, in the
// triple form: a run is (src_start, dst_start, count).
func TestTransferGroupContiguousWorkedExamples(t *testing.T) {
	cases := []struct {
		name     string
		src, dst []int64
		want     []spec.Run
	}{
		{"a src jump splits", []int64{1, 2, 3, 7, 8}, []int64{10, 11, 12, 13, 14}, []spec.Run{{SrcStart: 1, DstStart: 10, Count: 3}, {SrcStart: 7, DstStart: 13, Count: 2}}},
		{"a dst jump splits", []int64{1, 2, 3}, []int64{5, 6, 9}, []spec.Run{{SrcStart: 1, DstStart: 5, Count: 2}, {SrcStart: 3, DstStart: 9, Count: 1}}},
		{"descending steps break", []int64{4, 3}, []int64{1, 2}, []spec.Run{{SrcStart: 4, DstStart: 1, Count: 1}, {SrcStart: 3, DstStart: 2, Count: 1}}},
		{"equal steps break", []int64{5, 5}, []int64{1, 2}, []spec.Run{{SrcStart: 5, DstStart: 1, Count: 1}, {SrcStart: 5, DstStart: 2, Count: 1}}},
		{"empty gives no runs", []int64{}, []int64{}, []spec.Run{}},
		{"src alone gives no runs", []int64{1, 2}, nil, []spec.Run{}},
		{"dst alone gives no runs", nil, []int64{1, 2}, []spec.Run{}},
		{"nothing follows MaxInt64", []int64{math.MaxInt64, 0}, []int64{1, 2}, []spec.Run{{SrcStart: math.MaxInt64, DstStart: 1, Count: 1}, {SrcStart: 0, DstStart: 2, Count: 1}}},
	}
	for _, c := range cases {
		got, err := ref.TransferGroupContiguous(spec.DefaultLimits(), spec.TransferGroupContiguousInput{Src: c.src, Dst: c.dst})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if d := cmp.Diff(c.want, got.Runs); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, d)
		}
		if got.Runs == nil {
			t.Errorf("%s: runs is nil, want [] so it encodes as a list", c.name)
		}
	}
}

// TestTransferGroupContiguousRejectsBadInputNamingFieldAndBound pins §2's bad input
// and the lead's order: unequal non-empty lengths, then src ids, then dst ids.
func TestTransferGroupContiguousRejectsBadInputNamingFieldAndBound(t *testing.T) {
	cases := []struct {
		name     string
		src, dst []int64
		want     *spec.Sentinel
		field    string
		value    any
		bound    string
	}{
		{"old upstream's silent misalignment", []int64{1, 2, 3}, []int64{5, 6}, spec.ErrLengthMismatch, "dst", 2, "== len(src) (3)"},
		{"length before sign", []int64{-1}, []int64{5, 6}, spec.ErrLengthMismatch, "dst", 2, "== len(src) (1)"},
		{"negative src id", []int64{1, -2}, []int64{5, -6}, spec.ErrNegative, "src[1]", int64(-2), ">= 0"},
		{"negative dst id", []int64{1, 2}, []int64{5, -6}, spec.ErrNegative, "dst[1]", int64(-6), ">= 0"},
		{"negative id beside an empty side", []int64{-1}, nil, spec.ErrNegative, "src[0]", int64(-1), ">= 0"},
	}
	for _, c := range cases {
		_, err := ref.TransferGroupContiguous(spec.DefaultLimits(), spec.TransferGroupContiguousInput{Src: c.src, Dst: c.dst})
		ie, ok := spec.AsInputError(err)
		if !ok || !errors.Is(err, c.want) || ie.Field != c.field || ie.Value != c.value || ie.Bound != c.bound {
			t.Errorf("%s: got %v, want %s on %s = %v (%s)", c.name, err, c.want.Code(), c.field, c.value, c.bound)
		}
	}
}
