package equiv

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strings"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// DeepGEMMWarmupPlan is the differential spec of deepgemm.warmup_plan
// (docs/spec/admission-serving.md §S3).
func DeepGEMMWarmupPlan() *Spec[spec.DeepGEMMWarmupPlanInput, spec.DeepGEMMWarmupPlanOutput] {
	return &Spec[spec.DeepGEMMWarmupPlanInput, spec.DeepGEMMWarmupPlanOutput]{
		Op:          catalog.DeepGEMMWarmupPlan(),
		Valid:       rapid.Custom(deepGEMMValid),
		Invalid:     rapid.Custom(deepGEMMInvalid),
		Boundary:    deepGEMMBoundary(),
		Regressions: deepGEMMRegressions(),
		Rejects: map[string]*spec.Sentinel{
			"nvrtc-not-0-or-1":     spec.ErrDGEnv,
			"no-home-no-cache-dir": spec.ErrDGEnv,
			"unknown-kernel-type":  spec.ErrBadEnum,
			"n-zero":               spec.ErrDGShape,
			"alignment-zero":       spec.ErrConfig,
			"masked-m-max-too-big": spec.ErrConfig,
		},
		Props: []Prop[spec.DeepGEMMWarmupPlanInput, spec.DeepGEMMWarmupPlanOutput]{
			{"S3.6.1-grid-shape", deepGEMMGridShape},
			{"S3.6.2-dense-head", deepGEMMDenseHead},
			{"S3.6.3-manifest-round-trip", deepGEMMRoundTrip},
			{"S3.6.4-hit-never-writes-other-keys-kept", deepGEMMKeepsOtherKeys},
			{"S3.6.5-import-sees-prepared-env", deepGEMMEnvPrepared},
			{"launches-iff-replayed", deepGEMMLaunches},
			{"log-levels", deepGEMMLogLevels},
		},
	}
}

var deepGEMMNames = []string{"kernel.fp8_gemm_nt.abc123", "kernel.m_grouped_masked.d1", "kernel.m_grouped_contig.e2", "kernel.x", "nvrtc.tmp"}

func deepGEMMEnv(t *rapid.T) map[string]string {
	env := map[string]string{}
	set := func(name string, values ...string) {
		if v := rapid.SampledFrom(append([]string{"<unset>"}, values...)).Draw(t, name); v != "<unset>" {
			env[name] = v
		}
	}
	set("SGLANG_DG_CACHE_DIR", "", "/c", "/mnt/dg-cache", "/data/dg")
	set("SGLANG_DG_USE_NVRTC", "", "0", "1")
	set("SGL_DG_USE_NVRTC", "", "0", "1")
	set("DG_JIT_CACHE_DIR", "/stale/default")
	set("DG_JIT_USE_NVRTC", "0", "1")
	if rapid.IntRange(0, 5).Draw(t, "precompile_set") == 0 {
		env["SGLANG_JIT_DEEPGEMM_PRECOMPILE"] = rapid.SampledFrom([]string{"0", "1", "true", "False", ""}).Draw(t, "precompile")
	}
	if env["SGLANG_DG_CACHE_DIR"] == "" || rapid.Bool().Draw(t, "has_home") {
		env["HOME"] = rapid.SampledFrom([]string{"/root", "/home/u/"}).Draw(t, "home")
	}
	return env
}

func deepGEMMKernels(t *rapid.T) []spec.DeepGEMMKernel {
	n := rapid.IntRange(0, 5).Draw(t, "n_kernels")
	ks := []spec.DeepGEMMKernel{}
	for range n {
		k := spec.DeepGEMMKernel{
			KernelType: rapid.SampledFrom([]string{spec.KernelGEMMNT, spec.KernelGroupedMasked, spec.KernelGroupedContig}).Draw(t, "kernel_type"),
			N:          rapid.SampledFrom([]int64{7168, 4096, 2048, 1, 576}).Draw(t, "n"),
			K:          rapid.SampledFrom([]int64{2048, 7168, 1, 512}).Draw(t, "k"),
			NumGroups:  rapid.SampledFrom([]int64{1, 8, 256}).Draw(t, "num_groups"),
			Fails:      rapid.IntRange(0, 7).Draw(t, "fails") == 0,
		}
		for range rapid.IntRange(0, 2).Draw(t, "n_compiles") {
			k.Compiles = append(k.Compiles, rapid.SampledFrom(deepGEMMNames).Draw(t, "compile"))
		}
		ks = append(ks, k)
	}
	return ks
}

