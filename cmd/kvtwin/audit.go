package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/equiv/mutants"
)

// auditOptions are `kvtwin audit`'s flags.
type auditOptions struct {
	cases, mutantCases int
	seed               uint64
	ops, impls         string
	asJSON, noProgress bool
	maxFailures        int
}

// auditReport is the machine-readable result of `kvtwin audit --json`.
type auditReport struct {
	Seed    uint64         `json:"seed"`
	Cases   int            `json:"cases"`
	Ops     []opResult     `json:"ops"`
	Mutants []mutantResult `json:"mutants"`
	Passed  bool           `json:"passed"`
}

// opResult is one op × implementation row of the audit.
type opResult struct {
	Op       string           `json:"op"`
	Spec     string           `json:"spec"`
	Impl     string           `json:"impl"`
	Cases    int              `json:"cases"`
	Tables   int              `json:"tables"`
	Passed   bool             `json:"passed"`
	Failures []*equiv.Failure `json:"failures,omitempty"`
	// Shrunk is rapid's minimal counterexample for the first failing kind.
	Shrunk *equiv.Failure `json:"shrunk,omitempty"`
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
		Long: `audit runs, for every op and every implementation in this build, the boundary and
regression tables and N generated cases (valid and invalid alternately, seeds from --seed),
requiring byte-equal canonical results against ref and every spec property. A failure is shrunk
by rapid to a minimal counterexample. Then every mutant of the bug zoo must be killed within
--mutant-cases cases and by its own regression fixture. Exit status 1 on any failure or survivor.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAudit(cmd.OutOrStdout(), cmd.ErrOrStderr(), o) },
	}
	f := cmd.Flags()
	f.IntVar(&o.cases, "cases", 200, "generated cases per op × implementation")
	f.Uint64Var(&o.seed, "seed", 1, "first generator seed (also rapid's seed when shrinking)")
	f.StringVar(&o.ops, "ops", "", "only ops whose name matches this regexp")
	f.StringVar(&o.impls, "impls", "", "comma-separated implementations to audit (default: all in this build)")
	f.IntVar(&o.mutantCases, "mutant-cases", mutants.MaxCases, "generated cases a mutant may survive")
	f.IntVar(&o.maxFailures, "max-failures", 5, "failures reported per op × implementation")
	f.BoolVar(&o.asJSON, "json", false, "print the report as JSON")
	f.BoolVar(&o.noProgress, "no-progress", false, "never draw a progress bar")
	return cmd
}

func runAudit(stdout, stderr io.Writer, o auditOptions) error {
	if o.cases < 1 || o.mutantCases < 1 || o.maxFailures < 1 {
		return fmt.Errorf("--cases, --mutant-cases and --max-failures must be >= 1")
	}
	if o.seed > 1<<62 {
		return fmt.Errorf("--seed %d: want <= %d", o.seed, uint64(1)<<62)
	}
	sel, err := regexp.Compile(o.ops)
	if err != nil {
		return fmt.Errorf("--ops: %w", err)
	}
	impls, err := parseImpls(o.impls)
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
	zoo := selectMutants(sel)
	var work []auditUnit
	for _, s := range suites {
		for _, impl := range s.Entry().Impls() {
			if impls == nil || slices.Contains(impls, impl) {
				work = append(work, auditUnit{s, impl})
			}
		}
	}
	bar := newBar(stderr, o, int64(len(work))*int64(o.cases)+int64(len(zoo)))
	rep := auditReport{Seed: o.seed, Cases: o.cases, Passed: true}
	for _, u := range work {
		r, err := auditOp(u.suite, u.impl, o, bar)
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
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printAudit(stdout, rep)
	}
	if !rep.Passed {
		return &exitError{code: 1, msg: "audit failed"}
	}
	return nil
}

// auditUnit is one op × implementation to audit.
type auditUnit struct {
	suite equiv.Suite
	impl  catalog.Impl
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

func parseImpls(s string) ([]catalog.Impl, error) {
	if s == "" {
		return nil, nil
	}
	var impls []catalog.Impl
	for _, name := range strings.Split(s, ",") {
		i, err := catalog.ParseImpl(strings.TrimSpace(name))
		if err != nil {
			return nil, fmt.Errorf("--impls: %w", err)
		}
		if err := implAvailable(i); err != nil {
			return nil, err
		}
		impls = append(impls, i)
	}
	return impls, nil
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

func auditOp(s equiv.Suite, impl catalog.Impl, o auditOptions, bar *bar) (opResult, error) {
	r := opResult{Op: s.Name(), Spec: s.Entry().Spec(), Impl: string(impl), Cases: o.cases, Passed: true}
	b, g := s.TableSizes()
	r.Tables = b + g
	fs, err := s.Tables(impl)
	if err != nil {
		return r, err
	}
	r.Failures = append(r.Failures, fs...)
	var firstKind equiv.Kind
	for i := 0; i < o.cases; i++ {
		kind := equiv.Valid
		if i%2 == 1 {
			kind = equiv.Invalid
		}
		f, err := s.Trial(impl, kind, int(o.seed)+i/2)
		if err != nil {
			return r, err
		}
		if f != nil {
			if firstKind == "" {
				firstKind = kind
			}
			r.Failures = append(r.Failures, f)
		}
		bar.add(1)
	}
	if firstKind != "" {
		shrunk, err := s.Shrink(impl, firstKind)
		if err != nil {
			return r, err
		}
		r.Shrunk = shrunk
	}
	r.Passed = len(r.Failures) == 0
	if len(r.Failures) > o.maxFailures {
		r.Failures = r.Failures[:o.maxFailures]
	}
	return r, nil
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", r.Op, r.Spec, r.Impl, r.Cases, r.Tables, verdict(r.Passed, "pass", fmt.Sprintf("FAIL (%d)", len(r.Failures))))
	}
	fmt.Fprintln(tw, "\t\t\t\t\t")
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
		if r.Shrunk != nil {
			fmt.Fprintf(w, "\nminimal counterexample (rapid, seed %d):\n%v\n", rep.Seed, r.Shrunk)
		}
	}
	fmt.Fprintf(w, "\naudit %s: seed %d, %d cases per op × implementation\n", verdict(rep.Passed, "passed", "FAILED"), rep.Seed, rep.Cases)
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
		progressbar.OptionSetDescription("audit"), progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(100_000_000))}
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
