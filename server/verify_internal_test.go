package server

import (
	"fmt"
	"log/slog"
	"testing"
)

// TestVerifySamplesTheSameRequestIDAlike: a request id is sampled by its
// hash alone, so two verifiers (two processes, two salts) sample the same
// ids, and at rate 0.5 about half of 2,000 ids; requests without an id
// are sampled at the rate too.
func TestVerifySamplesTheSameRequestIDAlike(t *testing.T) {
	cfg := DefaultVerifyConfig()
	cfg.Rate = 0.5
	a, _ := newVerifier(cfg, DefaultLimits(), slog.New(slog.DiscardHandler))
	b, _ := newVerifier(cfg, DefaultLimits(), slog.New(slog.DiscardHandler))
	if a.salt == b.salt {
		t.Fatal("two verifiers drew the same salt")
	}
	n, anon := 0, 0
	for i := range 2000 {
		id := fmt.Sprint("req-", i)
		if a.sampled(id) != b.sampled(id) {
			t.Fatalf("%s sampled by one verifier and not the other", id)
		}
		if a.sampled(id) {
			n++
		}
		if a.sampled("") {
			anon++
		}
	}
	for _, c := range []int{n, anon} {
		if c < 900 || c > 1100 {
			t.Errorf("sampled %d and %d (without ids) of 2000 at rate 0.5", n, anon)
		}
	}
}
