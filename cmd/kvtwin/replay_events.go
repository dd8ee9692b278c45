package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvtwin/kvtwin/events/tracegen"
	"github.com/kvtwin/kvtwin/replay"
)

// emitEventsFlags are `kvtwin replay --emit-events`'s flags.
type emitEventsFlags struct {
	file     string
	requests int
	opt      tracegen.Options
}

// addEmitEvents gives `kvtwin replay` the --emit-events mode: instead of
// replaying the trace through the radix tree, write the KV-event stream
// vLLM engines with the given capacity would publish for it
// (docs/spec/kv-events.md, events/tracegen) as a kvev.apply script in JSON Lines.
// In that mode --capacity-tokens is optional (it sets --capacity-blocks
// when that is not given) and --mode, --impl and --page-size are ignored.
func addEmitEvents(cmd *cobra.Command) {
	var fl emitEventsFlags
	d := tracegen.DefaultOptions()
	f := cmd.Flags()
	f.StringVar(&fl.file, "emit-events", "", "write the trace's KV-event stream (kvev.apply script, JSON Lines: {config, streams} header, one step a line) to FILE ('-' = stdout) instead of replaying")
	f.IntVar(&fl.opt.CapacityBlocks, "capacity-blocks", 0, "with --emit-events: each engine's GPU pool in blocks, 0 = unlimited (default: --capacity-tokens / --block-size)")
	f.IntVar(&fl.opt.BlockSize, "block-size", d.BlockSize, "with --emit-events: tokens per engine block")
	f.StringVar(&fl.opt.Encoding, "encoding", d.Encoding, "with --emit-events: event encoding, array (form A), map (form B) or mixed (alternating per event)")
	f.StringVar(&fl.opt.Hash, "hash", d.Hash, "with --emit-events: block hashes as int (vLLM), bin (32-byte digest) or signed (SGLang int64)")
	f.IntVar(&fl.opt.Engines, "engines", d.Engines, "with --emit-events: engines (publisher streams); requests go to XXH3(first --route-blocks hash ids) mod engines")
	f.IntVar(&fl.opt.RouteBlocks, "route-blocks", d.RouteBlocks, "with --emit-events: leading hash ids that pick a request's engine")
	f.StringVar(&fl.opt.Batch, "batch", d.Batch, "with --emit-events: one batch per engine per scheduler step (step: the requests of one timestamp) or per request")
	f.StringVar(&fl.opt.FreeOrder, "free-order", d.FreeOrder, "with --emit-events: a finished request's blocks join the free queue last block first (tail, vLLM: leaf-first eviction) or first block first (head: interior evictions)")
	f.IntVar(&fl.opt.IDTokens, "id-tokens", d.IDTokens, "with --emit-events: tokens one trace hash id expands to (512 = the trace's blocks; 16 = one 16-token block per id, a 32x smaller stream)")
	f.IntVar(&fl.opt.ScoreEvery, "score-every", 0, "with --emit-events: write a score step with every Nth request's prompt before its admission, 0 = none")
	f.IntVar(&fl.requests, "requests", 0, "with --emit-events: only the trace's first N requests, 0 = all")

	replayRun := cmd.RunE
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		if fl.file != "" {
			// --capacity-tokens is required only for the radix replay.
			if c := cmd.Flags().Lookup("capacity-tokens"); c != nil {
				delete(c.Annotations, cobra.BashCompOneRequiredFlag)
			}
		}
		return nil
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if fl.file == "" {
			return replayRun(cmd, args)
		}
		return runEmitEvents(cmd, fl)
	}
}

// emitEventsOutput is `kvtwin replay --emit-events FILE --json`.
type emitEventsOutput struct {
	// Trace is the trace read.
	Trace string `json:"trace"`
	// File is the events file written.
	File string `json:"file"`
	tracegen.Summary
	// Seconds is the emission's wall time (not deterministic).
	Seconds float64 `json:"seconds"`
}

