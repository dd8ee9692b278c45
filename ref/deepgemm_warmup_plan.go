package ref

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// This file is deepgemm.warmup_plan (docs/spec/admission-serving.md §S3): the JIT
// environment prepared before the library's import, the category-specific
// sparse M grids that replace the dense 1..m_max walk, and the warmup
// manifest whose verified hits skip SGLang's replay loop after a restart.
// The cache directory and the manifest file are inputs (a listing and the
// file's bytes), so the decision is a pure function; ListDeepGEMMCache
// reads a real directory into that listing.

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

// PrepareDeepGEMMEnv is §S3.2: env with DG_JIT_CACHE_DIR always set (from
// SGLANG_DG_CACHE_DIR, else $HOME/.cache/deep_gemm) and DG_JIT_USE_NVRTC
// set from the current spelling, else the legacy one, else "0". It runs
// before the import. env is not modified; the result is a new map.
func PrepareDeepGEMMEnv(env map[string]string) (map[string]string, error) {
	nvrtc := "0"
	for _, name := range []string{"SGLANG_DG_USE_NVRTC", "SGL_DG_USE_NVRTC"} {
		if v := env[name]; v != "" {
			if v != "0" && v != "1" {
				return nil, Reject(ErrDGEnv, "env."+name, v, `"0" or "1"`)
			}
			nvrtc = v
			break
		}
	}
	dir := env["SGLANG_DG_CACHE_DIR"]
	if dir == "" {
		home := env["HOME"]
		if home == "" {
			return nil, Reject(ErrDGEnv, "env.HOME", "", "set when SGLANG_DG_CACHE_DIR is unset (the default cache dir is $HOME/.cache/deep_gemm)")
		}
		dir = strings.TrimSuffix(home, "/") + "/.cache/deep_gemm"
	}
	out := make(map[string]string, len(env)+2)
	for k, v := range env {
		out[k] = v
	}
	out["DG_JIT_CACHE_DIR"] = dir
	out["DG_JIT_USE_NVRTC"] = nvrtc
	return out, nil
}

// ImportDeepGEMM is the library's import: it snapshots DG_JIT_CACHE_DIR
// (default $HOME/.cache/deep_gemm) and DG_JIT_USE_NVRTC (default "0") from
// env and never reads them again, which is why preparation must come first.
func ImportDeepGEMM(env map[string]string) DeepGEMMEnv {
	snap := DeepGEMMEnv{CacheDir: env["DG_JIT_CACHE_DIR"], UseNVRTC: env["DG_JIT_USE_NVRTC"]}
	if snap.CacheDir == "" {
		snap.CacheDir = strings.TrimSuffix(env["HOME"], "/") + "/.cache/deep_gemm"
	}
	if snap.UseNVRTC == "" {
		snap.UseNVRTC = "0"
	}
	return snap
}

// DeepGEMMWarmupEnabled is upstream's get_bool_env_var
// ("SGLANG_JIT_DEEPGEMM_PRECOMPILE", "true"): unset, "1" or "true" (any
// case) warm up; anything else, "0" included, disables warmup entirely.
func DeepGEMMWarmupEnabled(env map[string]string) bool {
	v, ok := env["SGLANG_JIT_DEEPGEMM_PRECOMPILE"]
	if !ok {
		return true
	}
	v = strings.ToLower(v)
	return v == "1" || v == "true"
}

// DeepGEMMMMax is §S3.3. It never overflows: sizes above 65536 are capped
// before doubling.
func DeepGEMMMMax(chunkedPrefillSize int64) int64 {
	switch {
	case chunkedPrefillSize < 1:
		return 65536
	case chunkedPrefillSize > DeepGEMMMaxM/2:
		return DeepGEMMMaxM
	case chunkedPrefillSize > 8192:
		return 2 * chunkedPrefillSize
	}
	return 16384
}

// geo is §S3.4's geo(h): the powers of two and three times the powers of
// two (3, 6, 12, …) up to h, as a set.
func geo(h int64) map[int64]bool {
	s := map[int64]bool{}
	for p := int64(1); p <= h; p *= 2 {
		s[p] = true
		if 3*p/2 <= h && p >= 2 {
			s[3*p/2] = true
		}
	}
	return s
}

// denseGrid is §S3.4's dense(h) = sorted({1..min(32,h)} ∪ geo(h) ∪ {h}).
// Precondition: 1 <= h <= DeepGEMMMaxM.
func denseGrid(h int64) []int64 {
	s := geo(h)
	for m := int64(1); m <= min(DeepGEMMDenseHead, h); m++ {
		s[m] = true
	}
	s[h] = true
	return sortedSet(s)
}

