package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/equiv"
	"github.com/kvtwin/kvtwin/fixtures"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/remote"
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
	cmd := &cobra.Command{
		Use:   "check FILE...",
		Short: "Replay fixture files against --impl ref|fast|cuda|exec:CMD ARGS…|http://HOST:PORT; exit 1 with a diff on the first mismatch",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			runner, closeRunner, err := fixtureRunner(impl, timeout, ref.Limits{MaxOutputBytes: maxOutput}, client)
			if err != nil {
				return err
			}
			defer closeRunner()
			for _, path := range files {
				cases, err := fixtures.ReadFile(path)
				if err != nil {
					return err
				}
				n, mm, err := fixtures.Check(cases, runner)
				if err != nil {
					return &exitError{code: 1, msg: fmt.Sprintf("%s: %v", path, err)}
				}
				if mm != nil {
					fmt.Fprintf(cmd.OutOrStdout(), "FAIL %s: case %d/%d\n%v\ninput: %s\n", path, n+1, len(cases), mm, mm.Case.In)
					return &exitError{code: 1}
				}
				fmt.Fprintf(cmd.OutOrStdout(), "ok   %s: %d cases on %s\n", path, n, impl)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&impl, "impl", envOr("KVTWIN_IMPL", "fast"), "ref, fast, cuda, exec:CMD ARGS… (an adapter speaking docs/adapters.md over stdin/stdout), or the base URL of a kvtwin server or HTTP adapter")
	cmd.Flags().DurationVar(&timeout, "timeout", 60*time.Second, "per-call timeout for an exec or HTTP implementation")
	cmd.Flags().Int64Var(&maxOutput, "max-output-bytes", ref.DefaultMaxOutputBytes, "output size limit for local implementations")
	client.flags(cmd.Flags())
	return cmd
}

// fixtureRunner is the runner --impl names and the function that releases
// it: an implementation of this build, or one outside it through the
// audit's transports (remote.Open: exec:CMD… as a long-lived subprocess,
// http:// as a server), whose replies are bounded in time and size. The
// comparison stays byte for byte (errors included); `kvtwin audit --errors`
// is the tool for engines that report their own error messages.
func fixtureRunner(impl string, timeout time.Duration, lim ref.Limits, client clientAuth) (fixtures.Runner, func(), error) {
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
