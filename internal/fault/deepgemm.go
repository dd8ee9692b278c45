package fault

// DeepGEMM selects the historic DeepGEMM warmup bugs
// (docs/spec/admission-serving.md §S3.8) that
// Hooks.DeepGEMMWarmupPlan puts back; the zero value is the fixed
// planner. S3-B1 (import before the env bridge) and S3-B2 (legacy NVRTC
// spelling only) are wrappers in equiv/mutants: they rewrite the input's
// environment or the output's import snapshot.
type DeepGEMM struct {
	// DenseWalk is docs/spec/admission-serving.md §S3.8 S3-B3: every
	// category walks M = 1..m_max (16384 to 131072 real kernel launches
	// since the wheel lost compile-only mode).
	DenseWalk bool
	// TrustManifest is docs/spec/admission-serving.md §S3.8 S3-B4: a
	// manifest entry is a hit without checking that its cache entries are
	// live, so a deleted kernel compiles cold at serving time.
	TrustManifest bool
}
