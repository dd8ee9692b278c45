package mutants

import (
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/internal/dgfault"
	"github.com/kvtwin/kvtwin/ref"
)

func dgMutant(id, about string, f dgfault.Faults) equiv.Killable {
	return &equiv.Mutant[ref.DeepGEMMWarmupInput, ref.DeepGEMMWarmupOutput]{
		Spec:    equiv.DeepGEMMWarmupPlan(),
		ID:      id,
		Section: "admission-serving.md §S3.8",
		About:   about,
		Fn:      fast.DeepGEMMWarmupPlanWithFaults(f),
	}
}

// EnvBridgedAfterImport is S3-B1: the wrapper translated SGLANG_DG_* to
// DG_JIT_* after importing deep_gemm, whose snapshot kept the defaults.
func EnvBridgedAfterImport() equiv.Killable {
	return dgMutant("env-bridged-after-import",
		"SGLANG_DG_* bridged to DG_JIT_* after the deep_gemm import: the library sees the stale default cache dir",
		dgfault.Faults{ImportBeforePrepare: true})
}

// LegacyOnlyNVRTC is S3-B2: only SGL_DG_USE_NVRTC was bridged, so the
// current SGLANG_DG_USE_NVRTC=1 left NVRTC off.
func LegacyOnlyNVRTC() equiv.Killable {
	return dgMutant("legacy-only-nvrtc",
		"only the legacy SGL_DG_USE_NVRTC spelling is bridged: SGLANG_DG_USE_NVRTC=1 gives DG_JIT_USE_NVRTC=0",
		dgfault.Faults{LegacyNVRTCOnly: true})
}

// DenseWalk is S3-B3: warmup replayed every M in 1..m_max, which since
// wheel 0.1.2 (no compile-only mode) launches 16384 to 131072 kernels.
func DenseWalk() equiv.Killable {
	return dgMutant("dense-walk",
		"dense 1..m_max warmup walk: 16384 real launches at m_max 16384 instead of the 50-point sparse grid",
		dgfault.Faults{DenseWalk: true})
}

// ManifestTrustedWithoutLiveness is S3-B4: a manifest entry counted as a
// hit without checking its cache entries, so a deleted kernel was compiled
// cold at serving time.
func ManifestTrustedWithoutLiveness() equiv.Killable {
	return dgMutant("manifest-trusted-without-liveness",
		"manifest entry trusted without checking that its cache entries are live: hit, then a cold compile at serving time",
		dgfault.Faults{TrustManifest: true})
}
