package fast

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// DeepGEMMWarmupPlan is the twin of ref.DeepGEMMWarmupPlan
// (docs/spec/admission-serving.md §S3). Grids are emitted already sorted (no set, no
// sort), a kernel's key preimage is appended with strconv after a
// fingerprint prefix encoded once per call (no reflection per kernel), and
// the cache listing is indexed by name once, so each liveness check is a
// map lookup instead of a scan.
func DeepGEMMWarmupPlan(lim spec.Limits, in spec.DeepGEMMWarmupPlanInput) (spec.DeepGEMMWarmupPlanOutput, error) {
	return deepGEMMWarmupPlanWithFaults(lim, in, fault.DeepGEMM{})
}

// deepGEMMWarmupPlanWithFaults is DeepGEMMWarmupPlan with the bugs f selects
// put back, for the bug zoo only: fault.Hooks hands it to equiv/mutants
// (hooks.go). Called with the zero value it is DeepGEMMWarmupPlan.
func deepGEMMWarmupPlanWithFaults(_ spec.Limits, in spec.DeepGEMMWarmupPlanInput, f fault.DeepGEMM) (spec.DeepGEMMWarmupPlanOutput, error) {
	if err := ref.ValidateDeepGEMMWarmupPlan(in); err != nil {
		return spec.DeepGEMMWarmupPlanOutput{}, err
	}
	prepared, err := ref.PrepareDeepGEMMEnv(in.Env)
	if err != nil {
		return spec.DeepGEMMWarmupPlanOutput{}, err
	}
	dg := spec.DeepGEMMEnv{CacheDir: prepared["DG_JIT_CACHE_DIR"], UseNVRTC: prepared["DG_JIT_USE_NVRTC"]}
	out := spec.DeepGEMMWarmupPlanOutput{
		Env: dg, Imported: ref.ImportDeepGEMM(prepared),
		Enabled:  ref.DeepGEMMWarmupEnabled(in.Env),
		MMax:     ref.DeepGEMMMMax(in.ChunkedPrefillSize),
		Plans:    make([]spec.DeepGEMMPlan, 0, len(in.Kernels)),
		Manifest: in.Manifest,
		Logs:     []spec.LogRecord{},
	}
	fp := in.Build.Fingerprint(dg)
	c := newCacheIndex(in.Cache)
	if !out.Enabled {
		out.Logs = append(out.Logs, ref.DeepGEMMDisabledLog(in.Env["SGLANG_JIT_DEEPGEMM_PRECOMPILE"]))
	}
	entries, warn := ref.ParseDeepGEMMManifest(in.Manifest)
	if warn != nil && out.Enabled {
		out.Logs = append(out.Logs, *warn)
	}
	dirty := warn != nil
	keyer := newKeyer(fp)
	// The three categories have at most three distinct grids per call.
	grids := map[string][]int64{}
	for _, k := range in.Kernels {
		grid, ok := grids[k.KernelType]
		if !ok {
			grid = kernelGrid(k.KernelType, out.MMax, in.MaskedMMax, in.Alignment, f.DenseWalk)
			grids[k.KernelType] = grid
		}
		p := spec.DeepGEMMPlan{KernelType: k.KernelType, N: k.N, K: k.K, NumGroups: k.NumGroups, MGrid: grid}
		p.Key = keyer.key(k, grid)
		switch {
		case !out.Enabled:
			p.Decision = spec.DecisionDisabled
		case len(grid) == 0:
			p.Decision = spec.DecisionEmpty
			out.Logs = append(out.Logs, ref.DeepGEMMEmptyLog(k, out.MMax, in.Alignment))
		default:
			if p.Decision = c.decide(entries[p.Key], f.TrustManifest); p.Decision == spec.DecisionHit {
				out.Logs = append(out.Logs, ref.DeepGEMMHitLog(p.Key))
				break
			}
			p.Launches = int64(len(grid))
			if k.Fails {
				out.Logs = append(out.Logs, ref.DeepGEMMFailLog(p.Key))
				break
			}
			c.compile(k.Compiles)
			entries[p.Key] = ref.EncodeDeepGEMMEntry(p, fp, c.liveNames())
			p.Written, dirty = true, true
			out.Logs = append(out.Logs, ref.DeepGEMMReplayLog(p))
		}
		out.Plans = append(out.Plans, p)
	}
	out.Cache = c.sorted()
	if out.Enabled && dirty {
		if in.WriteFails {
			out.Logs = append(out.Logs, ref.DeepGEMMWriteFailLog(dg.CacheDir))
		} else {
			m := ref.EncodeDeepGEMMManifest(entries)
			out.Manifest, out.ManifestWritten = &m, true
		}
	}
	return out, nil
}

// kernelGrid is ref.deepGEMMGrid emitted in order: within each octave the
// geometric points come as 2^k, then 3·2^(k-1), then 2^(k+1).
func kernelGrid(kernelType string, mMax, maskedMMax, a int64, denseWalk bool) []int64 {
	switch kernelType {
	case spec.KernelGroupedMasked:
		if maskedMMax == 0 {
			maskedMMax = mMax
		}
		return denseGrid(min(mMax, maskedMMax), denseWalk)
	case spec.KernelGroupedContig:
		return contigGrid(mMax, a, denseWalk)
	}
	return denseGrid(mMax, denseWalk)
}

