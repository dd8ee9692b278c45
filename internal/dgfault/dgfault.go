// Package dgfault names the historic DeepGEMM warmup bugs
// (docs/spec/admission-serving.md §S3.8) that the fast warmup planner can
// re-introduce for the bug zoo (equiv/mutants). The package is internal, so
// production plans never carry a fault.
package dgfault

// Faults selects the re-introduced bugs; the zero value is the fixed planner.
type Faults struct {
	// ImportBeforePrepare is S3-B1: the SGLANG_DG_* variables were bridged
	// to DG_JIT_* after deep_gemm was imported, so the library's snapshot
	// saw the defaults (the stale ~/.cache/deep_gemm).
	ImportBeforePrepare bool
	// LegacyNVRTCOnly is S3-B2: only the legacy SGL_DG_USE_NVRTC spelling
	// was bridged; SGLANG_DG_USE_NVRTC=1 left DG_JIT_USE_NVRTC at 0.
	LegacyNVRTCOnly bool
	// DenseWalk is S3-B3: every category walks M = 1..m_max (16384 to
	// 131072 real kernel launches since the wheel lost compile-only mode).
	DenseWalk bool
	// TrustManifest is S3-B4: a manifest entry is a hit without checking
	// that its cache entries are live, so a deleted kernel compiles cold at
	// serving time.
	TrustManifest bool
}
