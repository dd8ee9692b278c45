package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvtwin/kvtwin/catalog"
)

// benchRow is one op × shape × implementation measurement (`kvtwin bench --json`).
// For shapes with CopyBytes, two yardstick rows are timed in the same run:
// impl "copy" is copy() into a warm destination (the memory-bandwidth
// floor), impl "clone" is bytes.Clone (a fresh destination: what any op
// returning new bytes of that size pays at least).
type benchRow struct {
	Op          string  `json:"op"`
	Shape       string  `json:"shape"`
	Impl        string  `json:"impl"`
	NsPerOp     float64 `json:"ns_per_op"`
	BytesPerOp  int64   `json:"bytes_per_op"`
	AllocsPerOp int64   `json:"allocs_per_op"`
}

func newBenchCmd() *cobra.Command {
	var ops, shapes, implList string
	var asJSON bool
	var benchtime time.Duration
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Benchmark every op's shapes on every implementation (Go's testing.Benchmark), with fast/ref and copy ratios",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opSel, err := regexp.Compile(ops)
			if err != nil {
				return fmt.Errorf("--ops: %w", err)
			}
			shapeSel, err := regexp.Compile(shapes)
			if err != nil {
				return fmt.Errorf("--shapes: %w", err)
			}
			impls, err := parseImpls(implList)
			if err != nil {
				return err
			}
			if benchtime <= 0 {
				return fmt.Errorf("--benchtime %v: want > 0", benchtime)
			}
			if err := flag.Set("test.benchtime", benchtime.String()); err != nil {
				return fmt.Errorf("set benchtime: %w", err)
			}
			rows, err := runBenches(opSel, shapeSel, impls)
			if err != nil {
				return err
			}
			if len(rows) == 0 {
				return fmt.Errorf("--ops %q --shapes %q select nothing", ops, shapes)
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			printBench(cmd.OutOrStdout(), rows)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&ops, "ops", "", "only ops whose name matches this regexp")
	f.StringVar(&shapes, "shapes", "", "only shapes whose name matches this regexp")
	f.StringVar(&implList, "impls", "", "comma-separated implementations (default: all in this build)")
	f.BoolVar(&asJSON, "json", false, "print [{op, shape, impl, ns_per_op, bytes_per_op, allocs_per_op}]")
	f.DurationVar(&benchtime, "benchtime", time.Second, "target run time per measurement")
	cmd.AddCommand(newBenchAdmissionCmd())   // `kvtwin bench admission`; plain `kvtwin bench` is unchanged
	cmd.AddCommand(newBenchEventsCmd())      // `kvtwin bench events FILE` (bench_events.go)
	cmd.AddCommand(newBenchEventsScaleCmd()) // `kvtwin bench events-scale` (bench_events_scale.go)
	// `kvtwin bench record|text|chart`: runs kept in docs/bench/ (benchrecord.go)
	cmd.AddCommand(newBenchRecordCmd(), newBenchTextCmd(), newBenchChartCmd())
	return cmd
}

func runBenches(opSel, shapeSel *regexp.Regexp, impls []catalog.Impl) ([]benchRow, error) {
	var rows []benchRow
	for _, e := range catalog.All() {
		if !opSel.MatchString(e.Name()) {
			continue
		}
		for _, b := range e.Benchmarks() {
			if !shapeSel.MatchString(b.Shape) {
				continue
			}
			for _, impl := range e.Impls() {
				if impls != nil && !slices.Contains(impls, impl) {
					continue
				}
				run, err := b.Prepare(impl)
				if err != nil {
					return nil, err
				}
				row, err := measure(e.Name(), b.Shape, string(impl), run)
				if err != nil {
					return nil, err
				}
				rows = append(rows, row)
			}
			if b.CopyBytes > 0 {
				for _, y := range []struct {
					impl string
					run  func() error
				}{{"copy", copyRun(b.CopyBytes)}, {"clone", cloneRun(b.CopyBytes)}} {
					row, err := measure(e.Name(), b.Shape, y.impl, y.run)
					if err != nil {
						return nil, err
					}
					rows = append(rows, row)
				}
			}
		}
	}
	return rows, nil
}

func copyRun(n int64) func() error {
	src, dst := make([]byte, n), make([]byte, n)
	for i := range src {
		src[i] = byte(i)
	}
	return func() error { copy(dst, src); return nil }
}

func cloneRun(n int64) func() error {
	src := make([]byte, n)
	for i := range src {
		src[i] = byte(i)
	}
	var keep []byte
	return func() error { keep = bytes.Clone(src); _ = keep; return nil }
}

func measure(op, shape, impl string, run func() error) (benchRow, error) {
	if err := run(); err != nil {
		return benchRow{}, fmt.Errorf("%s %s on %s: shape input rejected: %w", op, shape, impl, err)
	}
	// Start every measurement from a collected heap, so one shape's garbage
	// (64 MiB arenas) is not collected on the next shape's clock.
	runtime.GC()
	res := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = run()
		}
	})
	if res.N == 0 {
		return benchRow{}, fmt.Errorf("%s %s on %s: benchmark did not run", op, shape, impl)
	}
	return benchRow{Op: op, Shape: shape, Impl: impl, NsPerOp: float64(res.T.Nanoseconds()) / float64(res.N),
		BytesPerOp: res.AllocedBytesPerOp(), AllocsPerOp: res.AllocsPerOp()}, nil
}

func printBench(w io.Writer, rows []benchRow) {
	type key struct{ op, shape, impl string }
	ns := map[key]float64{}
	for _, r := range rows {
		ns[key{r.Op, r.Shape, r.Impl}] = r.NsPerOp
	}
	ratio := func(r benchRow, other string) string {
		d, ok := ns[key{r.Op, r.Shape, other}]
		if !ok || r.Impl == other || r.Impl == "copy" || r.Impl == "clone" || d == 0 {
			return ""
		}
		return fmt.Sprintf("%.3f", r.NsPerOp/d)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "OP\tSHAPE\tIMPL\tNS/OP\tB/OP\tALLOCS/OP\t÷REF\t÷COPY\t÷CLONE\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t\n", r.Op, r.Shape, r.Impl, fmtNs(r.NsPerOp),
			r.BytesPerOp, r.AllocsPerOp, ratio(r, "ref"), ratio(r, "copy"), ratio(r, "clone"))
	}
	tw.Flush()
}

func fmtNs(ns float64) string {
	switch {
	case ns >= 1e6:
		return fmt.Sprintf("%.3f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.3f µs", ns/1e3)
	}
	return fmt.Sprintf("%.1f ns", ns)
}

// parseImpls reads a comma-separated list of implementations of this build.
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