func deepGEMMCache(t *rapid.T) []spec.DeepGEMMCacheEntry {
	names := rapid.Permutation(deepGEMMNames).Draw(t, "cache_names")
	cache := []spec.DeepGEMMCacheEntry{}
	for _, name := range names[:rapid.IntRange(0, len(names)).Draw(t, "n_cache")] {
		e := spec.DeepGEMMCacheEntry{Name: name, Dir: rapid.Bool().Draw(t, "dir")}
		if e.Dir {
			e.Sizes = rapid.SliceOfN(rapid.SampledFrom([]int64{0, 0, 1, 4096}), 0, 3).Draw(t, "dir_sizes")
		} else {
			e.Sizes = []int64{rapid.SampledFrom([]int64{0, 1, 4096}).Draw(t, "size")}
		}
		cache = append(cache, e)
	}
	return cache
}

// deepGEMMValid draws a warmup: often the restart after a previous run of ref on
// the same kernels (so hits happen), with some cache entries deleted or
// emptied since (stale), or a corrupt or foreign manifest.
func deepGEMMValid(t *rapid.T) spec.DeepGEMMWarmupPlanInput {
	in := spec.DeepGEMMWarmupPlanInput{
		Env:                deepGEMMEnv(t),
		ChunkedPrefillSize: rapid.OneOf(rapid.SampledFrom([]int64{-1, 0, 1, 8192, 8193, 16384, 32768, 65536, 65537, 1 << 40}), rapid.Int64Range(-10, 70000)).Draw(t, "chunked_prefill_size"),
		MaskedMMax:         rapid.OneOf(rapid.Just(int64(0)), rapid.Int64Range(1, spec.DeepGEMMMaxM)).Draw(t, "masked_m_max"),
		Alignment:          rapid.OneOf(rapid.Just(int64(128)), rapid.Int64Range(1, 300), rapid.Int64Range(16384, 200000)).Draw(t, "alignment"),
		Build:              catalog.DeepGEMMBuildH200(),
		Kernels:            deepGEMMKernels(t),
		Cache:              deepGEMMCache(t),
		WriteFails:         rapid.IntRange(0, 5).Draw(t, "write_fails") == 0,
	}
	if rapid.Bool().Draw(t, "other_include_path") {
		in.Build.IncludePath = "/opt/deep_gemm/include"
	}
	switch rapid.IntRange(0, 5).Draw(t, "manifest") {
	case 0:
	case 1:
		m := rapid.SampledFrom([]string{"", "{", "[]", "null", `{"schema":"sglang-deepgemm-warmup/2","entries":{}}`,
			`{"schema":"sglang-deepgemm-warmup/1","entries":{"x":{"cache_entries":"kernel.x"}}}`,
			`{"schema":"sglang-deepgemm-warmup/1","entries":{"other":{"cache_entries":["kernel.x"]}}}`}).Draw(t, "manifest_text")
		in.Manifest = &m
	default:
		prev := in
		prev.Kernels = slices.Clone(in.Kernels)
		for i := range prev.Kernels {
			prev.Kernels[i].Fails = false
		}
		prev.WriteFails = false
		out, err := ref.DeepGEMMWarmupPlan(spec.DefaultLimits(), prev)
		if err != nil {
			t.Fatalf("previous run: %v", err)
		}
		in.Manifest, in.Cache = out.Manifest, slices.Clone(out.Cache)
		deepGEMMDamage(t, &in)
	}
	return in
}

// deepGEMMDamage deletes or empties some cache entries since the previous run.
func deepGEMMDamage(t *rapid.T, in *spec.DeepGEMMWarmupPlanInput) {
	for i := 0; i < len(in.Cache); i++ {
		switch rapid.IntRange(0, 5).Draw(t, "damage") {
		case 0:
			in.Cache = slices.Delete(in.Cache, i, i+1)
			i--
		case 1:
			e := in.Cache[i]
			e.Sizes = make([]int64, len(e.Sizes))
			in.Cache[i] = e
		}
	}
}

