package prefix_test

import (
	"fmt"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/prefix"
	"github.com/kvtwin/kvtwin/spec"
)

// Create two pools on the production tree, cache a prompt in one, and ask
// how much of a new prompt each pool holds, as a router would.
func Example() {
	newTree, err := catalog.RadixTree(catalog.Fast)
	if err != nil {
		panic(err)
	}
	reg, err := prefix.NewRegistry(newTree, prefix.Limits{MaxPools: 4, MaxPoolCapacity: 1024, MaxRequestTokens: 1024, MaxBytes: 1 << 30})
	if err != nil {
		panic(err)
	}
	a, err := reg.Create("gpu-a", prefix.Config{PageSize: 2, CapacityTokens: 64})
	if err != nil {
		panic(err)
	}
	if _, err := reg.Create("gpu-b", prefix.Config{PageSize: 2, CapacityTokens: 64}); err != nil {
		panic(err)
	}
	ins, err := a.Insert([]int64{101, 102, 103, 104, 105}, spec.ExtraKey{}, 0)
	if err != nil {
		panic(err)
	}
	fmt.Printf("gpu-a cached %d tokens in slots %v, %d uncached\n", ins.InsertedTokens, ins.Slots, ins.UncachedTailTokens)

	scores, err := reg.Score([]int64{101, 102, 103, 104, 200, 201}, spec.ExtraKey{}, nil, false)
	if err != nil {
		panic(err)
	}
	for _, s := range scores {
		fmt.Printf("%s holds %d tokens of the prompt\n", s.Pool, s.MatchedTokens)
	}
	// Output:
	// gpu-a cached 4 tokens in slots [0 1 2 3], 1 uncached
	// gpu-a holds 4 tokens of the prompt
	// gpu-b holds 0 tokens of the prompt
}
