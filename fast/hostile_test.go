package fast_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/kvtwin/kvtwin/spec"
)

// twinResult is one twin's answer in canonical form: the output's JSON, or
// the rejection's canonical error object, or the panic it raised.
type twinResult struct {
	canon []byte
	err   error
	panic any
}

// runBounded runs f in a goroutine of its own and fails t when it panics or
// outlives a second: a hostile number must be rejected before it sizes a
// loop, so a hang is a failure to report, not one to wait out.
func runBounded[In, Out any](t *testing.T, name string, f func(spec.Limits, In) (Out, error), lim spec.Limits, in In) twinResult {
	t.Helper()
	done := make(chan twinResult, 1)
	go func() {
		var r twinResult
		defer func() {
			r.panic = recover()
			done <- r
		}()
		out, err := f(lim, in)
		r.err = err
		if err != nil {
			r.canon, _ = json.Marshal(spec.ErrorObjectOf(err))
		} else {
			r.canon, _ = json.Marshal(out)
		}
	}()
	select {
	case r := <-done:
		if r.panic != nil {
			t.Errorf("%s: panic: %v", name, r.panic)
		}
		return r
	case <-time.After(time.Second):
		t.Errorf("%s: still running after 1s", name)
		return twinResult{panic: "hang"}
	}
}

// sameAsRef requires fast to answer in as ref does, byte for byte, neither
// panicking nor hanging, and returns ref's error.
func sameAsRef[In, Out any](t *testing.T, name string, r, f func(spec.Limits, In) (Out, error), lim spec.Limits, in In) error {
	t.Helper()
	want := runBounded(t, name+" on ref", r, lim, in)
	got := runBounded(t, name+" on fast", f, lim, in)
	if want.panic == nil && got.panic == nil && !bytes.Equal(want.canon, got.canon) {
		t.Errorf("%s: fast differs from ref:\nref  %.300s\nfast %.300s", name, want.canon, got.canon)
	}
	return want.err
}

// hostileName names a hostile case by its input.
func hostileName(in any) string {
	b, _ := json.Marshal(in)
	return fmt.Sprintf("%.200s", b)
}
