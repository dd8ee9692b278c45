package fast

import (
	"math"
	"testing"

	"github.com/kvtwin/kvtwin/ref"
)

// TestEncTabMatchesRef: the table encoder equals ref.EncodeE4M3 on every
// fp32 whose low 12 bits are one of a few patterns (all exponents, signs,
// the rounding bits 19..20 and the tie/sticky bits), on every bf16, and on
// the special values.
func TestEncTabMatchesRef(t *testing.T) {
	tab := e4m3Table()
	check := func(u uint32) {
		x := math.Float32frombits(u)
		if got, want := encTab(tab, x), ref.EncodeE4M3(x); got != want {
			t.Fatalf("enc(%#08x) = %#x, ref %#x", u, got, want)
		}
	}
	for hi := uint32(0); hi < 1<<20; hi++ {
		for _, lo := range []uint32{0, 1, 0x7FF, 0x800, 0xFFF} {
			check(hi<<12 | lo)
		}
	}
	for hi := uint32(0); hi < 1<<16; hi++ {
		for _, lo := range []uint32{0x8000, 0xFFFF, 0x0100} {
			check(hi<<16 | lo)
		}
	}
	for _, u := range []uint32{0x7F800000, 0xFF800000, 0x7FC00000, 0xFFFFFFFF, 0x3C7FFFFF, 0x3C800000, 0x43E00000, 0x43E80000, 0x43E80001} {
		check(u)
	}
}