func deepGEMMInvalid(t *rapid.T) Bad[spec.DeepGEMMWarmupPlanInput] {
	in := deepGEMMValid(t)
	type bad = Bad[spec.DeepGEMMWarmupPlanInput]
	withKernel := func() int {
		if len(in.Kernels) == 0 {
			in.Kernels = []spec.DeepGEMMKernel{{KernelType: spec.KernelGEMMNT, N: 1, K: 1, NumGroups: 1}}
		}
		in.Kernels = slices.Clone(in.Kernels)
		return rapid.IntRange(0, len(in.Kernels)-1).Draw(t, "bad_kernel")
	}
	withCache := func() int {
		in.Cache = append(slices.Clone(in.Cache), spec.DeepGEMMCacheEntry{Name: "kernel.extra", Sizes: []int64{1}})
		return rapid.IntRange(0, len(in.Cache)-1).Draw(t, "bad_entry")
	}
	env := func() {
		e := map[string]string{}
		for k, v := range in.Env {
			e[k] = v
		}
		in.Env = e
	}
	switch rapid.IntRange(0, 10).Draw(t, "violation") {
	case 0:
		in.MaskedMMax = rapid.OneOf(rapid.Int64Range(-1<<40, -1), rapid.Int64Range(spec.DeepGEMMMaxM+1, 1<<40)).Draw(t, "bad_masked")
		return bad{in, spec.ErrConfig}
	case 1:
		in.Alignment = rapid.Int64Range(-1<<20, 0).Draw(t, "bad_alignment")
		return bad{in, spec.ErrConfig}
	case 2:
		i := withKernel()
		in.Kernels[i].KernelType = rapid.SampledFrom([]string{"", "GEMM_NT_BF16", "gemm_nt_f8f8bf16"}).Draw(t, "bad_type")
		return bad{in, spec.ErrBadEnum}
	case 3:
		i := withKernel()
		v := rapid.Int64Range(-1<<40, 0).Draw(t, "bad_dim")
		switch rapid.IntRange(0, 2).Draw(t, "which_dim") {
		case 0:
			in.Kernels[i].N = v
		case 1:
			in.Kernels[i].K = v
		default:
			in.Kernels[i].NumGroups = v
		}
		return bad{in, spec.ErrDGShape}
	case 4:
		i := withKernel()
		in.Kernels[i].Compiles = append(slices.Clone(in.Kernels[i].Compiles), rapid.SampledFrom([]string{"", ".", "..", "a/b", "x\x00"}).Draw(t, "bad_compile"))
		return bad{in, spec.ErrDGCacheEntry}
	case 5:
		i := withCache()
		in.Cache[i].Name = rapid.SampledFrom([]string{"", ".", "..", "cache/kernel.x"}).Draw(t, "bad_name")
		return bad{in, spec.ErrDGCacheEntry}
	case 6:
		in.Cache = append(withCacheDup(in.Cache), spec.DeepGEMMCacheEntry{Name: "kernel.extra", Sizes: []int64{0}})
		return bad{in, spec.ErrDGCacheEntry}
	case 7:
		i := withCache()
		in.Cache[i].Dir = false
		in.Cache[i].Sizes = rapid.SampledFrom([][]int64{nil, {}, {1, 2}}).Draw(t, "file_sizes")
		return bad{in, spec.ErrLengthMismatch}
	case 8:
		i := withCache()
		in.Cache[i].Dir = true
		in.Cache[i].Sizes = []int64{1, rapid.Int64Range(-1<<40, -1).Draw(t, "bad_size")}
		return bad{in, spec.ErrNegative}
	case 9:
		env()
		name := rapid.SampledFrom([]string{"SGLANG_DG_USE_NVRTC", "SGL_DG_USE_NVRTC"}).Draw(t, "nvrtc_name")
		if name == "SGL_DG_USE_NVRTC" {
			delete(in.Env, "SGLANG_DG_USE_NVRTC")
		}
		in.Env[name] = rapid.SampledFrom([]string{"2", "true", "yes", " 1", "01"}).Draw(t, "bad_nvrtc")
		return bad{in, spec.ErrDGEnv}
	default:
		env()
		delete(in.Env, "SGLANG_DG_CACHE_DIR")
		delete(in.Env, "HOME")
		return bad{in, spec.ErrDGEnv}
	}
}

