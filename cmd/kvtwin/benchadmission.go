package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kvtwin/kvtwin/admissiontrace"
	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/internal/bounded"
	"github.com/kvtwin/kvtwin/replay"
	"github.com/kvtwin/kvtwin/spec"
)

// benchAdmissionFlags are `kvtwin bench admission`'s flags. The budget
// flags (A3.2) override the --input file's values when given, and set the
// trace bench's settings.
type benchAdmissionFlags struct {
	input, trace, impl                                           string
	summary, deterministic, noCP                                 bool
	pageSize, cpSize, maxPrefill, chunk, maxRunning, l1Available int64
	l2Capacity, rounds                                           int64
	cpMaxRequests, cpMaxExtend, cpMaxCached                      int64
	cpMaxBuffer                                                  string
	l1CacheTokens, l2CacheTokens, window                         int
}

func newBenchAdmissionCmd() *cobra.Command {
	var fl benchAdmissionFlags
	cmd := &cobra.Command{
		Use:   "admission (--input FILE.json | --trace FILE)",
		Short: "Offline admission benchmark (admission-serving.md §A3): rounds, stop reasons, L2 load-back use, buffer estimates",
		Long: "Runs admission.bench on a JSON input (A3.2), or on a Mooncake trace replayed through a live two-tier\n" +
			"prefix cache (docs/admission.md). Budget flags override the input's values when given.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in, st, err := fl.benchInput(cmd.Flags())
			if err != nil {
				return err
			}
			return runBenchAdmission(cmd.OutOrStdout(), fl, in, st)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.input, "input", "", "A3.2 JSON input file")
	f.StringVar(&fl.trace, "trace", "", "Mooncake JSONL trace to drive the bench")
	f.StringVar(&fl.impl, "impl", "fast", "implementation of the admission round and, with --trace, of the prefix caches' radix trees: ref or fast")
	f.BoolVar(&fl.summary, "summary", false, "print only termination and summary (stop-reason histogram)")
	f.BoolVar(&fl.deterministic, "deterministic", false, "emit duration_us as 0")
	f.BoolVar(&fl.noCP, "no-cp", false, "disable the CP shared-KV path (cp: null)")
	f.Int64Var(&fl.pageSize, "page-size", 64, "KV page size in tokens")
	f.Int64Var(&fl.cpSize, "cp-size", 8, "attention CP size (the estimator's c)")
	f.Int64Var(&fl.maxPrefill, "max-prefill-tokens", 16384, "--max-prefill-tokens")
	f.Int64Var(&fl.chunk, "chunked-prefill-size", 8192, "--chunked-prefill-size (<= 0: off)")
	f.Int64Var(&fl.maxRunning, "max-running-requests", 64, "max running requests")
	f.Int64Var(&fl.l1Available, "l1-available", 400000, "fake L1 free slots at the start of every round")
	f.Int64Var(&fl.l2Capacity, "l2-capacity", 65536, "fake L2 load-back capacity per round, in tokens")
	f.Int64Var(&fl.rounds, "rounds", spec.MaxBenchRounds, "max_rounds")
	f.Int64Var(&fl.cpMaxRequests, "cp-max-requests", 0, "CP: max requests per batch (0: unlimited)")
	f.Int64Var(&fl.cpMaxExtend, "cp-max-total-extend-tokens", 0, "CP: max total extend tokens (0: default from the chunk budget)")
	f.Int64Var(&fl.cpMaxCached, "cp-max-total-cached-tokens", 0, "CP: max total cached tokens (0: unlimited)")
	f.StringVar(&fl.cpMaxBuffer, "cp-max-buffer-size", "", "CP: max buffer size, bytes or <n>{KB,MB,GB,KiB,MiB,GiB} (empty: gate off)")
	f.IntVar(&fl.l1CacheTokens, "l1-cache-tokens", 1<<22, "trace: device prefix-cache capacity in tokens")
	f.IntVar(&fl.l2CacheTokens, "l2-cache-tokens", 1<<24, "trace: host prefix-cache capacity in tokens (0: no host tier)")
	f.IntVar(&fl.window, "window", admissiontrace.DefaultWindow, "trace: queue window, the next N arrivals each round sees")
	return cmd
}

