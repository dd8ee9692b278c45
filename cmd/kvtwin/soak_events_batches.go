package main

import (
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
)

// This file builds the well-behaved KV-event batches the soak's publishers
// send, as the publisher script's commands (scripts/kvev_publisher.py
// encodes them with msgpack): vLLM-shaped runs of chained blocks per
// request over several DP ranks in both event encodings and all three hash
// representations, removals of the oldest runs (interior blocks included,
// as vLLM evicts), occasional AllBlocksCleared, a batch now and then lost
// on the live socket (replay must bring it back) or dropped for good (an
// unrecoverable gap: the engines go stale until their next clear), and the
// pinned prompts growing a few blocks at a time
// (docs/spec/kv-events.md §1.3–§2.6).

// pubCommand is one command of the publisher script.
type pubCommand map[string]any

// pubEvent is one event as the script takes it: "type", the fields by
// name, and "form" ("map" for the tagged-map encoding).
type pubEvent map[string]any

// hashStyle is how a publisher writes a block hash (spec §1.5).
type hashStyle int

const (
	hashUint   hashStyle = iota // vLLM's default: the digest's low 64 bits, an unsigned int (≥ 2^63 as uint64)
	hashSigned                  // SGLang: a signed int64, negative half the time
	hashBin                     // vLLM with int hashes off: the digest as bin, its last 8 bytes the hash
)

// value is h as the script's JSON takes it.
func (st hashStyle) value(h uint64) any {
	switch st {
	case hashSigned:
		return int64(h)
	case hashBin:
		var d [32]byte // a SHA-256-sized digest whose last 8 bytes are h
		for i := 0; i < 24; i += 8 {
			binary.BigEndian.PutUint64(d[i:], h*uint64(i+3))
		}
		binary.BigEndian.PutUint64(d[24:], h)
		return map[string]string{"bin": hex.EncodeToString(d[:])}
	}
	return h
}

// engineStyle is how one engine's publisher encodes its events.
type engineStyle struct {
	mapForm bool      // events as tagged maps (vLLM after #42892, SGLang after #37482)
	hashes  hashStyle // block hash representation
	lora    string    // lora_name of every store ("" for the base model)
}

// churnStyles rotate over the churn source's ranks: every encoding a
// mixed fleet sends, and a LoRA namespace.
func churnStyles() []engineStyle {
	return []engineStyle{
		{hashes: hashUint},
		{mapForm: true, hashes: hashUint},
		{hashes: hashBin},
		{mapForm: true, hashes: hashSigned, lora: "soak-lora"},
	}
}

// storedEvent is a BlockStored of the blocks hashes, under parent (nil:
// the root), holding tokens (len(hashes) × page of them).
func storedEvent(st engineStyle, hashes []uint64, parent *uint64, tokens []int64, page int) pubEvent {
	hs := make([]any, len(hashes))
	for i, h := range hashes {
		hs[i] = st.hashes.value(h)
	}
	ev := pubEvent{"type": "BlockStored", "block_hashes": hs, "parent_block_hash": nil,
		"token_ids": tokens, "block_size": page, "lora_id": nil, "medium": "GPU"}
	if parent != nil {
		ev["parent_block_hash"] = st.hashes.value(*parent)
	}
	if st.lora != "" {
		ev["lora_name"] = st.lora
	}
	return st.formed(ev)
}

// removedEvent is a BlockRemoved of hashes.
func removedEvent(st engineStyle, hashes []uint64) pubEvent {
	hs := make([]any, len(hashes))
	for i, h := range hashes {
		hs[i] = st.hashes.value(h)
	}
	return st.formed(pubEvent{"type": "BlockRemoved", "block_hashes": hs, "medium": "GPU"})
}

// clearedEvent is an AllBlocksCleared.
func clearedEvent(st engineStyle) pubEvent { return st.formed(pubEvent{"type": "AllBlocksCleared"}) }

func (st engineStyle) formed(ev pubEvent) pubEvent {
	if st.mapForm {
		ev["form"] = "map"
	}
	return ev
}

