package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/events/tracegen"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// kvevTwin is one implementation of the event-fed index and its decoder.
type kvevTwin struct {
	index  spec.NewKVEvIndexFunc
	decode func(spec.Limits, spec.KVEvDecodeInput) (spec.KVMessage, error)
}

// kvevTwinOf returns the twin --impl names, fast (the production index)
// or ref, paired by the catalog as for every other consumer: the index
// constructor of catalog.KVEvIndex and the decoder of the kvev.decode
// entry. Only fast and ref are accepted: neither has a CUDA twin.
func kvevTwinOf(impl string) (kvevTwin, error) {
	if i := catalog.Impl(impl); i != catalog.Fast && i != catalog.Ref {
		return kvevTwin{}, fmt.Errorf("--impl %q: want fast or ref", impl)
	}
	index, err := catalog.KVEvIndex(catalog.Impl(impl))
	if err != nil {
		return kvevTwin{}, fmt.Errorf("--impl %s: %w", impl, err)
	}
	decode, err := catalog.KVEvDecode().Func(catalog.Impl(impl))
	if err != nil {
		return kvevTwin{}, fmt.Errorf("--impl %s: %w", impl, err)
	}
	return kvevTwin{index, decode}, nil
}

// evStep is one step of an events file, ready to run.
type evStep struct {
	live   bool
	stream string
	frames [][]byte
	query  spec.KVEvScoreQuery
}

// evScript is an events file prepared for ingestion.
type evScript struct {
	cfg     spec.KVEvConfig
	streams []spec.KVEvStream
	steps   []evStep
	batches int
	scores  int
	payload int64
}

// prepareEvents validates a loaded events file and lays its steps out for
// timing (frames as byte slices, queries built). Only live and score steps
// are accepted: the emitter writes nothing else.
func prepareEvents(in spec.KVEvApplyInput) (*evScript, error) {
	if err := ref.ValidateKVEvApply(in); err != nil {
		return nil, err
	}
	sc := &evScript{cfg: in.Config, streams: in.Streams, steps: make([]evStep, 0, len(in.Steps))}
	for i, s := range in.Steps {
		switch s.Op {
		case spec.KVStepLive:
			fr := make([][]byte, len(s.Frames))
			for j, f := range s.Frames {
				fr[j] = f
			}
			if len(fr) == 3 {
				sc.payload += int64(len(fr[2]))
			}
			sc.steps = append(sc.steps, evStep{live: true, stream: s.Stream, frames: fr})
			sc.batches++
		case spec.KVStepScore:
			sc.steps = append(sc.steps, evStep{query: spec.KVEvScoreQuery{Tokens: s.Tokens, Namespace: s.Namespace, Group: s.Group, Tier: s.Tier, Exact: s.Exact}})
			sc.scores++
		default:
			return nil, fmt.Errorf("steps[%d].op %q: a bench events file holds live and score steps only", i, s.Op)
		}
	}
	return sc, nil
}

// ingestStats is what one pass over a script did.
type ingestStats struct {
	// IngestNs is the wall time of the live steps (decode + cursor + apply).
	IngestNs int64
	// ScoreNs and Scores are the score steps run and their time.
	ScoreNs int64
	Scores  int
	// StepErrors counts live steps with a step error or refused batches or
	// events; FirstError describes the first.
	StepErrors int
	FirstError string
	// PeakHeap is the largest HeapAlloc seen (sampled only when asked).
	PeakHeap uint64
}

// ingest runs every live step of sc on ix, and every scoreEvery-th score
// step (0: none). sampleEvery > 0 reads the heap every that many live
// steps (a stop-the-world call: only for the memory pass).
func ingest(ix spec.KVEvIndex, sc *evScript, scoreEvery, sampleEvery int) ingestStats {
	var st ingestStats
	var ms runtime.MemStats
	scoreIdx, live := 0, 0
	start := time.Now()
	for i := range sc.steps {
		s := &sc.steps[i]
		if !s.live {
			if scoreEvery > 0 && scoreIdx%scoreEvery == 0 {
				t := time.Now()
				_, err := ix.Score(s.query)
				st.ScoreNs += time.Since(t).Nanoseconds()
				st.Scores++
				if err != nil && st.StepErrors == 0 {
					st.FirstError = fmt.Sprintf("step %d (score): %v", i, err)
				}
				if err != nil {
					st.StepErrors++
				}
			}
			scoreIdx++
			continue
		}
		r := ix.Live(s.stream, s.frames)
		if r.Error != nil || len(r.Errors) > 0 || len(r.Lost) > 0 || len(r.ReplayRequest) > 0 {
			if st.StepErrors == 0 {
				b, _ := json.Marshal(r)
				st.FirstError = fmt.Sprintf("step %d (%s seq %s): %.400s", i, s.stream, hex.EncodeToString(s.frames[1]), b)
			}
			st.StepErrors++
		}
		if live++; sampleEvery > 0 && live%sampleEvery == 0 {
			runtime.ReadMemStats(&ms)
			st.PeakHeap = max(st.PeakHeap, ms.HeapAlloc)
		}
	}
	st.IngestNs = time.Since(start).Nanoseconds() - st.ScoreNs
	return st
}

