package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/events/tracegen"
	"github.com/kvtwin/kvtwin/spec"
)

// scaleOptions are the flags of `kvtwin bench events-scale`.
type scaleOptions struct {
	impl                 string
	blocks, tail         int64
	blockSize, perReq    int
	engines              int
	snapshotFile         string
	seed                 uint64
	maxTokensPerEngine   int64
	maxEnginesPerStream  int
	maxEnginesInTheIndex int
}

// Bounds of the events-scale flags: the index's own bounds, and one
// BlockStored per request whose hashes are numbered within 16 bits.
const (
	maxScaleEngines   = spec.MaxKVEvEngines // one engine a stream
	maxScaleBlockSize = 1 << 12
	maxScalePerReq    = 1 << 16
	maxScaleBlocks    = 1 << 40
)

// scaleResult is what events-scale measured: the sizing table's row.
type scaleResult struct {
	Impl               string  `json:"impl"`
	CPU                string  `json:"cpu"`
	Engines            int     `json:"engines"`
	BlockSize          int     `json:"block_size"`
	Blocks             int64   `json:"blocks"`
	Batches            int64   `json:"batches"`
	IngestSeconds      float64 `json:"ingest_seconds"`
	IngestBlocksPerSec float64 `json:"ingest_blocks_per_sec"`
	HeapBytes          int64   `json:"heap_bytes"`
	HeapBytesPerBlock  float64 `json:"heap_bytes_per_block"`
	BlocksPerGiB       float64 `json:"blocks_per_gib"`
	DigestSeconds      float64 `json:"digest_seconds"`
	SnapshotBytes      int64   `json:"snapshot_bytes"`
	SnapshotPerBlock   float64 `json:"snapshot_bytes_per_block"`
	FreezeSeconds      float64 `json:"freeze_seconds"`
	EncodeSeconds      float64 `json:"encode_seconds"`
	WriteSeconds       float64 `json:"write_seconds,omitempty"`
	ReadSeconds        float64 `json:"read_seconds,omitempty"`
	RestoreSeconds     float64 `json:"restore_seconds"`
	RestoredDigestOK   bool    `json:"restored_digest_ok"`
	TailBlocks         int64   `json:"tail_blocks"`
	TailSeconds        float64 `json:"tail_seconds"`
	TailBlocksPerSec   float64 `json:"tail_blocks_per_sec"`
	PeakRSSBytes       int64   `json:"peak_rss_bytes"`
}

func newBenchEventsScaleCmd() *cobra.Command {
	o := scaleOptions{}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "events-scale",
		Short: "Size one replica: heap bytes per indexed block, blocks per GiB, snapshot size, encode and restore time, catch-up rate",
		Long: "Builds an event-fed index of --blocks blocks of --block-size tokens over --engines engines (one\n" +
			"publisher stream each), fed as vLLM batches of one BlockStored of --per-request chained blocks of\n" +
			"random tokens (every page distinct: no prefix sharing, the most a block can cost), timing only\n" +
			"the index's Live calls. Then it measures the heap the index holds, freezes and writes its snapshot\n" +
			"(spec §2.10 A12; streamed to --snapshot-file if given), drops the index, restores one from the\n" +
			"snapshot, checks\n" +
			"that its digest equals the original's, and applies --tail more blocks to the restored index (the\n" +
			"catch-up from a snapshot plus a stream tail). Exits 1 when the restored digest differs. Peak RSS is\n" +
			"this process's VmHWM: the index and its snapshot are both in memory while it is written.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(); err != nil {
				return err
			}
			res, err := benchEventsScale(o)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(res); err != nil {
					return err
				}
			} else {
				printScale(cmd.OutOrStdout(), res)
			}
			if !res.RestoredDigestOK {
				return &exitError{code: 1, msg: "events-scale: the restored index's digest differs from the original's"}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.impl, "impl", "fast", "index implementation: fast or ref")
	f.Int64Var(&o.blocks, "blocks", 1<<20, "blocks to index (rounded down to whole requests)")
	f.IntVar(&o.blockSize, "block-size", 16, "tokens per block")
	f.IntVar(&o.perReq, "per-request", 64, "blocks per request (one BlockStored of this many chained blocks)")
	f.IntVar(&o.engines, "engines", 1, "engines, one publisher stream each; requests go round-robin")
	f.Int64Var(&o.tail, "tail", 1<<16, "blocks applied to the restored index after the restore")
	f.StringVar(&o.snapshotFile, "snapshot-file", "", "write the snapshot to this file and restore from it (timed apart); empty: keep it in memory")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the random tokens")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// check validates the flags against the index's bounds before anything is
