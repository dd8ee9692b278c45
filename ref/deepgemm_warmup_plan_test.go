package ref_test

import (
	"errors"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestDeepGEMMGridSizes pins §S3.4: 50/14 points at m_max 16384, 54/18 at
// 65536, 56/20 at 131072, the listed points, and contig(1000, 128).
func TestDeepGEMMGridSizes(t *testing.T) {
	for _, c := range []struct {
		chunked       int64
		mMax          int64
		dense, contig int
	}{{8192, 16384, 50, 14}, {0, 65536, 54, 18}, {-5, 65536, 54, 18}, {70000, 131072, 56, 20}, {20000, 40000, 0, 0}} {
		if got := ref.DeepGEMMMMax(c.chunked); got != c.mMax {
			t.Fatalf("m_max(%d) = %d, want %d", c.chunked, got, c.mMax)
		}
		if c.dense == 0 {
			continue
		}
		if d, g := len(ref.DenseGrid(c.mMax)), len(ref.ContigGrid(c.mMax, 128)); d != c.dense || g != c.contig {
			t.Errorf("m_max %d: dense %d, contig %d points; want %d, %d", c.mMax, d, g, c.dense, c.contig)
		}
	}
	dense := ref.DenseGrid(16384)
	want := []int64{48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384}
	if !slices.Equal(dense[32:], want) || dense[0] != 1 || dense[31] != 32 {
		t.Errorf("dense(16384) = %v", dense)
	}
	if got := ref.ContigGrid(1000, 128); !slices.Equal(got, []int64{128, 256, 384, 512, 768, 896}) {
		t.Errorf("contig(1000, 128) = %v", got)
	}
	if got := ref.ContigGrid(100, 128); len(got) != 0 {
		t.Errorf("contig(100, 128) = %v, want empty", got)
	}
	if got := ref.DeepGEMMMMax(1 << 62); got != spec.DeepGEMMMaxM {
		t.Errorf("m_max(2^62) = %d, want the cap (no overflow)", got)
	}
}

// TestDeepGEMMEnvPreparedBeforeImport is §S3.2 and S3.6.5: the prepared
// values are what the import snapshot sees; importing the raw environment
// (bug S3-B1) sees the defaults.
func TestDeepGEMMEnvPreparedBeforeImport(t *testing.T) {
	env := map[string]string{"HOME": "/root", "SGLANG_DG_CACHE_DIR": "/c", "SGLANG_DG_USE_NVRTC": "1", "SGL_DG_USE_NVRTC": "0"}
	prepared, err := ref.PrepareDeepGEMMEnv(env)
	if err != nil {
		t.Fatal(err)
	}
	if got := ref.ImportDeepGEMM(prepared); got != (spec.DeepGEMMEnv{CacheDir: "/c", UseNVRTC: "1"}) {
		t.Errorf("import after preparation sees %+v", got)
	}
	if got := ref.ImportDeepGEMM(env); got != (spec.DeepGEMMEnv{CacheDir: "/root/.cache/deep_gemm", UseNVRTC: "0"}) {
		t.Errorf("import before preparation sees %+v, want the defaults", got)
	}
	if _, ok := env["DG_JIT_CACHE_DIR"]; ok {
		t.Error("PrepareDeepGEMMEnv modified its input")
	}
	for _, bad := range []map[string]string{
		{"HOME": "/root", "SGLANG_DG_USE_NVRTC": "true"},
		{"HOME": "/root", "SGL_DG_USE_NVRTC": "2"},
		{"SGLANG_DG_USE_NVRTC": "1"},
	} {
		if _, err := ref.PrepareDeepGEMMEnv(bad); !errors.Is(err, spec.ErrDGEnv) {
			t.Errorf("%v: %v, want ErrDGEnv", bad, err)
		}
	}
}

// TestDeepGEMMManifestCycle is S3.6.3 and S3.6.4 on one kernel: a cold
// start replays and writes, the restart hits without writing, deleting
// the compiled entry makes it stale and rewrites it, and the next restart
// hits again.
func TestDeepGEMMManifestCycle(t *testing.T) {
	lim := spec.DefaultLimits()
	in := spec.DeepGEMMWarmupPlanInput{Env: map[string]string{"HOME": "/root"}, ChunkedPrefillSize: 8192, Alignment: 128,
		Kernels: []spec.DeepGEMMKernel{{KernelType: spec.KernelGEMMNT, N: 7168, K: 2048, NumGroups: 1, Compiles: []string{"kernel.x"}}},
		Cache:   []spec.DeepGEMMCacheEntry{}}
	step := func(want string, written bool) spec.DeepGEMMWarmupPlanOutput {
		t.Helper()
		out, err := ref.DeepGEMMWarmupPlan(lim, in)
		if err != nil {
			t.Fatal(err)
		}
		if p := out.Plans[0]; p.Decision != want || out.ManifestWritten != written {
			t.Fatalf("decision %s, written %v; want %s, %v (logs %v)", p.Decision, out.ManifestWritten, want, written, out.Logs)
		}
		in.Manifest, in.Cache = out.Manifest, out.Cache
		return out
	}
	if out := step(spec.DecisionMiss, true); out.Plans[0].Launches != 50 {
		t.Fatalf("cold start launched %d kernels, want 50", out.Plans[0].Launches)
	}
	step(spec.DecisionHit, false)
	in.Cache = []spec.DeepGEMMCacheEntry{}
	step(spec.DecisionStale, true)
	step(spec.DecisionHit, false)
}

// TestListDeepGEMMCache is §S3.5's listing rule on an in-memory cache dir:
// the "cache" subdirectory wins over the root; liveness needs a non-empty
// regular file; at the root the manifest is not an entry.
func TestListDeepGEMMCache(t *testing.T) {
	withSub := fstest.MapFS{
		"cache/kernel.a/kernel.cubin": {Data: []byte("x")},
		"cache/kernel.b/empty.cubin":  {Data: nil},
		"cache/kernel.c":              {Data: []byte("yy")},
		"top.txt":                     {Data: []byte("not listed")},
	}
	got, err := ref.ListDeepGEMMCache(withSub)
	if err != nil {
		t.Fatal(err)
	}
	want := []spec.DeepGEMMCacheEntry{{Name: "kernel.a", Dir: true, Sizes: []int64{1}}, {Name: "kernel.b", Dir: true, Sizes: []int64{0}}, {Name: "kernel.c", Sizes: []int64{2}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got)\n%s", diff)
	}
	if !got[0].Live() || got[1].Live() || !got[2].Live() {
		t.Errorf("liveness %v %v %v, want true false true", got[0].Live(), got[1].Live(), got[2].Live())
	}
	flat := fstest.MapFS{spec.DeepGEMMManifestFile: {Data: []byte("{}")}, "kernel.d": {Data: []byte("z")}}
	got, err = ref.ListDeepGEMMCache(flat)
	if err != nil || len(got) != 1 || got[0].Name != "kernel.d" {
		t.Fatalf("flat listing %v (%v), want only kernel.d", got, err)
	}
	m, err := ref.ReadDeepGEMMManifest(flat)
	if err != nil || m == nil || *m != "{}" {
		t.Fatalf("manifest %v (%v)", m, err)
	}
	if m, err := ref.ReadDeepGEMMManifest(withSub); m != nil || err != nil {
		t.Fatalf("no manifest: got %v (%v)", m, err)
	}
}