// benchEventsResult is `kvtwin bench events --json`.
type benchEventsResult struct {
	File string `json:"file"`
	Impl string `json:"impl"`
	// What the file holds (counted by the impl's decoder).
	Streams       int   `json:"streams"`
	Batches       int   `json:"batches"`
	Events        int   `json:"events"`
	BlocksStored  int   `json:"blocks_stored"`
	BlocksRemoved int   `json:"blocks_removed"`
	PayloadBytes  int64 `json:"payload_bytes"`
	ScoreSteps    int   `json:"score_steps"`
	// Timed ingestion: Runs passes, each on a fresh index.
	Runs          int     `json:"runs"`
	IngestNs      []int64 `json:"ingest_ns"`
	BestNs        int64   `json:"best_ns"`
	MedianNs      int64   `json:"median_ns"`
	BlocksPerSec  float64 `json:"blocks_per_sec"`
	BatchesPerSec float64 `json:"batches_per_sec"`
	NsPerBlock    float64 `json:"ns_per_block"`
	MBPerSec      float64 `json:"payload_mb_per_sec"`
	// Decode alone (the impl's kvev.decode over every live message, best run).
	DecodeNs           int64   `json:"decode_ns"`
	DecodeBlocksPerSec float64 `json:"decode_blocks_per_sec"`
	// Scores run per pass (every --score-every-th score step) and their mean.
	Scores       int     `json:"scores"`
	ScoreNsPerOp float64 `json:"score_ns_per_op,omitzero"`
	// Memory pass: heap growth while ingesting (sampled) and after a GC
	// with the index alive.
	PeakHeapBytes     uint64 `json:"peak_heap_bytes"`
	RetainedHeapBytes uint64 `json:"retained_heap_bytes"`
	// The final index.
	Engines         int    `json:"engines"`
	Pages           int    `json:"pages"`
	Holes           int    `json:"holes"`
	StaleEngines    int    `json:"stale_engines"`
	OrphanStores    uint64 `json:"orphan_stores"`
	UnknownRemovals uint64 `json:"unknown_removals"`
	Refused         uint64 `json:"refused"`
	Digest          string `json:"digest"`
	// StepErrors counts steps that failed in the memory pass; FirstError is the first.
	StepErrors int    `json:"step_errors"`
	FirstError string `json:"first_error,omitzero"`
}

