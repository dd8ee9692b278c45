package spec

import (
	"slices"
)

// DeepGEMM kernel categories (§S3.4).
const (
	// KernelGEMMNT is the dense FP8 GEMM (decode's small M, prefill's large M).
	KernelGEMMNT = "GEMM_NT_F8F8BF16"
	// KernelGroupedMasked is the MoE decode grouped GEMM (expected_m).
	KernelGroupedMasked = "GROUPED_GEMM_NT_F8F8BF16_MASKED"
	// KernelGroupedContig is the MoE prefill grouped GEMM (M a multiple of the alignment).
	KernelGroupedContig = "GROUPED_GEMM_NT_F8F8BF16_CONTIG"
)

// Manifest constants and limits (§S3.3, §S3.5).
const (
	// DeepGEMMManifestSchema is the manifest's schema string.
	DeepGEMMManifestSchema = "sglang-deepgemm-warmup/1"
	// DeepGEMMManifestFile is the manifest's name inside DG_JIT_CACHE_DIR.
	DeepGEMMManifestFile = "sglang_warmup_manifest.json"
	// DeepGEMMMaxM is the largest m_max (§S3.3's cap).
	DeepGEMMMaxM = 131072
	// DeepGEMMDenseHead is the exhaustive small-M head of the dense grid
	// (decode batch sizes live there).
	DeepGEMMDenseHead = 32
)

// Warmup decisions per kernel (§S3.5). Hit skips the replay; miss (no
// usable entry) and stale (an entry whose cache files are gone or empty)
// replay the grid; empty has nothing to warm; disabled is
// SGLANG_JIT_DEEPGEMM_PRECOMPILE turning warmup off.
const (
	DecisionHit      = "hit"
	DecisionMiss     = "miss"
	DecisionStale    = "stale"
	DecisionEmpty    = "empty"
	DecisionDisabled = "disabled"
)

// Log levels of the records the warmup emits (the slog level names).
const (
	LevelDebug = "DEBUG"
	LevelInfo  = "INFO"
	LevelWarn  = "WARN"
)

// DeepGEMMEnv is the library's JIT configuration: DG_JIT_CACHE_DIR and
// DG_JIT_USE_NVRTC.
type DeepGEMMEnv struct {
	// CacheDir is DG_JIT_CACHE_DIR.
	CacheDir string `json:"cache_dir"`
	// UseNVRTC is DG_JIT_USE_NVRTC, "0" or "1".
	UseNVRTC string `json:"use_nvrtc"`
}

// DeepGEMMBuild is the part of the fingerprint that does not come from the
// environment: the wheel, its include dir, the device and the toolkit.
type DeepGEMMBuild struct {
	// DeepGEMMVersion is the sgl-deep-gemm wheel version, e.g. "0.1.2".
	DeepGEMMVersion string `json:"deep_gemm_version"`
	// IncludePath is deep_gemm's include dir (part of its own compiler-flag cache key).
	IncludePath string `json:"include_path"`
	// Device is the device name, e.g. "NVIDIA H200".
	Device string `json:"device"`
	// SM is the compute capability, e.g. "90".
	SM string `json:"sm"`
	// CUDA is the toolkit version, e.g. "12.8".
	CUDA string `json:"cuda"`
}

// DeepGEMMFingerprint is a manifest entry's fingerprint, in the manifest's
// field order (§S3.5).
type DeepGEMMFingerprint struct {
	DeepGEMMVersion string `json:"deep_gemm_version"`
	UseNVRTC        string `json:"use_nvrtc"`
	CacheDir        string `json:"cache_dir"`
	IncludePath     string `json:"include_path"`
	Device          string `json:"device"`
	SM              string `json:"sm"`
	CUDA            string `json:"cuda"`
}

// DeepGEMMKernel is one kernel shape to warm, with what its replay does in
// this run: the cache children it compiles, or a failure.
type DeepGEMMKernel struct {
	// KernelType is one of the three categories.
	KernelType string `json:"kernel_type"`
	// N, K and NumGroups are the GEMM's shape, each >= 1.
	N         int64 `json:"n"`
	K         int64 `json:"k"`
	NumGroups int64 `json:"num_groups"`
	// Compiles names the cache children a replay of this kernel leaves
	// live (a directory with one non-empty file each).
	Compiles []string `json:"compiles,omitempty"`
	// Fails says the replay fails (the entry is then not written).
	Fails bool `json:"fails,omitzero"`
}

