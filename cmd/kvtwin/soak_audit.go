package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"
)

// This file runs the soak's adapter audit beside the load (issue 27):
// `kvtwin audit --impl exec:…` of the Python kit's example adapter
// (adapters/python/example.py, docs/adapters.md), started from the soak's
// own binary again and again for the whole run. Every run must pass: the
// audit, its adapter and the reference must keep agreeing while the
// machine is loaded, and a run that fails names its seed to reproduce it.

// auditConfig is the audit's part of soakConfig.
type auditConfig struct {
	on       bool
	impl     string        // "": the Python example, found like the publisher script
	cases    int           // --cases of each run
	interval time.Duration // a new run starts at most this often
	timeout  time.Duration // one run's limit
}

// validate bounds the audit's settings.
func (c auditConfig) validate() error {
	switch {
	case !c.on:
		return nil
	case c.cases < 1 || c.cases > 100000:
		return fmt.Errorf("--audit-cases %d: want 1 to 100000", c.cases)
	case c.interval < 0 || c.timeout <= 0:
		return errors.New("--audit-interval must be >= 0 and --audit-timeout > 0")
	}
	return nil
}

// maxAuditOutput bounds the JSON report of one audit run the soak keeps: a
// passing run of the example's three ops is a few KiB, and a failing one
// quotes at most --max-failures inputs per op.
const maxAuditOutput = 16 << 20

// auditRun is one finished audit run.
type auditRun struct {
	seed   uint64
	dur    time.Duration
	passed bool
	ops    int
	detail string // why it failed
}

// auditRuns collects the runs; safe for concurrent use.
type auditRuns struct {
	mu   sync.Mutex
	runs []auditRun
}

func (a *auditRuns) add(run auditRun) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.runs = append(a.runs, run)
}

func (a *auditRuns) snapshot() []auditRun {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.runs)
}

// auditLoop starts an audit run every cfg.audit.interval until runCtx
// ends. A run still going then is waited for (it is bounded by
// --audit-timeout) so that every run started is judged; procCtx, the
// whole soak's, kills it on an interrupt.
func (r *soakRun) auditLoop(runCtx, procCtx context.Context) {
	for i := uint64(0); runCtx.Err() == nil; i++ {
		start := time.Now()
		run := r.auditOnce(procCtx, r.cfg.seed*1_000_003+i)
		if procCtx.Err() != nil {
			return // interrupted: the run says nothing about the adapter
		}
		r.audits.add(run)
		if !run.passed {
			r.fail(fmt.Sprintf("audit run %d (seed %d, %s) failed: %s", i+1, run.seed, run.dur.Round(time.Millisecond), run.detail))
		}
		sleepCtx(runCtx, r.cfg.audit.interval-time.Since(start))
	}
}

// auditOnce runs `bin audit --impl IMPL --cases N --seed SEED --json` and judges it.
func (r *soakRun) auditOnce(ctx context.Context, seed uint64) auditRun {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.audit.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.cfg.bin, "audit", "--impl", r.cfg.audit.impl, "--cases", fmt.Sprint(r.cfg.audit.cases),
		"--seed", fmt.Sprint(seed), "--json", "--no-progress")
	cmd.SysProcAttr = childSysProcAttr()
	cmd.WaitDelay = 5 * time.Second // an adapter left holding the pipes
	stdout := &capBuffer{max: maxAuditOutput}
	stderr := newLogRing()
	cmd.Stdout, cmd.Stderr = stdout, ringWriter{stderr}
	start := time.Now()
	err := cmd.Run()
	run := auditRun{seed: seed, dur: time.Since(start)}
	var rep auditReport
	jerr := json.Unmarshal(stdout.buf.Bytes(), &rep)
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		run.detail = fmt.Sprintf("no result within --audit-timeout %s", r.cfg.audit.timeout)
	case jerr != nil:
		run.detail = fmt.Sprintf("exit %v, no JSON report (%v; %d bytes): %s", err, jerr, stdout.total, stderr.tail(3))
	case err != nil || !rep.Passed:
		run.detail = fmt.Sprintf("exit %v: %s", err, auditFailures(rep))
	case len(rep.Ops) == 0:
		run.detail = "the adapter declared no op: nothing was audited"
	default:
		run.passed = true
	}
	run.ops = len(rep.Ops)
	return run
}

// auditFailures names the failed rows of a report.
func auditFailures(rep auditReport) string {
	var out []string
	for _, o := range rep.Ops {
		if !o.Passed {
			out = append(out, fmt.Sprintf("%s × %s: %d mismatches, %d transport errors", o.Op, o.Impl, o.Mismatches, o.TransportErrors))
		}
	}
	if len(out) == 0 {
		return "the report says it failed, with no failed op"
	}
	return strings.Join(out, "; ")
}

// capBuffer keeps the first max bytes written and counts them all.
type capBuffer struct {
	buf   bytes.Buffer
	max   int
	total int64
}

func (c *capBuffer) Write(p []byte) (int, error) {
	c.total += int64(len(p))
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// ringWriter keeps the lines written to it in a logRing.
type ringWriter struct{ r *logRing }

func (w ringWriter) Write(p []byte) (int, error) {
	for line := range bytes.Lines(p) {
		if l := bytes.TrimRight(line, "\n"); len(l) > 0 {
			w.r.add(string(l[:min(len(l), maxLogLine)]))
		}
	}
	return len(p), nil
}

// auditReportSummary is the audit part of a soak report.
type auditReportSummary struct {
	// Impl is the adapter audited; Cases the generated cases per op of a run.
	Impl  string `json:"impl"`
	Cases int    `json:"cases"`
	// Runs counts the finished runs, Passed and Failed split them.
	Runs   int `json:"runs"`
	Passed int `json:"passed"`
	Failed int `json:"failed"`
	// Ops is the ops the last run audited.
	Ops int `json:"ops"`
	// P50Ms and MaxMs are the runs' durations.
	P50Ms float64 `json:"p50_ms"`
	MaxMs float64 `json:"max_ms"`
	// FailedSeeds reproduce the failed runs (kvtwin audit --seed).
	FailedSeeds []uint64 `json:"failed_seeds,omitempty"`
}

// auditSummary summarises the runs.
func (r *soakRun) auditSummary() *auditReportSummary {
	runs := r.audits.snapshot()
	s := &auditReportSummary{Impl: r.cfg.audit.impl, Cases: r.cfg.audit.cases, Runs: len(runs)}
	var durs []time.Duration
	for _, run := range runs {
		durs = append(durs, run.dur)
		s.Ops = run.ops
		if run.passed {
			s.Passed++
		} else {
			s.Failed++
			s.FailedSeeds = append(s.FailedSeeds, run.seed)
		}
	}
	if len(durs) > 0 {
		slices.Sort(durs)
		s.P50Ms, s.MaxMs = ms(durs[len(durs)/2]), ms(durs[len(durs)-1])
	}
	return s
}

// writeText renders the audit line of the text report.
func (s *auditReportSummary) writeText(w io.Writer) {
	fmt.Fprintf(w, "\naudit: %d runs (%d passed, %d failed) of %d ops × %d cases, %.0f ms median, %.0f ms max: %s\n",
		s.Runs, s.Passed, s.Failed, s.Ops, s.Cases, s.P50Ms, s.MaxMs, s.Impl)
}
