package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kvtwin/kvtwin/equiv"
)

// shardSpec is part Index of Count of an audit: generated case i of every
// op × implementation, and mutant j of the bug zoo, belong to shard
// i mod Count (j mod Count); shard 0 also runs the tables. The partition
// depends only on the flags, so a campaign split over machines checks
// exactly the cases of one run.
type shardSpec struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// maxShards bounds --shard's n.
const maxShards = 1 << 16

func (s shardSpec) owns(i int) bool { return s.Count <= 1 || i%s.Count == s.Index }

// size is how many of n cases the shard owns.
func (s shardSpec) size(n int) int {
	if s.Count <= 1 {
		return n
	}
	k := n / s.Count
	if s.Index < n%s.Count {
		k++
	}
	return k
}

// resolveShard reads --shard i/n or, when the flag is absent, the array
// index and size a batch system gives each task: Kubernetes Indexed Jobs'
// JOB_COMPLETION_INDEX (with JOB_COMPLETION_COUNT, which the manifest sets
// from .spec.completions) or Slurm's SLURM_ARRAY_TASK_ID and
// SLURM_ARRAY_TASK_COUNT. No flag and no environment is the whole audit.
func resolveShard(flagValue string, getenv func(string) string) (shardSpec, error) {
	if flagValue != "" {
		i, n, ok := strings.Cut(flagValue, "/")
		if !ok {
			return shardSpec{}, fmt.Errorf("--shard %q: want i/n, e.g. 0/4", flagValue)
		}
		return parseShard("--shard", i, n)
	}
	for _, pair := range [][2]string{{"JOB_COMPLETION_INDEX", "JOB_COMPLETION_COUNT"}, {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT"}} {
		i, n := getenv(pair[0]), getenv(pair[1])
		switch {
		case i == "" && n == "":
			continue
		case i == "" || n == "":
			return shardSpec{}, fmt.Errorf("%s=%q and %s=%q: set both or neither", pair[0], i, pair[1], n)
		}
		return parseShard(pair[0]+"/"+pair[1], i, n)
	}
	return shardSpec{Index: 0, Count: 1}, nil
}

func parseShard(source, i, n string) (shardSpec, error) {
	idx, err1 := strconv.Atoi(strings.TrimSpace(i))
	cnt, err2 := strconv.Atoi(strings.TrimSpace(n))
	switch {
	case err1 != nil || err2 != nil:
		return shardSpec{}, fmt.Errorf("%s = %s/%s: want two integers", source, i, n)
	case cnt < 1 || cnt > maxShards:
		return shardSpec{}, fmt.Errorf("%s: shard count %d, want 1..%d", source, cnt, maxShards)
	case idx < 0 || idx >= cnt:
		return shardSpec{}, fmt.Errorf("%s: shard index %d, want 0..%d", source, idx, cnt-1)
	}
	return shardSpec{Index: idx, Count: cnt}, nil
}

func newAuditMergeCmd() *cobra.Command {
	var asJSON bool
	var maxFailures int
	var htmlPath, bench string
	cmd := &cobra.Command{
		Use:   "merge REPORT.json…",
		Short: "Combine the --json reports of every shard of an audit into one report and verdict",
		Long: `merge reads the reports of an audit run with --shard i/n (or a batch system's array
index) and --json, checks that they are the n shards of one audit (same seed, case count and
shard count, each index once), and prints the combined report: per op × implementation the
sum of cases, mismatches, transport errors and cases not sent (an op unavailable in any shard
is unavailable), every shard's adapter processes, the first failures in the order an unsharded run
meets them, and the shrink of the earliest failing case. Exit status 1 when the audit failed.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if maxFailures < 1 {
				return fmt.Errorf("--max-failures %d: want >= 1", maxFailures)
			}
			reps, err := readReports(args)
			if err != nil {
				return err
			}
			rep, err := mergeReports(reps, maxFailures)
			if err != nil {
				return err
			}
			if htmlPath != "" {
				if err := writeHTMLReport(htmlPath, rep, bench); err != nil {
					return err
				}
			}
			return printReport(cmd.OutOrStdout(), rep, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the merged report as JSON")
	cmd.Flags().IntVar(&maxFailures, "max-failures", 5, "failures kept per op × implementation")
	cmd.Flags().StringVar(&htmlPath, "html", "", "also write the merged report as one self-contained HTML page")
	cmd.Flags().StringVar(&bench, "bench", "", "with --html: chart the ratios of this `kvtwin bench --json` output")
	return cmd
}

// maxReportBytes bounds one shard report read by merge.
const maxReportBytes = 256 << 20

func readReports(paths []string) ([]auditReport, error) {
	reps := make([]auditReport, 0, len(paths))
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(io.LimitReader(f, maxReportBytes+1))
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if len(b) > maxReportBytes {
			return nil, fmt.Errorf("%s: over %d bytes", p, maxReportBytes)
		}
		var r auditReport
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s is not an audit --json report: %w", p, err)
		}
		reps = append(reps, r)
	}
	return reps, nil
}

// mergeReports combines the reports of the n shards of one audit.
func mergeReports(reps []auditReport, maxFailures int) (auditReport, error) {
	n := len(reps)
	seen := make([]bool, n)
	for _, r := range reps {
		switch {
		case r.Shard == nil && n == 1:
			return r, nil
		case r.Shard == nil:
			return auditReport{}, fmt.Errorf("a report without a shard cannot be merged with others")
		case r.Shard.Count != n:
			return auditReport{}, fmt.Errorf("shard %d/%d given with %d reports: want all %d shards", r.Shard.Index, r.Shard.Count, n, r.Shard.Count)
		case r.Shard.Index < 0 || r.Shard.Index >= n:
			return auditReport{}, fmt.Errorf("shard index %d of %d: want 0..%d", r.Shard.Index, n, n-1)
		case r.Seed != reps[0].Seed || r.Cases != reps[0].Cases:
			return auditReport{}, fmt.Errorf("shard %d ran seed %d × %d cases, shard %d seed %d × %d: not one audit",
				r.Shard.Index, r.Seed, r.Cases, reps[0].Shard.Index, reps[0].Seed, reps[0].Cases)
		case seen[r.Shard.Index]:
			return auditReport{}, fmt.Errorf("shard %d/%d given twice", r.Shard.Index, n)
		}
		seen[r.Shard.Index] = true
	}
	out := auditReport{Seed: reps[0].Seed, Cases: reps[0].Cases, Passed: true, ZooSkipped: reps[0].ZooSkipped}
	byKey := map[string]*opResult{}
	var order []string
	for _, r := range reps {
		for _, o := range r.Ops {
			key := o.Op + "\x00" + o.Impl
			m, ok := byKey[key]
			if !ok {
				m = &opResult{Op: o.Op, Spec: o.Spec, Impl: o.Impl, ShrunkFrom: -1}
				byKey[key] = m
				order = append(order, key)
			}
			mergeOp(m, o)
		}
		out.Mutants = append(out.Mutants, r.Mutants...)
		out.Adapters = append(out.Adapters, r.Adapters...)
		for impl, ops := range r.NotImplemented {
			if out.NotImplemented == nil {
				out.NotImplemented = map[string][]string{}
			}
			out.NotImplemented[impl] = ops
		}
	}
	slices.Sort(order)
	for _, key := range order {
		m := byKey[key]
		sortFailures(m.Failures, maxFailures, &m.Failures)
		sortFailures(m.Transport, maxFailures, &m.Transport)
		m.Passed = opPassed(*m)
		out.Passed = out.Passed && m.Passed
		out.Ops = append(out.Ops, *m)
	}
	slices.SortFunc(out.Mutants, func(a, b mutantResult) int { return cmp.Or(cmp.Compare(a.Op, b.Op), cmp.Compare(a.Mutant, b.Mutant)) })
	for _, m := range out.Mutants {
		out.Passed = out.Passed && m.Killed && m.RegressionKills
	}
	out.Passed = out.Passed && adaptersPassed(out.Adapters)
	return out, nil
}

func mergeOp(m *opResult, o opResult) {
	m.Cases += o.Cases
	m.Tables += o.Tables
	m.Mismatches += o.Mismatches
	m.TransportErrors += o.TransportErrors
	m.Failures = append(m.Failures, o.Failures...)
	m.Transport = append(m.Transport, o.Transport...)
	mergeUnavailable(m, o)
	if o.Shrunk != nil && (m.Shrunk == nil || o.ShrunkFrom < m.ShrunkFrom) {
		m.Shrunk, m.ShrunkFrom = o.Shrunk, o.ShrunkFrom
	}
}

// sortFailures orders fs as an unsharded run meets them and keeps the
// first max.
func sortFailures(fs []*equiv.Failure, max int, dst *[]*equiv.Failure) {
	slices.SortStableFunc(fs, func(a, b *equiv.Failure) int { return cmp.Compare(a.Seq, b.Seq) })
	if len(fs) > max {
		fs = fs[:max]
	}
	*dst = fs
}
