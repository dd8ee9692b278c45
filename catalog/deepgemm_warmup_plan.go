package catalog

import (
	"fmt"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// DeepGEMMWarmupPlan registers deepgemm.warmup_plan (docs/spec/admission-serving.md §S3).
func DeepGEMMWarmupPlan() *Op[spec.DeepGEMMWarmupPlanInput, spec.DeepGEMMWarmupPlanOutput] {
	return &Op[spec.DeepGEMMWarmupPlanInput, spec.DeepGEMMWarmupPlanOutput]{
		OpName:  "deepgemm.warmup_plan",
		SpecRef: "admission-serving.md §S3",
		Summary: "DeepGEMM JIT warmup: env prepared before import, m_max, sparse per-category M grids, manifest keys and hit/miss/stale decisions with the rewritten manifest",
		Ref:     ref.DeepGEMMWarmupPlan,
		Fast:    fast.DeepGEMMWarmupPlan,
		// A cold start on an H200: no manifest, three GLM-5-like kernels.
		// Per kernel a grid of at most ~70 M values (geo and dense sets up to
		// DeepGEMMMaxM, logarithmic in it), names and logs: about 6.5 output
		// bytes per request byte, bounded by the kernel list. Measured with
		// the harness's limits on 1 MiB of kernels: ref 99 B per request byte
		// (the harness's variant; 90 for n=1, k=1 kernels), fast 50.
		Work:   Cost{PerInputByte: 144, PerOutputByte: 8, Fixed: 4 << 20},
		Sample: deepGEMMColdStart(3),
		Shapes: []Shape[spec.DeepGEMMWarmupPlanInput]{
			{Name: "cold-start-64-kernels", Make: func() spec.DeepGEMMWarmupPlanInput { return deepGEMMColdStart(64) }},
			{Name: "restart-all-hits-64-kernels", Make: func() spec.DeepGEMMWarmupPlanInput { return DeepGEMMRestart(64) }},
		},
	}
}

// DeepGEMMBuildH200 is a fingerprint build for an H200 with wheel 0.1.2 (a
// function, so no caller can change the value another one sees).
func DeepGEMMBuildH200() spec.DeepGEMMBuild {
	return spec.DeepGEMMBuild{DeepGEMMVersion: "0.1.2", IncludePath: "/usr/local/lib/python3.12/site-packages/deep_gemm/include",
		Device: "NVIDIA H200", SM: "90", CUDA: "12.8"}
}

// deepGEMMColdStart is a first start with n kernels (cycling through the
// three categories over distinct shapes), each compiling one cache entry,
// and no manifest yet.
func deepGEMMColdStart(n int) spec.DeepGEMMWarmupPlanInput {
	in := spec.DeepGEMMWarmupPlanInput{
		Env:                map[string]string{"HOME": "/root", "SGLANG_DG_CACHE_DIR": "/data/dg-cache"},
		ChunkedPrefillSize: 16384,
		Alignment:          128,
		Build:              DeepGEMMBuildH200(),
		Kernels:            []spec.DeepGEMMKernel{},
		Cache:              []spec.DeepGEMMCacheEntry{},
	}
	types := []string{spec.KernelGEMMNT, spec.KernelGroupedMasked, spec.KernelGroupedContig}
	for i := range n {
		in.Kernels = append(in.Kernels, spec.DeepGEMMKernel{KernelType: types[i%3], N: 7168 + 128*int64(i/3), K: 2048,
			NumGroups: []int64{1, 8, 8}[i%3], Compiles: []string{fmt.Sprintf("kernel.k%03d", i)}})
	}
	return in
}

// DeepGEMMRestart is the restart after deepGEMMColdStart(n): the manifest
// and cache it left, so every kernel is a verified hit.
func DeepGEMMRestart(n int) spec.DeepGEMMWarmupPlanInput {
	in := deepGEMMColdStart(n)
	// The cold start is valid, so err is nil; were it not, the shape would
	// stay a cold start rather than stop the bench.
	if out, err := ref.DeepGEMMWarmupPlan(spec.DefaultLimits(), in); err == nil {
		in.Manifest, in.Cache = out.Manifest, out.Cache
	}
	return in
}