// sized by them.
func (o *scaleOptions) check() error {
	if _, err := catalog.KVEvIndex(catalog.Impl(o.impl)); err != nil {
		return fmt.Errorf("--impl %q: %w", o.impl, err)
	}
	switch {
	case o.engines < 1 || o.engines > maxScaleEngines:
		return fmt.Errorf("--engines %d: want 1 to %d", o.engines, maxScaleEngines)
	case o.blockSize < 1 || o.blockSize > maxScaleBlockSize:
		return fmt.Errorf("--block-size %d: want 1 to %d", o.blockSize, maxScaleBlockSize)
	case o.perReq < 1 || o.perReq > maxScalePerReq:
		return fmt.Errorf("--per-request %d: want 1 to %d", o.perReq, maxScalePerReq)
	case o.blocks < int64(o.perReq) || o.blocks > maxScaleBlocks:
		return fmt.Errorf("--blocks %d: want %d (one request) to %d", o.blocks, o.perReq, int64(maxScaleBlocks))
	case o.tail < 0 || o.tail > maxScaleBlocks:
		return fmt.Errorf("--tail %d: want 0 to %d", o.tail, int64(maxScaleBlocks))
	}
	// The busiest engine holds ceil(requests / engines) requests, before
	// and after the tail; its tokens must fit one engine's bound.
	reqs := (o.blocks+o.tail)/int64(o.perReq) + 1
	perEngine := (reqs + int64(o.engines) - 1) / int64(o.engines) * int64(o.perReq) * int64(o.blockSize)
	if perEngine > spec.MaxKVEvTokensPerEngine {
		return fmt.Errorf("--blocks %d and --tail %d over --engines %d: %d tokens an engine, past max_tokens_per_engine's cap %d: add engines",
			o.blocks, o.tail, o.engines, perEngine, int64(spec.MaxKVEvTokensPerEngine))
	}
	o.maxTokensPerEngine = perEngine
	o.maxEnginesInTheIndex, o.maxEnginesPerStream = o.engines, 1
	return nil
}

// scaleFeed generates the requests of events-scale: each one batch of one
// BlockStored of perReq chained blocks, on stream req % engines.
type scaleFeed struct {
	o      scaleOptions
	rng    *rand.Rand
	enc    *tracegen.BatchEncoder
	toks   []uint32
	hashes []uint64
	seqs   []uint64 // next seq of each stream
	names  []string
	topic  []byte
	req    uint64
}

func newScaleFeed(o scaleOptions) (*scaleFeed, error) {
	enc, err := tracegen.NewBatchEncoder(tracegen.HashInt)
	if err != nil {
		return nil, err
	}
	f := &scaleFeed{o: o, rng: rand.New(rand.NewPCG(o.seed, 0x6b767477)), enc: enc,
		toks: make([]uint32, o.perReq*o.blockSize), hashes: make([]uint64, o.perReq),
		seqs: make([]uint64, o.engines), topic: []byte("kv-events")}
	for i := range o.engines {
		f.names = append(f.names, fmt.Sprintf("pod-%d", i))
	}
	return f, nil
}

func (f *scaleFeed) streams() []spec.KVEvStream {
	out := make([]spec.KVEvStream, len(f.names))
	for i, n := range f.names {
		out[i] = spec.KVEvStream{Name: n}
	}
	return out
}

