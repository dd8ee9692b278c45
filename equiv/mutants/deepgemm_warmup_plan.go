package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

type deepGEMMFunc = func(spec.Limits, spec.DeepGEMMWarmupPlanInput) (spec.DeepGEMMWarmupPlanOutput, error)

func deepGEMMMutant(id, about string, fn deepGEMMFunc) equiv.Killable {
	return &equiv.Mutant[spec.DeepGEMMWarmupPlanInput, spec.DeepGEMMWarmupPlanOutput]{
		Spec:    equiv.DeepGEMMWarmupPlan(),
		ID:      id,
		Section: "admission-serving.md §S3.8",
		About:   about,
		Fn:      fn,
	}
}

// deepGEMMSwitch is fault.Installed().DeepGEMMWarmupPlan with f.
func deepGEMMSwitch(f fault.DeepGEMM) deepGEMMFunc {
	return switched(fault.Installed().DeepGEMMWarmupPlan, f)
}

// EnvBridgedAfterImport is S3-B1: the wrapper translated SGLANG_DG_* to
// DG_JIT_* after importing deep_gemm, whose snapshot kept the defaults. A
// wrapper: the import snapshot is taken of the unbridged input environment.
func EnvBridgedAfterImport() equiv.Killable {
	return deepGEMMMutant("env-bridged-after-import",
		"SGLANG_DG_* bridged to DG_JIT_* after the deep_gemm import: the library sees the stale default cache dir",
		func(lim spec.Limits, in spec.DeepGEMMWarmupPlanInput) (spec.DeepGEMMWarmupPlanOutput, error) {
			out, err := fast.DeepGEMMWarmupPlan(lim, in)
			if err == nil {
				out.Imported = ref.ImportDeepGEMM(in.Env) // the bug: the snapshot predates the bridge
			}
			return out, err
		})
}

// LegacyOnlyNVRTC is S3-B2: only SGL_DG_USE_NVRTC was bridged, so the
// current SGLANG_DG_USE_NVRTC=1 left NVRTC off. A wrapper: the input is
// validated as given, then planned without the current spelling.
func LegacyOnlyNVRTC() equiv.Killable {
	return deepGEMMMutant("legacy-only-nvrtc",
		"only the legacy SGL_DG_USE_NVRTC spelling is bridged: SGLANG_DG_USE_NVRTC=1 gives DG_JIT_USE_NVRTC=0",
		func(lim spec.Limits, in spec.DeepGEMMWarmupPlanInput) (spec.DeepGEMMWarmupPlanOutput, error) {
			if err := ref.ValidateDeepGEMMWarmupPlan(in); err != nil {
				return spec.DeepGEMMWarmupPlanOutput{}, err
			}
			env := make(map[string]string, len(in.Env))
			for k, v := range in.Env {
				if k != "SGLANG_DG_USE_NVRTC" { // the bug: the current spelling is never read
					env[k] = v
				}
			}
			in.Env = env
			return fast.DeepGEMMWarmupPlan(lim, in)
		})
}

// DenseWalk is S3-B3: warmup replayed every M in 1..m_max, which since
// wheel 0.1.2 (no compile-only mode) launches 16384 to 131072 kernels.
func DenseWalk() equiv.Killable {
	return deepGEMMMutant("dense-walk",
		"dense 1..m_max warmup walk: 16384 real launches at m_max 16384 instead of the 50-point sparse grid",
		deepGEMMSwitch(fault.DeepGEMM{DenseWalk: true}))
}

// ManifestTrustedWithoutLiveness is S3-B4: a manifest entry counted as a
// hit without checking its cache entries, so a deleted kernel was compiled
// cold at serving time.
func ManifestTrustedWithoutLiveness() equiv.Killable {
	return deepGEMMMutant("manifest-trusted-without-liveness",
		"manifest entry trusted without checking that its cache entries are live: hit, then a cold compile at serving time",
		deepGEMMSwitch(fault.DeepGEMM{TrustManifest: true}))
}