func newBenchEventsCmd() *cobra.Command {
	var impl string
	var scoreEvery, runs int
	var asJSON bool
	lim := tracegen.DefaultLimits()
	cmd := &cobra.Command{
		Use:   "events FILE",
		Short: "Ingest a KV-event stream (kvtwin replay --emit-events) through decode + apply: blocks/s, batches/s, ns/block, peak heap",
		Long: "Loads an events file (kvev.apply script in JSON Lines), then runs its live steps through a fresh\n" +
			"event-fed index --runs times (decode + cursor + apply, timed), scoring every --score-every-th score\n" +
			"step of the file in between (timed apart), times the decoder alone, and makes one more pass that\n" +
			"samples the heap. Exits 1 when a step fails or the index reports orphans, unknown removals, refusals\n" +
			"or stale engines: an emitted stream has none.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tw, err := kvevTwinOf(impl)
			if err != nil {
				return err
			}
			if runs < 1 {
				return fmt.Errorf("--runs %d: want >= 1", runs)
			}
			if scoreEvery < 0 {
				return fmt.Errorf("--score-every %d: want >= 0", scoreEvery)
			}
			if lim.MaxLineBytes < 1 || lim.MaxFileBytes < 1 {
				return fmt.Errorf("--max-line-bytes %d and --max-file-bytes %d: want >= 1", lim.MaxLineBytes, lim.MaxFileBytes)
			}
			in, err := tracegen.LoadFileLimited(args[0], lim)
			if err != nil {
				return err
			}
			sc, err := prepareEvents(in)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			res, err := benchEvents(tw, sc, scoreEvery, runs)
			if err != nil {
				return fmt.Errorf("%s: --impl %s: %w", args[0], impl, err)
			}
			res.File, res.Impl = args[0], impl
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(res); err != nil {
					return err
				}
			} else {
				printBenchEvents(cmd.OutOrStdout(), res)
			}
			if res.StepErrors > 0 || res.OrphanStores > 0 || res.UnknownRemovals > 0 || res.Refused > 0 || res.StaleEngines > 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("%s: the stream did not apply cleanly (%d step errors, %d orphan stores, %d unknown removals, %d refused, %d stale engines) %s",
					args[0], res.StepErrors, res.OrphanStores, res.UnknownRemovals, res.Refused, res.StaleEngines, res.FirstError)}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&impl, "impl", "fast", "index implementation: fast (fast.NewKVEvIndex) or ref")
	f.IntVar(&scoreEvery, "score-every", 1, "run every Nth score step of the file (1 = all, 0 = none); scores are timed apart from ingestion")
	f.IntVar(&runs, "runs", 3, "timed passes, each on a fresh index")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	f.IntVar(&lim.MaxLineBytes, "max-line-bytes", tracegen.DefaultMaxLineBytes, "longest line of the events file read; a longer one is refused, naming the file and line")
	f.Int64Var(&lim.MaxFileBytes, "max-file-bytes", tracegen.DefaultMaxFileBytes, "largest events file read (it is held whole); a larger one is refused where it passes the bound")
	return cmd
}

// benchEvents measures sc on the twin.
func benchEvents(tw kvevTwin, sc *evScript, scoreEvery, runs int) (benchEventsResult, error) {
	res := benchEventsResult{Streams: len(sc.streams), Batches: sc.batches, ScoreSteps: sc.scores, PayloadBytes: sc.payload, Runs: runs}
	// Decode alone, which also counts the file's blocks.
	lim := spec.DefaultLimits()
	for r := range runs {
		var c tracegen.BatchCount
		start := time.Now()
		for i := range sc.steps {
			s := &sc.steps[i]
			if !s.live {
				continue
			}
			msg, err := tw.decode(lim, spec.KVEvDecodeInput{Frames: hexFrames(s.frames)})
			if err != nil {
				return res, fmt.Errorf("decode step %d: %w", i, err)
			}
			if r == 0 {
				for _, ev := range msg.Batch.Events {
					c.Events++
					switch ev.Type {
					case spec.EventStored:
						c.BlocksStored += len(ev.BlockHashes)
					case spec.EventRemoved:
						c.BlocksRemoved += len(ev.BlockHashes)
					}
				}
			}
		}
		ns := time.Since(start).Nanoseconds()
		if r == 0 {
			res.Events, res.BlocksStored, res.BlocksRemoved = c.Events, c.BlocksStored, c.BlocksRemoved
			res.DecodeNs = ns
		}
		res.DecodeNs = min(res.DecodeNs, ns)
	}
	blocks := float64(res.BlocksStored + res.BlocksRemoved)
	if res.DecodeNs > 0 {
		res.DecodeBlocksPerSec = blocks / (float64(res.DecodeNs) / 1e9)
	}
	var scoreNs int64
	for range runs {
		runtime.GC()
		ix, err := tw.index(sc.cfg, sc.streams)
		if err != nil {
			return res, err
		}
		st := ingest(ix, sc, scoreEvery, 0)
		res.IngestNs = append(res.IngestNs, st.IngestNs)
		scoreNs += st.ScoreNs
		res.Scores = st.Scores
	}
	sorted := slices.Sorted(slices.Values(res.IngestNs))
	res.BestNs, res.MedianNs = sorted[0], sorted[len(sorted)/2]
	if res.BestNs > 0 {
		sec := float64(res.BestNs) / 1e9
		res.BlocksPerSec = blocks / sec
		res.BatchesPerSec = float64(res.Batches) / sec
		res.MBPerSec = float64(res.PayloadBytes) / 1e6 / sec
	}
	if blocks > 0 {
		res.NsPerBlock = float64(res.BestNs) / blocks
	}
	if res.Scores > 0 {
		res.ScoreNsPerOp = float64(scoreNs) / float64(res.Scores*runs)
	}
	state, err := memoryPass(tw, sc, scoreEvery, &res)
	if err != nil {
		return res, err
	}
	res.Engines, res.Digest = len(state.Engines), state.Digest
	for _, e := range state.Engines {
		if e.Stale {
			res.StaleEngines++
		}
		res.OrphanStores += e.Counters.OrphanStores
		res.UnknownRemovals += e.Counters.UnknownRemovals
		res.Refused += e.Counters.Refused
		for _, p := range e.Pools {
			res.Pages += len(p.Pages)
			for _, pg := range p.Pages {
				if pg.Resident == 0 {
					res.Holes++
				}
			}
		}
	}
	return res, nil
}

