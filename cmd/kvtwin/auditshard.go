package main

import (
	"cmp"
	"fmt"
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
	var maxBytes int64
	var htmlPath, bench string
	cmd := &cobra.Command{
		Use:   "merge REPORT.json…",
		Short: "Combine the --json reports of every shard of an audit into one report and verdict",
		Long: `merge reads the reports of an audit run with --shard i/n (or a batch system's array
index) and --json, checks that they are the n shards of one audit (same seed, case count and
shard count, each index once, none missing, the same op × implementation rows) and that each
report's counts are ones its shard can have found, and prints the combined report: per op ×
implementation the sum of cases, mismatches, transport errors and cases not sent (an op
unavailable in any shard is unavailable), every shard's adapter processes, the first failures
in the order an unsharded run meets them, and the shrink of the earliest failing case. A report past
--max-report-bytes or one that does not check is refused, naming the file, the row and the
bound (docs/campaigns.md). Exit status 1 when the audit failed.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if maxFailures < 1 {
				return fmt.Errorf("--max-failures %d: want >= 1", maxFailures)
			}
			if maxBytes < 1 {
				return fmt.Errorf("--max-report-bytes %d: want >= 1", maxBytes)
			}
			m := newMerger(maxFailures)
			for _, p := range args {
				r, err := readReport(p, maxBytes)
				if err != nil {
					return err
				}
				if err := m.add(p, r); err != nil {
					return err
				}
			}
			rep, err := m.result()
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
	cmd.Flags().Int64Var(&maxBytes, "max-report-bytes", defaultMaxReportBytes, "largest shard report read; a larger one is refused, naming the file and the line where it passes the bound")
	cmd.Flags().StringVar(&htmlPath, "html", "", "also write the merged report as one self-contained HTML page")
	cmd.Flags().StringVar(&bench, "bench", "", "with --html: add a speed section charting the ratios of this `kvtwin bench --json` output (the page has none without it)")
	return cmd
}

// mergeReports combines the reports of the n shards of one audit, named
// by their position ("report 1"); the CLI merges files as it reads them.
func mergeReports(reps []auditReport, maxFailures int) (auditReport, error) {
	m := newMerger(maxFailures)
	for i, r := range reps {
		name := fmt.Sprintf("report %d", i+1)
		if err := checkReport(r); err != nil {
			return auditReport{}, fmt.Errorf("%s: %w", name, err)
		}
		if err := m.add(name, r); err != nil {
			return auditReport{}, err
		}
	}
	return m.result()
}

// merger folds checked shard reports into one, a report at a time, so a
// campaign of many shards holds the merged rows (each with at most
// --max-failures failures a class), not every report. It checks that the
// reports are shards of one audit as they come, and that none is missing
// at the end.
type merger struct {
	maxFailures int
	n           int             // reports added
	first       auditReport     // the first report's seed, cases and shard
	firstName   string          // and its name
	whole       *auditReport    // an unsharded report, merged only alone
	shardOf     map[int]string  // shard index → the report that holds it
	rows        map[string]bool // the first report's op × implementation keys
	byKey       map[string]*opResult
	order       []string
	mutantOf    map[string]string // op, mutant → the report that holds it
	out         auditReport
}

func newMerger(maxFailures int) *merger {
	return &merger{maxFailures: maxFailures, shardOf: map[int]string{}, rows: map[string]bool{},
		byKey: map[string]*opResult{}, mutantOf: map[string]string{}}
}

// add folds the checked report r, read from name, into the merge.
func (m *merger) add(name string, r auditReport) error {
	m.n++
	if r.Shard == nil || m.whole != nil {
		if m.n > 1 || r.Shard != nil {
			return fmt.Errorf("%s: a report without a shard cannot be merged with others", name)
		}
		m.whole = &r
		return nil
	}
	if m.n == 1 {
		m.first, m.firstName = auditReport{Seed: r.Seed, Cases: r.Cases, Shard: r.Shard}, name
		m.out = auditReport{Seed: r.Seed, Cases: r.Cases, Passed: true, ZooSkipped: r.ZooSkipped}
		for _, o := range r.Ops {
			m.rows[o.Op+"\x00"+o.Impl] = true
		}
	}
	if err := m.sameAudit(name, r); err != nil {
		return err
	}
	m.shardOf[r.Shard.Index] = name
	m.out.Passed = m.out.Passed && r.Passed
	for _, o := range r.Ops {
		m.addRow(o)
	}
	for _, mu := range r.Mutants {
		key := mu.Op + "\x00" + mu.Mutant
		if other, ok := m.mutantOf[key]; ok {
			return fmt.Errorf("%s: mutant %s of %s is also in %s: want each mutant in one shard", name, mu.Mutant, mu.Op, other)
		}
		m.mutantOf[key] = name
		m.out.Mutants = append(m.out.Mutants, mu)
	}
	m.out.Adapters = append(m.out.Adapters, r.Adapters...)
	if m.out.NotAudited == nil { // every shard selects the same ops of the same implementations
		m.out.NotAudited = r.NotAudited
	}
	for impl, ops := range r.NotImplemented {
		if m.out.NotImplemented == nil {
			m.out.NotImplemented = map[string][]string{}
		}
		m.out.NotImplemented[impl] = ops
	}
	return nil
}

// sameAudit checks that r, read from name, is another shard of the audit
// the first report is a shard of.
func (m *merger) sameAudit(name string, r auditReport) error {
	f := m.first
	switch {
	case r.Shard.Count != f.Shard.Count:
		return fmt.Errorf("%s: shard %d/%d, but %s is shard %d/%d: want one shard count", name, r.Shard.Index, r.Shard.Count, m.firstName, f.Shard.Index, f.Shard.Count)
	case r.Seed != f.Seed || r.Cases != f.Cases:
		return fmt.Errorf("%s: shard %d ran seed %d × %d cases, %s (shard %d) seed %d × %d: not one audit",
			name, r.Shard.Index, r.Seed, r.Cases, m.firstName, f.Shard.Index, f.Seed, f.Cases)
	}
	if other, ok := m.shardOf[r.Shard.Index]; ok {
		return fmt.Errorf("%s: shard %d/%d given twice (also %s)", name, r.Shard.Index, r.Shard.Count, other)
	}
	if len(r.Ops) != len(m.rows) {
		return fmt.Errorf("%s: %d op × implementation rows, %s %d: want the same rows in every shard", name, len(r.Ops), m.firstName, len(m.rows))
	}
	for i, o := range r.Ops {
		if !m.rows[o.Op+"\x00"+o.Impl] {
			return fmt.Errorf("%s: ops[%d] (%s × %s) is not a row of %s: want the same rows in every shard", name, i, o.Op, o.Impl, m.firstName)
		}
	}
	return nil
}

// addRow folds one row in, keeping the first --max-failures failures of
// each class as it goes. checkReport's bounds make every sum fit: across
// the shards, cases add up to at most --cases (<= 10^8), tables come from
// shard 0 alone (<= 2^20), and failures are at most one a case.
func (m *merger) addRow(o opResult) {
	key := o.Op + "\x00" + o.Impl
	r, ok := m.byKey[key]
	if !ok {
		r = &opResult{Op: o.Op, Spec: o.Spec, Impl: o.Impl, ShrunkFrom: -1, Passed: true}
		m.byKey[key] = r
		m.order = append(m.order, key)
	}
	mergeOp(r, o)
	r.Passed = r.Passed && o.Passed
	sortFailures(r.Failures, m.maxFailures, &r.Failures)
	sortFailures(r.Transport, m.maxFailures, &r.Transport)
}

// result is the merged report, once every shard has been added.
func (m *merger) result() (auditReport, error) {
	if m.whole != nil {
		return *m.whole, nil
	}
	if count := m.first.Shard.Count; len(m.shardOf) != count {
		var missing []string
		for i := range count {
			if _, ok := m.shardOf[i]; !ok {
				missing = append(missing, strconv.Itoa(i))
			}
		}
		return auditReport{}, fmt.Errorf("%d reports of shards of %d: want all %d shards (missing: %s); a partial campaign has no verdict",
			m.n, count, count, strings.Join(missing, ", "))
	}
	out := m.out
	slices.Sort(m.order)
	for _, key := range m.order {
		r := m.byKey[key]
		r.Passed = r.Passed && opPassed(*r)
		out.Passed = out.Passed && r.Passed
		out.Ops = append(out.Ops, *r)
	}
	slices.SortFunc(out.Mutants, func(a, b mutantResult) int { return cmp.Or(cmp.Compare(a.Op, b.Op), cmp.Compare(a.Mutant, b.Mutant)) })
	for _, mu := range out.Mutants {
		out.Passed = out.Passed && mu.Killed && mu.RegressionKills
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
	if m.Partial == nil { // every shard audits the same declaration
		m.Partial = o.Partial
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