// withCacheDup returns cache with an entry named "kernel.extra" so that
// appending another makes a duplicate.
func withCacheDup(cache []spec.DeepGEMMCacheEntry) []spec.DeepGEMMCacheEntry {
	return append(slices.Clone(cache), spec.DeepGEMMCacheEntry{Name: "kernel.extra", Dir: true, Sizes: []int64{}})
}

func deepGEMMKernel(kernelType string, compiles ...string) spec.DeepGEMMKernel {
	return spec.DeepGEMMKernel{KernelType: kernelType, N: 7168, K: 2048, NumGroups: 1, Compiles: compiles}
}

func deepGEMMIn(chunked int64, kernels ...spec.DeepGEMMKernel) spec.DeepGEMMWarmupPlanInput {
	return spec.DeepGEMMWarmupPlanInput{Env: map[string]string{"HOME": "/root"}, ChunkedPrefillSize: chunked, Alignment: 128,
		Build: catalog.DeepGEMMBuildH200(), Kernels: kernels, Cache: []spec.DeepGEMMCacheEntry{}}
}

// deepGEMMAfter is the restart after in: its manifest and cache, with edit
// applied to the cache.
func deepGEMMAfter(in spec.DeepGEMMWarmupPlanInput, edit func([]spec.DeepGEMMCacheEntry) []spec.DeepGEMMCacheEntry) spec.DeepGEMMWarmupPlanInput {
	out, err := ref.DeepGEMMWarmupPlan(spec.DefaultLimits(), in)
	if err != nil {
		return in // unreachable for the tables' valid inputs; the table would then show it
	}
	in.Manifest, in.Cache = out.Manifest, edit(slices.Clone(out.Cache))
	return in
}

func keepCache(c []spec.DeepGEMMCacheEntry) []spec.DeepGEMMCacheEntry { return c }

// deepGEMMEntryReplaced is in with its manifest's first entry (by key)
// replaced by raw, the other entries kept.
func deepGEMMEntryReplaced(in spec.DeepGEMMWarmupPlanInput, raw string) spec.DeepGEMMWarmupPlanInput {
	var m ref.DeepGEMMManifest
	if err := json.Unmarshal([]byte(*in.Manifest), &m); err != nil {
		panic(err) // deepGEMMAfter's manifest is ref's own encoding
	}
	keys := slices.Sorted(maps.Keys(m.Entries))
	m.Entries[keys[0]] = json.RawMessage(raw)
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	s := string(b)
	in.Manifest = &s
	return in
}

