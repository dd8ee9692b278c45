package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync/atomic"

	"github.com/kvtwin/kvtwin/server"
)

// This file is the soak's check of the event-fed index from the outside:
// prompts the pinned publisher stores a few blocks at a time and never
// removes, and the well-behaved workers' /v1/prefix:score requests for
// them. A pinned prompt's score can only grow (nothing removes or clears
// its blocks), can never pass the blocks published so far, and no other
// engine was ever sent its tokens (docs/spec/kv-events.md §2.8).

// pinnedEngine is one engine of the pinned source: its rank, its page size
// and how its publisher writes (vLLM: a run of blocks per BlockStored,
// unsigned int hashes, positional events; SGLang: one BlockStored per page,
// signed hashes, map-form events).
type pinnedEngine struct {
	rank     int64
	pageSize int
	sglang   bool
}

// pinnedEngines are the pinned source's engines.
func pinnedEngines() []pinnedEngine {
	return []pinnedEngine{{rank: 0, pageSize: 16}, {rank: 1, pageSize: 32, sglang: true}}
}

// Sizes of the pinned prompts: each engine gets pinnedPerEngine prompts of
// pinnedTokens tokens. Published a few blocks per batch at 20 batches a
// second they take about a minute to complete, then the publisher stores
// their blocks again (residency counts grow; scores stay).
const (
	pinnedPerEngine = 4
	pinnedTokens    = 4096
)

// pinnedPrompt is one prompt and how many of its leading blocks the
// publisher has put on the wire (raised before the batch is sent, so a
// score read after a response never exceeds it).
type pinnedPrompt struct {
	id        int
	engine    pinnedEngine
	tokens    []int64
	hashes    []uint64 // the chained block hashes, one per full page
	published atomic.Int64
	// body and exactBody are its score requests, hashed and exact.
	body, exactBody []byte
}

// pinnedSet is every pinned prompt; read-only but for the published counters.
type pinnedSet struct {
	source  string
	prompts []*pinnedPrompt
}

// newPinnedSet draws the prompts; their tokens share nothing with the
// churn source's, so no other engine can score them.
func newPinnedSet(source string, rng *rand.Rand) *pinnedSet {
	s := &pinnedSet{source: source}
	for _, e := range pinnedEngines() {
		for range pinnedPerEngine {
			toks := randomTokens(rng, nil, pinnedTokens)
			body := tokensBody(toks)
			exact := append(body[:len(body)-1:len(body)-1], `,"exact":true}`...)
			s.prompts = append(s.prompts, &pinnedPrompt{id: len(s.prompts), engine: e, tokens: toks,
				hashes: chainHashes(toks, e.pageSize), body: body, exactBody: exact})
		}
	}
	return s
}

// blocks is the prompt's full pages.
func (p *pinnedPrompt) blocks() int { return len(p.hashes) }

// chainHashes is FNV-1a over the parent's hash and each page's tokens: the
// same tokens under the same parent always get the same hash, as an
// engine's content hashes do, so a shared prefix is one page.
func chainHashes(tokens []int64, page int) []uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	n := len(tokens) / page
	out := make([]uint64, n)
	parent := uint64(offset)
	for i := range n {
		h := uint64(offset)
		for s := 0; s < 64; s += 8 {
			h = (h ^ (parent >> s & 0xff)) * prime
		}
		for _, t := range tokens[i*page : (i+1)*page] {
			for s := 0; s < 32; s += 8 {
				h = (h ^ (uint64(t) >> s & 0xff)) * prime
			}
		}
		out[i], parent = h, h
	}
	return out
}

// scoreKey is what a worker remembers per pinned prompt.
type scoreKey struct{ prompt int }

// maxScoreBody bounds a score answer the soak reads whole: a few dozen
// engines and the soak's pools fit in far less.
const maxScoreBody = 1 << 20

// scoreRequest is a /v1/prefix:score for a random pinned prompt, hashed or
// exact, whose answer the worker checks.
func (s *pinnedSet) scoreRequest(w *soakWorker) soakRequest {
	p := s.prompts[w.rng.IntN(len(s.prompts))]
	body := p.body
	if w.rng.IntN(4) == 0 {
		body = p.exactBody
	}
	return soakRequest{class: classScore, method: http.MethodPost, path: "/v1/prefix:score", body: body, want: http.StatusOK,
		check: func(b []byte) string { return s.checkScore(w, p, b) }}
}

// checkScore judges one answer for prompt p: "" when sane, else why not.
func (s *pinnedSet) checkScore(w *soakWorker, p *pinnedPrompt, body []byte) string {
	var res server.ScoreResult
	if err := json.Unmarshal(body, &res); err != nil {
		return fmt.Sprintf("score answer is not a ScoreResult: %v", err)
	}
	published := p.published.Load() // after the answer: an upper bound of what the server can have applied
	got := 0
	for _, e := range res.Engines {
		mine := e.Source == s.source && e.DPRank == p.engine.rank
		switch {
		case mine && (e.PageSize != int64(p.engine.pageSize) || e.Tokens != int64(e.Blocks)*e.PageSize):
			return fmt.Sprintf("pinned prompt %d: engine %s/%d answered %d blocks, %d tokens, page size %d; want page size %d and tokens = blocks × page size",
				p.id, e.Source, e.DPRank, e.Blocks, e.Tokens, e.PageSize, p.engine.pageSize)
		case mine:
			got = e.Blocks
		case e.Blocks != 0:
			return fmt.Sprintf("pinned prompt %d: engine %s/%d scored %d blocks of a prompt it was never sent", p.id, e.Source, e.DPRank, e.Blocks)
		}
	}
	if got > int(published) {
		return fmt.Sprintf("pinned prompt %d: scored %d blocks on %s/%d, but only %d were published", p.id, got, s.source, p.engine.rank, published)
	}
	if w.scores == nil {
		w.scores = map[scoreKey]int{}
	}
	k := scoreKey{p.id}
	if prev := w.scores[k]; got < prev {
		return fmt.Sprintf("pinned prompt %d: score fell from %d to %d blocks on %s/%d, though none of its blocks was removed", p.id, prev, got, s.source, p.engine.rank)
	}
	w.scores[k] = got
	return ""
}