// next applies one more request to ix and returns the time its Live call
// took. Hashes are the request number and the block's index, high bit set.
func (f *scaleFeed) next(ix spec.KVEvIndex) (time.Duration, error) {
	for i := range f.toks {
		f.toks[i] = f.rng.Uint32N(150000)
	}
	for i := range f.hashes {
		f.hashes[i] = f.req<<16 | uint64(i) | 1<<63
	}
	e := int(f.req % uint64(f.o.engines))
	f.req++
	payload, err := f.enc.Encode(0, 0, []tracegen.Event{tracegen.Stored(f.hashes, nil, f.toks, f.o.blockSize)}, nil)
	if err != nil {
		return 0, err
	}
	seq := binary.BigEndian.AppendUint64(nil, f.seqs[e])
	f.seqs[e]++
	start := time.Now()
	r := ix.Live(f.names[e], [][]byte{f.topic, seq, payload})
	d := time.Since(start)
	if r.Error != nil || len(r.Errors) > 0 {
		return d, fmt.Errorf("request %d on %s: %v %v", f.req-1, f.names[e], r.Error, r.Errors)
	}
	return d, nil
}

// feed applies n blocks' worth of requests and returns the Live time.
func (f *scaleFeed) feed(ix spec.KVEvIndex, blocks int64) (time.Duration, int64, error) {
	var total time.Duration
	var batches int64
	for range blocks / int64(f.o.perReq) {
		d, err := f.next(ix)
		if err != nil {
			return total, batches, err
		}
		total += d
		batches++
	}
	return total, batches, nil
}

func heapInUse() int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

func benchEventsScale(o scaleOptions) (scaleResult, error) {
	res := scaleResult{Impl: o.impl, CPU: fmt.Sprintf("%s, %d CPUs", procCPUModel(), runtime.NumCPU()), Engines: o.engines, BlockSize: o.blockSize}
	newIndex, _ := catalog.KVEvIndex(catalog.Impl(o.impl))
	restore, err := catalog.KVEvRestore(catalog.Impl(o.impl))
	if err != nil {
		return res, err
	}
	feed, err := newScaleFeed(o)
	if err != nil {
		return res, err
	}
	cfg := spec.KVEvConfig{MaxEngines: o.maxEnginesInTheIndex, MaxEnginesPerStream: o.maxEnginesPerStream, MaxTokensPerEngine: o.maxTokensPerEngine}
	base := heapInUse()
	ix, err := newIndex(cfg, feed.streams())
	if err != nil {
		return res, err
	}
	ingest, batches, err := feed.feed(ix, o.blocks)
	if err != nil {
		return res, err
	}
	res.Batches, res.Blocks = batches, batches*int64(o.perReq)
	res.IngestSeconds = ingest.Seconds()
	res.IngestBlocksPerSec = float64(res.Blocks) / ingest.Seconds()
	res.HeapBytes = heapInUse() - base
	res.HeapBytesPerBlock = float64(res.HeapBytes) / float64(res.Blocks)
	res.BlocksPerGiB = float64(1<<30) / res.HeapBytesPerBlock
	start := time.Now()
	want := ix.Digest()
	res.DigestSeconds = time.Since(start).Seconds()
	snap, err := writeScaleSnapshot(ix, uint64(batches), o.snapshotFile, &res)
	if err != nil {
		return res, err
	}
	ix = nil
	runtime.GC()
	if o.snapshotFile != "" {
		start = time.Now()
		if snap, err = os.ReadFile(o.snapshotFile); err != nil {
			return res, err
		}
		res.ReadSeconds = time.Since(start).Seconds()
	}
	start = time.Now()
	restored, covers, err := restore(cfg, snap)
	res.RestoreSeconds = time.Since(start).Seconds()
	if err != nil {
		return res, fmt.Errorf("restore: %w", err)
	}
	snap = nil
	res.RestoredDigestOK = covers == uint64(batches) && restored.Digest() == want
	tail, tailBatches, err := feed.feed(restored, o.tail)
	if err != nil {
		return res, fmt.Errorf("tail: %w", err)
	}
	res.TailBlocks, res.TailSeconds = tailBatches*int64(o.perReq), tail.Seconds()
	if tail > 0 {
		res.TailBlocksPerSec = float64(res.TailBlocks) / tail.Seconds()
	}
	res.PeakRSSBytes, _ = procStatusBytes(os.Getpid(), "VmHWM")
	runtime.KeepAlive(restored)
	return res, nil
}