// deepGEMMBoundary: §S3.4's grid sizes at the three m_max values, the empty
// contig grid, the hit / stale / miss / corrupt / foreign-schema paths,
// a failed replay, a failed write, warmup disabled, and the env mapping.
func deepGEMMBoundary() []Case[spec.DeepGEMMWarmupPlanInput] {
	type c = Case[spec.DeepGEMMWarmupPlanInput]
	all := []spec.DeepGEMMKernel{deepGEMMKernel(spec.KernelGEMMNT, "kernel.a"), deepGEMMKernel(spec.KernelGroupedMasked, "kernel.b"), deepGEMMKernel(spec.KernelGroupedContig, "kernel.c")}
	cold := deepGEMMIn(8192, all...)
	emptied := func(cache []spec.DeepGEMMCacheEntry) []spec.DeepGEMMCacheEntry {
		cache[0].Sizes = []int64{0}
		return cache
	}
	masked := deepGEMMIn(8192, deepGEMMKernel(spec.KernelGroupedMasked))
	masked.MaskedMMax = 1000
	bigAlign := deepGEMMIn(8192, deepGEMMKernel(spec.KernelGroupedContig))
	bigAlign.Alignment = 20000
	failing := deepGEMMIn(8192, spec.DeepGEMMKernel{KernelType: spec.KernelGEMMNT, N: 1, K: 1, NumGroups: 1, Fails: true})
	writeFails := cold
	writeFails.WriteFails = true
	disabled := deepGEMMAfter(cold, keepCache)
	disabled.Env = map[string]string{"HOME": "/root", "SGLANG_JIT_DEEPGEMM_PRECOMPILE": "0"}
	env := func(kv ...string) spec.DeepGEMMWarmupPlanInput {
		in := deepGEMMIn(0, deepGEMMKernel(spec.KernelGEMMNT))
		in.Env = map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			in.Env[kv[i]] = kv[i+1]
		}
		return in
	}
	withManifest := func(m string) spec.DeepGEMMWarmupPlanInput {
		in := cold
		in.Manifest = &m
		return in
	}
	return []c{
		{"m-max-16384-grids-50-50-14", cold},
		{"m-max-65536-grids-54-54-18", deepGEMMIn(0, all...)},
		{"m-max-131072-grids-56-56-20", deepGEMMIn(70000, all...)},
		{"m-max-2x-chunk", deepGEMMIn(20000, all...)},
		{"masked-m-max-1000", masked},
		{"contig-empty-m-max-below-alignment", bigAlign},
		{"restart-all-hits", deepGEMMAfter(cold, keepCache)},
		{"restart-one-emptied-stale", deepGEMMAfter(cold, emptied)},
		{"restart-include-path-changed-miss", func() spec.DeepGEMMWarmupPlanInput {
			in := deepGEMMAfter(cold, keepCache)
			in.Build.IncludePath = "/other/include"
			return in
		}()},
		{"corrupt-manifest-rewritten", withManifest(`{"schema":`)},
		{"foreign-schema-rewritten", withManifest(`{"schema":"sglang-deepgemm-warmup/0","entries":{}}`)},
		{"other-keys-kept", withManifest(`{"schema":"sglang-deepgemm-warmup/1","entries":{"zz-other":{"cache_entries": ["kernel.gone"]}}}`)},
		// An entry of the right key that does not parse as an entry (no
		// cache_entries list) is a miss (§S3.5), neither hit nor stale.
		{"restart-entry-without-cache-entries-miss", deepGEMMEntryReplaced(deepGEMMAfter(cold, keepCache), `{"cache_entries":null}`)},
		{"restart-entry-not-an-object-miss", deepGEMMEntryReplaced(deepGEMMAfter(cold, keepCache), `7`)},
		{"replay-fails-no-entry", failing},
		{"write-fails-startup-continues", writeFails},
		{"precompile-0-disables", disabled},
		{"env-current-nvrtc-wins", env("HOME", "/root", "SGLANG_DG_USE_NVRTC", "0", "SGL_DG_USE_NVRTC", "1")},
		{"env-legacy-nvrtc", env("HOME", "/root", "SGL_DG_USE_NVRTC", "1")},
		{"env-empty-current-falls-back", env("HOME", "/root", "SGLANG_DG_USE_NVRTC", "", "SGL_DG_USE_NVRTC", "1")},
		{"env-cache-dir-without-home", env("SGLANG_DG_CACHE_DIR", "/c")},
		{"env-stale-dg-jit-overwritten", env("HOME", "/root", "DG_JIT_CACHE_DIR", "/stale")},
		{"nvrtc-not-0-or-1", env("HOME", "/root", "SGLANG_DG_USE_NVRTC", "true")},
		{"no-home-no-cache-dir", env()},
		{"unknown-kernel-type", deepGEMMIn(0, deepGEMMKernel("GEMM_NT_BF16"))},
		{"n-zero", deepGEMMIn(0, spec.DeepGEMMKernel{KernelType: spec.KernelGEMMNT, N: 0, K: 1, NumGroups: 1})},
		{"alignment-zero", func() spec.DeepGEMMWarmupPlanInput { in := deepGEMMIn(0); in.Alignment = 0; return in }()},
		{"masked-m-max-too-big", func() spec.DeepGEMMWarmupPlanInput {
			in := deepGEMMIn(0)
			in.MaskedMMax = spec.DeepGEMMMaxM + 1
			return in
		}()},
	}
}

