// Package tracegen turns a request trace into the KV-event stream its engines
// would publish, and reads that stream back. From the Mooncake conversation
// trace it builds the stream (docs/spec/kv-events.md §1) that vLLM engines
// with a given cache capacity would publish, written as a kvev.apply script
// (§2.10 A1) in JSON Lines: `kvtwin replay --emit-events` writes it and
// `kvtwin bench events` ingests it. (Before issue 28 the package was
// kvevgen.)
//
// The model, per engine (vLLM v1's BlockPool and scheduler):
//
//   - Tokens. The trace has no tokens: hash id k expands to IDTokens tokens
//     replay.BlockToken(k, j) (512 by default, which is exactly replay's
//     token expansion; the last id holds its share of the prompt's tail).
//     The prompt is cut into BlockSize-token blocks; only full blocks are
//     cached, as in vLLM.
//   - Hashes. Block i's hash is XXH3-64 of its parent's hash (8 bytes LE,
//     NoneHash for block 0) followed by its tokens (4 bytes LE each): a
//     chain like vLLM's hash(parent, tokens, extras). It is published as an
//     int, a signed int64 or a 32-byte bin (Options.Hash); all three
//     normalise to the same spec.EvHash (§1.5).
//   - Admission. The prompt's leading cached blocks are hits (at most
//     (len−1)/BlockSize of them: vLLM always computes the last token, so a
//     fully cached block-aligned prompt recomputes, and stores again, its
//     last block: a duplicate, §2.5). Hits are referenced; the other blocks
//     are allocated from the front of the free queue, and every popped
//     block that held a hash is evicted (one BlockRemoved per block, as
//     vLLM's _maybe_evict_cached_block); then the new blocks are cached as
//     one BlockStored whose parent is the last hit's hash.
//   - Completion. The request finishes before the next one is admitted
//     (output tokens are not modelled: the trace names none) and its
//     blocks are released into the back of the free queue, last block
//     first (FreeTail, vLLM's order: eviction then goes leaf-first) or
//     first block first (FreeHead: a prefix's head is evicted before its
//     tail, leaving holes in the index, §2.4).
//   - Batches. Requests arriving at the same trace timestamp form one
//     scheduler step (BatchStep) and each engine publishes one batch per
//     step with events; BatchRequest publishes one batch per request.
//   - Engines. With Engines > 1 each request goes to engine
//     XXH3(first RouteBlocks hash ids) mod Engines, so a conversation's
//     turns share an engine; every engine is its own publisher stream.
//
// A prompt with more full blocks than the capacity is truncated to it.
package tracegen

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/zeebo/xxh3"

	"github.com/kvtwin/kvtwin/replay"
	"github.com/kvtwin/kvtwin/spec"
)

// Batching and free-order choices.
const (
	// BatchStep publishes one batch per engine per scheduler step (the
	// requests of one trace timestamp).
	BatchStep = "step"
	// BatchRequest publishes one batch per request.
	BatchRequest = "request"
	// FreeTail releases a finished request's blocks last block first (vLLM v1).
	FreeTail = "tail"
	// FreeHead releases them first block first.
	FreeHead = "head"
)

// NoneHash stands for the parent of a sequence's first block in the hash
// chain (vLLM's NONE_HASH); it is never published. Its seed keeps the
// package's old name: every emitted hash chains from it, so renaming the
// seed would change every events file the emitter writes.
var NoneHash = xxh3.HashString("kvtwin/kvevgen NONE_HASH")

// TS0 is the publisher clock (seconds) at trace time 0.
const TS0 = 1757500000.0

// Options configure the emitted stream. Zero fields take DefaultOptions'.
type Options struct {
	// BlockSize is the engine's tokens per block.
	BlockSize int `json:"block_size"`
	// CapacityBlocks is each engine's GPU pool in blocks; 0 is unlimited.
	CapacityBlocks int `json:"capacity_blocks"`
	// Encoding is array, map or mixed (§1.4).
	Encoding string `json:"encoding"`
	// Hash is int, bin or signed (§1.5).
	Hash string `json:"hash"`
	// Engines is the number of engines (publisher streams).
	Engines int `json:"engines"`
	// Batch is step or request.
	Batch string `json:"batch"`
	// FreeOrder is tail or head.
	FreeOrder string `json:"free_order"`
	// IDTokens is the tokens one trace hash id expands to (512 = the trace's block).
	IDTokens int `json:"id_tokens"`
	// RouteBlocks is how many leading hash ids pick a request's engine.
	RouteBlocks int `json:"route_blocks"`
	// ScoreEvery, when > 0, writes a score step with the prompt of every
	// ScoreEvery-th request (0, N, 2N, …) before the step that admits it.
	ScoreEvery int `json:"score_every,omitzero"`
}

