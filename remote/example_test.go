package remote_test

import (
	"fmt"
	"net/http/httptest"

	"github.com/kvtwin/kvtwin/adapter"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/remote"
	"github.com/kvtwin/kvtwin/spec"
)

// Example calls an implementation outside this build the way `kvtwin audit
// --impl http://…` does: an HTTP adapter (here the Go kit, serving the fast
// twin) lists its ops and answers one input with canonical bytes, and a
// rejected input comes back as an error object, not a Go error.
func Example() {
	a := adapter.New()
	adapter.Handle(a, "transfer.group_contiguous", func(in spec.TransferGroupContiguousInput) (spec.TransferGroupContiguousOutput, error) {
		return fast.TransferGroupContiguous(spec.DefaultLimits(), in)
	})
	srv := httptest.NewServer(a.Handler(""))
	defer srv.Close()

	impl, err := remote.Open(srv.URL, remote.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer impl.Close()
	ops, _ := impl.Ops()
	for _, op := range ops { // Steps is nil: every step kind (docs/adapters.md "Partial declarations")
		fmt.Println(op.Name, op.Steps == nil)
	}
	for _, in := range []string{`{"src":[4,5,9],"dst":[1,2,3]}`, `{"src":[4,5],"dst":[1]}`} {
		res, err := impl.Run("transfer.group_contiguous", []byte(in))
		if err != nil { // a transport failure: no usable answer
			fmt.Println(remote.KindOf(err), err)
			continue
		}
		fmt.Printf("rejected=%v %s\n", res.Rejected, res.Bytes)
	}
	// Output:
	// transfer.group_contiguous true
	// rejected=false {"runs":[{"src_start":4,"dst_start":1,"count":2},{"src_start":9,"dst_start":3,"count":1}]}
	// rejected=true {"code":"length_mismatch","field":"dst","value":1,"bound":"== len(src) (2)","message":"dst = 1: want == len(src) (2) (parallel lists differ in length)"}
}
