package catalog_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fast/cuda"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestCUDASelfTestNamesTheMismatchingOp checks the start-up known-answer
// test: a CUDA twin whose sample result differs from ref's, or that fails,
// is reported with the op's name, so the whole CUDA implementation is
// withheld with that reason (/readyz, --impl cuda).
func TestCUDASelfTestNamesTheMismatchingOp(t *testing.T) {
	good := catalog.TransferFilterCPRank()
	good.CUDA = good.Fast
	wrong := catalog.TransferFilterCPRank()
	wrong.OpName = "test.wrong"
	wrong.CUDA = func(lim spec.Limits, in spec.TransferFilterCPRankInput) (spec.TransferFilterCPRankOutput, error) {
		out, err := ref.TransferFilterCPRank(lim, in)
		out.Positions[0]++
		return out, err
	}
	failing := catalog.TransferFilterCPRank()
	failing.OpName = "test.failing"
	failing.CUDA = func(spec.Limits, spec.TransferFilterCPRankInput) (spec.TransferFilterCPRankOutput, error) {
		return spec.TransferFilterCPRankOutput{}, errors.New("cuda: test.failing: cuLaunchKernel: CUDA_ERROR_LAUNCH_FAILED")
	}
	if err := catalog.CUDASelfTest([]catalog.Entry{good}); err != nil {
		t.Fatalf("a correct twin failed the self-test: %v", err)
	}
	for _, e := range []*catalog.Op[spec.TransferFilterCPRankInput, spec.TransferFilterCPRankOutput]{wrong, failing} {
		err := catalog.CUDASelfTest([]catalog.Entry{good, e})
		if err == nil || !strings.Contains(err.Error(), "cuda self-test: "+e.OpName+":") {
			t.Errorf("%s: self-test error %v; want one naming the op", e.OpName, err)
		}
	}
}

// TestCUDAWithheldWithAReason checks selection: when CUDAStatus has a
// reason (always, without -tags cuda), no op lists cuda and asking for it
// returns ErrImplUnavailable carrying that reason.
func TestCUDAWithheldWithAReason(t *testing.T) {
	status := catalog.CUDAStatus()
	if cuda.Enabled && status == nil {
		t.Skip("CUDA is usable in this process")
	}
	for _, e := range catalog.All() {
		for _, impl := range e.Impls() {
			if impl == catalog.CUDA {
				t.Fatalf("%s lists cuda although CUDAStatus() = %v", e.Name(), status)
			}
		}
		_, err := e.Run(catalog.CUDA, spec.DefaultLimits(), nil)
		if !errors.Is(err, catalog.ErrImplUnavailable) || !strings.Contains(err.Error(), status.Error()) {
			t.Fatalf("%s: Run(cuda) = %v; want ErrImplUnavailable with %q", e.Name(), err, status)
		}
	}
}