// DefaultOptions: 16-token blocks, unlimited capacity, array form, int
// hashes, one engine, one batch per step, vLLM's free order, 512 tokens
// per hash id, routing on the first 2 hash ids.
func DefaultOptions() Options {
	return Options{BlockSize: 16, Encoding: EncodingArray, Hash: HashInt, Engines: 1, Batch: BatchStep,
		FreeOrder: FreeTail, IDTokens: replay.BlockTokens, RouteBlocks: 2}
}

// WithDefaults fills zero fields from DefaultOptions.
func (o Options) WithDefaults() Options {
	d := DefaultOptions()
	if o.BlockSize == 0 {
		o.BlockSize = d.BlockSize
	}
	if o.Encoding == "" {
		o.Encoding = d.Encoding
	}
	if o.Hash == "" {
		o.Hash = d.Hash
	}
	if o.Engines == 0 {
		o.Engines = d.Engines
	}
	if o.Batch == "" {
		o.Batch = d.Batch
	}
	if o.FreeOrder == "" {
		o.FreeOrder = d.FreeOrder
	}
	if o.IDTokens == 0 {
		o.IDTokens = d.IDTokens
	}
	if o.RouteBlocks == 0 {
		o.RouteBlocks = d.RouteBlocks
	}
	return o
}

// Validate rejects options outside their ranges.
func (o Options) Validate() error {
	switch {
	case o.BlockSize < 1 || o.BlockSize > 1<<16:
		return fmt.Errorf("block size %d: want 1..65536", o.BlockSize)
	case o.CapacityBlocks < 0 || o.CapacityBlocks > 1<<30:
		return fmt.Errorf("capacity %d blocks: want 0 (unlimited) .. 2^30", o.CapacityBlocks)
	case o.Encoding != EncodingArray && o.Encoding != EncodingMap && o.Encoding != EncodingMixed:
		return fmt.Errorf("encoding %q: want array, map or mixed", o.Encoding)
	case o.Hash != HashInt && o.Hash != HashBin && o.Hash != HashSigned:
		return fmt.Errorf("hash %q: want int, bin or signed", o.Hash)
	case o.Engines < 1 || o.Engines > spec.MaxKVEvEngines:
		return fmt.Errorf("engines %d: want 1..%d", o.Engines, spec.MaxKVEvEngines)
	case o.Batch != BatchStep && o.Batch != BatchRequest:
		return fmt.Errorf("batch %q: want step or request", o.Batch)
	case o.FreeOrder != FreeTail && o.FreeOrder != FreeHead:
		return fmt.Errorf("free order %q: want tail or head", o.FreeOrder)
	case o.IDTokens < 1 || o.IDTokens > replay.BlockTokens:
		return fmt.Errorf("id tokens %d: want 1..%d", o.IDTokens, replay.BlockTokens)
	case o.RouteBlocks < 1:
		return fmt.Errorf("route blocks %d: want >= 1", o.RouteBlocks)
	case o.ScoreEvery < 0:
		return fmt.Errorf("score every %d: want >= 0", o.ScoreEvery)
	}
	return nil
}

// StreamName is engine i's stream name, and the source of its topic.
func StreamName(i int) string { return fmt.Sprintf("engine-%d", i) }

// Topic is engine i's topic frame: kv@<stream>@mooncake (§2.10 A2 makes
// the stream name the engine's source).
func Topic(i int) string { return "kv@" + StreamName(i) + "@mooncake" }

// Header is the first line of an events file: kvev.apply's config and streams.
type Header struct {
	// Config bounds the index. The token budget is the hard cap: holes
	// (FreeHead) are not bounded by the capacity.
	Config spec.KVEvConfig `json:"config,omitzero"`
	// Streams are the engines' publisher streams.
	Streams []spec.KVEvStream `json:"streams"`
}

