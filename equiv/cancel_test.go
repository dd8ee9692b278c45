package equiv_test

import (
	"errors"
	"testing"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/spec"
)

// A run whose Done is already closed stops with ErrCanceled on every twin
// of a polling op, before producing its output.
func TestPollingOpsStopWhenCanceled(t *testing.T) {
	done := make(chan struct{})
	close(done)
	lim := spec.DefaultLimits()
	lim.Done = done
	// The ops whose long loops poll spec.Limits.Canceled, so a run past the
	// server's OpTimeout stops and frees its slot: the fp8 pool gathers,
	// whose output (and work) reaches the output bound.
	for _, name := range []string{"fp8.materialize_pages", "fp8.compose_current"} {
		e, ok := catalog.Lookup(name)
		if !ok {
			t.Fatalf("no op %s", name)
		}
		for _, impl := range append([]catalog.Impl{catalog.Ref}, selectedImpls(t, e)...) {
			if _, err := e.Run(impl, lim, e.Example()); !errors.Is(err, spec.ErrCanceled) {
				t.Errorf("%s on %s with Done closed: %v, want ErrCanceled", name, impl, err)
			}
		}
	}
}