// DeepGEMMCacheEntry is one immediate child of the cache dir (of
// <DG_JIT_CACHE_DIR>/cache when that exists).
type DeepGEMMCacheEntry struct {
	// Name is the child's name: non-empty, no '/', not "." or "..".
	Name string `json:"name"`
	// Dir says the child is a directory.
	Dir bool `json:"dir,omitzero"`
	// Sizes are the sizes of its regular files: exactly one for a file,
	// every regular file below it for a directory.
	Sizes []int64 `json:"sizes"`
}

// DeepGEMMWarmupPlanInput is the input of deepgemm.warmup_plan (§S3).
type DeepGEMMWarmupPlanInput struct {
	// Env is the process environment the preparation reads (SGLANG_DG_*,
	// SGL_DG_USE_NVRTC, HOME, SGLANG_JIT_DEEPGEMM_PRECOMPILE).
	Env map[string]string `json:"env"`
	// ChunkedPrefillSize is --chunked-prefill-size (< 1 means unlimited).
	ChunkedPrefillSize int64 `json:"chunked_prefill_size"`
	// MaskedMMax caps the masked grid; 0 means m_max. In [0, 131072].
	MaskedMMax int64 `json:"masked_m_max,omitzero"`
	// Alignment is DeepGEMM's mk alignment a for the contig grid (128), >= 1.
	Alignment int64 `json:"alignment"`
	// Build is the non-environment part of the fingerprint.
	Build DeepGEMMBuild `json:"build"`
	// Kernels are warmed in order.
	Kernels []DeepGEMMKernel `json:"kernels"`
	// Manifest is the manifest file's bytes; nil when there is no file.
	Manifest *string `json:"manifest,omitempty"`
	// Cache is the cache dir's listing before warmup.
	Cache []DeepGEMMCacheEntry `json:"cache"`
	// WriteFails says writing the manifest fails (a read-only cache dir).
	WriteFails bool `json:"write_fails,omitzero"`
}

// DeepGEMMPlan is one kernel's grid, key and decision.
type DeepGEMMPlan struct {
	// Key is the manifest key, hex sha256 of the canonical entry identity.
	Key        string  `json:"key"`
	KernelType string  `json:"kernel_type"`
	N          int64   `json:"n"`
	K          int64   `json:"k"`
	NumGroups  int64   `json:"num_groups"`
	MGrid      []int64 `json:"m_grid"`
	// Decision is hit, miss, stale, empty or disabled.
	Decision string `json:"decision"`
	// Launches is the kernels the replay launched (0 unless it ran).
	Launches int64 `json:"launches"`
	// Written says the replay succeeded and the entry was refreshed.
	Written bool `json:"written"`
}

// LogRecord is one log record a twin emits, compared byte for byte.
type LogRecord struct {
	// Level is DEBUG, INFO or WARN.
	Level string `json:"level"`
	// Msg is the message.
	Msg string `json:"msg"`
}

// DeepGEMMWarmupPlanOutput is the output of deepgemm.warmup_plan.
type DeepGEMMWarmupPlanOutput struct {
	// Env is the prepared DG_JIT_* configuration.
	Env DeepGEMMEnv `json:"env"`
	// Imported is what the library's import snapshot saw.
	Imported DeepGEMMEnv `json:"imported"`
	// Enabled is false when SGLANG_JIT_DEEPGEMM_PRECOMPILE turns warmup off.
	Enabled bool `json:"enabled"`
	// MMax is §S3.3's m_max.
	MMax int64 `json:"m_max"`
	// Plans holds one plan per kernel, in input order.
	Plans []DeepGEMMPlan `json:"plans"`
	// Manifest is the manifest file afterwards; nil when there is none.
	Manifest *string `json:"manifest"`
	// ManifestWritten says the manifest was (re)written.
	ManifestWritten bool `json:"manifest_written"`
	// Cache is the cache listing afterwards, sorted by name.
	Cache []DeepGEMMCacheEntry `json:"cache"`
	// Logs are the records emitted, in order.
	Logs []LogRecord `json:"logs"`
}

// Live is §S3.5's liveness: a regular file of size > 0, or a directory
// holding at least one such file.
func (e DeepGEMMCacheEntry) Live() bool {
	return slices.ContainsFunc(e.Sizes, func(s int64) bool { return s > 0 })
}

// Fingerprint assembles an entry's fingerprint from the build and the
// prepared environment.
func (b DeepGEMMBuild) Fingerprint(env DeepGEMMEnv) DeepGEMMFingerprint {
	return DeepGEMMFingerprint{DeepGEMMVersion: b.DeepGEMMVersion, UseNVRTC: env.UseNVRTC, CacheDir: env.CacheDir,
		IncludePath: b.IncludePath, Device: b.Device, SM: b.SM, CUDA: b.CUDA}
}
