package ref

import (
	"math"
	"os"
	"runtime"
	"sort"
	"sync"
	"testing"

	"github.com/kvtwin/kvtwin/spec"
)

// The worked enc values of docs/spec/cp-layout.md §0.4.
func TestEncodeE4M3MatchesTheWorkedValues(t *testing.T) {
	inf := float32(math.Inf(1))
	for _, c := range []struct {
		x    float32
		code uint8
	}{
		{1.0, 0x38}, {0.3, 0x2A}, {-3.7, 0xC7}, {1.0625, 0x38}, {1.1875, 0x3A}, {17, 0x58},
		{240, 0x77}, {250, 0x78}, {448, 0x7E}, {464, 0x7E}, {465, 0x7E}, {500, 0x7E}, {inf, 0x7E},
		{-448, 0xFE}, {-inf, 0xFE}, {float32(math.NaN()), 0x7F}, {0, 0x00},
		{float32(math.Copysign(0, -1)), 0x80}, {1.0 / 512, 0x01}, {1.0 / 1024, 0x00},
		{3.0 / 1024, 0x02}, {0.015, 0x08},
	} {
		if got := EncodeE4M3(c.x); got != c.code {
			t.Errorf("enc(%g) = %#02x, want %#02x", c.x, got, c.code)
		}
	}
	for _, c := range []struct {
		code uint8
		v    float32
	}{{0x2A, 0.3125}, {0xC7, -3.75}, {0x58, 16}, {0x78, 256}, {0x7E, 448}, {0x01, 1.0 / 512}, {0x08, 1.0 / 64}} {
		if got := DecodeE4M3(c.code); got != c.v {
			t.Errorf("dec(%#02x) = %g, want %g", c.code, got, c.v)
		}
	}
}

// All 256 codes: every non-NaN code round-trips, the two NaN codes decode
// to NaN, and decoding is strictly increasing over the positive codes.
func TestE4M3AllCodesRoundTrip(t *testing.T) {
	prev := float32(-1)
	for c := range 256 {
		code := uint8(c)
		v := DecodeE4M3(code)
		if code&0x7F == 0x7F {
			if !math.IsNaN(float64(v)) || EncodeE4M3(v) != spec.E4M3NaN {
				t.Fatalf("code %#02x: dec %g, enc(dec) %#02x", code, v, EncodeE4M3(v))
			}
			continue
		}
		if got := EncodeE4M3(v); got != code {
			t.Fatalf("enc(dec(%#02x) = %g) = %#02x", code, v, got)
		}
		if code < 0x7F {
			if v <= prev && code != 0 {
				t.Fatalf("dec not increasing at %#02x", code)
			}
			prev = v
		}
	}
}

// All 65,536 bf16 values: widening then rounding back is the identity,
// except that every NaN becomes the canonical NaN.
func TestBF16AllValuesRoundTrip(t *testing.T) {
	for h := range 1 << 16 {
		b := uint16(h)
		got := BF16FromF32(F32FromBF16(b))
		want := b
		if b&0x7FFF > 0x7F80 {
			want = bf16CanonicalNaN
		}
		if got != want {
			t.Fatalf("bf16 %#04x → %#04x, want %#04x", b, got, want)
		}
	}
}

// oracleE4M3 is an independent encoder for the exhaustive test: the
// nearest of the 127 non-negative finite values by float64 distance, ties
// to the even code, saturating at 448.
func oracleE4M3(x float32, values []float64) uint8 {
	if math.IsNaN(float64(x)) {
		return spec.E4M3NaN
	}
	sign := uint8(0)
	if math.Signbit(float64(x)) {
		sign = 0x80
	}
	a := math.Abs(float64(x))
	i := sort.SearchFloat64s(values, a) // first value >= a
	var code int
	switch {
	case i == len(values):
		code = len(values) - 1
	case values[i] == a || i == 0:
		code = i
	default:
		lo, hi := a-values[i-1], values[i]-a
		code = i
		if lo < hi || lo == hi && (i-1)%2 == 0 {
			code = i - 1
		}
	}
	return uint8(code) | sign
}

// oracleBF16 rounds to the nearer bf16 neighbour by float64 distance, ties
// to the even one.
func oracleBF16(x float32) uint16 {
	if math.IsNaN(float64(x)) {
		return bf16CanonicalNaN
	}
	u := math.Float32bits(x)
	lo := uint16(u >> 16)
	if u&0xFFFF == 0 {
		return lo
	}
	hi := lo + 1
	dlo := math.Abs(float64(x) - float64(F32FromBF16(lo)))
	dhi := math.Abs(float64(F32FromBF16(hi)) - float64(x))
	if hi&0x7FFF == 0x7F80 { // rounding up reaches Inf: compare with the value 2^128 would have
		dhi = math.Abs(math.Ldexp(1, 128) - math.Abs(float64(x)))
	}
	if dlo < dhi || dlo == dhi && lo&1 == 0 {
		return lo
	}
	return hi
}

// TestCodecsAgreeWithOraclesOnEveryFloat32 checks EncodeE4M3 and
// BF16FromF32 against independent oracles on all 2^32 fp32 bit patterns.
// It runs under `make test-long` (KVTWIN_LONG=1); a sample of every
// 65,521st pattern runs always.
func TestCodecsAgreeWithOraclesOnEveryFloat32(t *testing.T) {
	values := make([]float64, 0, 127)
	for c := range 127 {
		values = append(values, float64(DecodeE4M3(uint8(c))))
	}
	step := uint64(65521)
	if os.Getenv("KVTWIN_LONG") == "1" {
		step = 1
	}
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	bad := make([]string, workers)
	for w := range workers {
		wg.Go(func() {
			for u := uint64(w) * step; u < 1<<32; u += uint64(workers) * step {
				x := math.Float32frombits(uint32(u))
				if got, want := EncodeE4M3(x), oracleE4M3(x, values); got != want {
					bad[w] = "e4m3 " + formatBits(uint32(u), uint32(got), uint32(want))
					return
				}
				if got, want := BF16FromF32(x), oracleBF16(x); got != want {
					bad[w] = "bf16 " + formatBits(uint32(u), uint32(got), uint32(want))
					return
				}
			}
		})
	}
	wg.Wait()
	for _, b := range bad {
		if b != "" {
			t.Fatal(b)
		}
	}
}

func formatBits(u, got, want uint32) string {
	const hex = "0123456789abcdef"
	f := func(v uint32) string {
		b := make([]byte, 8)
		for i := range b {
			b[7-i] = hex[v>>(4*i)&0xF]
		}
		return "0x" + string(b)
	}
	return "input " + f(u) + ": got " + f(got) + ", want " + f(want)
}
