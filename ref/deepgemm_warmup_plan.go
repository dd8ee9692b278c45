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

	"github.com/kvtwin/kvtwin/spec"
)

// This file is deepgemm.warmup_plan (docs/spec/admission-serving.md §S3): the JIT
// environment prepared before the library's import, the category-specific
// sparse M grids that replace the dense 1..m_max walk, and the warmup
// manifest whose verified hits skip SGLang's replay loop after a restart.
// The cache directory and the manifest file are inputs (a listing and the
// file's bytes), so the decision is a pure function; ListDeepGEMMCache
// reads a real directory into that listing.

// PrepareDeepGEMMEnv is §S3.2: env with DG_JIT_CACHE_DIR always set (from
// SGLANG_DG_CACHE_DIR, else $HOME/.cache/deep_gemm) and DG_JIT_USE_NVRTC
// set from the current spelling, else the legacy one, else "0". It runs
// before the import. env is not modified; the result is a new map.
func PrepareDeepGEMMEnv(env map[string]string) (map[string]string, error) {
	nvrtc := "0"
	for _, name := range []string{"SGLANG_DG_USE_NVRTC", "SGL_DG_USE_NVRTC"} {
		if v := env[name]; v != "" {
			if v != "0" && v != "1" {
				return nil, spec.Reject(spec.ErrDGEnv, "env."+name, v, `"0" or "1"`)
			}
			nvrtc = v
			break
		}
	}
	dir := env["SGLANG_DG_CACHE_DIR"]
	if dir == "" {
		home := env["HOME"]
		if home == "" {
			return nil, spec.Reject(spec.ErrDGEnv, "env.HOME", "", "set when SGLANG_DG_CACHE_DIR is unset (the default cache dir is $HOME/.cache/deep_gemm)")
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
func ImportDeepGEMM(env map[string]string) spec.DeepGEMMEnv {
	snap := spec.DeepGEMMEnv{CacheDir: env["DG_JIT_CACHE_DIR"], UseNVRTC: env["DG_JIT_USE_NVRTC"]}
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
	case chunkedPrefillSize > spec.DeepGEMMMaxM/2:
		return spec.DeepGEMMMaxM
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
	for m := int64(1); m <= min(spec.DeepGEMMDenseHead, h); m++ {
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
	case spec.KernelGroupedMasked:
		if maskedMMax == 0 {
			maskedMMax = mMax
		}
		return denseGrid(min(mMax, maskedMMax))
	case spec.KernelGroupedContig:
		return contigGrid(mMax, a)
	}
	return denseGrid(mMax)
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

// deepGEMMKey is §S3.5's key: hex(sha256(canon({kernel_type, n, k,
// num_groups, m_grid, fingerprint}))). canon is compact JSON with sorted
// keys and, unlike encoding/json's default, no HTML escaping, as Python's
// json.dumps(sort_keys=True, separators=(",", ":")) writes ASCII text.
func deepGEMMKey(k spec.DeepGEMMKernel, grid []int64, fp spec.DeepGEMMFingerprint) string {
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
	KernelType   string                   `json:"kernel_type"`
	N            int64                    `json:"n"`
	K            int64                    `json:"k"`
	NumGroups    int64                    `json:"num_groups"`
	MGrid        []int64                  `json:"m_grid"`
	Fingerprint  spec.DeepGEMMFingerprint `json:"fingerprint"`
	CacheEntries []string                 `json:"cache_entries"`
}

// DeepGEMMManifest is the parsed manifest: the entries of other keys stay
// raw so a rewrite keeps them unchanged (compacted). It is ref's own type,
// not spec's: a corrupt manifest's WARNING quotes encoding/json's error,
// which names the Go type ("ref.DeepGEMMManifest"), and the golden fixtures
// pin that text.
type DeepGEMMManifest struct {
	Schema  string                     `json:"schema"`
	Entries map[string]json.RawMessage `json:"entries"`
}

// ParseDeepGEMMManifest reads the manifest file (nil: no file). It returns
// the usable entries (empty unless the file parses with the right schema)
// and, for a file that is corrupt or of another schema, the WARNING record
// saying it will be rewritten.
func ParseDeepGEMMManifest(file *string) (map[string]json.RawMessage, *spec.LogRecord) {
	entries := map[string]json.RawMessage{}
	if file == nil {
		return entries, nil
	}
	var m DeepGEMMManifest
	if err := json.Unmarshal([]byte(*file), &m); err != nil {
		return entries, &spec.LogRecord{Level: spec.LevelWarn, Msg: "deepgemm warmup manifest corrupt (" + err.Error() + "); it is rewritten after the warmup"}
	}
	if m.Schema != spec.DeepGEMMManifestSchema {
		return entries, &spec.LogRecord{Level: spec.LevelWarn, Msg: fmt.Sprintf("deepgemm warmup manifest schema %q is not %q; it is rewritten after the warmup", m.Schema, spec.DeepGEMMManifestSchema)}
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
	b, _ := json.Marshal(DeepGEMMManifest{Schema: spec.DeepGEMMManifestSchema, Entries: entries}) // raw entries are valid JSON
	return string(b)
}

// EncodeDeepGEMMEntry is the raw JSON of a fresh manifest entry.
func EncodeDeepGEMMEntry(p spec.DeepGEMMPlan, fp spec.DeepGEMMFingerprint, cacheEntries []string) json.RawMessage {
	b, _ := json.Marshal(deepGEMMManifestEntry{KernelType: p.KernelType, N: p.N, K: p.K, NumGroups: p.NumGroups,
		MGrid: p.MGrid, Fingerprint: fp, CacheEntries: cacheEntries})
	return b
}

// Log texts shared by the twins.

// DeepGEMMHitLog is the DEBUG record of a verified hit (§S3.5).
func DeepGEMMHitLog(key string) spec.LogRecord {
	return spec.LogRecord{Level: spec.LevelDebug, Msg: "deepgemm warmup manifest hit " + key}
}

// DeepGEMMEmptyLog is the INFO record of a contig kernel with nothing to warm.
func DeepGEMMEmptyLog(k spec.DeepGEMMKernel, mMax, a int64) spec.LogRecord {
	return spec.LogRecord{Level: spec.LevelInfo, Msg: fmt.Sprintf("deepgemm warmup %s n=%d k=%d num_groups=%d: nothing to warm (m_max=%d < alignment=%d)",
		k.KernelType, k.N, k.K, k.NumGroups, mMax, a)}
}

// DeepGEMMReplayLog is the INFO record of a replay that ran (one-time init).
func DeepGEMMReplayLog(p spec.DeepGEMMPlan) spec.LogRecord {
	return spec.LogRecord{Level: spec.LevelInfo, Msg: fmt.Sprintf("deepgemm warmup %s %s n=%d k=%d num_groups=%d launches=%d key=%s",
		p.Decision, p.KernelType, p.N, p.K, p.NumGroups, p.Launches, p.Key)}
}

// DeepGEMMFailLog is the WARNING record of a failed replay; no entry is written.
func DeepGEMMFailLog(key string) spec.LogRecord {
	return spec.LogRecord{Level: spec.LevelWarn, Msg: "deepgemm warmup failed for " + key + "; manifest entry not written"}
}

// DeepGEMMWriteFailLog is the WARNING record of a failed manifest write; startup goes on.
func DeepGEMMWriteFailLog(cacheDir string) spec.LogRecord {
	return spec.LogRecord{Level: spec.LevelWarn, Msg: "deepgemm warmup manifest write failed in " + cacheDir + "; startup continues"}
}

// DeepGEMMDisabledLog is the INFO record of warmup turned off.
func DeepGEMMDisabledLog(v string) spec.LogRecord {
	return spec.LogRecord{Level: spec.LevelInfo, Msg: "deepgemm warmup disabled (SGLANG_JIT_DEEPGEMM_PRECOMPILE=" + strconv.Quote(v) + ")"}
}

// CompiledEntry is what a replay leaves for a compiled name: a directory
// holding one non-empty file.
func CompiledEntry(name string) spec.DeepGEMMCacheEntry {
	return spec.DeepGEMMCacheEntry{Name: name, Dir: true, Sizes: []int64{1}}
}

// DeepGEMMWarmupPlan is deepgemm.warmup_plan (§S3): prepare the
// environment, import, compute m_max and each kernel's grid and key, and
// decide hit / miss / stale against the manifest and the live cache,
// replaying and refreshing the entry on a miss or stale, then write the
// manifest once if anything changed (or it was corrupt).
func DeepGEMMWarmupPlan(_ spec.Limits, in spec.DeepGEMMWarmupPlanInput) (spec.DeepGEMMWarmupPlanOutput, error) {
	if err := ValidateDeepGEMMWarmupPlan(in); err != nil {
		return spec.DeepGEMMWarmupPlanOutput{}, err
	}
	prepared, err := PrepareDeepGEMMEnv(in.Env)
	if err != nil {
		return spec.DeepGEMMWarmupPlanOutput{}, err
	}
	env := spec.DeepGEMMEnv{CacheDir: prepared["DG_JIT_CACHE_DIR"], UseNVRTC: prepared["DG_JIT_USE_NVRTC"]}
	out := spec.DeepGEMMWarmupPlanOutput{
		Env:      env,
		Imported: ImportDeepGEMM(prepared),
		Enabled:  DeepGEMMWarmupEnabled(in.Env),
		MMax:     DeepGEMMMMax(in.ChunkedPrefillSize),
		Plans:    []spec.DeepGEMMPlan{},
		Manifest: in.Manifest,
		Logs:     []spec.LogRecord{},
	}
	cache := append([]spec.DeepGEMMCacheEntry{}, in.Cache...)
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
		p := spec.DeepGEMMPlan{KernelType: k.KernelType, N: k.N, K: k.K, NumGroups: k.NumGroups,
			MGrid: deepGEMMGrid(k.KernelType, out.MMax, in.MaskedMMax, in.Alignment)}
		p.Key = deepGEMMKey(k, p.MGrid, fp)
		switch {
		case !out.Enabled:
			p.Decision = spec.DecisionDisabled
		case len(p.MGrid) == 0:
			p.Decision = spec.DecisionEmpty
			out.Logs = append(out.Logs, DeepGEMMEmptyLog(k, out.MMax, in.Alignment))
		default:
			p.Decision = decide(entries[p.Key], cache)
			if p.Decision == spec.DecisionHit {
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
	slices.SortFunc(cache, func(a, b spec.DeepGEMMCacheEntry) int { return strings.Compare(a.Name, b.Name) })
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
func decide(raw json.RawMessage, cache []spec.DeepGEMMCacheEntry) string {
	if raw == nil {
		return spec.DecisionMiss
	}
	names, ok := ManifestCacheEntries(raw)
	if !ok {
		return spec.DecisionMiss
	}
	for _, name := range names {
		i := slices.IndexFunc(cache, func(e spec.DeepGEMMCacheEntry) bool { return e.Name == name })
		if i < 0 || !cache[i].Live() {
			return spec.DecisionStale
		}
	}
	return spec.DecisionHit
}

// compile applies a successful replay: each compiled name becomes a live
// directory, replacing whatever was there.
func compile(cache []spec.DeepGEMMCacheEntry, names []string) []spec.DeepGEMMCacheEntry {
	for _, name := range names {
		i := slices.IndexFunc(cache, func(e spec.DeepGEMMCacheEntry) bool { return e.Name == name })
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
func liveNames(cache []spec.DeepGEMMCacheEntry) []string {
	names := []string{}
	for _, e := range cache {
		if e.Live() {
			names = append(names, e.Name)
		}
	}
	slices.Sort(names)
	return names
}
