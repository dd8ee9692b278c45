package main

import (
	"encoding/json"
	"fmt"

	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/internal/bounded"
	"github.com/kvtwin/kvtwin/remote"
)

// This file reads and checks one shard report for `audit merge`: a report
// is a file like any other, so its size, its lists and every count in it are
// bounded and checked before they size anything or are summed
// (docs/campaigns.md, "What merge checks").

// Bounds of one report merge reads. The lists are bounded before the
// report is decoded, so decoding costs at most the file's bytes again (its
// strings) plus the bounded rows, whatever the file holds.
const (
	// defaultMaxReportBytes bounds one report (--max-report-bytes): every
	// op × implementation of an audit failing with --max-failures 5 and
	// inputs of the size of the largest golden line fits.
	defaultMaxReportBytes = 256 << 20
	// maxReportDepth bounds a report's nesting: failures carry op inputs,
	// which the server takes up to 512 levels deep.
	maxReportDepth = 1024
	// maxReportRows bounds the op × implementation rows of one report
	// (the catalog has about 40 ops, an audit at most a few implementations).
	maxReportRows = 1 << 14
	// maxReportMutants bounds the bug-zoo rows of one report.
	maxReportMutants = 1 << 14
	// maxReportFailures bounds the failures and transport errors kept by
	// all the rows of one report together (--max-failures per row each).
	maxReportFailures = 1 << 16
	// maxReportNotImplemented bounds the entries of not_implemented: the
	// ops listed, and the implementations listing them.
	maxReportNotImplemented = 1 << 16
	// maxReportAdapters bounds the adapter logs of one report: one per
	// outside implementation the audit ran (--impl).
	maxReportAdapters = 1 << 10
	// maxStderrChars bounds one kept process's stderr as decoded: the
	// RingBytes kept, each invalid byte shown as U+FFFD (3 bytes).
	maxStderrChars = 3 * remote.RingBytes
)

// reportLists bounds a report's lists before it is decoded: a list of 20
// million `{}` is 60 MB of text but gigabytes of rows.
var reportLists = map[string]int{
	"ops[]":               maxReportRows,
	"ops[].failures[]":    maxReportFailures,
	"ops[].transport[]":   maxReportFailures,
	"mutants[]":           maxReportMutants,
	"not_implemented.*":   maxReportNotImplemented,
	"not_implemented.*[]": maxReportNotImplemented,
	"adapters[]":          maxReportAdapters,
	"adapters[].kept[]":   remote.KeptRuns,

	// a failure keeps at most equiv.MaxPathDiffs differences
	"ops[].failures[].paths[]": maxReportFailures * equiv.MaxPathDiffs,
	"ops[].shrunk.paths[]":     maxReportRows * equiv.MaxPathDiffs,
	// a partial declaration leaves out at most every kind, option and
	// table case of its op
	"ops[].partial.steps_not_audited[]":   maxReportNotImplemented,
	"ops[].partial.options_not_audited[]": maxReportNotImplemented,
	"ops[].partial.tables_skipped[]":      maxReportNotImplemented,
}

