package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestWarmupPlanReadsTheCacheDir: a cold cache dir plans a miss with the
// 50-point grid at m_max 16384; after a cache dir holds the manifest and
// the live entry it lists, the same shape is a hit with no launches; the
// command writes nothing.
func TestWarmupPlanReadsTheCacheDir(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	args := []string{"warmup-plan", "--cache-dir", dir, "--chunked-prefill-size", "8192", "--kernel", "GEMM_NT_F8F8BF16:7168:2048:1", "--json"}
	code, out, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var cold spec.DeepGEMMWarmupPlanOutput
	if err := json.Unmarshal([]byte(out), &cold); err != nil {
		t.Fatal(err)
	}
	if p := cold.Plans[0]; p.Decision != spec.DecisionMiss || p.Launches != 50 || cold.MMax != 16384 {
		t.Fatalf("cold plan %+v, m_max %d; want a miss with 50 launches at 16384", p, cold.MMax)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("warmup-plan wrote into the cache dir: %v", entries)
	}

	// What a real warmup would have left: the compiled kernel and the manifest.
	if err := os.MkdirAll(filepath.Join(dir, "cache", "kernel.x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cache", "kernel.x", "kernel.cubin"), []byte("cubin"), 0o644); err != nil {
		t.Fatal(err)
	}
	entry := ref.EncodeDeepGEMMEntry(cold.Plans[0], catalog.DeepGEMMBuildH200().Fingerprint(cold.Env), []string{"kernel.x"})
	manifest := ref.EncodeDeepGEMMManifest(map[string]json.RawMessage{cold.Plans[0].Key: entry})
	if err := os.WriteFile(filepath.Join(dir, spec.DeepGEMMManifestFile), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = runCLI(t, args[:len(args)-1]...)
	if code != 0 || !strings.Contains(out, "hit      GEMM_NT_F8F8BF16 n=7168") || !strings.Contains(out, "total launches 0") {
		t.Fatalf("exit %d, warm plan:\n%s%s", code, out, stderr)
	}
}

// TestWarmupPlanRejectsBadShapes: a malformed --kernel and a shape the op
// refuses both fail with the reason.
func TestWarmupPlanRejectsBadShapes(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	for arg, want := range map[string]string{
		"GEMM_NT_F8F8BF16:7168:2048":   "want TYPE:N:K:NUM_GROUPS",
		"GEMM_NT_F8F8BF16:7168:2048:0": "kernels[0].num_groups = 0",
		"GEMM:1:1:1":                   "kernels[0].kernel_type",
	} {
		code, _, stderr := runCLI(t, "warmup-plan", "--kernel", arg)
		if code == 0 || !strings.Contains(stderr, want) {
			t.Errorf("--kernel %s: exit %d, stderr %q; want it to name %q", arg, code, stderr, want)
		}
	}
}
