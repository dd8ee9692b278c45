package scaleout

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"os"
	"testing"
)

// testLogger fails the test on every log line at error level (the relay
// and replica log there only for states they never expect) and shows the
// others with -v when KVEVJS_LOG is set.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(&tHandler{t: t, verbose: os.Getenv("KVEVJS_LOG") != ""})
}

type tHandler struct {
	t       testing.TB
	verbose bool
	quiet   bool // never fail
	attrs   []slog.Attr
}

func (h *tHandler) Enabled(_ context.Context, l slog.Level) bool {
	return h.verbose || l >= slog.LevelError && !h.quiet
}

func (h *tHandler) Handle(_ context.Context, r slog.Record) error {
	msg := r.Message
	for _, a := range h.attrs {
		msg += " " + a.String()
	}
	r.Attrs(func(a slog.Attr) bool { msg += " " + a.String(); return true })
	if r.Level >= slog.LevelError && !h.quiet {
		h.t.Errorf("logged at %v: %s", r.Level, msg)
	} else {
		h.t.Logf("%v: %s", r.Level, msg)
	}
	return nil
}

func (h *tHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &tHandler{t: h.t, verbose: h.verbose, quiet: h.quiet, attrs: append(append([]slog.Attr{}, h.attrs...), as...)}
}

func (h *tHandler) WithGroup(string) slog.Handler { return h }

// quietLogger is testLogger for tests that provoke error-level lines on
// purpose: every line is only shown (with KVEVJS_LOG set).
func quietLogger(t testing.TB) *slog.Logger {
	return slog.New(&tHandler{t: t, verbose: os.Getenv("KVEVJS_LOG") != "", quiet: true})
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed+1)) }
