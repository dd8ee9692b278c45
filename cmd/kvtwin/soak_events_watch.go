package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/kvtwin/kvtwin/server"
)

// This file watches what the server did with the publishers' batches,
// through GET /v1/events/sources: every second during the run (the
// messages applied by each well-behaved source must keep growing), and
// once at the end, when every publisher sends a last batch and the server
// must catch up with it and score every pinned prompt at its published
// length.

// eventsPollEvery is how often the watch reads /v1/events/sources.
const eventsPollEvery = time.Second

// eventsCatchUp is how long the server may take, once the load stopped,
// to apply each source's last batch (a replay still running has 5 s).
const eventsCatchUp = 15 * time.Second

// maxSourcesBody bounds the /v1/events/sources answer the soak reads: a
// few sources with a few engines each are a few KiB.
const maxSourcesBody = 8 << 20

// appliedSample is one reading of a source: the batches it applied and
// the batches its publisher had sent by then.
type appliedSample struct {
	at      time.Time
	applied uint64
	sent    int64
}

// eventsWatch is the watch's state; safe for concurrent use.
type eventsWatch struct {
	mu      sync.Mutex
	last    *server.EventSources
	polls   int
	errs    int
	lastErr string
	hist    [numRoles][]appliedSample
	stalled [numRoles]bool
}

// applied is the batches a source's stream decoded and applied: every
// batch it took (live or replayed, not duplicates) less the refused ones,
// for their payload or for their engine.
func applied(s server.EventSource) uint64 {
	c := s.Stream.Counters
	refused := c.DecodeErrors + c.EnginesRefused
	return c.Batches - min(refused, c.Batches)
}

// sourceOf finds a source's element by name.
func sourceOf(all *server.EventSources, name string) (server.EventSource, bool) {
	if all == nil {
		return server.EventSource{}, false
	}
	for _, s := range all.Sources {
		if s.Name == name {
			return s, true
		}
	}
	return server.EventSource{}, false
}

// fetchSources reads GET /v1/events/sources.
func (r *soakRun) fetchSources(ctx context.Context) (*server.EventSources, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.child.base()+"/v1/events/sources", nil)
	if err != nil {
		return nil, fmt.Errorf("GET /v1/events/sources: %w", err)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET /v1/events/sources: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxNoteBody))
		return nil, fmt.Errorf("GET /v1/events/sources: status %d: %s", resp.StatusCode, b)
	}
	var out server.EventSources
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxSourcesBody)).Decode(&out); err != nil {
		return nil, fmt.Errorf("GET /v1/events/sources: %w", err)
	}
	return &out, nil
}

// watchEvents polls the sources until ctx ends, judging each poll.
func (r *soakRun) watchEvents(ctx context.Context) {
	tick := time.NewTicker(eventsPollEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		all, err := r.fetchSources(ctx)
		if err != nil {
			if !runEnded(ctx) {
				r.events.watch.noteError(err)
			}
			continue
		}
		r.observeSources(all, time.Now())
	}
}

// appliedTotal is the batches every source had applied at the last poll.
func (w *eventsWatch) appliedTotal() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var n uint64
	if w.last != nil {
		for _, s := range w.last.Sources {
			n += applied(s)
		}
	}
	return n
}

func (w *eventsWatch) noteError(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.polls++
	w.errs++
	w.lastErr = err.Error()
}

// observeSources records a poll and fails the run, once per source, when
// a well-behaved source applied nothing over a whole --events-stall window
// although its publisher had sent batches in the first half of it: those
// had time to arrive, and the index stopped taking them.
func (r *soakRun) observeSources(all *server.EventSources, now time.Time) {
	ev := r.events
	w := &ev.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	w.polls++
	w.last = all
	for _, s := range ev.sources {
		src, ok := sourceOf(all, s.role.name())
		if !ok {
			continue
		}
		if s.role == rolePinned && len(src.Engines) > 0 {
			ev.ownerReady.Store(true)
		}
		h := append(w.hist[s.role], appliedSample{at: now, applied: applied(src), sent: s.sent()})
		for len(h) > 1 && now.Sub(h[1].at) >= ev.cfg.stall {
			h = h[1:] // keep one sample at least a window old
		}
		w.hist[s.role] = h
		if msg := stallOf(h, ev.cfg.stall); msg != "" && s.role.wellBehaved() && !w.stalled[s.role] && !s.failed.Load() {
			w.stalled[s.role] = true
			r.fail(fmt.Sprintf("KV-event source %s stopped applying: %s", s.role.name(), msg))
		}
	}
}

// stallOf judges a source's samples, oldest first, the last one now: ""
// unless a whole window passed with nothing applied and batches sent in
// its first half.
func stallOf(h []appliedSample, window time.Duration) string {
	if len(h) < 2 {
		return ""
	}
	first, now := h[0], h[len(h)-1]
	if now.at.Sub(first.at) < window || now.applied != first.applied {
		return ""
	}
	var mid appliedSample
	for _, s := range h {
		if s.at.Sub(first.at) <= window/2 {
			mid = s
		}
	}
	if mid.sent <= first.sent {
		return ""
	}
	return fmt.Sprintf("%d batches applied at %s and still %d at %s, though its publisher sent %d in the first %s",
		first.applied, first.at.Format(time.TimeOnly), now.applied, now.at.Format(time.TimeOnly), mid.sent-first.sent, window/2)
}

