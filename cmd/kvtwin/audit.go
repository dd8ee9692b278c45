package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/equiv/mutants"
	"github.com/kvtwin/kvtwin/remote"
)

// auditOptions are `kvtwin audit`'s flags.
type auditOptions struct {
	cases, mutantCases int
	seed               uint64
	ops, legacyImpls   string
	impls              []string
	errors             string
	parallel           int
	timeout            time.Duration
	maxReplyBytes      int64
	unavailableAfter   int
	asJSON, noProgress bool
	maxFailures        int
	shardFlag          string
	shard              shardSpec
	htmlPath, bench    string
	shrink             bool
	// client is the token and TLS of http(s):// targets.
	client clientAuth
}

// auditReport is the machine-readable result of `kvtwin audit --json`.
type auditReport struct {
	Seed    uint64         `json:"seed"`
	Cases   int            `json:"cases"`
	Ops     []opResult     `json:"ops"`
	Mutants []mutantResult `json:"mutants"`
	// NotImplemented lists, per implementation outside this build, the
	// selected ops it does not declare (neither passed nor failed).
	NotImplemented map[string][]string `json:"not_implemented,omitempty"`
	// NotAudited says, one line each, what was asked for and not audited,
	// which fails the audit: an op --ops selected that an implementation
	// does not declare, or no op audited at all.
	NotAudited []string `json:"not_audited,omitempty"`
	// ZooSkipped says why the bug zoo did not run (it checks kvtwin's own
	// suite, so an audit of outside implementations only skips it).
	ZooSkipped string `json:"zoo_skipped,omitempty"`
	// Shard is the part of the audit this report covers (nil: all of it);
	// `kvtwin audit merge` combines the reports of every shard.
	Shard *shardSpec `json:"shard,omitempty"`
	// Adapters holds, per exec adapter, how its processes ended and the
	// end of their stderr (auditadapters.go); one that failed outside
	// every call fails the audit.
	Adapters []adapterReport `json:"adapters,omitempty"`
	Passed   bool            `json:"passed"`
}

// opResult is one op × implementation row of the audit.
type opResult struct {
	Op   string `json:"op"`
	Spec string `json:"spec"`
	Impl string `json:"impl"`
	// Cases is how many generated cases this report ran, Tables how many
	// table cases (a shard other than 0 runs none).
	Cases  int  `json:"cases"`
	Tables int  `json:"tables"`
	Passed bool `json:"passed"`
	// Mismatches counts the cases whose result differed; Failures holds the
	// first --max-failures of them.
	Mismatches int              `json:"mismatches"`
	Failures   []*equiv.Failure `json:"failures,omitempty"`
	// TransportErrors counts the calls that got no usable answer from an
	// implementation outside this build (timeouts, crashes, malformed
	// replies), apart from mismatches; Transport holds the first of them.
	TransportErrors int              `json:"transport_errors"`
	Transport       []*equiv.Failure `json:"transport,omitempty"`
	// Unavailable says why the implementation's breaker made the op
	// unavailable (--unavailable-after failures in a row without a usable
	// answer); NotSent counts the cases not sent after that. An
	// unavailable op fails the audit.
	Unavailable string `json:"unavailable,omitempty"`
	NotSent     int    `json:"not_sent,omitempty"`
	// Shrunk is rapid's minimal counterexample for the first failing kind.
	Shrunk *equiv.Failure `json:"shrunk,omitempty"`
	// ShrunkFrom is the Seq of the failing case whose kind was shrunk (-1:
	// none); a merge keeps the shrink of the earliest, as an unsharded run
	// does.
	ShrunkFrom int `json:"shrunk_from"`
	// Partial, when the adapter's listing declared only part of a script
	// op (docs/adapters.md "Partial declarations"), is what was not
	// audited: the step kinds and options it left out and the table cases
	// that use them. The row is then partially covered, passed or failed
	// on the declared part; nil when the whole op was audited.
	Partial *equiv.Restriction `json:"partial,omitempty"`
}

// mutantResult is one bug-zoo row of the audit.
type mutantResult struct {
	Mutant      string `json:"mutant"`
	Op          string `json:"op"`
	Spec        string `json:"spec"`
	Bug         string `json:"bug"`
	Killed      bool   `json:"killed"`
	CasesToKill int    `json:"cases_to_kill"`
	KilledBy    string `json:"killed_by,omitempty"`
	// RegressionKills reports that the mutant's named regression fixture
	// alone distinguishes it from ref.
	RegressionKills bool `json:"regression_kills"`
}

