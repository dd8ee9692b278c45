package equiv_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestConfigIndexTopKOverridesPropertiesCatchWrongMerges: each §S4.5 property
// holds on ref's merge and fails on a merge broken the way it guards
// against.
func TestConfigIndexTopKOverridesPropertiesCatchWrongMerges(t *testing.T) {
	sp := equiv.ConfigIndexTopKOverrides()
	four := int64(4)
	in := spec.ConfigIndexTopKOverridesInput{JSON: `{"rope_theta":8e6,"index_topk_freq":2}`, Freq: &four}
	good, err := ref.ConfigIndexTopKOverrides(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	with := func(json string, warnings ...string) spec.ConfigIndexTopKOverridesOutput {
		if warnings == nil {
			warnings = good.Warnings
		}
		return spec.ConfigIndexTopKOverridesOutput{JSON: json, Warnings: warnings}
	}
	broken := map[string]spec.ConfigIndexTopKOverridesOutput{
		"S4.5.1-idempotent":        with(`{"rope_theta":8e6, "index_topk_freq":4}`),
		"S4.5.2-other-keys-kept":   with(`{"rope_theta":8000000,"index_topk_freq":4}`),
		"S4.5.3-offset-zero-unset": with(`{"rope_theta":8e6,"index_topk_freq":4,"index_skip_topk_offset":0}`),
		"flags-set-their-keys":     with(`{"rope_theta":8e6,"index_topk_freq":5}`),
		"warnings-exact":           with(good.JSON, "index_topk_pattern shadows index_topk_freq=4"),
	}
	// A decode-side merge that lost the override warning.
	broken["S4.5.4-prefill-decode-agree"] = spec.ConfigIndexTopKOverridesOutput{JSON: good.JSON, Warnings: []string{}}
	for _, p := range sp.Props {
		if err := p.Holds(spec.DefaultLimits(), in, good); err != nil {
			t.Errorf("%s fails on ref's merge: %v", p.Name, err)
		}
		bad, ok := broken[p.Name]
		if !ok {
			t.Errorf("no broken merge for property %s", p.Name)
			continue
		}
		if propHolds(t, sp.Props, p.Name, in, bad) == nil {
			t.Errorf("%s holds on the broken merge %+v", p.Name, bad)
		}
	}
}

// TestDeepGEMMPropertiesCatchWrongPlans: each §S3.6 property holds on
// ref's plan and fails on a plan broken the way it guards against.
func TestDeepGEMMPropertiesCatchWrongPlans(t *testing.T) {
	sp := equiv.DeepGEMMWarmupPlan()
	other := `{"schema":"sglang-deepgemm-warmup/1","entries":{"zz-other":{"cache_entries":[]}}}`
	in := spec.DeepGEMMWarmupPlanInput{Env: map[string]string{"HOME": "/root"}, ChunkedPrefillSize: 8192, Alignment: 128,
		Build:    catalog.DeepGEMMBuildH200(),
		Kernels:  []spec.DeepGEMMKernel{{KernelType: spec.KernelGEMMNT, N: 7168, K: 2048, NumGroups: 1, Compiles: []string{"kernel.x"}}},
		Manifest: &other, Cache: []spec.DeepGEMMCacheEntry{}}
	good, err := ref.DeepGEMMWarmupPlan(spec.DefaultLimits(), in)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(*spec.DeepGEMMWarmupPlanOutput)) spec.DeepGEMMWarmupPlanOutput {
		var o spec.DeepGEMMWarmupPlanOutput
		b, _ := json.Marshal(good)
		_ = json.Unmarshal(b, &o) // a deep copy
		f(&o)
		return o
	}
	manifest := func(key string) *string {
		entry := ref.EncodeDeepGEMMEntry(good.Plans[0], in.Build.Fingerprint(good.Env), []string{"kernel.x"})
		m := ref.EncodeDeepGEMMManifest(map[string]json.RawMessage{key: entry})
		return &m
	}
	broken := map[string]spec.DeepGEMMWarmupPlanOutput{
		"S3.6.1-grid-shape": edit(func(o *spec.DeepGEMMWarmupPlanOutput) { o.Plans[0].MGrid[0], o.Plans[0].MGrid[1] = 2, 1 }),
		"S3.6.2-dense-head": edit(func(o *spec.DeepGEMMWarmupPlanOutput) {
			o.Plans[0].MGrid = slices.Delete(o.Plans[0].MGrid, 4, 5)
		}),
		"S3.6.3-manifest-round-trip":              edit(func(o *spec.DeepGEMMWarmupPlanOutput) { o.Manifest = manifest("not-the-key") }),
		"S3.6.4-hit-never-writes-other-keys-kept": edit(func(o *spec.DeepGEMMWarmupPlanOutput) { o.Manifest = manifest(good.Plans[0].Key) }),
		"S3.6.5-import-sees-prepared-env":         edit(func(o *spec.DeepGEMMWarmupPlanOutput) { o.Imported.CacheDir = "/stale" }),
		"launches-iff-replayed":                   edit(func(o *spec.DeepGEMMWarmupPlanOutput) { o.Plans[0].Launches = 16384 }),
		"log-levels":                              edit(func(o *spec.DeepGEMMWarmupPlanOutput) { o.Logs[0].Level = "ERROR" }),
	}
	for _, p := range sp.Props {
		if err := p.Holds(spec.DefaultLimits(), in, good); err != nil {
			t.Errorf("%s fails on ref's plan: %v", p.Name, err)
		}
		bad, ok := broken[p.Name]
		if !ok {
			t.Errorf("no broken plan for property %s", p.Name)
			continue
		}
		if propHolds(t, sp.Props, p.Name, in, bad) == nil {
			t.Errorf("%s holds on the broken plan", p.Name)
		}
	}
}
