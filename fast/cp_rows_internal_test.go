package fast

import (
	"bytes"
	"testing"
)

// TestRunMovesChunksMatchOneRange: a plan over 6 MiB (above
// parallelMinBytes, so cut into goroutine ranges that clip copies and pad
// fills mid-move) writes what one sequential range writes.
func TestRunMovesChunksMatchOneRange(t *testing.T) {
	const w, n = 48, 6 << 20 / 48
	src := make([]byte, n*w)
	for i := range src {
		src[i] = byte(i * 7)
	}
	pad := bytes.Repeat([]byte{0xEE, 0x11, 0x22}, w/3)
	var moves []move
	for d, s := 0, 0; d < n; {
		run := min(n-d, 1+(d*13)%4000)
		if d%3 == 0 {
			moves = append(moves, move{d: d * w, s: -1, n: run * w})
		} else {
			moves = append(moves, move{d: d * w, s: s * w, n: run * w})
			s = (s + run) % (n - 4000)
		}
		d += run
	}
	got, want := make([]byte, n*w), make([]byte, n*w)
	runMoves(got, src, pad, w, moves)
	runRange(want, src, pad, moves, 0, len(want))
	if !bytes.Equal(got, want) {
		t.Fatal("chunked plan differs from the sequential plan")
	}
}
