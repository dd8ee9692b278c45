package ref_test

import (
	"fmt"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// The reference answers what every twin must answer byte for byte (here
// docs/spec/transfer.md §1.3's E2); its errors name the field, the value
// and the bound.
func ExampleTransferFilterCPRank() {
	lim := spec.DefaultLimits()
	out, err := ref.TransferFilterCPRank(lim, spec.TransferFilterCPRankInput{
		KV: []int64{40, 41, 42, 43, 44}, ChunkPageStart: 8, CPRank: 1, CPSize: 2,
	})
	fmt.Println(out.Owned, out.Positions, err)
	_, err = ref.TransferFilterCPRank(lim, spec.TransferFilterCPRankInput{KV: []int64{40}, CPRank: 2, CPSize: 2})
	fmt.Println(err)
	// Output:
	// [43 44] [11 12] <nil>
	// cp_rank = 2: want in [0, cp_size=2) (cp_rank out of range)
}

// A prompt's prefix-hash chain (docs/spec/radix-acks.md §1.14): one hash
// per whole page, each standing for the prefix up to it; the spec's
// vectors, from an independent XXH3.
func ExamplePrefixHashes() {
	fmt.Printf("%016x\n", ref.PrefixHashes(spec.RadixKey{Units: []spec.Unit{1, 2, 3, 4, 5}}, 2))
	// Output:
	// [10bb6bb75f9dc566 0a223b07a80ddb76]
}