// finishEvents ends the publishers' part of the run: a last batch from
// every live publisher, a wait for the server to apply it, each pinned
// prompt scored once more, and the report. It fails the run when a
// well-behaved source did not catch up, or when a pinned prompt whose
// stream lost nothing scores short of what was published.
func (r *soakRun) finishEvents(ctx context.Context) *eventsReport {
	ev := r.events
	rep := &eventsReport{HostileEvery: ev.cfg.hostileEvery.String(), HugeEvents: ev.cfg.hugeEvents}
	if r.child.exited() || ctx.Err() != nil {
		rep.Error = "server gone or run interrupted: no last batch sent"
		ev.watch.mu.Lock()
		rep.fill(ev, ev.watch.last)
		ev.watch.mu.Unlock()
		return rep
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), eventsCatchUp+10*time.Second)
	defer cancel()
	markers := r.sendMarkers()
	start := time.Now()
	all, caught := r.awaitMarkers(ctx, markers)
	rep.CatchUpMs = ms(time.Since(start))
	for _, s := range ev.sources {
		m, ok := markers[s.role]
		if ok && s.role.wellBehaved() && !caught[s.role] {
			cursor := "unknown"
			if src, found := sourceOf(all, s.role.name()); found {
				cursor = fmt.Sprint(src.Stream.Next)
			}
			r.fail(fmt.Sprintf("KV-event source %s: the server had not applied its last batch (seq %d) %s after the load stopped; its cursor is at %s",
				s.role.name(), m, eventsCatchUp, cursor))
		}
	}
	rep.fill(ev, all)
	rep.Pinned = r.finalPinnedScores(ctx, all)
	return rep
}

// sendMarkers sends every live publisher's last batch, by role.
func (r *soakRun) sendMarkers() map[sourceRole]uint64 {
	markers := map[sourceRole]uint64{}
	for _, s := range r.events.sources {
		if s.failed.Load() {
			continue
		}
		seq, err := r.events.sendMarker(s)
		if err != nil {
			s.failed.Store(true)
			r.fail(fmt.Sprintf("KV-event publisher %s failed at the end of the run: %v", s.role.name(), err))
			continue
		}
		markers[s.role] = seq
	}
	return markers
}

// awaitMarkers polls until every marked stream's cursor is past its
// marker or eventsCatchUp passes; it returns the last reading and which
// caught up.
func (r *soakRun) awaitMarkers(ctx context.Context, markers map[sourceRole]uint64) (*server.EventSources, map[sourceRole]bool) {
	deadline := time.Now().Add(eventsCatchUp)
	caught := map[sourceRole]bool{}
	var last *server.EventSources
	for {
		if all, err := r.fetchSources(ctx); err == nil {
			last = all
			for role, m := range markers {
				if src, ok := sourceOf(all, role.name()); ok && src.Stream.Known && src.Stream.Next > m {
					caught[role] = true
				}
			}
		}
		if len(caught) == len(markers) || time.Now().After(deadline) || ctx.Err() != nil {
			return last, caught
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
}

// finalPinnedScores scores every pinned prompt once the server caught up.
// Every block published reached the server live or by replay unless the
// pinned stream lost a batch (a gap, a refused batch, a held message
// dropped); then a short score is an observation, else a failure.
func (r *soakRun) finalPinnedScores(ctx context.Context, all *server.EventSources) pinnedReport {
	set := r.events.pinned
	rep := pinnedReport{Prompts: len(set.prompts)}
	lossless := false
	if src, ok := sourceOf(all, set.source); ok {
		c := src.Stream.Counters
		lossless = c.Gaps == 0 && c.DecodeErrors == 0 && c.EnginesRefused == 0 && c.HeldOverflow == 0 && c.Restarts == 0
	}
	rep.Lossless = lossless
	for _, p := range set.prompts {
		rep.PublishedBlocks += p.published.Load()
		got, err := r.pinnedScore(ctx, p)
		if err != nil {
			rep.Error = err.Error()
			continue
		}
		rep.ScoredBlocks += int64(got)
		if int64(got) == p.published.Load() {
			rep.Complete++
			continue
		}
		msg := fmt.Sprintf("pinned prompt %d scores %d blocks on %s/%d after the server caught up; %d were published",
			p.id, got, set.source, p.engine.rank, p.published.Load())
		if lossless {
			r.fail(msg + ", and its stream lost none")
		} else {
			rep.Short = append(rep.Short, msg)
		}
	}
	return rep
}

// pinnedScore is the pinned engine's score of p's tokens.
func (r *soakRun) pinnedScore(ctx context.Context, p *pinnedPrompt) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.child.base()+"/v1/prefix:score", bytes.NewReader(p.body))
	if err != nil {
		return 0, fmt.Errorf("score pinned prompt %d: %w", p.id, err)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("score pinned prompt %d: %w", p.id, err)
	}
	defer resp.Body.Close()
	var res server.ScoreResult
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxScoreBody)).Decode(&res); err != nil || resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("score pinned prompt %d: status %d: %v", p.id, resp.StatusCode, err)
	}
	for _, e := range res.Engines {
		if e.Source == r.events.pinned.source && e.DPRank == p.engine.rank {
			return e.Blocks, nil
		}
	}
	return 0, nil
}