// benchInput reads --input, or converts --trace (returning what the cache
// replay saw), and applies the flags.
func (fl benchAdmissionFlags) benchInput(fs *pflag.FlagSet) (spec.AdmissionBenchInput, *admissiontrace.Stats, error) {
	switch {
	case (fl.input == "") == (fl.trace == ""):
		return spec.AdmissionBenchInput{}, nil, fmt.Errorf("give exactly one of --input and --trace")
	case fl.input != "":
		b, err := bounded.ReadFile(fl.input, benchInputLimits)
		if err != nil {
			return spec.AdmissionBenchInput{}, nil, fmt.Errorf("--input: %w", err)
		}
		in, err := catalog.DecodeStrict[spec.AdmissionBenchInput](b)
		if err != nil {
			return spec.AdmissionBenchInput{}, nil, fmt.Errorf("%s: %w", fl.input, err)
		}
		return fl.apply(fs, in, false), nil, nil
	}
	newTree, err := catalog.RadixTree(catalog.Impl(fl.impl))
	if err != nil {
		return spec.AdmissionBenchInput{}, nil, fmt.Errorf("--impl %s: %w", fl.impl, err)
	}
	reqs, err := replay.ReadFile(fl.trace, replay.DefaultLimits())
	if err != nil {
		return spec.AdmissionBenchInput{}, nil, err
	}
	base := fl.apply(fs, TraceBenchBase(), true)
	in, st, err := admissiontrace.Bench(reqs, base, admissiontrace.Config{L1CacheTokens: fl.l1CacheTokens, L2CacheTokens: fl.l2CacheTokens, Window: fl.window, NewTree: newTree})
	return in, &st, err
}

// benchInputLimits bound --input, an admission.bench body read from a
// file: the server's default body bound (--max-body-bytes, 64 MiB) and
// nesting bound (--max-json-depth, 512), and at most MaxBenchRequests
// requests counted before they are decoded.
var benchInputLimits = bounded.Limits{MaxBytes: 64 << 20, MaxDepth: 512, BytesName: "the --input bound",
	Lists: map[string]int{"requests[]": spec.MaxBenchRequests}}

// TraceBenchBase is the trace bench's settings before flags: A3.2's
// example settings with CP on and no knob set.
func TraceBenchBase() spec.AdmissionBenchInput {
	in := catalog.AdmissionBenchA32()
	in.CP = &spec.BenchCP{}
	in.Requests = nil
	return in
}

// apply overrides in with every flag the user gave (all of them when all).
func (fl benchAdmissionFlags) apply(fs *pflag.FlagSet, in spec.AdmissionBenchInput, all bool) spec.AdmissionBenchInput {
	set := func(name string) bool { return all || fs.Changed(name) }
	for _, o := range []struct {
		name string
		dst  *int64
		v    int64
	}{{"page-size", &in.PageSize, fl.pageSize}, {"cp-size", &in.CPSize, fl.cpSize}, {"max-prefill-tokens", &in.MaxPrefillTokens, fl.maxPrefill},
		{"max-running-requests", &in.MaxRunningRequests, fl.maxRunning}, {"l1-available", &in.FakeL1.Available, fl.l1Available},
		{"l2-capacity", &in.FakeL2LoadBackCapacity, fl.l2Capacity}, {"rounds", &in.MaxRounds, fl.rounds}} {
		if set(o.name) {
			*o.dst = o.v
		}
	}
	if set("chunked-prefill-size") {
		v := fl.chunk
		in.ChunkedPrefillSize = &v
	}
	if fl.deterministic {
		in.Deterministic = true
	}
	if fl.noCP {
		in.CP = nil
		return in
	}
	knobs := []struct {
		name string
		dst  func(*spec.BenchCP) **int64
		v    int64
	}{{"cp-max-requests", func(c *spec.BenchCP) **int64 { return &c.MaxRequests }, fl.cpMaxRequests},
		{"cp-max-total-extend-tokens", func(c *spec.BenchCP) **int64 { return &c.MaxTotalExtendTokens }, fl.cpMaxExtend},
		{"cp-max-total-cached-tokens", func(c *spec.BenchCP) **int64 { return &c.MaxTotalCachedTokens }, fl.cpMaxCached}}
	for _, k := range knobs {
		if !fs.Changed(k.name) {
			continue
		}
		if in.CP == nil {
			in.CP = &spec.BenchCP{}
		}
		v := k.v
		*k.dst(in.CP) = &v
		if v == 0 {
			*k.dst(in.CP) = nil // 0 is "unset", as the flag help says
		}
	}
	if fs.Changed("cp-max-buffer-size") {
		if in.CP == nil {
			in.CP = &spec.BenchCP{}
		}
		in.CP.MaxBufferSize = nil
		if fl.cpMaxBuffer != "" {
			s := spec.ByteSize(fl.cpMaxBuffer)
			in.CP.MaxBufferSize = &s
		}
	}
	return in
}

// runBenchAdmission runs the bench on the chosen twin and prints its JSON
// (with --summary: the termination, the summary and, in trace mode, the
// cache replay's totals).
func runBenchAdmission(w io.Writer, fl benchAdmissionFlags, in spec.AdmissionBenchInput, st *admissiontrace.Stats) error {
	f, err := catalog.AdmissionBench().Func(catalog.Impl(fl.impl))
	if err != nil {
		return err
	}
	out, err := f(spec.DefaultLimits(), in)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if fl.summary {
		return enc.Encode(struct {
			Trace       *admissiontrace.Stats `json:"trace,omitempty"`
			Termination string                `json:"termination"`
			Summary     spec.BenchSummary     `json:"summary"`
		}{st, out.Termination, out.Summary})
	}
	return enc.Encode(out)
}