// HeaderFor returns the header of a stream emitted with o.
func HeaderFor(o Options) Header {
	h := Header{Config: spec.KVEvConfig{MaxTokensPerEngine: spec.MaxKVEvTokensPerEngine}}
	if o.Engines > spec.DefaultKVEvConfig().MaxEngines {
		h.Config.MaxEngines = o.Engines
	}
	for i := range o.Engines {
		h.Streams = append(h.Streams, spec.KVEvStream{Name: StreamName(i)})
	}
	return h
}

// Summary counts what Emit wrote. Every field is deterministic.
type Summary struct {
	// Options are the options used, defaults filled.
	Options Options `json:"options"`
	// Requests is the requests admitted; Truncated those cut to the capacity.
	Requests  int `json:"requests"`
	Truncated int `json:"truncated"`
	// SchedSteps is the scheduler steps (distinct arrival groups).
	SchedSteps int `json:"sched_steps"`
	// Batches is the live steps written (published batches).
	Batches int `json:"batches"`
	// ScoreSteps is the score steps written.
	ScoreSteps int `json:"score_steps"`
	// StoredEvents and BlocksStored count BlockStored events and their hashes.
	StoredEvents int `json:"stored_events"`
	BlocksStored int `json:"blocks_stored"`
	// DuplicateStores counts stored blocks whose hash was already cached (§2.5).
	DuplicateStores int `json:"duplicate_stores"`
	// RemovedEvents and BlocksRemoved count BlockRemoved events and their hashes.
	RemovedEvents int `json:"removed_events"`
	BlocksRemoved int `json:"blocks_removed"`
	// InteriorRemovals counts removals of a hash's last copy while cached
	// children remain (holes in the index, §2.4).
	InteriorRemovals int `json:"interior_removals"`
	// PromptBlocks and HitBlocks are the requests' full blocks and prefix hits.
	PromptBlocks int64 `json:"prompt_blocks"`
	HitBlocks    int64 `json:"hit_blocks"`
	// PayloadBytes is the msgpack payloads' total size; FileBytes the file's.
	PayloadBytes int64 `json:"payload_bytes"`
	FileBytes    int64 `json:"file_bytes"`
	// ResidentBlocks is the cached blocks (copies) of all engines at the end.
	ResidentBlocks int64 `json:"resident_blocks"`
	// EngineBatches is the batches each engine published (= its last seq + 1).
	EngineBatches []int `json:"engine_batches"`
}

// ExpectedScore is what a score step must find: per engine, the leading
// cached blocks of the prompt in the simulated cache.
type ExpectedScore struct {
	// Step is the score step's index among all steps of the file.
	Step int
	// Request is the request's index in the trace slice.
	Request int
	// Engine is the request's engine.
	Engine int
	// Blocks[i] is engine i's leading cached blocks.
	Blocks []int
}

// Result is what Emit returns besides the file.
type Result struct {
	// Summary counts the stream.
	Summary Summary
	// Resident[i] is engine i's cached block hashes at the end, with their
	// copy counts: what the index's bindings must hold.
	Resident []map[spec.EvHash]int64
	// Scores are the score steps' expected results.
	Scores []ExpectedScore
}

// countingWriter counts bytes written.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// emitter holds the state of one Emit.
type emitter struct {
	o       Options
	out     *bufio.Writer
	engines []*engineSim
	seq     []uint64
	evCount []uint64 // events per engine, for mixed encoding
	pending [][]Event
	enc     *BatchEncoder
	sum     Summary
	scores  []ExpectedScore
	steps   int

	// scratch
	tokens []uint32
	hashes []uint64
	hbuf   []byte
	forms  []bool
	line   []byte
}