// deepGEMMRegressions: §S3.8's minimal inputs, named as their mutants.
func deepGEMMRegressions() []Case[spec.DeepGEMMWarmupPlanInput] {
	type c = Case[spec.DeepGEMMWarmupPlanInput]
	bridged := deepGEMMIn(8192, deepGEMMKernel(spec.KernelGEMMNT))
	bridged.Env = map[string]string{"HOME": "/root", "SGLANG_DG_CACHE_DIR": "/c"}
	nvrtc := deepGEMMIn(8192, deepGEMMKernel(spec.KernelGEMMNT))
	nvrtc.Env = map[string]string{"HOME": "/root", "SGLANG_DG_USE_NVRTC": "1"}
	deleted := deepGEMMAfter(deepGEMMIn(8192, deepGEMMKernel(spec.KernelGEMMNT, "kernel.x")), func(cache []spec.DeepGEMMCacheEntry) []spec.DeepGEMMCacheEntry {
		return slices.DeleteFunc(cache, func(e spec.DeepGEMMCacheEntry) bool { return e.Name == "kernel.x" })
	})
	return []c{
		// Fixed: the snapshot sees /c; the bug: /root/.cache/deep_gemm.
		{"env-bridged-after-import", bridged},
		// Fixed: DG_JIT_USE_NVRTC=1; the bug: 0.
		{"legacy-only-nvrtc", nvrtc},
		// Fixed: 50 launches at m_max 16384; the bug: 16384.
		{"dense-walk", deepGEMMIn(8192, deepGEMMKernel(spec.KernelGEMMNT))},
		// Fixed: stale, 50 launches, rewrite; the bug: hit, cold compile at serving time.
		{"manifest-trusted-without-liveness", deleted},
	}
}

// deepGEMMGridShape is S3.6.1: sorted, strictly increasing, within [1, m_max],
// dense grids hold 1 and their top, contig grids only multiples of a with
// top ⌊m_max/a⌋·a, and the size is O(log m_max): at most the 32-point head
// plus two points per octave plus the top.
func deepGEMMGridShape(_ spec.Limits, in spec.DeepGEMMWarmupPlanInput, out spec.DeepGEMMWarmupPlanOutput) error {
	bound := spec.DeepGEMMDenseHead + 2*bits.Len64(uint64(out.MMax)) + 1
	for i, p := range out.Plans {
		g := p.MGrid
		if len(g) > bound {
			return fmt.Errorf("plan %d: %d grid points, more than %d", i, len(g), bound)
		}
		for j := range g {
			if g[j] < 1 || g[j] > out.MMax || (j > 0 && g[j] <= g[j-1]) {
				return fmt.Errorf("plan %d: grid not strictly increasing within [1, %d] at %d: %v", i, out.MMax, j, g)
			}
		}
		if p.KernelType == spec.KernelGroupedContig {
			top := out.MMax / in.Alignment * in.Alignment
			if (top == 0) != (len(g) == 0) || (top > 0 && g[len(g)-1] != top) {
				return fmt.Errorf("plan %d: contig grid %v, want top %d", i, g, top)
			}
			for _, m := range g {
				if m%in.Alignment != 0 {
					return fmt.Errorf("plan %d: contig M %d not a multiple of %d", i, m, in.Alignment)
				}
			}
			continue
		}
		if top := deepGEMMTop(in, out, p); g[0] != 1 || g[len(g)-1] != top {
			return fmt.Errorf("plan %d: dense grid %v, want 1 … %d", i, g, top)
		}
	}
	return nil
}

func deepGEMMTop(in spec.DeepGEMMWarmupPlanInput, out spec.DeepGEMMWarmupPlanOutput, p spec.DeepGEMMPlan) int64 {
	if p.KernelType == spec.KernelGroupedMasked && in.MaskedMMax > 0 {
		return min(out.MMax, in.MaskedMMax)
	}
	return out.MMax
}

// deepGEMMDenseHead is S3.6.2: a dense grid holds every M in [1, min(32, top)].
func deepGEMMDenseHead(_ spec.Limits, in spec.DeepGEMMWarmupPlanInput, out spec.DeepGEMMWarmupPlanOutput) error {
	for i, p := range out.Plans {
		if p.KernelType == spec.KernelGroupedContig {
			continue
		}
		for m := int64(1); m <= min(32, deepGEMMTop(in, out, p)); m++ {
			if !slices.Contains(p.MGrid, m) {
				return fmt.Errorf("plan %d: dense grid misses M=%d", i, m)
			}
		}
	}
	return nil
}

// deepGEMMRestart runs ref on the restart after (in, out): out's manifest and
// cache, the write working, and replays succeeding without compiling
// anything, so a replay of one key cannot revive another key's entry.
func deepGEMMRestart(lim spec.Limits, in spec.DeepGEMMWarmupPlanInput, manifest *string, cache []spec.DeepGEMMCacheEntry) (spec.DeepGEMMWarmupPlanInput, spec.DeepGEMMWarmupPlanOutput, error) {
	next := in
	next.Manifest, next.Cache, next.WriteFails = manifest, cache, false
	next.Kernels = slices.Clone(in.Kernels)
	for i := range next.Kernels {
		next.Kernels[i].Fails, next.Kernels[i].Compiles = false, nil
	}
	out, err := ref.DeepGEMMWarmupPlan(lim, next)
	return next, out, err
}

