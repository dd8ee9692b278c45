package main

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/internal/bounded"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// newWarmupPlanCmd is `kvtwin warmup-plan` (docs/spec/admission-serving.md §S3): the
// DeepGEMM warmup plan for given kernel shapes, and, when the cache dir
// exists, what a start would decide against its manifest. It only reads.
func newWarmupPlanCmd() *cobra.Command {
	in := spec.DeepGEMMWarmupPlanInput{Build: catalog.DeepGEMMBuildH200()}
	var kernels []string
	var cacheDir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "warmup-plan",
		Short: "Print the DeepGEMM warmup plan (m_max, sparse M grids, manifest keys, hit/miss/stale) for given kernel shapes; read-only",
		Long: `Print the DeepGEMM JIT warmup plan of admission-serving.md §S3 for the given kernel shapes:
m_max from --chunked-prefill-size, each kernel's sparse M grid and manifest key, and the
decision a start would take. The environment (SGLANG_DG_CACHE_DIR, SGLANG_DG_USE_NVRTC,
SGL_DG_USE_NVRTC, HOME, SGLANG_JIT_DEEPGEMM_PRECOMPILE) is prepared as before the deep_gemm
import; --cache-dir overrides SGLANG_DG_CACHE_DIR. When the prepared cache dir exists, its
sglang_warmup_manifest.json and cache listing are read (never written) and each key is
reported as hit, miss or stale; otherwise every key is a miss. Replays are not run, so a
"would write" manifest lists the cache as it is now.

Example:
  kvtwin warmup-plan --chunked-prefill-size 8192 \
    --kernel GEMM_NT_F8F8BF16:7168:2048:1 --kernel GROUPED_GEMM_NT_F8F8BF16_CONTIG:4096:7168:256`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ks, err := parseKernels(kernels)
			if err != nil {
				return err
			}
			in.Kernels = ks
			in.Env = processEnv()
			if cacheDir != "" {
				in.Env["SGLANG_DG_CACHE_DIR"] = cacheDir
			}
			if err := readCacheDir(&in); err != nil {
				return err
			}
			out, err := ref.DeepGEMMWarmupPlan(spec.DefaultLimits(), in)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			return printWarmupPlan(cmd.OutOrStdout(), out)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&kernels, "kernel", nil, "kernel shape TYPE:N:K:NUM_GROUPS (repeatable); TYPE is GEMM_NT_F8F8BF16, GROUPED_GEMM_NT_F8F8BF16_MASKED or GROUPED_GEMM_NT_F8F8BF16_CONTIG")
	f.Int64Var(&in.ChunkedPrefillSize, "chunked-prefill-size", 8192, "the server's --chunked-prefill-size (< 1: unlimited, m_max 65536)")
	f.Int64Var(&in.MaskedMMax, "masked-m-max", 0, "cap of the masked (MoE decode) grid; 0 = m_max")
	f.Int64Var(&in.Alignment, "alignment", 128, "DeepGEMM mk alignment of the contig grid")
	f.StringVar(&cacheDir, "cache-dir", "", "DeepGEMM cache dir (default: $SGLANG_DG_CACHE_DIR, else $HOME/.cache/deep_gemm)")
	f.StringVar(&in.Build.DeepGEMMVersion, "deep-gemm-version", in.Build.DeepGEMMVersion, "fingerprint: sgl-deep-gemm version")
	f.StringVar(&in.Build.IncludePath, "include-path", in.Build.IncludePath, "fingerprint: deep_gemm include dir")
	f.StringVar(&in.Build.Device, "device", in.Build.Device, "fingerprint: device name")
	f.StringVar(&in.Build.SM, "sm", in.Build.SM, "fingerprint: compute capability")
	f.StringVar(&in.Build.CUDA, "cuda", in.Build.CUDA, "fingerprint: CUDA version")
	f.BoolVar(&asJSON, "json", false, "print the op's JSON output instead of the table")
	return cmd
}