// contigGrid is §S3.4's contig(h, a) = sorted({a·j : j ∈ geo(⌊h/a⌋)} ∪
// {⌊h/a⌋·a}) minus {0}: empty when h < a. Preconditions: 1 <= h <=
// DeepGEMMMaxM, a >= 1.
func contigGrid(h, a int64) []int64 {
	s := map[int64]bool{}
	for j := range geo(h / a) {
		s[a*j] = true
	}
	s[h/a*a] = true
	delete(s, 0)
	return sortedSet(s)
}

func sortedSet(s map[int64]bool) []int64 {
	out := make([]int64, 0, len(s))
	for m := range s {
		out = append(out, m)
	}
	slices.Sort(out) // the set's iteration order never reaches the output
	return out
}

// deepGEMMGrid is the grid of one kernel category (§S3.4's table).
func deepGEMMGrid(kernelType string, mMax, maskedMMax, a int64) []int64 {
	switch kernelType {
	case KernelGroupedMasked:
		if maskedMMax == 0 {
			maskedMMax = mMax
		}
		return denseGrid(min(mMax, maskedMMax))
	case KernelGroupedContig:
		return contigGrid(mMax, a)
	}
	return denseGrid(mMax)
}

// Live is §S3.5's liveness: a regular file of size > 0, or a directory
// holding at least one such file.
func (e DeepGEMMCacheEntry) Live() bool {
	return slices.ContainsFunc(e.Sizes, func(s int64) bool { return s > 0 })
}

// canonIdentity is the key's preimage with its fields (and the
// fingerprint's) in sorted order, so encoding/json writes §S3.5's
// "compact JSON with sorted keys".
type canonIdentity struct {
	Fingerprint canonFingerprint `json:"fingerprint"`
	K           int64            `json:"k"`
	KernelType  string           `json:"kernel_type"`
	MGrid       []int64          `json:"m_grid"`
	N           int64            `json:"n"`
	NumGroups   int64            `json:"num_groups"`
}

type canonFingerprint struct {
	CacheDir        string `json:"cache_dir"`
	CUDA            string `json:"cuda"`
	DeepGEMMVersion string `json:"deep_gemm_version"`
	Device          string `json:"device"`
	IncludePath     string `json:"include_path"`
	SM              string `json:"sm"`
	UseNVRTC        string `json:"use_nvrtc"`
}

// Fingerprint assembles an entry's fingerprint from the build and the
// prepared environment.
func (b DeepGEMMBuild) Fingerprint(env DeepGEMMEnv) DeepGEMMFingerprint {
	return DeepGEMMFingerprint{DeepGEMMVersion: b.DeepGEMMVersion, UseNVRTC: env.UseNVRTC, CacheDir: env.CacheDir,
		IncludePath: b.IncludePath, Device: b.Device, SM: b.SM, CUDA: b.CUDA}
}

