package hostile

import (
	"bytes"
	"errors"
	"runtime"
	"time"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/spec"
)

// Limits are the limits hostile runs use (the harness and the fuzz
// target): a 1 MiB output bound and the server's ratio bound, so every
// op's Cost is small enough to measure on every input.
func Limits() spec.Limits {
	return spec.Limits{MaxOutputBytes: 1 << 20, MaxOutputRatio: 64, RatioFloorBytes: 256 << 10}
}

// Run is one measured run of an op on a hostile body.
type Run struct {
	// Out and Err are what Entry.Run returned.
	Out []byte
	Err error
	// Panic is what the run panicked with, or nil.
	Panic any
	// Alloc is the bytes the process allocated during the run.
	Alloc uint64
	// Took is the run's wall time.
	Took time.Duration
}

// Measure runs impl on in in a goroutine of its own and reports what it
// allocated and how long it took; ok is false when it outlived hang (the
// goroutine is then abandoned: the caller fails and stops using the op).
func Measure(e catalog.Entry, impl catalog.Impl, lim spec.Limits, in []byte, hang time.Duration) (r Run, ok bool) {
	done := make(chan Run, 1)
	go func() {
		var res Run
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		start := time.Now()
		defer func() {
			res.Panic = recover()
			res.Took = time.Since(start)
			runtime.ReadMemStats(&m1)
			res.Alloc = m1.TotalAlloc - m0.TotalAlloc
			done <- res
		}()
		res.Out, res.Err = e.Run(impl, lim, in)
	}()
	select {
	case r = <-done:
		return r, true
	case <-time.After(hang):
		return Run{}, false
	}
}

// ServerError reports whether err is one the server would answer 5xx:
// anything but an input error (or an implementation it lacks, a 400).
func ServerError(err error) bool {
	_, ok := spec.AsInputError(err)
	return err != nil && !ok && !errors.Is(err, catalog.ErrImplUnavailable)
}

// SameVerdict compares two runs of e on body: both rejected with the same
// canonical error, or both served with the same bytes — except where body
// asks for wall-clock figures, which differ from run to run
// (admission.bench reports each round's duration_us unless "deterministic"
// is true, docs/spec/admission-serving.md §A3.3): those are compared on the verdict.
func SameVerdict(e catalog.Entry, body []byte, want, got Run) bool {
	if (want.Err == nil) != (got.Err == nil) {
		return false
	}
	timed := e.Name() == "admission.bench" && !bytes.Contains(body, []byte(`"deterministic":true`))
	return bytes.Equal(want.Out, got.Out) || want.Err == nil && timed
}