// Emit writes the event stream of reqs under o to w: the Header line,
// then one kvev.apply step per line, and returns the summary and the
// final simulated caches. The bytes depend only on reqs and o.
func Emit(w io.Writer, reqs []replay.Request, o Options) (*Result, error) {
	o = o.WithDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	enc, err := NewBatchEncoder(o.Hash)
	if err != nil {
		return nil, err
	}
	cw := &countingWriter{w: w}
	e := &emitter{o: o, out: bufio.NewWriterSize(cw, 1<<20), enc: enc,
		seq: make([]uint64, o.Engines), evCount: make([]uint64, o.Engines), pending: make([][]Event, o.Engines)}
	e.sum.Options = o
	for range o.Engines {
		e.engines = append(e.engines, newEngineSim(o.CapacityBlocks))
	}
	if err := e.writeLine(HeaderFor(o)); err != nil {
		return nil, err
	}
	for start := 0; start < len(reqs); {
		end := start + 1
		if o.Batch == BatchStep {
			for end < len(reqs) && reqs[end].Timestamp == reqs[start].Timestamp {
				end++
			}
		}
		if err := e.step(reqs, start, end); err != nil {
			return nil, err
		}
		start = end
	}
	if err := e.out.Flush(); err != nil {
		return nil, err
	}
	res := &Result{Scores: e.scores}
	for i, s := range e.engines {
		r := map[spec.EvHash]int64{}
		for h, n := range s.resident() {
			r[spec.EvHash(h)] = n
			e.sum.ResidentBlocks += n
		}
		res.Resident = append(res.Resident, r)
		e.sum.EngineBatches = append(e.sum.EngineBatches, int(e.seq[i]))
	}
	e.sum.FileBytes = cw.n
	res.Summary = e.sum
	return res, nil
}

func (e *emitter) writeLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = e.out.Write(b)
	e.steps++
	return err
}

// writeLive writes a live step's line: the bytes json.Marshal gives for
// spec.KVEvStep{Op: "live", Stream, Frames: [topic, seq, payload]}, written
// without it (a payload's hex is megabytes, which Marshal would quote and
// then re-scan).
func (e *emitter) writeLive(eng int, seq, payload []byte) error {
	b := append(e.line[:0], `{"op":"live","stream":"`...)
	b = append(b, StreamName(eng)...)
	b = append(b, `","frames":["`...)
	b = hex.AppendEncode(b, []byte(Topic(eng)))
	b = append(b, `","`...)
	b = hex.AppendEncode(b, seq)
	b = append(b, `","`...)
	b = hex.AppendEncode(b, payload)
	b = append(b, "\"]}\n"...)
	e.line = b
	_, err := e.out.Write(b)
	e.steps++
	return err
}

// step admits reqs[start:end] as one scheduler step (scores first, then
// admissions, then one batch per engine with events).
func (e *emitter) step(reqs []replay.Request, start, end int) error {
	e.sum.SchedSteps++
	if e.o.ScoreEvery > 0 {
		for i := start; i < end; i++ {
			if i%e.o.ScoreEvery != 0 {
				continue
			}
			if err := e.score(reqs[i], i); err != nil {
				return err
			}
		}
	}
	for i := start; i < end; i++ {
		eng := e.route(reqs[i])
		e.admit(eng, reqs[i])
		if e.o.Batch == BatchRequest {
			if err := e.flush(reqs[i].Timestamp); err != nil {
				return err
			}
		}
	}
	return e.flush(reqs[start].Timestamp)
}

// route picks a request's engine from its leading hash ids.
func (e *emitter) route(req replay.Request) int {
	if e.o.Engines == 1 {
		return 0
	}
	n := min(len(req.HashIDs), e.o.RouteBlocks)
	e.hbuf = e.hbuf[:0]
	for _, id := range req.HashIDs[:n] {
		e.hbuf = binary.LittleEndian.AppendUint32(e.hbuf, uint32(id))
	}
	return int(xxh3.Hash(e.hbuf) % uint64(e.o.Engines))
}

// prompt expands req into e.tokens (its prompt, truncated to the capacity)
// and e.hashes (its full blocks' chained hashes); it returns the number of
// full blocks and whether it truncated.
func (e *emitter) prompt(req replay.Request) (int, bool) {
	o := e.o
	e.tokens = e.tokens[:0]
	last := req.InputLength - replay.BlockTokens*(len(req.HashIDs)-1)
	for i, id := range req.HashIDs {
		n := o.IDTokens
		if i == len(req.HashIDs)-1 {
			n = (last*o.IDTokens + replay.BlockTokens - 1) / replay.BlockTokens
		}
		for j := range n {
			e.tokens = append(e.tokens, replay.BlockToken(id, j))
		}
	}
	n := len(e.tokens) / o.BlockSize
	truncated := false
	if o.CapacityBlocks > 0 && n > o.CapacityBlocks {
		n, truncated = o.CapacityBlocks, true
		e.tokens = e.tokens[:n*o.BlockSize]
	}
	e.hashes = e.hashes[:0]
	parent := NoneHash
	for i := range n {
		e.hbuf = binary.LittleEndian.AppendUint64(e.hbuf[:0], parent)
		for _, t := range e.tokens[i*o.BlockSize : (i+1)*o.BlockSize] {
			e.hbuf = binary.LittleEndian.AppendUint32(e.hbuf, t)
		}
		parent = xxh3.Hash(e.hbuf)
		e.hashes = append(e.hashes, parent)
	}
	return n, truncated
}