// readReport reads, bounds and strictly checks the shard report at path.
// Unknown members are ignored, so reports of a later kvtwin that adds
// fields still merge.
func readReport(path string, maxBytes int64) (auditReport, error) {
	b, err := bounded.ReadFile(path, bounded.Limits{MaxBytes: maxBytes, MaxDepth: maxReportDepth, BytesName: "--max-report-bytes", Lists: reportLists})
	if err != nil {
		return auditReport{}, err
	}
	var r auditReport
	if err := json.Unmarshal(b, &r); err != nil {
		return auditReport{}, fmt.Errorf("%s is not an audit --json report: %w", path, err)
	}
	if err := checkReport(r); err != nil {
		return auditReport{}, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// checkReport checks what one report says against what an audit can have
// written: the flags in range, each row's counts within what its shard ran,
// one row per op × implementation and per mutant, and no pass claimed over
// a failure. Messages name the row and the bound.
func checkReport(r auditReport) error {
	if err := checkReportHeader(r); err != nil {
		return err
	}
	shard := shardSpec{Index: 0, Count: 1}
	if r.Shard != nil {
		shard = *r.Shard
	}
	rows := make(map[string]int, len(r.Ops))
	for i, o := range r.Ops {
		if err := checkOpRow(o, shard, r.Cases); err != nil {
			return fmt.Errorf("ops[%d] (%s × %s): %w", i, o.Op, o.Impl, err)
		}
		key := o.Op + "\x00" + o.Impl
		if j, ok := rows[key]; ok {
			return fmt.Errorf("ops[%d] (%s × %s): repeats ops[%d]: want one row per op × implementation", i, o.Op, o.Impl, j)
		}
		rows[key] = i
		if r.Passed && !o.Passed {
			return fmt.Errorf("passed = true, but ops[%d] (%s × %s) failed: want passed = false", i, o.Op, o.Impl)
		}
	}
	mutants := make(map[string]int, len(r.Mutants))
	for i, m := range r.Mutants {
		if err := checkMutantRow(m); err != nil {
			return fmt.Errorf("mutants[%d] (%s): %w", i, m.Mutant, err)
		}
		key := m.Op + "\x00" + m.Mutant
		if j, ok := mutants[key]; ok {
			return fmt.Errorf("mutants[%d] (%s): repeats mutants[%d]: want one row per mutant", i, m.Mutant, j)
		}
		mutants[key] = i
		if r.Passed && !(m.Killed && m.RegressionKills) {
			return fmt.Errorf("passed = true, but mutants[%d] (%s) survived: want passed = false", i, m.Mutant)
		}
	}
	for i, a := range r.Adapters {
		if err := checkAdapterLog(a, shard); err != nil {
			return fmt.Errorf("adapters[%d] (%s): %w", i, a.Impl, err)
		}
		if r.Passed && a.Unattributed > 0 {
			return fmt.Errorf("passed = true, but adapters[%d] (%s) failed outside every call %d times: want passed = false", i, a.Impl, a.Unattributed)
		}
	}
	return nil
}

// checkReportHeader checks the seed, the case count and the shard against
// the bounds `kvtwin audit` puts on its flags.
func checkReportHeader(r auditReport) error {
	switch {
	case r.Seed > 1<<62:
		return fmt.Errorf("seed = %d: want <= %d (audit --seed)", r.Seed, uint64(1)<<62)
	case r.Cases < 1 || r.Cases > maxAuditCases:
		return fmt.Errorf("cases = %d: want 1..%d (audit --cases)", r.Cases, maxAuditCases)
	case r.Shard == nil:
		return nil
	case r.Shard.Count < 1 || r.Shard.Count > maxShards:
		return fmt.Errorf("shard count %d: want 1..%d", r.Shard.Count, maxShards)
	case r.Shard.Index < 0 || r.Shard.Index >= r.Shard.Count:
		return fmt.Errorf("shard index %d of %d: want 0..%d", r.Shard.Index, r.Shard.Count, r.Shard.Count-1)
	}
	return nil
}

// checkOpRow checks one op × implementation row of a report of a shard
// that ran cases generated cases per row: an audit runs shard.size(cases)
// of them, the tables only on shard 0, and finds at most one failure per
// case it runs.
func checkOpRow(o opResult, shard shardSpec, cases int) error {
	owned := shard.size(cases)
	switch {
	case o.Op == "" || o.Impl == "":
		return fmt.Errorf(`op %q, impl %q: want both named`, o.Op, o.Impl)
	case o.Cases < 0 || o.Cases > owned:
		return fmt.Errorf("cases = %d: want 0..%d (shard %d/%d of %d cases)", o.Cases, owned, shard.Index, shard.Count, cases)
	case o.Tables < 0 || o.Tables > tableSeqBase:
		return fmt.Errorf("tables = %d: want 0..%d", o.Tables, tableSeqBase)
	case o.Tables > 0 && shard.Index != 0:
		return fmt.Errorf("tables = %d on shard %d: want 0 (shard 0 runs the tables)", o.Tables, shard.Index)
	case o.Mismatches < 0:
		return fmt.Errorf("mismatches = %d: want >= 0", o.Mismatches)
	case o.TransportErrors < 0:
		return fmt.Errorf("transport_errors = %d: want >= 0", o.TransportErrors)
	case o.Mismatches > o.Cases+o.Tables-o.TransportErrors:
		return fmt.Errorf("mismatches %d + transport_errors %d: want at most cases %d + tables %d (one failure a case)",
			o.Mismatches, o.TransportErrors, o.Cases, o.Tables)
	case len(o.Failures) > o.Mismatches:
		return fmt.Errorf("%d failures kept of %d mismatches: want at most the mismatches", len(o.Failures), o.Mismatches)
	case len(o.Transport) > o.TransportErrors:
		return fmt.Errorf("%d transport failures kept of %d transport_errors: want at most the transport errors", len(o.Transport), o.TransportErrors)
	case o.Passed && o.Mismatches+o.TransportErrors > 0:
		return fmt.Errorf("passed = true with %d mismatches and %d transport errors: want passed = false", o.Mismatches, o.TransportErrors)
	case o.NotSent < 0 || o.NotSent > owned+tableSeqBase:
		return fmt.Errorf("not_sent = %d: want 0..%d (the shard's %d cases and at most %d table cases)", o.NotSent, owned+tableSeqBase, owned, tableSeqBase)
	case o.NotSent > 0 && o.Unavailable == "":
		return fmt.Errorf("not_sent = %d with no unavailable reason: want cases unsent only after the op became unavailable", o.NotSent)
	case o.Passed && o.Unavailable != "":
		return fmt.Errorf("passed = true, but the op is unavailable (%.80q): want passed = false", o.Unavailable)
	case o.ShrunkFrom < -1 || o.ShrunkFrom >= tableSeqBase+cases:
		return fmt.Errorf("shrunk_from = %d: want -1 or a case's seq, below %d", o.ShrunkFrom, tableSeqBase+cases)
	}
	for _, list := range []struct {
		name string
		fs   []*equiv.Failure
	}{{"failures", o.Failures}, {"transport", o.Transport}} {
		for j, f := range list.fs {
			switch {
			case f == nil:
				return fmt.Errorf("%s[%d] = null: want a failure", list.name, j)
			case f.Seq < 0 || f.Seq >= tableSeqBase+cases:
				return fmt.Errorf("%s[%d]: seq = %d: want 0..%d (a table case's index, or %d + a generated case's)", list.name, j, f.Seq, tableSeqBase+cases-1, tableSeqBase)
			}
			if err := checkPaths(f); err != nil {
				return fmt.Errorf("%s[%d]: %w", list.name, j, err)
			}
		}
	}
	if o.Shrunk != nil {
		if err := checkPaths(o.Shrunk); err != nil {
			return fmt.Errorf("shrunk: %w", err)
		}
	}
	return nil
}

// checkPaths checks a failure's JSON-path differences against what an
// audit keeps: at most equiv.MaxPathDiffs, and a count of the rest.
func checkPaths(f *equiv.Failure) error {
	switch {
	case len(f.Paths) > equiv.MaxPathDiffs:
		return fmt.Errorf("%d paths: want at most %d (equiv.MaxPathDiffs)", len(f.Paths), equiv.MaxPathDiffs)
	case f.MorePaths < 0:
		return fmt.Errorf("more_paths = %d: want >= 0", f.MorePaths)
	}
	return nil
}

// checkMutantRow checks one bug-zoo row.
func checkMutantRow(m mutantResult) error {
	switch {
	case m.Mutant == "" || m.Op == "":
		return fmt.Errorf(`mutant %q, op %q: want both named`, m.Mutant, m.Op)
	case m.CasesToKill < 0:
		return fmt.Errorf("cases_to_kill = %d: want >= 0", m.CasesToKill)
	}
	return nil
}

// checkAdapterLog checks one outside implementation's process log: its
// shard is the report's, its counts are non-negative, and it keeps at most
// remote.KeptRuns processes of at most remote.RingBytes of stderr each.
func checkAdapterLog(a adapterReport, shard shardSpec) error {
	switch {
	case a.Impl == "":
		return fmt.Errorf("impl is empty: want the --impl target")
	case a.Shard != shard.Index:
		return fmt.Errorf("shard = %d: want %d, the report's shard", a.Shard, shard.Index)
	case a.Runs < 0 || a.Omitted < 0 || a.Unattributed < 0:
		return fmt.Errorf("runs %d, omitted %d, unattributed %d: want each >= 0", a.Runs, a.Omitted, a.Unattributed)
	case len(a.Kept) > a.Runs || a.Omitted > a.Runs-len(a.Kept):
		return fmt.Errorf("%d processes kept and %d omitted of %d runs: want at most the runs", len(a.Kept), a.Omitted, a.Runs)
	}
	for j, k := range a.Kept {
		switch {
		case k.Millis < 0 || k.StderrBytes < 0 || k.StderrLines < 0:
			return fmt.Errorf("kept[%d]: millis %d, stderr_bytes %d, stderr_lines %d: want each >= 0", j, k.Millis, k.StderrBytes, k.StderrLines)
		case len(k.Stderr) > maxStderrChars:
			return fmt.Errorf("kept[%d]: stderr holds %d bytes: want at most %d (the %d-byte ring, invalid bytes as U+FFFD)", j, len(k.Stderr), maxStderrChars, remote.RingBytes)
		}
	}
	return nil
}
