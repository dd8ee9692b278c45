package catalog

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/spec"
)

// cudaStatus is the process's CUDA verdict, computed once: the CUDA runtime
// is one device context per process (fast/cuda), so whether its twins may
// be offered is a process-wide fact, not per-op state.
var cudaStatus = sync.OnceValue(func() error {
	if err := cuda.Ready(); err != nil {
		return err
	}
	return CUDASelfTest(All())
})

// CUDAStatus reports why the CUDA implementation is unavailable, or nil: the
// binary was built without -tags cuda, the device or its kernels did not
// load, or the start-up known-answer self-test failed. A non-nil reason
// withholds every CUDA twin (Impls omits cuda; Func and Run return
// ErrImplUnavailable with the reason), which the server's /readyz reports.
func CUDAStatus() error { return cudaStatus() }

// cudaSelfTester is implemented by *Op: it runs the op's sample input on its
// CUDA twin and on ref, and says whether there is such a twin.
type cudaSelfTester interface {
	cudaSelfTest() error
	hasCUDATwin() bool
}

// HasCUDATwin reports whether e registers a CUDA twin in this build, whether
// or not CUDAStatus currently allows it to run.
func HasCUDATwin(e Entry) bool {
	st, ok := e.(cudaSelfTester)
	return ok && st.hasCUDATwin()
}

func (o *Op[In, Out]) hasCUDATwin() bool { return o.CUDA != nil && cuda.Enabled }

// CUDASelfTest is the start-up known-answer test: every entry's sample input
// is run on its CUDA twin (when it has one) and must give ref's canonical
// bytes. The first mismatch, error or panic is returned, naming the op.
func CUDASelfTest(entries []Entry) error {
	for _, e := range entries {
		if st, ok := e.(cudaSelfTester); ok {
			if err := st.cudaSelfTest(); err != nil {
				return fmt.Errorf("cuda self-test: %s: %w", e.Name(), err)
			}
		}
	}
	return nil
}

// cudaSelfTest implements cudaSelfTester. It calls the CUDA twin directly
// (not through Func, which consults the verdict this test decides).
func (o *Op[In, Out]) cudaSelfTest() (err error) {
	if o.CUDA == nil {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	lim := spec.DefaultLimits()
	want := Canonical(o.Ref(lim, o.Sample))
	got := Canonical(o.CUDA(lim, o.Sample))
	if !bytes.Equal(want, got) {
		return fmt.Errorf("sample result differs from ref:\n  ref:  %s\n  cuda: %s", want, got)
	}
	return nil
}