// deepGEMMRoundTrip is S3.6.3: after a warmup that wrote its manifest, a restart
// with the cache unchanged hits every key the run wrote or hit and writes
// nothing; emptying a listed cache entry makes that key stale and
// rewrites it, after which it hits again.
func deepGEMMRoundTrip(lim spec.Limits, in spec.DeepGEMMWarmupPlanInput, out spec.DeepGEMMWarmupPlanOutput) error {
	if !out.ManifestWritten {
		return nil
	}
	next, again, err := deepGEMMRestart(lim, in, out.Manifest, out.Cache)
	if err != nil {
		return fmt.Errorf("restart: %v", err)
	}
	for i, p := range out.Plans {
		if (p.Written || p.Decision == spec.DecisionHit) && again.Plans[i].Decision != spec.DecisionHit {
			return fmt.Errorf("restart: plan %d (%s) is %s, want hit", i, p.Key[:12], again.Plans[i].Decision)
		}
	}
	if again.ManifestWritten != slices.ContainsFunc(again.Plans, func(p spec.DeepGEMMPlan) bool { return p.Written }) {
		return fmt.Errorf("restart wrote the manifest (%v) without (or not after) a replay", again.ManifestWritten)
	}
	// Empty the first live entry a written key lists.
	for i, p := range out.Plans {
		if !p.Written {
			continue
		}
		var entries ref.DeepGEMMManifest
		_ = json.Unmarshal([]byte(*out.Manifest), &entries)
		names, _ := ref.ManifestCacheEntries(entries.Entries[p.Key])
		if len(names) == 0 {
			continue
		}
		cache := slices.Clone(out.Cache)
		j := slices.IndexFunc(cache, func(e spec.DeepGEMMCacheEntry) bool { return e.Name == names[0] })
		cache[j] = spec.DeepGEMMCacheEntry{Name: names[0], Dir: true, Sizes: []int64{}}
		// The key's first kernel sees the emptied entry; a repeat of the
		// same shape then hits the refreshed one.
		i = slices.IndexFunc(out.Plans, func(q spec.DeepGEMMPlan) bool { return q.Key == p.Key })
		_, stale, err := deepGEMMRestart(lim, next, out.Manifest, cache)
		if err != nil || stale.Plans[i].Decision != spec.DecisionStale || !stale.ManifestWritten {
			return fmt.Errorf("after emptying %s: plan %d is %s, manifest written %v (%v); want stale and a rewrite", names[0], i, stale.Plans[i].Decision, stale.ManifestWritten, err)
		}
		return nil
	}
	return nil
}

// deepGEMMKeepsOtherKeys is S3.6.4: a run in which every kernel hit (or had
// nothing to warm) over a sound manifest writes nothing; a rewrite keeps
// every entry of a key no kernel replayed, byte for byte once compacted.
func deepGEMMKeepsOtherKeys(_ spec.Limits, in spec.DeepGEMMWarmupPlanInput, out spec.DeepGEMMWarmupPlanOutput) error {
	replayed := map[string]bool{}
	for _, p := range out.Plans {
		if p.Written {
			replayed[p.Key] = true
		}
	}
	var before ref.DeepGEMMManifest
	sound := in.Manifest != nil && json.Unmarshal([]byte(*in.Manifest), &before) == nil && before.Schema == spec.DeepGEMMManifestSchema
	if sound && len(replayed) == 0 && out.ManifestWritten {
		return fmt.Errorf("the manifest was rewritten though no key was replayed")
	}
	if !sound || !out.ManifestWritten {
		return nil
	}
	var after ref.DeepGEMMManifest
	if err := json.Unmarshal([]byte(*out.Manifest), &after); err != nil {
		return fmt.Errorf("written manifest does not parse: %v", err)
	}
	for k, v := range before.Entries {
		if replayed[k] {
			continue
		}
		w, ok := after.Entries[k]
		if !ok {
			return fmt.Errorf("entry %s of another key was deleted", k)
		}
		if a, b := reencodedJSON(v), reencodedJSON(w); a != b {
			return fmt.Errorf("entry %s of another key changed: %s -> %s", k, a, b)
		}
	}
	return nil
}