func runEmitEvents(cmd *cobra.Command, fl emitEventsFlags) error {
	f := cmd.Flags()
	trace, _ := f.GetString("trace")
	opt := fl.opt
	if !f.Changed("capacity-blocks") && f.Changed("capacity-tokens") {
		tokens, _ := f.GetInt("capacity-tokens")
		if opt.BlockSize < 1 {
			return fmt.Errorf("--block-size %d: want >= 1", opt.BlockSize)
		}
		opt.CapacityBlocks = tokens / opt.BlockSize
		if tokens > 0 && opt.CapacityBlocks == 0 {
			return fmt.Errorf("--capacity-tokens %d is less than one %d-token block", tokens, opt.BlockSize)
		}
	}
	if opt.BlockSize == 0 || opt.Engines == 0 || opt.IDTokens == 0 || opt.RouteBlocks == 0 {
		return fmt.Errorf("--block-size, --engines, --id-tokens and --route-blocks must be >= 1")
	}
	if err := opt.WithDefaults().Validate(); err != nil {
		return err
	}
	if fl.requests < 0 {
		return fmt.Errorf("--requests %d: want >= 0", fl.requests)
	}
	reqs, err := replay.ReadFile(trace, replay.DefaultLimits())
	if err != nil {
		return err
	}
	if fl.requests > 0 && fl.requests < len(reqs) {
		reqs = reqs[:fl.requests]
	}
	var w io.Writer
	report := cmd.OutOrStdout()
	if fl.file == "-" {
		w, report = cmd.OutOrStdout(), cmd.ErrOrStderr()
	} else {
		out, err := os.Create(fl.file)
		if err != nil {
			return err
		}
		defer out.Close()
		w = out
	}
	start := time.Now()
	res, err := tracegen.Emit(w, reqs, opt)
	if err != nil {
		return fmt.Errorf("--emit-events %s: %w", fl.file, err)
	}
	if c, ok := w.(io.Closer); ok && fl.file != "-" {
		if err := c.Close(); err != nil {
			return err
		}
	}
	out := emitEventsOutput{Trace: trace, File: fl.file, Summary: res.Summary, Seconds: time.Since(start).Seconds()}
	if asJSON, _ := f.GetBool("json"); asJSON {
		enc := json.NewEncoder(report)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	printEmitEvents(report, out)
	return nil
}

func printEmitEvents(w io.Writer, o emitEventsOutput) {
	s, op := o.Summary, o.Summary.Options
	capacity := "unlimited"
	if op.CapacityBlocks > 0 {
		capacity = fmt.Sprintf("%d blocks (%d tokens) per engine", op.CapacityBlocks, op.CapacityBlocks*op.BlockSize)
	}
	hitRate := 0.0
	if s.PromptBlocks > 0 {
		hitRate = 100 * float64(s.HitBlocks) / float64(s.PromptBlocks)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, row := range [][2]string{
		{"trace", o.Trace},
		{"events file", fmt.Sprintf("%s (%s)", o.File, fmtBytes(s.FileBytes))},
		{"engines / block size / capacity", fmt.Sprintf("%d / %d / %s", op.Engines, op.BlockSize, capacity)},
		{"encoding / hash / batch / free order", fmt.Sprintf("%s / %s / %s / %s", op.Encoding, op.Hash, op.Batch, op.FreeOrder)},
		{"requests (truncated to capacity)", fmt.Sprintf("%d (%d)", s.Requests, s.Truncated)},
		{"scheduler steps", fmt.Sprint(s.SchedSteps)},
		{"batches (live steps)", fmt.Sprintf("%d %v", s.Batches, s.EngineBatches)},
		{"score steps", fmt.Sprint(s.ScoreSteps)},
		{"BlockStored events / blocks", fmt.Sprintf("%d / %d (%d duplicates)", s.StoredEvents, s.BlocksStored, s.DuplicateStores)},
		{"BlockRemoved events / blocks", fmt.Sprintf("%d / %d (%d interior)", s.RemovedEvents, s.BlocksRemoved, s.InteriorRemovals)},
		{"prompt blocks / prefix hits", fmt.Sprintf("%d / %d (%.2f%%)", s.PromptBlocks, s.HitBlocks, hitRate)},
		{"resident blocks at the end", fmt.Sprint(s.ResidentBlocks)},
		{"msgpack payload bytes", fmtBytes(s.PayloadBytes)},
		{"wall time", fmt.Sprintf("%.2f s", o.Seconds)},
	} {
		fmt.Fprintf(tw, "%s\t%s\n", row[0], row[1])
	}
	tw.Flush()
}

// fmtBytes renders a size with a binary prefix ("1.5 MiB").
func fmtBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
