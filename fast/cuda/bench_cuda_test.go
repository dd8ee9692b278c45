//go:build cuda

package cuda_test

import (
	"encoding/json"
	"os"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/fast/cuda"
)

// payloadBytes is the size from which an op is "payload-sized" (issue 10 §5):
// it is reported as a fraction of a device-to-device copy of the same bytes.
const payloadBytes = 64 << 20

// copyTargets are the targets: kernel time of a payload-sized op as
// a fraction of the measured device-to-device copy of its bytes.
var copyTargets = map[string]float64{
	"cp.rerange": 0.70, "cp.compact_valid": 0.70, "layout.convert": 0.70, "fp8.quantize_row": 0.50,
}

// benchResult is one shape's line in the GPU benchmark report.
type benchResult struct {
	Op              string  `json:"op"`
	Shape           string  `json:"shape"`
	CopyBytes       int64   `json:"copy_bytes,omitempty"`
	WallNsMedian    int64   `json:"wall_ns_median"`
	LaunchesPerCall int64   `json:"launches_per_call"`
	KernelNs        int64   `json:"kernel_ns"`
	CopyNs          int64   `json:"copy_ns,omitempty"`
	FractionOfCopy  float64 `json:"fraction_of_copy,omitempty"`
	Target          float64 `json:"target,omitempty"`
	MeetsTarget     *bool   `json:"meets_target,omitempty"`
}

// benchReport is the JSON the GPU check writes (docs/gpu.md).
type benchReport struct {
	Driver  cuda.DriverInfo `json:"driver"`
	Note    string          `json:"note"`
	Results []benchResult   `json:"results"`
}

// TestGPUBenchReport is the GPU check's benchmark: for every CUDA twin and
// benchmark shape, the end-to-end wall time (median of 7, host transfers
// included, as the twin's host-in/host-out signature implies), the kernel
// launches per call, and the device time of those kernels (CUDA events).
// Payload-sized shapes (>= 64 MiB moved) are also reported as the fraction
// copy time / kernel time, against a cuMemcpyDtoD of the same bytes timed
// in the same run. It runs only when KVTWIN_GPU_BENCH_OUT names the JSON
// file to write; on the emulation the figures mean nothing and say so.
func TestGPUBenchReport(t *testing.T) {
	path := os.Getenv("KVTWIN_GPU_BENCH_OUT")
	if path == "" {
		t.Skip("KVTWIN_GPU_BENCH_OUT not set")
	}
	info, err := cuda.Info()
	if err != nil {
		t.Fatal(err)
	}
	rep := benchReport{Driver: info, Note: "measured on a real GPU"}
	if info.Emulated {
		rep.Note = "EMULATION: sequential host execution; these timings are not GPU figures"
	}
	for _, e := range catalog.All() {
		if !slices.Contains(e.Impls(), catalog.CUDA) {
			continue
		}
		for _, b := range e.Benchmarks() {
			r, err := benchShape(e.Name(), b)
			if err != nil {
				t.Fatalf("%s/%s: %v", e.Name(), b.Shape, err)
			}
			line, _ := json.Marshal(r) // a pointer field (meets_target) prints as an address under %+v
			t.Logf("%s", line)
			rep.Results = append(rep.Results, r)
		}
	}
	out, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

func benchShape(op string, b catalog.Bench) (benchResult, error) {
	r := benchResult{Op: op, Shape: b.Shape, CopyBytes: b.CopyBytes}
	f, err := b.Prepare(catalog.CUDA)
	if err != nil {
		return r, err
	}
	if err := f(); err != nil { // warm-up: pool, JIT'd module, caches
		return r, err
	}
	walls := make([]time.Duration, 7)
	for i := range walls {
		t0 := time.Now()
		if err := f(); err != nil {
			return r, err
		}
		walls[i] = time.Since(t0)
	}
	sort.Slice(walls, func(i, j int) bool { return walls[i] < walls[j] })
	r.WallNsMedian = walls[len(walls)/2].Nanoseconds()
	if err := cuda.SetKernelTiming(true); err != nil {
		return r, err
	}
	defer cuda.SetKernelTiming(false)
	const timed = 5
	for range timed {
		if err := f(); err != nil {
			return r, err
		}
	}
	st, err := cuda.Stats()
	if err != nil {
		return r, err
	}
	r.LaunchesPerCall, r.KernelNs = st.Launches/timed, st.KernelTime.Nanoseconds()/timed
	if b.CopyBytes >= payloadBytes {
		cp, err := cuda.MeasureCopy(b.CopyBytes, 5)
		if err != nil {
			return r, err
		}
		r.CopyNs = cp.Nanoseconds()
		if r.KernelNs > 0 {
			r.FractionOfCopy = float64(r.CopyNs) / float64(r.KernelNs)
		}
		if target, ok := copyTargets[op]; ok {
			meets := r.FractionOfCopy >= target
			r.Target, r.MeetsTarget = target, &meets
		}
	}
	return r, nil
}
