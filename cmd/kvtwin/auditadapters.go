package main

import (
	"fmt"
	"io"
	"sync"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fixtures"
	"github.com/kvtwin/kvtwin/remote"
)

// This file is what the audit makes of an outside implementation that
// stops answering or misbehaves outside any call (docs/adapters.md "The
// breaker", "stderr"): ops its breaker made unavailable, whose remaining
// cases are not sent, and the processes an exec adapter ran, with the end
// of their stderr.

// maxUnavailableAfter bounds --unavailable-after: a hung op costs that
// many timeouts.
const maxUnavailableAfter = 1000

// adapterReport is one outside implementation's processes as the report
// keeps them (remote.Log: each kept process's end and stderr ring).
type adapterReport struct {
	// Impl is the --impl target.
	Impl string `json:"impl"`
	// Shard is the index of the shard whose audit ran the processes (0
	// when unsharded); a merged report keeps every shard's.
	Shard int `json:"shard"`
	remote.Log
}

// opPassed is an op × implementation row's verdict: no mismatch, no
// transport error, and available to the end.
func opPassed(r opResult) bool {
	return r.Mismatches == 0 && r.TransportErrors == 0 && r.Unavailable == ""
}

// adaptersPassed reports whether no adapter failed outside every call (a
// reply nobody asked for, an exit between calls): such a failure reaches
// no case, so it fails the audit here.
func adaptersPassed(as []adapterReport) bool {
	for _, a := range as {
		if a.Unattributed > 0 {
			return false
		}
	}
	return true
}

// collectAdapters closes every outside implementation, so that each
// process's end is recorded, and returns the logs of those that ran
// processes.
func collectAdapters(rs []remote.Impl, shard int) []adapterReport {
	var out []adapterReport
	for _, r := range rs {
		_ = r.Close()
		if log := r.Log(); log.Runs > 0 {
			out = append(out, adapterReport{Impl: r.Name(), Shard: shard, Log: log})
		}
	}
	return out
}

// mergeUnavailable folds a shard's unavailable op into the merged row: the
// op is unavailable when any shard found it so, and the cases not sent
// add up.
func mergeUnavailable(m *opResult, o opResult) {
	m.NotSent += o.NotSent
	if m.Unavailable == "" {
		m.Unavailable = o.Unavailable
	}
}

// printAdapters writes the text report's lines about unavailable ops and
// adapters: each unavailable op with its reason, each adapter that was
// restarted or failed outside a call.
func printAdapters(w io.Writer, rep auditReport) {
	for _, r := range rep.Ops {
		if r.Unavailable != "" {
			fmt.Fprintf(w, "\nUNAVAILABLE: %s on %s: %s; %d cases not sent\n", r.Op, r.Impl, r.Unavailable, r.NotSent)
		}
	}
	for _, a := range rep.Adapters {
		if a.Unattributed > 0 {
			fmt.Fprintf(w, "\nADAPTER FAILED: %s: %d failures outside every call, which no case carries (the first: %s)\n", a.Impl, a.Unattributed, a.FirstUnattributed)
		}
		if a.Runs > 1 || a.Unattributed > 0 {
			fmt.Fprintf(w, "\nadapter %s: %d processes (%d restarts); how each ended and the end of its stderr are in the --json and --html reports\n", a.Impl, a.Runs, a.Runs-1)
		}
	}
}

// notSentGate passes an audit unit's calls to its outside implementation
// and remembers the inputs the breaker refused unsent, so the audit counts
// those cases as not sent rather than as transport errors. A refused
// input is forgotten when taken. Safe for concurrent use.
type notSentGate struct {
	remote.Impl
	mu      sync.Mutex
	refused map[string]int
}

func newNotSentGate(r remote.Impl) *notSentGate {
	return &notSentGate{Impl: r, refused: map[string]int{}}
}

// Run implements fixtures.Runner.
func (g *notSentGate) Run(op string, in []byte) (fixtures.Result, error) {
	res, err := g.Impl.Run(op, in)
	if remote.KindOf(err) == remote.KindUnavailable {
		g.mu.Lock()
		g.refused[string(in)]++
		g.mu.Unlock()
	}
	return res, err
}

// take reports whether f is the failure of a call the breaker refused
// (its input, canonical as the call's, was refused and not yet taken).
func (g *notSentGate) take(f *equiv.Failure) bool {
	if f == nil || !f.Transport {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	key := string(f.Input)
	n := g.refused[key]
	switch {
	case n == 0:
		return false
	case n == 1:
		delete(g.refused, key)
	default:
		g.refused[key] = n - 1
	}
	return true
}