// writeScaleSnapshot freezes ix (the ingest pause a replica sees, spec
// A12) and encodes the frozen state: into memory, or, when path is set,
// streamed into the file (encode and write timed together, then fsync)
// so that the bytes are never held whole; then it returns nil and the
// restore reads the file.
func writeScaleSnapshot(ix spec.KVEvIndex, covers uint64, path string, res *scaleResult) ([]byte, error) {
	fr, ok := ix.(spec.KVEvFreezer)
	if !ok {
		return nil, fmt.Errorf("--impl %s: the index cannot freeze a snapshot", res.Impl)
	}
	start := time.Now()
	fz, err := fr.Freeze(covers)
	res.FreezeSeconds = time.Since(start).Seconds()
	if err != nil {
		return nil, fmt.Errorf("freeze: %w", err)
	}
	if path == "" {
		start = time.Now()
		snap, err := fz.Encode()
		res.EncodeSeconds = time.Since(start).Seconds()
		if err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
		res.SnapshotBytes = int64(len(snap))
		res.SnapshotPerBlock = float64(len(snap)) / float64(res.Blocks)
		return snap, nil
	}
	start = time.Now()
	n, err := writeFrozen(path, fz)
	res.WriteSeconds = time.Since(start).Seconds()
	if err != nil {
		return nil, err
	}
	res.SnapshotBytes = n
	res.SnapshotPerBlock = float64(n) / float64(res.Blocks)
	return nil, nil
}

// writeFrozen streams fz's snapshot into path through a buffer and fsyncs
// it, so that the time counts the disk and not only the page cache.
func writeFrozen(path string, fz spec.KVEvFrozen) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	n, err := fz.WriteTo(w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("write %s: %w", path, err)
	}
	return n, nil
}

func printScale(w io.Writer, r scaleResult) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	rows := [][2]string{
		{"impl / cpu", r.Impl + " / " + r.CPU},
		{"engines / block size", fmt.Sprintf("%d / %d tokens", r.Engines, r.BlockSize)},
		{"blocks / batches", fmt.Sprintf("%d / %d", r.Blocks, r.Batches)},
		{"ingest", fmt.Sprintf("%.2f s, %.2f M blocks/s", r.IngestSeconds, r.IngestBlocksPerSec/1e6)},
		{"heap held", fmt.Sprintf("%s, %.0f bytes a block, %.1f M blocks per GiB", fmtBytes(r.HeapBytes), r.HeapBytesPerBlock, r.BlocksPerGiB/1e6)},
		{"digest", fmt.Sprintf("%.2f s", r.DigestSeconds)},
		{"snapshot", fmt.Sprintf("%s, %.0f bytes a block, freeze (the ingest pause) %.2f s", fmtBytes(r.SnapshotBytes), r.SnapshotPerBlock, r.FreezeSeconds)},
	}
	if r.WriteSeconds > 0 || r.ReadSeconds > 0 {
		rows = append(rows, [2]string{"snapshot file", fmt.Sprintf("encode+write+fsync %.2f s, read %.2f s", r.WriteSeconds, r.ReadSeconds)})
	} else {
		rows = append(rows, [2]string{"snapshot encode", fmt.Sprintf("%.2f s", r.EncodeSeconds)})
	}
	rows = append(rows,
		[2]string{"restore", fmt.Sprintf("%.2f s, digest equal: %v", r.RestoreSeconds, r.RestoredDigestOK)},
		[2]string{"tail after restore", fmt.Sprintf("%d blocks in %.2f s, %.2f M blocks/s", r.TailBlocks, r.TailSeconds, r.TailBlocksPerSec/1e6)},
		[2]string{"peak RSS", fmtBytes(r.PeakRSSBytes)},
	)
	for _, row := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", row[0], row[1])
	}
	tw.Flush()
}