// parseKernels reads TYPE:N:K:NUM_GROUPS shapes; the values themselves are
// validated by the op.
func parseKernels(specs []string) ([]spec.DeepGEMMKernel, error) {
	ks := []spec.DeepGEMMKernel{}
	for _, s := range specs {
		parts := strings.Split(s, ":")
		if len(parts) != 4 {
			return nil, fmt.Errorf("--kernel %q: want TYPE:N:K:NUM_GROUPS", s)
		}
		var dims [3]int64
		for i, p := range parts[1:] {
			v, err := strconv.ParseInt(p, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("--kernel %q: %q is not an integer", s, p)
			}
			dims[i] = v
		}
		ks = append(ks, spec.DeepGEMMKernel{KernelType: parts[0], N: dims[0], K: dims[1], NumGroups: dims[2]})
	}
	return ks, nil
}

// processEnv is the environment variables the preparation reads.
func processEnv() map[string]string {
	env := map[string]string{}
	for _, name := range []string{"HOME", "SGLANG_DG_CACHE_DIR", "SGLANG_DG_USE_NVRTC", "SGL_DG_USE_NVRTC",
		"DG_JIT_CACHE_DIR", "DG_JIT_USE_NVRTC", "SGLANG_JIT_DEEPGEMM_PRECOMPILE"} {
		if v, ok := os.LookupEnv(name); ok {
			env[name] = v
		}
	}
	return env
}

// readCacheDir fills the manifest and listing from the prepared cache dir,
// when it exists. An invalid environment is left for the op to report.
func readCacheDir(in *spec.DeepGEMMWarmupPlanInput) error {
	in.Cache = []spec.DeepGEMMCacheEntry{}
	prepared, err := ref.PrepareDeepGEMMEnv(in.Env)
	if err != nil {
		return nil
	}
	dir := prepared["DG_JIT_CACHE_DIR"]
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return nil
	}
	fsys := boundedReadFS{FS: os.DirFS(dir), dir: dir}
	if in.Manifest, err = ref.ReadDeepGEMMManifest(fsys); err != nil {
		return fmt.Errorf("reading the manifest in %s: %w", dir, err)
	}
	if in.Cache, err = ref.ListDeepGEMMCache(fsys); err != nil {
		return fmt.Errorf("listing %s: %w", dir, err)
	}
	return nil
}

// maxManifestBytes bounds the manifest warmup-plan reads: the manifest is
// part of the op's input, which the server takes up to its 64 MiB body
// bound.
const maxManifestBytes = 64 << 20

// boundedReadFS is the cache dir with its files read under
// maxManifestBytes (fs.ReadFile uses an FS's own ReadFile), so a manifest
// that is a FIFO, /dev/zero or a huge file is refused, naming it, not read
// whole. Its bytes are not checked as text: a corrupt manifest is the op's
// to report (§S3.5).
type boundedReadFS struct {
	fs.FS
	dir string
}

// ReadFile implements fs.ReadFileFS.
func (b boundedReadFS) ReadFile(name string) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: fs.ErrInvalid}
	}
	return bounded.ReadFile(filepath.Join(b.dir, filepath.FromSlash(name)),
		bounded.Limits{MaxBytes: maxManifestBytes, Binary: true, BytesName: "the 64 MiB manifest bound"})
}

func printWarmupPlan(w io.Writer, out spec.DeepGEMMWarmupPlanOutput) error {
	var b strings.Builder
	fmt.Fprintf(&b, "DG_JIT_CACHE_DIR=%s DG_JIT_USE_NVRTC=%s enabled=%v m_max=%d\n", out.Env.CacheDir, out.Env.UseNVRTC, out.Enabled, out.MMax)
	var launches int64
	for _, p := range out.Plans {
		fmt.Fprintf(&b, "%-8s %s n=%d k=%d num_groups=%d points=%d launches=%d key=%s\n  m_grid=%v\n",
			p.Decision, p.KernelType, p.N, p.K, p.NumGroups, len(p.MGrid), p.Launches, p.Key, p.MGrid)
		launches += p.Launches
	}
	fmt.Fprintf(&b, "total launches %d; manifest would be written: %v\n", launches, out.ManifestWritten)
	for _, r := range out.Logs {
		fmt.Fprintf(&b, "log %s %s\n", r.Level, r.Msg)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