func denseGrid(h int64, denseWalk bool) []int64 {
	if denseWalk { // the bug: every M is launched
		g := make([]int64, h)
		for i := range g {
			g[i] = int64(i + 1)
		}
		return g
	}
	head := min(spec.DeepGEMMDenseHead, h)
	g := make([]int64, 0, head+40)
	for m := int64(1); m <= head; m++ {
		g = append(g, m)
	}
	g = appendGeo(g, h, 1, head)
	if g[len(g)-1] != h {
		g = append(g, h)
	}
	return g
}

func contigGrid(h, a int64, denseWalk bool) []int64 {
	top := h / a
	if top == 0 {
		return []int64{}
	}
	if denseWalk { // the bug: every multiple of a is launched
		g := make([]int64, top)
		for i := range g {
			g[i] = int64(i+1) * a
		}
		return g
	}
	g := appendGeo(make([]int64, 0, 40), top, a, 0)
	if g[len(g)-1] != top*a {
		g = append(g, top*a)
	}
	return g
}

// appendGeo appends scale·j for j in geo(h), ascending, skipping j <= skip:
// each octave gives p, then 3p/2 (below 2p).
func appendGeo(g []int64, h, scale, skip int64) []int64 {
	for p := int64(1); p <= h; p *= 2 {
		if p > skip {
			g = append(g, p*scale)
		}
		if t := p + p/2; p >= 2 && t <= h && t > skip {
			g = append(g, t*scale)
		}
	}
	return g
}

// keyer hashes kernel identities whose fingerprint is fixed for the call.
type keyer struct {
	prefix []byte // `{"fingerprint":{…},"k":`
	buf    []byte
}

func newKeyer(fp spec.DeepGEMMFingerprint) *keyer {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	// The fingerprint's fields in sorted order, as ref's canonIdentity has them.
	_ = enc.Encode(struct {
		CacheDir        string `json:"cache_dir"`
		CUDA            string `json:"cuda"`
		DeepGEMMVersion string `json:"deep_gemm_version"`
		Device          string `json:"device"`
		IncludePath     string `json:"include_path"`
		SM              string `json:"sm"`
		UseNVRTC        string `json:"use_nvrtc"`
	}{fp.CacheDir, fp.CUDA, fp.DeepGEMMVersion, fp.Device, fp.IncludePath, fp.SM, fp.UseNVRTC})
	prefix := append([]byte(`{"fingerprint":`), bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
	return &keyer{prefix: append(prefix, `,"k":`...)}
}

// key appends the rest of the sorted-key preimage; kernel_type is one of
// three constants that need no escaping.
func (h *keyer) key(k spec.DeepGEMMKernel, grid []int64) string {
	b := append(h.buf[:0], h.prefix...)
	b = strconv.AppendInt(b, k.K, 10)
	b = append(b, `,"kernel_type":"`...)
	b = append(b, k.KernelType...)
	b = append(b, `","m_grid":[`...)
	for i, m := range grid {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, m, 10)
	}
	b = append(b, `],"n":`...)
	b = strconv.AppendInt(b, k.N, 10)
	b = append(b, `,"num_groups":`...)
	b = strconv.AppendInt(b, k.NumGroups, 10)
	b = append(b, '}')
	h.buf = b
	return hexSHA256(b)
}

// cacheIndex is the cache listing with a name index.
type cacheIndex struct {
	entries []spec.DeepGEMMCacheEntry
	byName  map[string]int
}

func newCacheIndex(cache []spec.DeepGEMMCacheEntry) *cacheIndex {
	c := &cacheIndex{entries: append(make([]spec.DeepGEMMCacheEntry, 0, len(cache)+4), cache...), byName: make(map[string]int, len(cache))}
	for i, e := range cache {
		c.byName[e.Name] = i
	}
	return c
}

func (c *cacheIndex) decide(raw json.RawMessage, trust bool) string {
	if raw == nil {
		return spec.DecisionMiss
	}
	names, ok := ref.ManifestCacheEntries(raw)
	if !ok {
		return spec.DecisionMiss
	}
	if trust { // the bug: listed entries are never checked
		return spec.DecisionHit
	}
	for _, name := range names {
		i, ok := c.byName[name]
		if !ok || !c.entries[i].Live() {
			return spec.DecisionStale
		}
	}
	return spec.DecisionHit
}

func (c *cacheIndex) compile(names []string) {
	for _, name := range names {
		if i, ok := c.byName[name]; ok {
			c.entries[i] = ref.CompiledEntry(name)
			continue
		}
		c.byName[name] = len(c.entries)
		c.entries = append(c.entries, ref.CompiledEntry(name))
	}
}

func (c *cacheIndex) liveNames() []string {
	names := make([]string, 0, len(c.entries))
	for _, e := range c.entries {
		if e.Live() {
			names = append(names, e.Name)
		}
	}
	slices.Sort(names)
	return names
}

func (c *cacheIndex) sorted() []spec.DeepGEMMCacheEntry {
	slices.SortFunc(c.entries, func(a, b spec.DeepGEMMCacheEntry) int { return strings.Compare(a.Name, b.Name) })
	return c.entries
}

func hexSHA256(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