func newAuditCmd() *cobra.Command {
	var o auditOptions
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Check every op × implementation on N generated cases plus the tables, and hunt every mutant of the bug zoo",
		Long: `audit runs, for every op and every implementation, the boundary and regression tables and
N generated cases (valid and invalid alternately, seeds from --seed), requiring byte-equal
canonical results against ref and every spec property. A failure is shrunk by rapid, against the
failing implementation, to a minimal counterexample printed as a fixture line and a diff.

--impl names an implementation: ref, fast or cuda in this build (default: all of them), or one
outside it through an adapter (docs/adapters.md): exec:CMD ARGS… (a subprocess speaking JSON
Lines) or http://HOST:PORT[/PREFIX]. An adapter is audited on the ops it declares; the others
are listed as not implemented. Calls that get no usable answer (timeouts, crashes, malformed
replies) are counted as transport errors, apart from mismatches; after --unavailable-after of
them in a row an op is reported UNAVAILABLE and its remaining cases are not sent, so a hung
adapter costs about that many --timeouts per op. An exec adapter's stderr is kept (the last
64 KiB per process) for the --json and --html reports; the terminal gets one line per process.

Then, when only implementations of this build are audited, every mutant of the bug zoo must be
killed within --mutant-cases cases and by its own regression fixture. Exit status 1 on any
mismatch, transport error, unavailable op, adapter failure outside a call or surviving mutant.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAudit(cmd.OutOrStdout(), cmd.ErrOrStderr(), o) },
	}
	f := cmd.Flags()
	f.IntVar(&o.cases, "cases", 200, "generated cases per op × implementation")
	f.Uint64Var(&o.seed, "seed", 1, "first generator seed (also rapid's seed when shrinking)")
	f.StringVar(&o.ops, "ops", "", "only ops whose name matches this regexp")
	f.StringArrayVar(&o.impls, "impl", nil, "implementation to audit: ref, fast, cuda, exec:CMD ARGS… or http://HOST:PORT[/PREFIX] (repeatable; default: every one in this build)")
	f.StringVar(&o.legacyImpls, "impls", "", "comma-separated implementations of this build")
	_ = f.MarkDeprecated("impls", "use --impl (repeatable)")
	f.StringVar(&o.errors, "errors", "", "how an adapter's rejections are compared: exact (canonical error objects), code or reject (default code; implementations of this build are always compared exactly)")
	f.IntVar(&o.parallel, "parallel", runtime.GOMAXPROCS(0), "cases checked at once per op × implementation")
	f.DurationVar(&o.timeout, "timeout", remote.DefaultTimeout, "per-call timeout for an implementation outside this build")
	f.Int64Var(&o.maxReplyBytes, "max-reply-bytes", remote.DefaultMaxReplyBytes, "largest reply accepted from an implementation outside this build")
	f.IntVar(&o.unavailableAfter, "unavailable-after", remote.DefaultUnavailableAfter, "failures in a row without a usable answer (timeouts, crashes, malformed replies) after which an op of an implementation outside this build is reported unavailable and its remaining cases are not sent")
	f.IntVar(&o.mutantCases, "mutant-cases", mutants.MaxCases, "generated cases a mutant may survive")
	f.IntVar(&o.maxFailures, "max-failures", 5, "failures reported per op × implementation")
	f.BoolVar(&o.shrink, "shrink", true, "shrink the first failing kind to a minimal counterexample (rapid; bounded by its 30 s shrink limit per op)")
	f.BoolVar(&o.asJSON, "json", false, "print the report as JSON")
	f.BoolVar(&o.noProgress, "no-progress", false, "never draw a progress bar")
	f.StringVar(&o.htmlPath, "html", "", "also write the report as one self-contained HTML page to this file")
	f.StringVar(&o.bench, "bench", "", "with --html: add a speed section charting the ratios of this `kvtwin bench --json` output (the page has none without it)")
	o.client.flags(f)
	f.StringVar(&o.shardFlag, "shard", "", "run part i of n (i/n, 0-based) of the cases and mutants; default from JOB_COMPLETION_INDEX/JOB_COMPLETION_COUNT (Kubernetes Indexed Jobs) or SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT")
	cmd.AddCommand(newAuditMergeCmd())
	return cmd
}

func (o auditOptions) validate() error {
	switch {
	case o.cases < 1 || o.mutantCases < 1 || o.maxFailures < 1:
		return fmt.Errorf("--cases, --mutant-cases and --max-failures must be >= 1")
	case o.cases > maxAuditCases:
		return fmt.Errorf("--cases %d: want <= %d", o.cases, maxAuditCases)
	case o.seed > 1<<62:
		return fmt.Errorf("--seed %d: want <= %d", o.seed, uint64(1)<<62)
	case o.parallel < 1 || o.parallel > maxAuditParallel:
		return fmt.Errorf("--parallel %d: want 1..%d", o.parallel, maxAuditParallel)
	case o.timeout <= 0:
		return fmt.Errorf("--timeout %s: want > 0", o.timeout)
	case o.maxReplyBytes < 1<<10 || o.maxReplyBytes > 1<<30:
		return fmt.Errorf("--max-reply-bytes %d: want 1 KiB..1 GiB", o.maxReplyBytes)
	case o.unavailableAfter < 1 || o.unavailableAfter > maxUnavailableAfter:
		return fmt.Errorf("--unavailable-after %d: want 1..%d", o.unavailableAfter, maxUnavailableAfter)
	}
	if o.errors != "" {
		if _, err := equiv.ParseErrorMode(o.errors); err != nil {
			return fmt.Errorf("--errors: %w", err)
		}
	}
	return nil
}

// Bounds of audit's flags: enough for a million-case campaign shard, small
// enough that a typo cannot start a run that never ends.
const (
	maxAuditCases    = 100_000_000
	maxAuditParallel = 1024
)

func runAudit(stdout, stderr io.Writer, o auditOptions) error {
	if err := o.validate(); err != nil {
		return err
	}
	shard, err := resolveShard(o.shardFlag, os.Getenv)
	if err != nil {
		return err
	}
	o.shard = shard
	sel, err := regexp.Compile(o.ops)
	if err != nil {
		return fmt.Errorf("--ops: %w", err)
	}
	local, targets, err := splitImpls(o)
	if err != nil {
		return err
	}
	if err := configureRapid(o.seed, o.cases); err != nil {
		return err
	}
	suites := selectSuites(sel)
	if len(suites) == 0 {
		return fmt.Errorf("--ops %q matches no op", o.ops)
	}
	rep := auditReport{Seed: o.seed, Cases: o.cases, Passed: true}
	if shard.Count > 1 {
		rep.Shard = &shard
	}
	var work []auditUnit
	for _, s := range suites {
		for _, impl := range s.Entry().Impls() {
			if (local == nil && targets == nil) || slices.Contains(local, impl) {
				work = append(work, auditUnit{suite: s, impl: string(impl)})
			}
		}
	}
	remotes, err := openRemotes(targets, o, stderr)
	defer closeRemotes(remotes)
	if err != nil {
		return err
	}
	for _, r := range remotes {
		units, missing, err := remoteUnits(suites, r, o)
		if err != nil {
			return err
		}
		work = append(work, units...)
		if len(missing) > 0 {
			if rep.NotImplemented == nil {
				rep.NotImplemented = map[string][]string{}
			}
			rep.NotImplemented[r.Name()] = missing
		}
	}
	var zoo []equiv.Killable
	if len(targets) == 0 {
		for i, m := range selectMutants(sel) {
			if shard.owns(i) {
				zoo = append(zoo, m)
			}
		}
	} else {
		rep.ZooSkipped = "the bug zoo checks kvtwin's own suite; it runs when only implementations of this build are audited"
	}
	bar := newBar(stderr, o, int64(len(work))*int64(shard.size(o.cases))+int64(len(zoo)))
	for _, u := range work {
		r, err := auditOp(u, o, bar)
		if err != nil {
			return err
		}
		rep.Passed = rep.Passed && r.Passed
		rep.Ops = append(rep.Ops, r)
	}
	for _, m := range zoo {
		r, err := huntMutant(m, o.mutantCases)
		if err != nil {
			return err
		}
		rep.Passed = rep.Passed && r.Killed && r.RegressionKills
		rep.Mutants = append(rep.Mutants, r)
		bar.add(1)
	}
	bar.finish()
	rep.Adapters = collectAdapters(remotes, shard.Index)
	rep.Passed = rep.Passed && adaptersPassed(rep.Adapters)
	rep.NotAudited = notAudited(rep, o.ops != "", len(work)+len(zoo))
	rep.Passed = rep.Passed && len(rep.NotAudited) == 0
	if o.htmlPath != "" {
		if err := writeHTMLReport(o.htmlPath, rep, o.bench); err != nil {
			return err
		}
	}
	return printReport(stdout, rep, o.asJSON)
}

// notAudited is what an audit was asked for and did not check: with --ops
// (requested), every selected op an implementation does not declare; and
// in any case an audit that ran nothing (units: the op × implementation
// rows and mutants it ran). A CI gate built on `kvtwin audit` must not
// pass because the adapter lacked what it was meant to check.
func notAudited(rep auditReport, requested bool, units int) []string {
	var out []string
	if requested {
		for _, impl := range slices.Sorted(maps.Keys(rep.NotImplemented)) {
			for _, op := range rep.NotImplemented[impl] {
				out = append(out, fmt.Sprintf("%s on %s: --ops selects it and the implementation does not declare it (not implemented), so no case of it ran", op, impl))
			}
		}
	}
	if units == 0 {
		out = append(out, "no op and no mutant was audited: every selected op is not implemented by the implementations given")
	}
	return out
}

// printReport prints rep as text or JSON and fails when the audit did.
func printReport(w io.Writer, rep auditReport, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printAudit(w, rep)
	}
	if !rep.Passed {
		return &exitError{code: 1, msg: "audit failed"}
	}
	return nil
}

// splitImpls separates --impl (and the deprecated --impls) into
// implementations of this build and targets outside it.
func splitImpls(o auditOptions) ([]catalog.Impl, []string, error) {
	names := slices.Clone(o.impls)
	if o.legacyImpls != "" {
		names = append(names, strings.Split(o.legacyImpls, ",")...)
	}
	var local []catalog.Impl
	var targets []string
	for _, name := range names {
		name = strings.TrimSpace(name)
		if remote.IsTarget(name) {
			targets = append(targets, name)
			continue
		}
		i, err := catalog.ParseImpl(name)
		if err != nil {
			return nil, nil, fmt.Errorf("--impl: %w (or exec:CMD ARGS…, http://HOST:PORT)", err)
		}
		if err := implAvailable(i); err != nil {
			return nil, nil, err
		}
		local = append(local, i)
	}
	return local, targets, nil
}

func openRemotes(targets []string, o auditOptions, stderr io.Writer) ([]remote.Impl, error) {
	var out []remote.Impl
	for _, t := range targets {
		ro := remote.Options{Timeout: o.timeout, MaxReplyBytes: o.maxReplyBytes, Stderr: stderr, Conns: o.parallel,
			UnavailableAfter: o.unavailableAfter}
		if err := o.client.apply(&ro); err != nil {
			return out, err
		}
		r, err := remote.Open(t, ro)
		if err != nil {
			return out, fmt.Errorf("--impl: %w", err)
		}
		out = append(out, r)
	}
	return out, nil
}

func closeRemotes(rs []remote.Impl) {
	for _, r := range rs {
		_ = r.Close()
	}
}

// remoteUnits is the work for an adapter: the selected ops it declares,
// each restricted to the part its listing declares (docs/adapters.md
// "Partial declarations"), and the selected ops it does not (not
// implemented). A declaration naming what its op lacks is an error.
func remoteUnits(suites []equiv.Suite, r remote.Impl, o auditOptions) ([]auditUnit, []string, error) {
	listed, err := r.Ops()
	if err != nil {
		return nil, nil, fmt.Errorf("--impl %s: list ops: %w", r.Name(), err)
	}
	mode := equiv.ErrorsCode
	if o.errors != "" {
		mode, _ = equiv.ParseErrorMode(o.errors)
	}
	restricted, parts, err := declaredSuites(listed)
	if err != nil {
		return nil, nil, fmt.Errorf("--impl %s: op list: %w", r.Name(), err)
	}
	var units []auditUnit
	var missing []string
	for _, s := range suites {
		rs, ok := restricted[s.Name()]
		if !ok {
			missing = append(missing, s.Name())
			continue
		}
		u := auditUnit{suite: rs, impl: r.Name(), remote: r, gate: newNotSentGate(r), mode: mode}
		if part := parts[s.Name()]; part.Partial() {
			u.partial = &part
		}
		units = append(units, u)
	}
	return units, missing, nil
}

// declaredSuites is, by name, the suite of every listed op kvtwin has,
// restricted to what its listing declares, and what each leaves out.
// Every declaration is checked, selected by --ops or not: a bad one is an
// error, never ignored. An op listed twice keeps its first listing.
func declaredSuites(listed []remote.Listed) (map[string]equiv.Suite, map[string]equiv.Restriction, error) {
	all := map[string]equiv.Suite{}
	for _, s := range equiv.Suites() {
		all[s.Name()] = s
	}
	out, parts := map[string]equiv.Suite{}, map[string]equiv.Restriction{}
	for _, l := range listed {
		s, ok := all[l.Name]
		if _, seen := out[l.Name]; !ok || seen {
			continue
		}
		rs, part, err := declared(s, l)
		if err != nil {
			return nil, nil, err
		}
		out[l.Name], parts[l.Name] = rs, part
	}
	return out, parts, nil
}

// auditUnit is one op × implementation to audit: an implementation of
// this build (remote nil) or one outside it, whose calls pass its gate.
type auditUnit struct {
	suite  equiv.Suite
	impl   string
	remote remote.Impl
	gate   *notSentGate
	mode   equiv.ErrorMode
	// partial is what the adapter's partial declaration of the op left
	// out of the audit (nil: the whole op is audited).
	partial *equiv.Restriction
}

// trial checks the unit on the seed-th generated case of kind.
func (u auditUnit) trial(kind equiv.Kind, seed int) (*equiv.Failure, error) {
	if u.remote != nil {
		return u.suite.RemoteTrial(u.impl, u.gate, u.mode, kind, seed), nil
	}
	return u.suite.Trial(catalog.Impl(u.impl), kind, seed)
}

func (u auditUnit) tables() ([]*equiv.Failure, error) {
	if u.remote != nil {
		return u.suite.RemoteTables(u.impl, u.gate, u.mode), nil
	}
	return u.suite.Tables(catalog.Impl(u.impl))
}

// unavailable says why the unit's op is unavailable, if it is (never for
// an implementation of this build).
func (u auditUnit) unavailable() (string, bool) {
	if u.remote == nil {
		return "", false
	}
	return u.remote.Unavailable(u.suite.Name())
}

// notSent reports whether f is a call the breaker refused unsent.
func (u auditUnit) notSent(f *equiv.Failure) bool { return u.gate != nil && u.gate.take(f) }

func (u auditUnit) shrink(kind equiv.Kind) (*equiv.Failure, error) {
	if u.remote != nil {
		return u.suite.RemoteShrink(u.impl, u.remote, u.mode, kind), nil
	}
	return u.suite.Shrink(catalog.Impl(u.impl), kind)
}

// configureRapid points rapid (used to shrink counterexamples) at the
// audit's seed and case count, and keeps it from writing fail files.
func configureRapid(seed uint64, cases int) error {
	for k, v := range map[string]string{
		"rapid.seed": strconv.FormatUint(seed, 10), "rapid.checks": strconv.Itoa(cases), "rapid.nofailfile": "true",
	} {
		if err := flag.Set(k, v); err != nil {
			return fmt.Errorf("configure rapid: %w", err)
		}
	}
	return nil
}

func selectSuites(sel *regexp.Regexp) []equiv.Suite {
	var out []equiv.Suite
	for _, s := range equiv.Suites() {
		if sel.MatchString(s.Name()) {
			out = append(out, s)
		}
	}
	return out
}

func selectMutants(sel *regexp.Regexp) []equiv.Killable {
	var out []equiv.Killable
	for _, m := range mutants.All() {
		if sel.MatchString(m.Op()) {
			out = append(out, m)
		}
	}
	return out
}

func auditOp(u auditUnit, o auditOptions, bar *bar) (opResult, error) {
	r := opResult{Op: u.suite.Name(), Spec: u.suite.Entry().Spec(), Impl: u.impl, Cases: o.shard.size(o.cases), ShrunkFrom: -1, Partial: u.partial}
	var tables []*equiv.Failure
	if o.shard.Index == 0 { // the tables are small: shard 0 runs them all
		b, g := u.suite.TableSizes()
		r.Tables = b + g
		var err error
		if tables, err = u.tables(); err != nil {
			return r, err
		}
	}
	kept := newFirstFailures(o.maxFailures)
	for i, f := range tables {
		if u.notSent(f) {
			kept.skip()
			continue
		}
		f.Seq = i
		kept.add(f)
	}
	if err := runTrials(u, o, bar, kept); err != nil {
		return r, err
	}
	r.Mismatches, r.TransportErrors = kept.mismatches, kept.transport
	r.Failures, r.Transport = kept.firstMismatches, kept.firstTransport
	_, gone := u.unavailable()
	if first := kept.firstTrialMismatch; first != nil && o.shrink && !gone {
		shrunk, err := u.shrink(trialKind(first.Seq - tableSeqBase))
		if err != nil {
			return r, err
		}
		if _, gone = u.unavailable(); shrunk == nil || !shrunk.Transport || !gone {
			r.Shrunk, r.ShrunkFrom = shrunk, first.Seq // not a shrink onto refused calls
		}
	}
	r.Unavailable, _ = u.unavailable()
	r.NotSent = kept.notSent
	r.Passed = opPassed(r)
	return r, nil
}

// tableSeqBase orders generated cases after every table case in Seq: no
// op has a million table cases.
const tableSeqBase = 1 << 20

// trialKind is the kind of the i-th generated case: valid and invalid
// alternate, each kind's seeds counting up from --seed.
func trialKind(i int) equiv.Kind {
	if i%2 == 1 {
		return equiv.Invalid
	}
	return equiv.Valid
}

// firstFailures counts an op × implementation's failures and keeps, per
// class, the max with the smallest Seq (the ones an unsharded, sequential
// run meets first), so a campaign where every case fails holds --max-failures
// failures in memory, not one per case. Safe for concurrent use.
type firstFailures struct {
	mu                    sync.Mutex
	max                   int
	mismatches, transport int
	notSent               int // cases the breaker kept from being sent
	firstMismatches       []*equiv.Failure
	firstTransport        []*equiv.Failure
	firstTrialMismatch    *equiv.Failure
}

func newFirstFailures(max int) *firstFailures { return &firstFailures{max: max} }

// skip counts a case not sent: its op was unavailable.
func (k *firstFailures) skip() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.notSent++
}

func (k *firstFailures) add(f *equiv.Failure) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if f.Transport {
		k.transport++
		k.firstTransport = keepFirst(k.firstTransport, f, k.max)
		return
	}
	k.mismatches++
	k.firstMismatches = keepFirst(k.firstMismatches, f, k.max)
	if f.Seq >= tableSeqBase && (k.firstTrialMismatch == nil || f.Seq < k.firstTrialMismatch.Seq) {
		k.firstTrialMismatch = f
	}
}

// keepFirst inserts f into fs (sorted by Seq) and drops the last beyond max.
func keepFirst(fs []*equiv.Failure, f *equiv.Failure, max int) []*equiv.Failure {
	i, _ := slices.BinarySearchFunc(fs, f.Seq, func(a *equiv.Failure, seq int) int { return cmp.Compare(a.Seq, seq) })
	if i >= max {
		return fs
	}
	fs = slices.Insert(fs, i, f)
	if len(fs) > max {
		fs = fs[:max]
	}
	return fs
}

// runTrials checks the unit on the generated cases this shard owns,
// --parallel at a time, handing each failure to kept. Every goroutine it
// starts has ended when it returns.
func runTrials(u auditUnit, o auditOptions, bar *bar, kept *firstFailures) error {
	errs := make([]error, o.parallel)
	next := make(chan int)
	var wg sync.WaitGroup
	for w := range o.parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if errs[w] != nil {
					continue
				}
				if _, gone := u.unavailable(); gone {
					kept.skip()
					bar.add(1)
					continue
				}
				var f *equiv.Failure
				switch f, errs[w] = u.trial(trialKind(i), int(o.seed)+i/2); {
				case u.notSent(f):
					kept.skip()
				case f != nil:
					f.Seq = tableSeqBase + i
					kept.add(f)
				}
				bar.add(1)
			}
		}()
	}
	for i := range o.cases {
		if o.shard.owns(i) {
			next <- i
		}
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

func huntMutant(m equiv.Killable, maxCases int) (mutantResult, error) {
	r := mutantResult{Mutant: m.Name(), Op: m.Op(), Spec: m.SpecRef(), Bug: m.Bug()}
	n, f := m.Hunt(maxCases)
	r.CasesToKill = n
	if f != nil {
		r.Killed, r.KilledBy = true, f.Reason
	}
	rf, err := m.Regression()
	if err != nil {
		return r, err
	}
	r.RegressionKills = rf != nil
	return r, nil
}

func printAudit(w io.Writer, rep auditReport) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OP\tSPEC\tIMPL\tCASES\tTABLES\tRESULT")
	for _, r := range rep.Ops {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", r.Op, r.Spec, r.Impl, r.Cases, r.Tables, opVerdict(r))
	}
	for _, impl := range slices.Sorted(maps.Keys(rep.NotImplemented)) {
		for _, op := range rep.NotImplemented[impl] {
			fmt.Fprintf(tw, "%s\t\t%s\t\t\tnot implemented\n", op, impl)
		}
	}
	fmt.Fprintln(tw, "\t\t\t\t\t")
	if rep.ZooSkipped != "" {
		fmt.Fprintf(tw, "bug zoo skipped: %s\n", rep.ZooSkipped)
	}
	fmt.Fprintln(tw, "MUTANT\tSPEC\tOP\tCASES TO KILL\tREGRESSION\tRESULT")
	for _, m := range rep.Mutants {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", m.Mutant, m.Spec, m.Op, m.CasesToKill,
			verdict(m.RegressionKills, "kills", "MISSES"), verdict(m.Killed, "killed", "SURVIVED"))
	}
	tw.Flush()
	for _, r := range rep.Ops {
		for _, f := range r.Failures {
			fmt.Fprintf(w, "\n%v\n", f)
		}
		for _, f := range r.Transport {
			fmt.Fprintf(w, "\ntransport error: %v\n", f)
		}
		if r.Shrunk != nil {
			fmt.Fprintf(w, "\nminimal counterexample (rapid, seed %d):\n%v\n", rep.Seed, r.Shrunk)
		}
	}
	printPartial(w, rep.Ops)
	printAdapters(w, rep)
	for _, n := range rep.NotAudited {
		fmt.Fprintf(w, "\nnothing audited: %s\n", n)
	}
	fmt.Fprintf(w, "\naudit %s: seed %d, %d cases per op × implementation\n", verdict(rep.Passed, "passed", "FAILED"), rep.Seed, rep.Cases)
}

// printPartial says, per partially covered row, what was not audited.
func printPartial(w io.Writer, rows []opResult) {
	for _, r := range rows {
		if r.Partial != nil {
			fmt.Fprintf(w, "\npartially covered: %s on %s: %s\n", r.Op, r.Impl, notAuditedOf(*r.Partial))
		}
	}
}

// notAuditedOf says in one line what a partial declaration left out.
func notAuditedOf(p equiv.Restriction) string {
	var parts []string
	if len(p.StepsNotAudited) > 0 {
		parts = append(parts, "step kinds not audited: "+strings.Join(p.StepsNotAudited, ", "))
	}
	if len(p.OptionsNotAudited) > 0 {
		parts = append(parts, "options not audited: "+strings.Join(p.OptionsNotAudited, ", "))
	}
	parts = append(parts, fmt.Sprintf("%d table cases skipped", len(p.TablesSkipped)))
	return strings.Join(parts, "; ")
}

func opVerdict(r opResult) string {
	switch {
	case r.Passed && r.Partial != nil:
		return "pass, partially covered"
	case r.Passed:
		return "pass"
	case r.Unavailable != "":
		return fmt.Sprintf("UNAVAILABLE (%d cases not sent; %d mismatches, %d transport errors)", r.NotSent, r.Mismatches, r.TransportErrors)
	case r.TransportErrors == 0:
		return fmt.Sprintf("FAIL (%d mismatches)", r.Mismatches)
	}
	return fmt.Sprintf("FAIL (%d mismatches, %d transport errors)", r.Mismatches, r.TransportErrors)
}

func verdict(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return no
}

// bar is a progress bar drawn only on a terminal and never with --json.
type bar struct{ pb *progressbar.ProgressBar }

func newBar(stderr io.Writer, o auditOptions, total int64) *bar {
	f, ok := stderr.(*os.File)
	if o.asJSON || o.noProgress || !ok || !isatty.IsTerminal(f.Fd()) {
		return &bar{}
	}
	return &bar{pb: progressbar.NewOptions64(total, progressbar.OptionSetWriter(stderr),
		progressbar.OptionSetDescription("audit"), progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(100_000_000),
		progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("cases"),
		progressbar.OptionSetPredictTime(true))}
}

func (b *bar) add(n int) {
	if b.pb != nil {
		_ = b.pb.Add(n)
	}
}

func (b *bar) finish() {
	if b.pb != nil {
		_ = b.pb.Finish()
	}
}
