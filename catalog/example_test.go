package catalog_test

import (
	"errors"
	"fmt"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/spec"
)

// Run an op by name on a chosen implementation, on canonical JSON: the
// same bytes come back from every implementation of the op.
func ExampleLookup() {
	e, ok := catalog.Lookup("transfer.filter_cp_rank")
	if !ok {
		panic("no such op")
	}
	impl, err := catalog.ParseImpl("fast")
	if err != nil {
		panic(err)
	}
	// The chunk's pages 40..44 start at request page 8; rank 1 of 2 sends its share.
	in := []byte(`{"kv":[40,41,42,43,44],"chunk_page_start":8,"cp_rank":1,"cp_size":2}`)
	out, err := e.Run(impl, spec.DefaultLimits(), in)
	fmt.Println(e.Spec())
	fmt.Printf("%s %v\n", out, err)
	refOut, _ := e.Run(catalog.Ref, spec.DefaultLimits(), in)
	fmt.Println("ref agrees:", string(refOut) == string(out))
	// Output:
	// transfer.md §1
	// {"owned":[43,44],"positions":[11,12]} <nil>
	// ref agrees: true
}

// Build the reference radix tree beside the fast one: the catalog pairs
// the constructors, and both trees answer a match identically. The tree has
// no CUDA twin, so asking for one is an error, never a fallback.
func ExampleRadixTree() {
	for _, impl := range []catalog.Impl{catalog.Ref, catalog.Fast} {
		newTree, err := catalog.RadixTree(impl)
		if err != nil {
			panic(err)
		}
		tree, err := newTree(spec.TreeConfig{PageSize: 2, Policy: spec.PolicyLRU})
		if err != nil {
			panic(err)
		}
		if _, err := tree.Insert(spec.RadixKey{Units: []spec.Unit{1, 2, 3, 4}}, []spec.SlotIdx{10, 11, 12, 13}, 0); err != nil {
			panic(err)
		}
		m, err := tree.MatchPrefix(spec.RadixKey{Units: []spec.Unit{1, 2, 3, 9}})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: matched slots %v\n", impl, m.Indices)
	}
	_, err := catalog.RadixTree(catalog.CUDA)
	fmt.Println(errors.Is(err, catalog.ErrImplUnavailable))
	fmt.Println(err)
	// Output:
	// ref: matched slots [10 11]
	// fast: matched slots [10 11]
	// true
	// radix tree (radix.script): implementation unavailable: cuda: it has no CUDA twin (it runs on the CPU: use ref or fast)
}
