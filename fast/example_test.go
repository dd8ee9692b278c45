package fast_test

import (
	"fmt"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/spec"
)

// Run an op's fast twin directly: the KV pages a CP rank owns
// (docs/spec/transfer.md §1), on its worked example E2.
func ExampleTransferFilterCPRank() {
	out, err := fast.TransferFilterCPRank(spec.DefaultLimits(), spec.TransferFilterCPRankInput{
		KV: []int64{40, 41, 42, 43, 44}, ChunkPageStart: 8, CPRank: 1, CPSize: 2,
	})
	fmt.Println(out.Owned, out.Positions, err)
	// Output:
	// [43 44] [11 12] <nil>
}

// Match a cached prompt without copying its slots: the view's segments
// are the tree's own slot arrays, valid until the tree next changes shape.
func ExampleRadixTree_MatchPrefixView() {
	t, err := fast.NewRadixTree(spec.TreeConfig{PageSize: 2})
	if err != nil {
		panic(err)
	}
	tree := t.(*fast.RadixTree)
	if _, err := tree.Insert(spec.RadixKey{Units: []spec.Unit{1, 2, 3, 4}}, []spec.SlotIdx{10, 11, 12, 13}, 0); err != nil {
		panic(err)
	}
	if _, err := tree.Insert(spec.RadixKey{Units: []spec.Unit{1, 2, 3, 4, 5, 6}}, []spec.SlotIdx{10, 11, 12, 13, 20, 21}, 0); err != nil {
		panic(err)
	}
	v, err := tree.MatchPrefixView(nil, spec.RadixKey{Units: []spec.Unit{1, 2, 3, 4, 5, 6, 7, 8}})
	if err != nil {
		panic(err)
	}
	segs, _ := v.Segments()
	fmt.Println(v.Len(), segs)

	if _, err := tree.Insert(spec.RadixKey{Units: []spec.Unit{9, 9}}, []spec.SlotIdx{30, 31}, 0); err != nil {
		panic(err)
	}
	_, err = v.Segments()
	fmt.Println(err)
	// Output:
	// 6 [[10 11 12 13] [20 21]]
	// fast: slot view is stale: the radix tree changed since MatchPrefixView
}