// reencodedJSON is raw after a json.Marshal round trip, so two spellings of one value compare equal.
func reencodedJSON(raw json.RawMessage) string {
	b, _ := json.Marshal(raw)
	return string(b)
}

// deepGEMMEnvPrepared is S3.6.5 and §S3.2's mapping: the import snapshot sees
// the prepared values, which follow the current, legacy and default
// spellings in that order.
func deepGEMMEnvPrepared(_ spec.Limits, in spec.DeepGEMMWarmupPlanInput, out spec.DeepGEMMWarmupPlanOutput) error {
	if out.Imported != out.Env {
		return fmt.Errorf("import snapshot %+v != prepared %+v", out.Imported, out.Env)
	}
	want := spec.DeepGEMMEnv{CacheDir: in.Env["SGLANG_DG_CACHE_DIR"], UseNVRTC: "0"}
	if want.CacheDir == "" {
		want.CacheDir = strings.TrimSuffix(in.Env["HOME"], "/") + "/.cache/deep_gemm"
	}
	if v := in.Env["SGLANG_DG_USE_NVRTC"]; v != "" {
		want.UseNVRTC = v
	} else if v := in.Env["SGL_DG_USE_NVRTC"]; v != "" {
		want.UseNVRTC = v
	}
	if out.Env != want {
		return fmt.Errorf("prepared %+v, want %+v", out.Env, want)
	}
	return nil
}

// deepGEMMLaunches: a replay (miss or stale) launches exactly the grid; hits,
// empty grids and disabled warmups launch nothing; only a replay writes.
func deepGEMMLaunches(_ spec.Limits, in spec.DeepGEMMWarmupPlanInput, out spec.DeepGEMMWarmupPlanOutput) error {
	if len(out.Plans) != len(in.Kernels) {
		return fmt.Errorf("%d plans for %d kernels", len(out.Plans), len(in.Kernels))
	}
	for i, p := range out.Plans {
		replay := p.Decision == spec.DecisionMiss || p.Decision == spec.DecisionStale
		if want := int64(len(p.MGrid)); (replay && p.Launches != want) || (!replay && p.Launches != 0) {
			return fmt.Errorf("plan %d (%s): %d launches for a %d-point grid", i, p.Decision, p.Launches, len(p.MGrid))
		}
		if p.Written != (replay && !in.Kernels[i].Fails) {
			return fmt.Errorf("plan %d (%s, fails=%v): written=%v", i, p.Decision, in.Kernels[i].Fails, p.Written)
		}
	}
	return nil
}

// deepGEMMLogLevels is the §S3.5 / §S5 level contract for the warmup: one DEBUG
// per hit, one WARN per failed replay, per corrupt or foreign manifest and
// per failed write, INFO only for one-time init (replays, empty grids,
// warmup disabled), and never ERROR.
func deepGEMMLogLevels(_ spec.Limits, in spec.DeepGEMMWarmupPlanInput, out spec.DeepGEMMWarmupPlanOutput) error {
	count := map[string]int{}
	for _, r := range out.Logs {
		count[r.Level]++
	}
	var hits, fails, info int
	for i, p := range out.Plans {
		switch {
		case p.Decision == spec.DecisionHit:
			hits++
		case p.Decision == spec.DecisionEmpty || p.Written:
			info++
		case (p.Decision == spec.DecisionMiss || p.Decision == spec.DecisionStale) && in.Kernels[i].Fails:
			fails++
		}
	}
	if !out.Enabled {
		info++
	}
	_, corrupt := ref.ParseDeepGEMMManifest(in.Manifest)
	warn := fails
	if out.Enabled && corrupt != nil {
		warn++
	}
	if out.Enabled && in.WriteFails && !out.ManifestWritten && (corrupt != nil || slices.ContainsFunc(out.Plans, func(p spec.DeepGEMMPlan) bool { return p.Written })) {
		warn++
	}
	if count[spec.LevelDebug] != hits || count[spec.LevelWarn] != warn || count[spec.LevelInfo] != info || len(out.Logs) != hits+warn+info {
		return fmt.Errorf("log levels %v, want DEBUG=%d INFO=%d WARN=%d: %v", count, hits, info, warn, out.Logs)
	}
	return nil
}
