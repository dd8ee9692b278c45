package fast_test

import (
	"testing"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// The CP shapes (bs=10, cp=8, 656-byte FP8 MLA rows, page-granular
// padding) measured on the row moves alone, into preallocated buffers as
// production reuses them, beside ref's op and a plain copy of the bytes.
// Run: go test -run '^$' -bench 'CPRerange128K|CPCompact128K' -benchmem ./fast/

// rerange128K is 128K gathered rows (16K per rank at stride M = R(r)).
func rerange128K(b *testing.B) (spec.Layout, spec.CPRerangeInput) {
	sp := cpLayout(13 << 10)
	sp.Lens[8], sp.Lens[9] = 12<<10-37*9, 12<<10-37*10 // Σ C_i = 128K rows
	lay := mustBuild(b, sp)
	return lay, spec.CPRerangeInput{Layout: sp, G: rows(656, lay.CP*lay.R(0)), M: lay.R(0)}
}

// compact128K is one rank's 128K local rows of a 1M-row batch.
func compact128K(b *testing.B) (spec.Layout, spec.CPCompactValidInput) {
	sp := cpLayout(103 << 10)
	for i := 4; i < 10; i++ {
		sp.Lens[i] = 102<<10 - 37*(i+1) // Σ C_i = 1M rows, 128K per rank
	}
	lay := mustBuild(b, sp)
	return lay, spec.CPCompactValidInput{Layout: sp, Rank: 3, X: rows(656, lay.R(3))}
}

func BenchmarkCPRerange128K(b *testing.B) {
	lay, in := rerange128K(b)
	dst := ref.NewRows(656, lay.TotalValid())
	b.Run("ref", func(b *testing.B) {
		b.SetBytes(int64(len(dst.B)))
		for b.Loop() {
			_, _ = ref.CPRerange(spec.DefaultLimits(), in)
		}
	})
	b.Run("fast-op", func(b *testing.B) {
		b.SetBytes(int64(len(dst.B)))
		for b.Loop() {
			_, _ = fast.CPRerange(spec.DefaultLimits(), in)
		}
	})
	b.Run("fast-into", func(b *testing.B) {
		b.SetBytes(int64(len(dst.B)))
		for b.Loop() {
			_ = fast.RerangeInto(dst, lay, in.G, in.M, spec.SrcCompute)
		}
	})
	b.Run("copy", func(b *testing.B) {
		b.SetBytes(int64(len(dst.B)))
		for b.Loop() {
			copy(dst.B, in.G.B)
		}
	})
}

func BenchmarkCPCompact128K(b *testing.B) {
	lay, in := compact128K(b)
	dst := ref.NewRows(656, lay.Rv(3))
	b.Run("ref", func(b *testing.B) {
		b.SetBytes(int64(len(dst.B)))
		for b.Loop() {
			_, _ = ref.CPCompactValid(spec.DefaultLimits(), in)
		}
	})
	b.Run("fast-op", func(b *testing.B) {
		b.SetBytes(int64(len(dst.B)))
		for b.Loop() {
			_, _ = fast.CPCompactValid(spec.DefaultLimits(), in)
		}
	})
	b.Run("fast-into", func(b *testing.B) {
		b.SetBytes(int64(len(dst.B)))
		for b.Loop() {
			_ = fast.CompactValidInto(dst, lay, 3, in.X)
		}
	})
	b.Run("copy", func(b *testing.B) {
		b.SetBytes(int64(len(dst.B)))
		for b.Loop() {
			copy(dst.B, in.X.B)
		}
	})
}
