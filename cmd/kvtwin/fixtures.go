package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fixtures"
	"github.com/kvtwin/kvtwin/internal/bounded"
	"github.com/kvtwin/kvtwin/remote"
	"github.com/kvtwin/kvtwin/spec"
)

func newFixturesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fixtures",
		Short: "Generate regression fixtures from ref, or replay them against an implementation",
	}
	cmd.AddCommand(newFixturesGenCmd(), newFixturesCheckCmd())
	return cmd
}

func newFixturesGenCmd() *cobra.Command {
	var dir, ops string
	var seed, nValid, nInvalid int
	cmd := &cobra.Command{
		Use:   "gen",
		Short: "Write one JSON Lines file per op (<dir>/<op>.jsonl), generated from ref; deterministic per seed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sel, err := regexp.Compile(ops)
			if err != nil {
				return fmt.Errorf("--ops: %w", err)
			}
			if nValid < 0 || nInvalid < 0 || seed < 0 {
				return fmt.Errorf("--seed, --valid and --invalid must be >= 0")
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			for _, s := range equiv.Suites() {
				if !sel.MatchString(s.Name()) {
					continue
				}
				cases := s.FixturesFrom(seed, nValid, nInvalid)
				path := filepath.Join(dir, equiv.GoldenFileName(s.Name()))
				if err := fixtures.WriteFile(path, cases); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%d cases)\n", path, len(cases))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "fixtures/testdata", "output directory")
	cmd.Flags().StringVar(&ops, "ops", "", "only ops whose name matches this regexp")
	cmd.Flags().IntVar(&seed, "seed", 0, "first generator seed")
	cmd.Flags().IntVar(&nValid, "valid", equiv.GoldenValid, "generated valid cases per op")
	cmd.Flags().IntVar(&nInvalid, "invalid", equiv.GoldenInvalid, "generated invalid cases per op")
	return cmd
}

func newFixturesCheckCmd() *cobra.Command {
	var impl string
	var client clientAuth
	var timeout time.Duration
	var maxOutput int64
	lim := fixtures.DefaultLimits()
	cmd := &cobra.Command{
		Use:   "check FILE...",
		Short: "Replay fixture files against --impl ref|fast|cuda|exec:CMD ARGS…|http://HOST:PORT; exit 1 with a diff on the first mismatch",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			runner, closeRunner, err := fixtureRunner(impl, timeout, spec.Limits{MaxOutputBytes: maxOutput}, client)
			if err != nil {
				return err
			}
			defer closeRunner()
			if lim.MaxLineBytes < 1 || lim.MaxFileBytes < 1 {
				return fmt.Errorf("--max-line-bytes %d and --max-file-bytes %d: want >= 1", lim.MaxLineBytes, lim.MaxFileBytes)
			}
			for _, path := range files {
				if err := checkFixtureFile(cmd.OutOrStdout(), path, impl, lim, runner); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&impl, "impl", envOr("KVTWIN_IMPL", "fast"), "ref, fast, cuda, exec:CMD ARGS… (an adapter speaking docs/adapters.md over stdin/stdout), or the base URL of a kvtwin server or HTTP adapter")
	cmd.Flags().DurationVar(&timeout, "timeout", 60*time.Second, "per-call timeout for an exec or HTTP implementation")
	cmd.Flags().Int64Var(&maxOutput, "max-output-bytes", spec.DefaultMaxOutputBytes, "output size limit for local implementations")
	client.flags(cmd.Flags())
	cmd.Flags().IntVar(&lim.MaxLineBytes, "max-line-bytes", fixtures.DefaultMaxLineBytes, "longest fixture line read; a longer one is refused, naming its file and line")
	cmd.Flags().Int64Var(&lim.MaxFileBytes, "max-file-bytes", fixtures.DefaultMaxFileBytes, "largest fixture file read; a larger one is refused where it passes the bound")
	return cmd
}

// checkFixtureFile replays one fixture file against runner as it reads it,
// a line at a time: memory is bounded by --max-line-bytes, not by the
// file. A file that cannot be read, or breaks a bound, is a usage error
// (exit 2) naming the file and the line; a case that fails is exit 1 with
// its diff.
func checkFixtureFile(w io.Writer, path, impl string, lim fixtures.Limits, runner fixtures.Runner) error {
	f, err := bounded.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	rd := fixtures.NewReader(f, lim)
	n, mm, err := fixtures.CheckReader(rd, runner)
	var runErr *fixtures.RunError
	switch {
	case errors.As(err, &runErr):
		return &exitError{code: 1, msg: fmt.Sprintf("%s: line %d: %v", path, rd.Line(), err)}
	case err != nil:
		return fmt.Errorf("%s: %w", path, err)
	case mm != nil:
		fmt.Fprintf(w, "FAIL %s: case %d (line %d)\n%v\ninput: %s\n", path, n+1, rd.Line(), mm, mm.Case.In)
		return &exitError{code: 1}
	}
	fmt.Fprintf(w, "ok   %s: %d cases on %s\n", path, n, impl)
	return nil
}

// fixtureRunner is the runner --impl names and the function that releases
// it: an implementation of this build, or one outside it through the
// audit's transports (remote.Open: exec:CMD… as a long-lived subprocess,
// http:// as a server), whose replies are bounded in time and size. The
// comparison stays byte for byte (errors included); `kvtwin audit --errors`
// is the tool for engines that report their own error messages.
func fixtureRunner(impl string, timeout time.Duration, lim spec.Limits, client clientAuth) (fixtures.Runner, func(), error) {
	if remote.IsTarget(impl) {
		o := remote.Options{Timeout: timeout, Stderr: os.Stderr}
		if err := client.apply(&o); err != nil {
			return nil, nil, err
		}
		r, err := remote.Open(impl, o)
		if err != nil {
			return nil, nil, fmt.Errorf("--impl: %w", err)
		}
		return canonicalRunner{r}, func() { _ = r.Close() }, nil
	}
	i, err := catalog.ParseImpl(impl)
	if err != nil {
		return nil, nil, fmt.Errorf("--impl: %w (or exec:CMD ARGS…, or an http:// URL)", err)
	}
	if err := implAvailable(i); err != nil {
		return nil, nil, err
	}
	return fixtures.NewLocal(i, lim), func() {}, nil
}

// implAvailable fails when no catalog entry has impl in this build; it is
// how `--impl cuda` on a CPU-only build says why instead of falling back.
func implAvailable(impl catalog.Impl) error {
	for _, e := range catalog.All() {
		for _, i := range e.Impls() {
			if i == impl {
				return nil
			}
		}
	}
	return fmt.Errorf("--impl %s: %w: no op has a %s twin in this build (cuda needs a binary built with -tags cuda and a device)", impl, catalog.ErrImplUnavailable, impl)
}

func envOr(key, def string) string {
	if v, ok := os.LookupEnv(key); ok && v != "" {
		return v
	}
	return def
}

// canonicalRunner re-encodes an outside implementation's answers the way
// the audit does (equiv's strict decode, canonical encode) before fixtures
// compares them byte for byte: an adapter's member order, whitespace and
// escapes ("\u003e" for ">") are not differences. An answer that does not
// decode as the op's output or an error object is an error naming the op.
type canonicalRunner struct{ r remote.Impl }

// Run implements fixtures.Runner.
func (c canonicalRunner) Run(op string, in []byte) (fixtures.Result, error) {
	res, err := c.r.Run(op, in)
	if err != nil {
		return res, err
	}
	s, ok := equiv.Lookup(op)
	if !ok {
		return res, nil
	}
	got, reason := s.CanonicalAnswer(res)
	if reason != "" {
		return res, fmt.Errorf("%s: the answer of %s: %s", op, c.r.Name(), reason)
	}
	return got, nil
}
