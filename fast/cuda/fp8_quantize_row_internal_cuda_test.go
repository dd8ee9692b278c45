//go:build cuda

package cuda

import (
	"math"
	"testing"
	"unsafe"

	"github.com/kvtwin/kvtwin/ref"
)

// TestE4M3EncoderMatchesRefOnEveryFloat32Class runs the kernels' encoder
// (fp8_quantize_row_encode_probe) on probes of every class of fp32 inputs:
// the e4m3 code of x is decided by its top 16 bits and, below them, only
// by where the low 16 bits lie (every rounding boundary, and the NaN/Inf
// split, has zero low 16 bits), so each top-16 pattern with low bits 0, 1,
// 0x7FFF, 0x8000, 0x8001 and 0xFFFF covers all 2^32 inputs. Each code must
// equal ref.EncodeE4M3's.
func TestE4M3EncoderMatchesRefOnEveryFloat32Class(t *testing.T) {
	lows := []uint32{0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF}
	x := make([]uint32, 0, (1<<16)*len(lows))
	for hi := range uint32(1 << 16) {
		for _, lo := range lows {
			x = append(x, hi<<16|lo)
		}
	}
	got := make([]byte, len(x))
	err := run("test.encode_probe", func(c *call) error {
		dx, err := c.upload(unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x)))
		if err != nil {
			return err
		}
		dout, err := c.alloc(int64(len(x)))
		if err != nil {
			return err
		}
		if err := c.launch("fp8_quantize_row_encode_probe", int64(len(x)), dout, dx, int64(len(x))); err != nil {
			return err
		}
		return c.download(got, dout)
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, u := range x {
		if want := ref.EncodeE4M3(math.Float32frombits(u)); got[i] != want {
			t.Fatalf("enc(%#08x) = %#02x on the device, ref %#02x", u, got[i], want)
		}
	}
}
