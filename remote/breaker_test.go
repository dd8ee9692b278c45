package remote

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBreakerOpensAfterFailuresInARowAndOnlyThen pins the breaker's
// counting by hand: failures count once per event, any usable answer
// resets the run, and the bound-th failure in a row opens it for good.
func TestBreakerOpensAfterFailuresInARowAndOnlyThen(t *testing.T) {
	timeout := &TransportError{Op: "x", Kind: KindTimeout, Reason: "no reply"}
	b := newBreaker(3)
	for _, step := range []struct {
		event uint64
		err   error
		open  bool
	}{
		{1, timeout, false},
		{1, timeout, false}, // a call in flight beside it: the same event
		{2, timeout, false},
		{3, nil, false}, // an answer resets the run
		{4, timeout, false},
		{5, errors.New("x: op not implemented"), false}, // not a transport error: an answer
		{6, timeout, false},
		{7, timeout, false},
		{8, timeout, true},
		{9, nil, true}, // open for good
	} {
		b.record("x", step.event, step.err)
		if _, open := b.unavailable("x"); open != step.open {
			t.Fatalf("after event %d (%v): open %v, want %v", step.event, step.err, open, step.open)
		}
	}
	if _, open := b.unavailable("y"); open {
		t.Error("another op is unavailable too")
	}
	err := b.refuse("x")
	if KindOf(err) != KindUnavailable || !strings.Contains(err.Error(), "3 failures in a row without a usable answer (the last: x: timeout: no reply)") {
		t.Errorf("refusal %v", err)
	}
}

// TestHungOpIsUnavailableAfterThreeTimeoutsOverExecAndHTTP: an op that
// never answers costs three timeouts, however many calls follow and however
// many are in flight at once, and the adapter's other ops still answer.
func TestHungOpIsUnavailableAfterThreeTimeoutsOverExecAndHTTP(t *testing.T) {
	const timeout = 200 * time.Millisecond
	o := Options{Timeout: timeout, UnavailableAfter: 3}
	viaHTTP, err := Open(hostileHTTP(t).URL, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = viaHTTP.Close() })
	for _, r := range []Impl{openRole(t, o), viaHTTP} {
		start := time.Now()
		var wg sync.WaitGroup
		kinds := make([]Kind, 40)
		for w := range 4 { // four calls in flight at a time
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < len(kinds); i += 4 {
					_, err := r.Run("silent", []byte(`{}`))
					kinds[i] = KindOf(err)
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		count := map[Kind]int{}
		for _, k := range kinds {
			count[k]++
		}
		if count[KindTimeout]+count[KindExited] == 0 || count[KindUnavailable] < 40-3*4 || count[""] != 0 {
			t.Errorf("%s: outcomes %v, want timeouts then unavailable", r.Name(), count)
		}
		// three rounds of timeouts; the generous slack is a loaded machine's
		// process starts, well below the 10 rounds (2 s) the calls would take
		if elapsed > 3*timeout+1200*time.Millisecond {
			t.Errorf("%s: 40 calls of a hung op took %s, want at most 3 × %s plus slack", r.Name(), elapsed, timeout)
		}
		if reason, ok := r.Unavailable("silent"); !ok || !strings.Contains(reason, "3 failures in a row") {
			t.Errorf("%s: Unavailable = %q, %v", r.Name(), reason, ok)
		}
		if res, err := r.Run("echo", []byte(`{"ok":1}`)); err != nil || string(res.Bytes) != `{"ok":1}` {
			t.Errorf("%s: another op after the breaker opened: %s, %v", r.Name(), res.Bytes, err)
		}
	}
}
