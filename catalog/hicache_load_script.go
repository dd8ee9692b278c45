package catalog

import (
	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// HiCacheLoadScript registers hicache.load_script (docs/spec/radix-acks.md §5.2): load
// operations run through prepared descriptors, with misuse steps, giving
// each op's runs, builds and refusals, the fallback log and the device bytes.
func HiCacheLoadScript() *Op[spec.HiCacheLoadScriptInput, spec.HiCacheLoadScriptOutput] {
	return &Op[spec.HiCacheLoadScriptInput, spec.HiCacheLoadScriptOutput]{
		OpName:  "hicache.load_script",
		SpecRef: "radix-acks.md §5.2",
		Summary: "prepared H2D load descriptors: begin, submit every layer (MLA KV + active NSA index), end; runs, builds, fallbacks, device bytes",
		Ref:     ref.HiCacheLoadScript,
		Fast:    fast.HiCacheLoadScript,
		// Per op a trace entry (runs, misuse results and the three after-end
		// probes' error objects): about 7 output bytes per request byte for
		// real ops, bounded by the op list. Measured with the harness's limits
		// on 1 MiB of the golden ops repeated: 87 B per request byte (fast),
		// 85 (ref). Empty ops ({}) cost 729 B and answer 92 bytes per request
		// byte, past the server's 64× output ratio: a trace bound is owed
		// there, and this Cost deliberately does not cover it.
		Work:   Cost{PerInputByte: 128, PerOutputByte: 8, Fixed: 4 << 20},
		Sample: LoadWorkedExample(),
		Shapes: []Shape[spec.HiCacheLoadScriptInput]{
			// Whole scripts also allocate and fill the arenas; the build and
			// per-layer submit times alone are Go benchmarks on the loaders
			// (fast/hicache_loader_bench_test.go).
			{Name: "61-layers-1K-pages-16-runs", Make: func() spec.HiCacheLoadScriptInput { return LoadBenchScript(61, 1024, 16) }},
			{Name: "79-layers-4K-pages-1024-runs", Make: func() spec.HiCacheLoadScriptInput { return LoadBenchScript(79, 4096, 1024) }},
		},
	}
}

// LoadWorkedExample is docs/spec/radix-acks.md §5.2's worked example (ps = 4, host
// pages [2,3,0] to device pages [10,11,12]) over 3 layers, layer 1 with an
// index slot.
func LoadWorkedExample() spec.HiCacheLoadScriptInput {
	return spec.HiCacheLoadScriptInput{
		Pools: spec.LoadPools{Layers: 3, HostSlots: 16, DevSlots: 52, KVBytes: 1, IndexBytes: 1, IndexLayers: []int{1}},
		Ops: []spec.LoadOp{{
			OpID:     1,
			HostIdx:  []spec.SlotIdx{8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3},
			DevIdx:   []spec.SlotIdx{40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51},
			PageSize: 4,
		}},
	}
}

// LoadBenchScript is one load op of pages pages (page size 4, 8 KV bytes
// per token, every fourth layer indexed) split into runs runs: run r takes
// host pages from the pool's far end backwards, so no two runs join.
func LoadBenchScript(layers, pages, runs int) spec.HiCacheLoadScriptInput {
	const ps = 4
	p := spec.LoadPools{Layers: layers, HostSlots: int64(2 * pages * ps), DevSlots: int64(pages * ps), KVBytes: 8, IndexBytes: 2}
	for l := 0; l < layers; l += 4 {
		p.IndexLayers = append(p.IndexLayers, l)
	}
	host, dev := loadBenchPages(pages, runs)
	op := spec.LoadOp{OpID: 1, PageSize: ps}
	for k := range host {
		for j := range int64(ps) {
			op.HostIdx = append(op.HostIdx, host[k]*ps+j)
			op.DevIdx = append(op.DevIdx, dev[k]*ps+j)
		}
	}
	return spec.HiCacheLoadScriptInput{Pools: p, Ops: []spec.LoadOp{op}}
}

// loadBenchPages returns page lists of pages pages in runs runs (runs
// divides pages): device pages ascend, host runs are laid out in reverse
// with a gap between them.
func loadBenchPages(pages, runs int) (host, dev []int64) {
	per := pages / runs
	for r := range runs {
		start := int64((runs-1-r)*per*2 + 1)
		if runs == 1 {
			start = 0
		}
		for i := range per {
			host = append(host, start+int64(i))
			dev = append(dev, int64(r*per+i))
		}
	}
	return host, dev
}
