//go:build cuda

package cuda

import (
	"strings"
	"testing"
)

// TestDriverErrorsAreWrappedWithTheOp checks that a failing driver call
// comes back as "cuda: <op>: <call>: <CUDA error>". The copy from outside
// any allocation is provoked only on the emulation, which reports it as
// CUDA_ERROR_INVALID_VALUE; on a GPU it could fault the context.
func TestDriverErrorsAreWrappedWithTheOp(t *testing.T) {
	info, err := Info()
	if err != nil {
		t.Fatal(err)
	}
	if !info.Emulated {
		t.Skip("provokes an out-of-allocation copy: emulation only")
	}
	err = run("test.op", func(c *call) error {
		p, err := c.alloc(16)
		if err != nil {
			return err
		}
		return c.download(make([]byte, 64), p+1<<20)
	})
	if err == nil || !strings.HasPrefix(err.Error(), "cuda: test.op: cuMemcpyDtoH(64 bytes): ") {
		t.Fatalf("out-of-allocation copy: %v; want an error naming the op and the call", err)
	}
}

// TestLaunchRejectsWhatTheConventionForbids checks the launcher's own
// guards: an unknown kernel and an argument that is not an 8-byte slot type.
func TestLaunchRejectsWhatTheConventionForbids(t *testing.T) {
	err := run("test.op", func(c *call) error { return c.launch("no_such_kernel", 1) })
	if err == nil || !strings.Contains(err.Error(), "kernel no_such_kernel not loaded") {
		t.Errorf("unknown kernel: %v", err)
	}
	err = run("test.op", func(c *call) error {
		return c.launch("filter_cp_rank_positions", 1, devicePtr(0), int32(1), int64(0))
	})
	if err == nil || !strings.Contains(err.Error(), "argument 1 has type int32") {
		t.Errorf("4-byte argument: %v", err)
	}
}

// TestBuffersArePooled checks that an op's buffers return to the pool and
// are handed out again by size class.
func TestBuffersArePooled(t *testing.T) {
	var first, second devicePtr
	for _, p := range []*devicePtr{&first, &second} {
		if err := run("test.op", func(c *call) error {
			var err error
			*p, err = c.alloc(3000) // class 4096
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	if first != second {
		t.Errorf("second allocation of the same class got %#x, want the pooled %#x", second, first)
	}
}