// Sizes of the churn source: prompts of churnMinTokens to churnMaxTokens
// tokens in 16-token pages, most sharing part of one of a few "system
// prompts"; an engine evicts its oldest runs past churnMaxResident blocks,
// so its pages (holes included) stay far below the index's 4 Mi-token
// budget, and clears itself about once in churnClearOdds batches.
const (
	churnPage        = 16
	churnMinTokens   = 64
	churnMaxTokens   = 2048
	churnBases       = 16
	churnMaxResident = 2048
	churnClearOdds   = 2000
	churnLoseOdds    = 100 // a batch lost on the live socket: replay recovers it
	churnDropOdds    = 500 // a seq dropped for good: an unrecoverable gap
)

// churnEngine is the publisher's model of one engine's cache: the
// residency count of every block it announced and its runs, oldest first.
type churnEngine struct {
	rank     int64
	style    engineStyle
	counts   map[uint64]int
	runs     [][]uint64
	resident int
}

// churnWorkload generates one source's batches over its engines.
type churnWorkload struct {
	rng     *rand.Rand
	engines []*churnEngine
	bases   [][]int64
	next    int
	gaps    bool // lose and drop batches now and then
}

// newChurnWorkload models ranks engines (styles rotating).
func newChurnWorkload(rng *rand.Rand, ranks int, gaps bool) *churnWorkload {
	c := &churnWorkload{rng: rng, gaps: gaps}
	styles := churnStyles()
	for r := range ranks {
		c.engines = append(c.engines, &churnEngine{rank: int64(r), style: styles[r%len(styles)], counts: map[uint64]int{}})
	}
	for range churnBases {
		c.bases = append(c.bases, randomTokens(rng, nil, churnMaxTokens))
	}
	return c
}

// batch is the next command: an emit of one to four events on the next
// engine, or the same batch lost or dropped.
func (c *churnWorkload) batch() pubCommand {
	e := c.engines[c.next%len(c.engines)]
	c.next++
	events := []pubEvent{} // never null: the script iterates it
	if c.rng.IntN(churnClearOdds) == 0 {
		events = append(events, e.clear())
	}
	for range 1 + c.rng.IntN(4) {
		events = append(events, c.events(e)...)
	}
	cmd := pubCommand{"op": "emit", "events": events, "rank": e.rank}
	if e.style.mapForm && c.rng.IntN(20) == 0 {
		cmd["batch"] = "map" // the map-shaped batch one upstream revision declares (spec §1.3)
	}
	if c.gaps {
		switch {
		case c.rng.IntN(churnLoseOdds) == 0:
			cmd["op"] = "lose"
		case c.rng.IntN(churnDropOdds) == 0:
			cmd = pubCommand{"op": "drop"} // its events are lost with it: the model and the index part ways
		}
	}
	return cmd
}

// events is a store of a new request's uncached blocks (three in four) or
// the eviction of the engine's oldest run; a store that takes the engine
// past churnMaxResident is followed by the eviction of its oldest run.
func (c *churnWorkload) events(e *churnEngine) []pubEvent {
	if c.rng.IntN(4) == 0 && len(e.runs) > 0 {
		return []pubEvent{e.evictOldest()}
	}
	var out []pubEvent
	if ev := e.store(c.prompt()); ev != nil {
		out = append(out, ev)
	}
	if e.resident > churnMaxResident && len(e.runs) > 1 {
		out = append(out, e.evictOldest())
	}
	return out
}

// prompt is churnMinTokens to churnMaxTokens tokens; four in five start
// with part of a base.
func (c *churnWorkload) prompt() []int64 {
	n := churnMinTokens + c.rng.IntN(churnMaxTokens-churnMinTokens+1)
	toks := make([]int64, 0, n)
	if c.rng.IntN(5) > 0 {
		toks = append(toks, c.bases[c.rng.IntN(len(c.bases))][:c.rng.IntN(n+1)]...)
	}
	return randomTokens(c.rng, toks, n-len(toks))
}

