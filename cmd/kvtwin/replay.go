package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/replay"
)

// replayOutput is `kvtwin replay --json`: the report with its inputs.
type replayOutput struct {
	// Trace is the trace file replayed.
	Trace string `json:"trace"`
	// Impl is the tree implementation.
	Impl string `json:"impl"`
	replay.Report
}

func newReplayCmd() *cobra.Command {
	var trace, mode, impl string
	var capacity, pageSize int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Replay a Mooncake request trace through the radix prefix cache: hit rate, evictions, block ops/s, match latency",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			i, err := catalog.ParseImpl(impl)
			if err != nil {
				return fmt.Errorf("--impl: %w", err)
			}
			newTree, err := catalog.RadixTree(i)
			if err != nil {
				return fmt.Errorf("--impl %s: %w", i, err)
			}
			cfg := replay.Config{Mode: replay.Mode(mode), CapacityTokens: capacity, NewTree: newTree}
			if cfg.Mode == replay.ModeTokens || cmd.Flags().Changed("page-size") {
				cfg.PageSize = pageSize
			}
			reqs, err := replay.ReadFile(trace, replay.DefaultLimits())
			if err != nil {
				return err
			}
			rep, err := replay.Run(reqs, cfg)
			if err != nil {
				return err
			}
			out := replayOutput{Trace: trace, Impl: impl, Report: rep}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			printReplay(cmd.OutOrStdout(), out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&trace, "trace", "", "Mooncake JSONL trace (timestamp, input_length, output_length, hash_ids per line)")
	f.IntVar(&capacity, "capacity-tokens", 0, "KV pool size in tokens, 0 = unlimited (blocks mode: capacity/512 blocks)")
	f.IntVar(&pageSize, "page-size", replay.DefaultPageSize, "tokens per page in tokens mode (blocks mode is always 1 block a unit)")
	f.StringVar(&mode, "mode", string(replay.ModeTokens), "tokens (expanded token ids, an engine cache) or blocks (hash ids, a router index)")
	f.StringVar(&impl, "impl", string(catalog.Fast), "radix tree implementation: fast or ref (cuda is refused: the tree has no CUDA twin)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	// MarkFlagRequired fails only for an undefined name; the CLI test
	// checks that both flags are required.
	_ = cmd.MarkFlagRequired("trace")
	_ = cmd.MarkFlagRequired("capacity-tokens")
	addEmitEvents(cmd) // --emit-events FILE: the trace's KV-event stream (replay_events.go)
	return cmd
}

// printReplay writes the report as a two-column table.
func printReplay(w io.Writer, o replayOutput) {
	r, tm := o.Report, o.Report.Timing
	capacity := "unlimited"
	if r.CapacityTokens > 0 {
		capacity = fmt.Sprintf("%d tokens (%d units)", r.CapacityTokens, r.CapacityUnits)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, row := range [][2]string{
		{"trace", o.Trace},
		{"impl / mode / page size", fmt.Sprintf("%s / %s / %d", o.Impl, r.Mode, r.PageSize)},
		{"capacity", capacity},
		{"requests", fmt.Sprint(r.Requests)},
		{"input tokens", fmt.Sprint(r.InputTokens)},
		{"hit tokens", fmt.Sprint(r.HitTokens)},
		{"token hit rate", fmt.Sprintf("%.2f%%", 100*r.HitRate)},
		{"evictions", fmt.Sprintf("%d nodes, %d tokens", r.Evictions, r.EvictedTokens)},
		{"truncated inserts", fmt.Sprint(r.TruncatedInserts)},
		{"tree units peak / final", fmt.Sprintf("%d / %d", r.PeakUnits, r.FinalUnits)},
		{"block ops match / insert / evict", fmt.Sprintf("%d / %d / %d", r.MatchBlockOps, r.InsertBlockOps, r.EvictBlockOps)},
		{"mixed block ops/s", fmt.Sprintf("%s (%d ops in %s)", fmtRate(tm.MixedBlockOpsPerSec), r.MixedBlockOps, fmtNs(float64(tm.MixedNs)))},
		{"query-only block ops/s", fmt.Sprintf("%s (%d ops in %s)", fmtRate(tm.QueryBlockOpsPerSec), r.QueryBlockOps, fmtNs(float64(tm.QueryNs)))},
		{"match latency p50 / p99", fmt.Sprintf("%s / %s", fmtNs(float64(tm.MatchP50Ns)), fmtNs(float64(tm.MatchP99Ns)))},
	} {
		fmt.Fprintf(tw, "%s\t%s\n", row[0], row[1])
	}
	tw.Flush()
}

// fmtRate renders a per-second rate with an SI prefix ("2.07 M").
func fmtRate(r float64) string {
	switch {
	case r >= 1e9:
		return fmt.Sprintf("%.3g G", r/1e9)
	case r >= 1e6:
		return fmt.Sprintf("%.3g M", r/1e6)
	case r >= 1e3:
		return fmt.Sprintf("%.3g k", r/1e3)
	}
	return fmt.Sprintf("%.3g", r)
}