// score writes a score step with req's prompt and records, per engine, the
// leading cached blocks it must find.
func (e *emitter) score(req replay.Request, i int) error {
	e.prompt(req)
	exp := ExpectedScore{Step: e.steps - 1, Request: i, Engine: e.route(req)}
	for _, s := range e.engines {
		exp.Blocks = append(exp.Blocks, s.leading(e.hashes))
	}
	toks := make([]int64, len(e.tokens))
	for j, t := range e.tokens {
		toks[j] = int64(t)
	}
	if err := e.writeLine(spec.KVEvStep{Op: spec.KVStepScore, Tokens: toks}); err != nil {
		return err
	}
	e.scores = append(e.scores, exp)
	e.sum.ScoreSteps++
	return nil
}

// admit runs one request on engine eng and queues its events.
func (e *emitter) admit(eng int, req replay.Request) {
	s := e.engines[eng]
	n, truncated := e.prompt(req)
	e.sum.Requests++
	if truncated {
		e.sum.Truncated++
	}
	e.sum.PromptBlocks += int64(n)
	maxHit := (len(e.tokens) - 1) / e.o.BlockSize
	ids := make([]int32, n)
	k := 0
	for k < min(n, maxHit) {
		id := s.lookup(e.hashes[k])
		if id < 0 {
			break
		}
		s.touch(id)
		ids[k] = id
		k++
	}
	e.sum.HitBlocks += int64(k)
	for i := k; i < n; i++ {
		id, rm := s.allocate()
		ids[i] = id
		if rm != nil {
			e.queue(eng, Removed([]uint64{rm.hash}))
			e.sum.RemovedEvents++
			e.sum.BlocksRemoved++
			if rm.interior {
				e.sum.InteriorRemovals++
			}
		}
	}
	if k < n {
		var parent *uint64
		p := NoneHash
		if k > 0 {
			p = e.hashes[k-1]
			parent = &e.hashes[k-1]
		}
		for i := k; i < n; i++ {
			if s.lookup(e.hashes[i]) >= 0 {
				e.sum.DuplicateStores++
			}
			s.cache(ids[i], e.hashes[i], p)
			p = e.hashes[i]
		}
		bs := e.o.BlockSize
		e.queue(eng, Stored(slices.Clone(e.hashes[k:n]), parent, slices.Clone(e.tokens[k*bs:n*bs]), bs))
		e.sum.StoredEvents++
		e.sum.BlocksStored += n - k
	}
	if e.o.FreeOrder == FreeHead {
		for _, id := range ids {
			s.release(id)
		}
	} else {
		for _, id := range slices.Backward(ids) {
			s.release(id)
		}
	}
}

func (e *emitter) queue(eng int, ev Event) {
	e.pending[eng] = append(e.pending[eng], ev)
}

// flush publishes one batch per engine with pending events, engines in order.
func (e *emitter) flush(tsMillis int64) error {
	ts := TS0 + float64(tsMillis)/1000
	for eng, evs := range e.pending {
		if len(evs) == 0 {
			continue
		}
		e.forms = e.forms[:0]
		for range evs {
			m := e.o.Encoding == EncodingMap || (e.o.Encoding == EncodingMixed && e.evCount[eng]%2 == 1)
			e.forms = append(e.forms, m)
			e.evCount[eng]++
		}
		payload, err := e.enc.Encode(ts, 0, evs, e.forms)
		if err != nil {
			return err
		}
		var seq [8]byte
		binary.BigEndian.PutUint64(seq[:], e.seq[eng])
		e.seq[eng]++
		if err := e.writeLive(eng, seq[:], payload); err != nil {
			return err
		}
		e.sum.Batches++
		e.sum.PayloadBytes += int64(len(payload))
		e.pending[eng] = evs[:0]
	}
	return nil
}
