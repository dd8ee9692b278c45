package fast_test

import (
	"fmt"
	"testing"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// The §5.5 matrix: L ∈ {61, 79}, 1K–16K pages per op, page lists of 1, 16
// and 1,024 runs, fast against ref. The descriptor build (BeginLoad) and
// the per-layer submit are timed apart, as the seed's timing hooks are;
// one submit op is one layer (KV plus the index buffer on every fourth).
var loadBenchShapes = []struct{ layers, pages, runs int }{
	{61, 1024, 1}, {61, 1024, 16}, {61, 1024, 1024},
	{61, 16384, 1}, {61, 16384, 16}, {61, 16384, 1024},
	{79, 4096, 16}, {79, 16384, 1024},
}

var loadBenchTwins = []struct {
	name      string
	newLoader spec.NewLoaderFunc
}{{"ref", ref.NewLoader}, {"fast", fast.NewLoader}}

func BenchmarkLoadDescriptorBuild(b *testing.B) {
	for _, sh := range loadBenchShapes {
		p, op := loadBenchOp(sh.layers, sh.pages, sh.runs)
		for _, tw := range loadBenchTwins {
			b.Run(fmt.Sprintf("L%d/%dpages/%druns/%s", sh.layers, sh.pages, sh.runs, tw.name), func(b *testing.B) {
				ld, err := tw.newLoader(spec.DefaultLimits(), p)
				if err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if _, err := ld.BeginLoad(op.OpID, op.HostIdx, op.DevIdx, op.PageSize, spec.LoadBackend{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkLoadSubmitLayer(b *testing.B) {
	for _, sh := range loadBenchShapes {
		p, op := loadBenchOp(sh.layers, sh.pages, sh.runs)
		for _, tw := range loadBenchTwins {
			b.Run(fmt.Sprintf("L%d/%dpages/%druns/%s", sh.layers, sh.pages, sh.runs, tw.name), func(b *testing.B) {
				ld, err := tw.newLoader(spec.DefaultLimits(), p)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(sh.pages*op.PageSize) * p.KVBytes)
				var d spec.LoadDescriptor
				l := p.Layers
				for b.Loop() {
					if l == p.Layers {
						b.StopTimer()
						if d, err = ld.BeginLoad(op.OpID, op.HostIdx, op.DevIdx, op.PageSize, spec.LoadBackend{}); err != nil {
							b.Fatal(err)
						}
						l = 0
						b.StartTimer()
					}
					if err := d.SubmitLayer(op.OpID, l); err != nil {
						b.Fatal(err)
					}
					l++
				}
			})
		}
	}
}
