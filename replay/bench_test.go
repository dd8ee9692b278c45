package replay

import (
	"testing"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/spec"
)

// benchTree is the tree the benchmarks measure: the production tree.
var benchTree spec.NewRadixTreeFunc = fast.NewRadixTree

// benchCapacityTokens is the mixed benchmark's pool: 4 Mi tokens (8,192
// blocks), small enough that the full trace evicts throughout.
const benchCapacityTokens = 4 << 20

// benchTrace is the full trace when present, the sample otherwise; it says
// which through b.Log.
func benchTrace(b *testing.B) []Request {
	b.Helper()
	p, ok := fullTracePath(b)
	if !ok {
		b.Logf("full trace absent (no %s beside the module root or above it): benchmarking the 500-line sample", fullTraceName)
		return readSample(b)
	}
	reqs, err := ReadFile(p, DefaultLimits())
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("full trace: %s, %d requests", p, len(reqs))
	return reqs
}

// BenchmarkReplayBlocks measures blocks-mode block operations per second
// (see Report) on one goroutine:
//
//   - queries: read-only PrefixLen of every request against the tree an
//     unlimited replay leaves, so every query walks its whole prompt;
//   - mixed: the whole replay (match, lock, evict, insert, unlock) into a
//     fresh tree with a benchCapacityTokens pool, tree construction included.
func BenchmarkReplayBlocks(b *testing.B) {
	reqs := benchTrace(b)
	b.Run("queries", func(b *testing.B) {
		r, err := resolve(Config{Mode: ModeBlocks, NewTree: benchTree})
		if err != nil {
			b.Fatal(err)
		}
		tree, _, _, err := mixed(reqs, r)
		if err != nil {
			b.Fatal(err)
		}
		var rep Report
		if err := queries(tree, reqs, r, &rep); err != nil {
			b.Fatal(err)
		}
		keys := make([]spec.RadixKey, len(reqs))
		for i, req := range reqs {
			keys[i] = BlockKey(req)
		}
		b.ResetTimer()
		for b.Loop() {
			for _, k := range keys {
				if _, err := tree.PrefixLen(k); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(rep.QueryBlockOps)*float64(b.N)/b.Elapsed().Seconds(), "block-ops/s")
	})
	b.Run("mixed", func(b *testing.B) {
		r, err := resolve(Config{Mode: ModeBlocks, CapacityTokens: benchCapacityTokens, NewTree: benchTree})
		if err != nil {
			b.Fatal(err)
		}
		var rep Report
		for b.Loop() {
			if _, rep, _, err = mixed(reqs, r); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(rep.MixedBlockOps)*float64(b.N)/b.Elapsed().Seconds(), "block-ops/s")
	})
}