// memoryPass ingests sc once more on a fresh index, sampling the heap:
// PeakHeapBytes is the largest growth over the collected heap before the
// index existed, RetainedHeapBytes the growth left after a collection with
// the index alive (its size).
func memoryPass(tw kvevTwin, sc *evScript, scoreEvery int, res *benchEventsResult) (spec.KVEvState, error) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	ix, err := tw.index(sc.cfg, sc.streams)
	if err != nil {
		return spec.KVEvState{}, err
	}
	st := ingest(ix, sc, scoreEvery, max(1, sc.batches/1000))
	runtime.ReadMemStats(&ms)
	peak := max(st.PeakHeap, ms.HeapAlloc)
	runtime.GC()
	runtime.ReadMemStats(&ms)
	runtime.KeepAlive(sc) // the payloads were in base: keep them out of the difference
	if peak > base {
		res.PeakHeapBytes = peak - base
	}
	if ms.HeapAlloc > base {
		res.RetainedHeapBytes = ms.HeapAlloc - base
	}
	res.StepErrors, res.FirstError = st.StepErrors, st.FirstError
	return ix.State(), nil
}

func hexFrames(fs [][]byte) []spec.HexBytes {
	out := make([]spec.HexBytes, len(fs))
	for i, f := range fs {
		out[i] = f
	}
	return out
}

func printBenchEvents(w io.Writer, r benchEventsResult) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	rows := [][2]string{
		{"file / impl", fmt.Sprintf("%s / %s", r.File, r.Impl)},
		{"streams / batches / events", fmt.Sprintf("%d / %d / %d", r.Streams, r.Batches, r.Events)},
		{"blocks stored / removed", fmt.Sprintf("%d / %d", r.BlocksStored, r.BlocksRemoved)},
		{"msgpack payload", fmtBytes(r.PayloadBytes)},
		{"ingest best / median", fmt.Sprintf("%s / %s (%d runs)", fmtNs(float64(r.BestNs)), fmtNs(float64(r.MedianNs)), r.Runs)},
		{"blocks/s", fmtRate(r.BlocksPerSec)},
		{"batches/s", fmtRate(r.BatchesPerSec)},
		{"ns/block", fmt.Sprintf("%.1f", r.NsPerBlock)},
		{"payload MB/s", fmt.Sprintf("%.1f", r.MBPerSec)},
		{"decode only: best / blocks/s", fmt.Sprintf("%s / %s", fmtNs(float64(r.DecodeNs)), fmtRate(r.DecodeBlocksPerSec))},
	}
	if r.Scores > 0 {
		rows = append(rows, [2]string{"scores / ns per score", fmt.Sprintf("%d of %d / %s", r.Scores, r.ScoreSteps, fmtNs(r.ScoreNsPerOp))})
	}
	rows = append(rows,
		[2]string{"heap peak / retained", fmt.Sprintf("%s / %s", fmtBytes(int64(r.PeakHeapBytes)), fmtBytes(int64(r.RetainedHeapBytes)))},
		[2]string{"final engines / pages / holes", fmt.Sprintf("%d / %d / %d", r.Engines, r.Pages, r.Holes)},
		[2]string{"orphans / unknown removals / refused / stale", fmt.Sprintf("%d / %d / %d / %d", r.OrphanStores, r.UnknownRemovals, r.Refused, r.StaleEngines)},
		[2]string{"step errors", fmt.Sprint(r.StepErrors)},
		[2]string{"digest", r.Digest},
	)
	for _, row := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", row[0], row[1])
	}
	tw.Flush()
}