// store announces the prompt's blocks past its longest resident prefix,
// as vLLM does for a request whose prefix hit the cache; nil when every
// block is resident already.
func (e *churnEngine) store(prompt []int64) pubEvent {
	hashes := chainHashes(prompt, churnPage)
	from := 0
	for from < len(hashes) && e.counts[hashes[from]] > 0 {
		from++
	}
	if from == len(hashes) {
		return nil
	}
	run := hashes[from:]
	for _, h := range run {
		e.counts[h]++
	}
	e.runs = append(e.runs, run)
	e.resident += len(run)
	var parent *uint64
	if from > 0 {
		parent = &hashes[from-1]
	}
	return storedEvent(e.style, run, parent, prompt[from*churnPage:len(hashes)*churnPage], churnPage)
}

// evictOldest removes the engine's oldest run, last block first: its
// blocks may be the parents of later runs, which then hang under holes.
func (e *churnEngine) evictOldest() pubEvent {
	run := e.runs[0]
	e.runs = e.runs[1:]
	rev := make([]uint64, len(run))
	for i, h := range run {
		rev[len(run)-1-i] = h
		if e.counts[h]--; e.counts[h] == 0 {
			delete(e.counts, h)
		}
	}
	e.resident -= len(run)
	return removedEvent(e.style, rev)
}

// clear forgets everything, as AllBlocksCleared makes the index do.
func (e *churnEngine) clear() pubEvent {
	clear(e.counts)
	e.runs, e.resident = nil, 0
	return clearedEvent(e.style)
}

// pinnedLoseOdds: a pinned batch lost on the live socket now and then;
// replay brings it back, so every pinned block still arrives.
const pinnedLoseOdds = 100

// pinnedWorkload grows the pinned prompts, engine by engine.
type pinnedWorkload struct {
	rng  *rand.Rand
	set  *pinnedSet
	next int
}

// batch extends one unfinished prompt of the next engine by one to eight
// blocks (one event of them, or an SGLang event per page); once an
// engine's prompts are complete it stores a stretch of one again, which
// raises residency counts and leaves every score as it was.
func (w *pinnedWorkload) batch() pubCommand {
	engines := pinnedEngines()
	e := engines[w.next%len(engines)]
	w.next++
	var open, all []*pinnedPrompt
	for _, p := range w.set.prompts {
		if p.engine.rank != e.rank {
			continue
		}
		all = append(all, p)
		if int(p.published.Load()) < p.blocks() {
			open = append(open, p)
		}
	}
	k := 1 + w.rng.IntN(8)
	var p *pinnedPrompt
	var from int
	if len(open) > 0 {
		p = open[w.rng.IntN(len(open))]
		from = int(p.published.Load())
		k = min(k, p.blocks()-from)
		p.published.Add(int64(k)) // before the send: a score read later never exceeds it
	} else {
		p = all[w.rng.IntN(len(all))]
		k = min(k, p.blocks())
		from = w.rng.IntN(p.blocks() - k + 1)
	}
	cmd := pubCommand{"op": "emit", "events": p.events(from, k), "rank": e.rank}
	if w.rng.IntN(pinnedLoseOdds) == 0 {
		cmd["op"] = "lose"
	}
	return cmd
}

// events stores blocks [from, from+k) of the prompt under block from-1.
func (p *pinnedPrompt) events(from, k int) []pubEvent {
	page := p.engine.pageSize
	style := engineStyle{hashes: hashUint}
	per := k // vLLM: the whole run in one event
	if p.engine.sglang {
		style, per = engineStyle{mapForm: true, hashes: hashSigned}, 1
	}
	var out []pubEvent
	for i := from; i < from+k; i += per {
		var parent *uint64
		if i > 0 {
			parent = &p.hashes[i-1]
		}
		n := min(per, from+k-i)
		out = append(out, storedEvent(style, p.hashes[i:i+n], parent, p.tokens[i*page:(i+n)*page], page))
	}
	return out
}