// deepGEMMKey is §S3.5's key: hex(sha256(canon({kernel_type, n, k,
// num_groups, m_grid, fingerprint}))). canon is compact JSON with sorted
// keys and, unlike encoding/json's default, no HTML escaping, as Python's
// json.dumps(sort_keys=True, separators=(",", ":")) writes ASCII text.
func deepGEMMKey(k DeepGEMMKernel, grid []int64, fp DeepGEMMFingerprint) string {
	id := canonIdentity{
		Fingerprint: canonFingerprint{CacheDir: fp.CacheDir, CUDA: fp.CUDA, DeepGEMMVersion: fp.DeepGEMMVersion,
			Device: fp.Device, IncludePath: fp.IncludePath, SM: fp.SM, UseNVRTC: fp.UseNVRTC},
		K: k.K, KernelType: k.KernelType, MGrid: grid, N: k.N, NumGroups: k.NumGroups,
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(id) // strings and integers always encode
	sum := sha256.Sum256(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	return hex.EncodeToString(sum[:])
}

// deepGEMMManifestEntry is one manifest entry (§S3.5), in the file's field order.
type deepGEMMManifestEntry struct {
	KernelType   string              `json:"kernel_type"`
	N            int64               `json:"n"`
	K            int64               `json:"k"`
	NumGroups    int64               `json:"num_groups"`
	MGrid        []int64             `json:"m_grid"`
	Fingerprint  DeepGEMMFingerprint `json:"fingerprint"`
	CacheEntries []string            `json:"cache_entries"`
}

// DeepGEMMManifest is the parsed manifest: the entries of other keys stay
// raw so a rewrite keeps them unchanged (compacted).
type DeepGEMMManifest struct {
	Schema  string                     `json:"schema"`
	Entries map[string]json.RawMessage `json:"entries"`
}

// ParseDeepGEMMManifest reads the manifest file (nil: no file). It returns
// the usable entries (empty unless the file parses with the right schema)
// and, for a file that is corrupt or of another schema, the WARNING record
// saying it will be rewritten.
func ParseDeepGEMMManifest(file *string) (map[string]json.RawMessage, *LogRecord) {
	entries := map[string]json.RawMessage{}
	if file == nil {
		return entries, nil
	}
	var m DeepGEMMManifest
	if err := json.Unmarshal([]byte(*file), &m); err != nil {
		return entries, &LogRecord{LevelWarn, "deepgemm warmup manifest corrupt (" + err.Error() + "); it is rewritten after the warmup"}
	}
	if m.Schema != DeepGEMMManifestSchema {
		return entries, &LogRecord{LevelWarn, fmt.Sprintf("deepgemm warmup manifest schema %q is not %q; it is rewritten after the warmup", m.Schema, DeepGEMMManifestSchema)}
	}
	for k, v := range m.Entries {
		entries[k] = v
	}
	return entries, nil
}

// ManifestCacheEntries returns an entry's cache_entries, or ok = false when
// the entry does not parse (a miss).
func ManifestCacheEntries(raw json.RawMessage) (names []string, ok bool) {
	var e struct {
		CacheEntries *[]string `json:"cache_entries"`
	}
	if json.Unmarshal(raw, &e) != nil || e.CacheEntries == nil {
		return nil, false
	}
	return *e.CacheEntries, true
}

// EncodeDeepGEMMManifest writes the manifest file's bytes: compact JSON,
// entries in key order (encoding/json sorts map keys).
func EncodeDeepGEMMManifest(entries map[string]json.RawMessage) string {
	b, _ := json.Marshal(DeepGEMMManifest{Schema: DeepGEMMManifestSchema, Entries: entries}) // raw entries are valid JSON
	return string(b)
}

// EncodeDeepGEMMEntry is the raw JSON of a fresh manifest entry.
func EncodeDeepGEMMEntry(p DeepGEMMPlan, fp DeepGEMMFingerprint, cacheEntries []string) json.RawMessage {
	b, _ := json.Marshal(deepGEMMManifestEntry{KernelType: p.KernelType, N: p.N, K: p.K, NumGroups: p.NumGroups,
		MGrid: p.MGrid, Fingerprint: fp, CacheEntries: cacheEntries})
	return b
}

// Log texts shared by the twins.

// DeepGEMMHitLog is the DEBUG record of a verified hit (§S3.5).
func DeepGEMMHitLog(key string) LogRecord {
	return LogRecord{LevelDebug, "deepgemm warmup manifest hit " + key}
}

// DeepGEMMEmptyLog is the INFO record of a contig kernel with nothing to warm.
func DeepGEMMEmptyLog(k DeepGEMMKernel, mMax, a int64) LogRecord {
	return LogRecord{LevelInfo, fmt.Sprintf("deepgemm warmup %s n=%d k=%d num_groups=%d: nothing to warm (m_max=%d < alignment=%d)",
		k.KernelType, k.N, k.K, k.NumGroups, mMax, a)}
}

// DeepGEMMReplayLog is the INFO record of a replay that ran (one-time init).
func DeepGEMMReplayLog(p DeepGEMMPlan) LogRecord {
	return LogRecord{LevelInfo, fmt.Sprintf("deepgemm warmup %s %s n=%d k=%d num_groups=%d launches=%d key=%s",
		p.Decision, p.KernelType, p.N, p.K, p.NumGroups, p.Launches, p.Key)}
}

// DeepGEMMFailLog is the WARNING record of a failed replay; no entry is written.
func DeepGEMMFailLog(key string) LogRecord {
	return LogRecord{LevelWarn, "deepgemm warmup failed for " + key + "; manifest entry not written"}
}

// DeepGEMMWriteFailLog is the WARNING record of a failed manifest write; startup goes on.
func DeepGEMMWriteFailLog(cacheDir string) LogRecord {
	return LogRecord{LevelWarn, "deepgemm warmup manifest write failed in " + cacheDir + "; startup continues"}
}

// DeepGEMMDisabledLog is the INFO record of warmup turned off.
func DeepGEMMDisabledLog(v string) LogRecord {
	return LogRecord{LevelInfo, "deepgemm warmup disabled (SGLANG_JIT_DEEPGEMM_PRECOMPILE=" + strconv.Quote(v) + ")"}
}

// CompiledEntry is what a replay leaves for a compiled name: a directory
// holding one non-empty file.
func CompiledEntry(name string) DeepGEMMCacheEntry {
	return DeepGEMMCacheEntry{Name: name, Dir: true, Sizes: []int64{1}}
}

// DeepGEMMWarmupPlan is deepgemm.warmup_plan (§S3): prepare the
// environment, import, compute m_max and each kernel's grid and key, and
// decide hit / miss / stale against the manifest and the live cache,
// replaying and refreshing the entry on a miss or stale, then write the
// manifest once if anything changed (or it was corrupt).
func DeepGEMMWarmupPlan(_ Limits, in DeepGEMMWarmupPlanInput) (DeepGEMMWarmupPlanOutput, error) {
	if err := ValidateDeepGEMMWarmupPlan(in); err != nil {
		return DeepGEMMWarmupPlanOutput{}, err
	}
	prepared, err := PrepareDeepGEMMEnv(in.Env)
	if err != nil {
		return DeepGEMMWarmupPlanOutput{}, err
	}
	env := DeepGEMMEnv{CacheDir: prepared["DG_JIT_CACHE_DIR"], UseNVRTC: prepared["DG_JIT_USE_NVRTC"]}
	out := DeepGEMMWarmupPlanOutput{
		Env:      env,
		Imported: ImportDeepGEMM(prepared),
		Enabled:  DeepGEMMWarmupEnabled(in.Env),
		MMax:     DeepGEMMMMax(in.ChunkedPrefillSize),
		Plans:    []DeepGEMMPlan{},
		Manifest: in.Manifest,
		Logs:     []LogRecord{},
	}
	cache := append([]DeepGEMMCacheEntry{}, in.Cache...)
	fp := in.Build.Fingerprint(env)
	if !out.Enabled {
		out.Logs = append(out.Logs, DeepGEMMDisabledLog(in.Env["SGLANG_JIT_DEEPGEMM_PRECOMPILE"]))
	}
	entries, warn := ParseDeepGEMMManifest(in.Manifest)
	if warn != nil && out.Enabled {
		out.Logs = append(out.Logs, *warn)
	}
	dirty := warn != nil
	for _, k := range in.Kernels {
		p := DeepGEMMPlan{KernelType: k.KernelType, N: k.N, K: k.K, NumGroups: k.NumGroups,
			MGrid: deepGEMMGrid(k.KernelType, out.MMax, in.MaskedMMax, in.Alignment)}
		p.Key = deepGEMMKey(k, p.MGrid, fp)
		switch {
		case !out.Enabled:
			p.Decision = DecisionDisabled
		case len(p.MGrid) == 0:
			p.Decision = DecisionEmpty
			out.Logs = append(out.Logs, DeepGEMMEmptyLog(k, out.MMax, in.Alignment))
		default:
			p.Decision = decide(entries[p.Key], cache)
			if p.Decision == DecisionHit {
				out.Logs = append(out.Logs, DeepGEMMHitLog(p.Key))
				break
			}
			p.Launches = int64(len(p.MGrid))
			if k.Fails {
				out.Logs = append(out.Logs, DeepGEMMFailLog(p.Key))
				break
			}
			cache = compile(cache, k.Compiles)
			entries[p.Key] = EncodeDeepGEMMEntry(p, fp, liveNames(cache))
			p.Written, dirty = true, true
			out.Logs = append(out.Logs, DeepGEMMReplayLog(p))
		}
		out.Plans = append(out.Plans, p)
	}
	slices.SortFunc(cache, func(a, b DeepGEMMCacheEntry) int { return strings.Compare(a.Name, b.Name) })
	out.Cache = cache
	if out.Enabled && dirty {
		if in.WriteFails {
			out.Logs = append(out.Logs, DeepGEMMWriteFailLog(env.CacheDir))
		} else {
			m := EncodeDeepGEMMManifest(entries)
			out.Manifest, out.ManifestWritten = &m, true
		}
	}
	return out, nil
}

// decide is §S3.5's decision for one key: hit iff the entry exists, parses
// and every listed cache entry is live; stale when it lists a dead or
// missing one; miss otherwise.
func decide(raw json.RawMessage, cache []DeepGEMMCacheEntry) string {
	if raw == nil {
		return DecisionMiss
	}
	names, ok := ManifestCacheEntries(raw)
	if !ok {
		return DecisionMiss
	}
	for _, name := range names {
		i := slices.IndexFunc(cache, func(e DeepGEMMCacheEntry) bool { return e.Name == name })
		if i < 0 || !cache[i].Live() {
			return DecisionStale
		}
	}
	return DecisionHit
}

// compile applies a successful replay: each compiled name becomes a live
// directory, replacing whatever was there.
func compile(cache []DeepGEMMCacheEntry, names []string) []DeepGEMMCacheEntry {
	for _, name := range names {
		i := slices.IndexFunc(cache, func(e DeepGEMMCacheEntry) bool { return e.Name == name })
		if i < 0 {
			cache = append(cache, CompiledEntry(name))
		} else {
			cache[i] = CompiledEntry(name)
		}
	}
	return cache
}

// liveNames is a fresh cache_entries listing: the sorted names of the live
// children. Dead ones are left out, or the entry could never hit again.
func liveNames(cache []DeepGEMMCacheEntry) []string {
	names := []string{}
	for _, e := range cache {
		if e.Live() {
			names = append(names, e.Name)
		}
	}
	slices.Sort(names)
	return names
}
