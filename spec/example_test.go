package spec_test

import (
	"encoding/json"
	"fmt"

	"github.com/kvtwin/kvtwin/spec"
)

// Every rejection names the field, the value and the bound, and encodes
// as the canonical error object both twins must return.
func ExampleReject() {
	err := spec.Reject(spec.ErrNegative, spec.Idx("counts", 3), int64(-2), ">= 0")
	fmt.Println(err)
	b, _ := json.Marshal(spec.ErrorObjectOf(err))
	fmt.Println(string(b))
	// Output:
	// counts[3] = -2: want >= 0 (value must not be negative)
	// {"code":"negative","field":"counts[3]","value":-2,"bound":"\u003e= 0","message":"counts[3] = -2: want \u003e= 0 (value must not be negative)"}
}

// Limits bound what one request may make: an output sized by the input's
// numbers is checked before it is allocated.
func ExampleLimits_CheckOutput() {
	lim := spec.Limits{MaxOutputBytes: 1 << 20}
	fmt.Println(lim.CheckOutput("slots", 1000, 8))
	fmt.Println(lim.CheckOutput("slots", 1<<20, 8))
	// Output:
	// <nil>
	// slots = 1048576: want count*8 bytes <= max_output_bytes (1048576) (output exceeds the configured limit)
}
