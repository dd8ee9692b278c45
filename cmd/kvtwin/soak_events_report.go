package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/kvtwin/kvtwin/server"
)

// This file is the publishers' part of the soak's report: per source what
// its publisher sent and what the server's index made of it (GET
// /v1/events/sources at the end), and the pinned prompts' final scores.

// eventsReport is the KV-event part of a soak report.
type eventsReport struct {
	// Sent, Applied and Refused sum the sources' rows.
	Sent    int64  `json:"sent"`
	Applied uint64 `json:"applied"`
	Refused uint64 `json:"refused"`
	// HostileSent counts the hostile messages by kind.
	HostileSent map[string]int64 `json:"hostile_sent"`
	// HostileEvery and HugeEvents are the hostile settings.
	HostileEvery string `json:"hostile_every"`
	HugeEvents   int    `json:"huge_events"`
	// Sources has one row per publisher.
	Sources []eventSourceRow `json:"sources"`
	// CatchUpMs is how long the server took to apply every source's last
	// batch after the load stopped (or the time it was given).
	CatchUpMs float64 `json:"catch_up_ms"`
	// Pinned is the pinned prompts' final scores.
	Pinned pinnedReport `json:"pinned"`
	// Digest is the index's digest at the end.
	Digest string `json:"digest,omitempty"`
	// Polls and PollErrors count the watch's readings of /v1/events/sources.
	Polls      int    `json:"polls"`
	PollErrors int    `json:"poll_errors"`
	LastError  string `json:"last_poll_error,omitempty"`
	// Error says why the end-of-run reading is missing, if it is.
	Error string `json:"error,omitempty"`
}

// eventSourceRow is one publisher: what it sent (the first block) and
// what the server counted for its stream (the rest).
type eventSourceRow struct {
	Source string `json:"source"`
	Role   string `json:"role"`
	// Sent counts batches sent live; LostLive those kept from the live
	// socket for replay to bring; DroppedSeqs seqs consumed for good;
	// Hostile the hostile messages among Sent's neighbours.
	Sent        int64 `json:"sent"`
	LostLive    int64 `json:"lost_live"`
	DroppedSeqs int64 `json:"dropped_seqs"`
	Hostile     int64 `json:"hostile"`
	// LiveReceived is the subscriber's count of live messages.
	LiveReceived uint64 `json:"live_received"`
	// Applied is batches applied; Refused decode errors, batches refused
	// for their engine and malformed messages.
	Applied        uint64 `json:"applied"`
	Refused        uint64 `json:"refused"`
	DecodeErrors   uint64 `json:"decode_errors"`
	EnginesRefused uint64 `json:"engines_refused"`
	Malformed      uint64 `json:"malformed"`
	Duplicates     uint64 `json:"duplicates"`
	Gaps           uint64 `json:"gaps"`
	GapBatchesLost uint64 `json:"gap_batches_lost"`
	ReplaysOK      uint64 `json:"replays_ok"`
	ReplaysFailed  uint64 `json:"replays_failed"`
	HeldOverflow   uint64 `json:"held_overflow"`
	Restarts       uint64 `json:"restarts"`
	// Engines and StaleEngines are the stream's engines at the end.
	Engines      int `json:"engines"`
	StaleEngines int `json:"stale_engines"`
	// Failed says the publisher failed during the run.
	Failed bool `json:"failed,omitempty"`
}

// pinnedReport is the pinned prompts at the end.
type pinnedReport struct {
	// Prompts is how many there are; Complete how many scored every block published.
	Prompts  int `json:"prompts"`
	Complete int `json:"complete"`
	// PublishedBlocks and ScoredBlocks sum the prompts.
	PublishedBlocks int64 `json:"published_blocks"`
	ScoredBlocks    int64 `json:"scored_blocks"`
	// Lossless says the pinned stream lost no batch, so Complete must be Prompts.
	Lossless bool `json:"lossless"`
	// Short lists prompts short of their blocks on a stream that lost some.
	Short []string `json:"short,omitempty"`
	// Error is the last failure to score a prompt.
	Error string `json:"error,omitempty"`
}

// fill sets the rows and totals from the publishers' counters and the
// last reading of the sources (nil: none could be read).
func (rep *eventsReport) fill(ev *soakEvents, all *server.EventSources) {
	rep.HostileSent = map[string]int64{}
	for k := range numEvHostile {
		rep.HostileSent[k.String()] = ev.sources[roleHostile].hostile[k].Load()
	}
	if all != nil {
		rep.Digest = all.Digest
	}
	for _, s := range ev.sources {
		row := eventSourceRow{Source: s.role.name(), Role: s.role.String(), Sent: s.emitted.Load() + s.hostileSent(),
			LostLive: s.lost.Load(), DroppedSeqs: s.dropped.Load(), Hostile: s.hostileSent(), Failed: s.failed.Load()}
		if src, ok := sourceOf(all, s.role.name()); ok {
			row.fromStream(src)
		}
		rep.Sent += row.Sent
		rep.Applied += row.Applied
		rep.Refused += row.Refused
		rep.Sources = append(rep.Sources, row)
	}
	ev.watch.mu.Lock()
	rep.Polls, rep.PollErrors, rep.LastError = ev.watch.polls, ev.watch.errs, ev.watch.lastErr
	ev.watch.mu.Unlock()
}

// fromStream copies the server's counters of the source.
func (row *eventSourceRow) fromStream(src server.EventSource) {
	c := src.Stream.Counters
	row.Applied = applied(src)
	row.DecodeErrors, row.EnginesRefused, row.Malformed = c.DecodeErrors, c.EnginesRefused, c.Malformed
	row.Refused = c.DecodeErrors + c.EnginesRefused + c.Malformed
	row.Duplicates, row.Gaps, row.GapBatchesLost = c.Duplicates, c.Gaps, c.GapBatchesLost
	row.ReplaysOK, row.ReplaysFailed, row.HeldOverflow, row.Restarts = c.ReplaysOK, c.ReplaysFailed, c.HeldOverflow, c.Restarts
	if src.Subscriber != nil {
		row.LiveReceived = src.Subscriber.Messages
	}
	row.Engines = len(src.Engines)
	for _, e := range src.Engines {
		if e.Stale {
			row.StaleEngines++
		}
	}
}

// writeText renders the KV-event part of the text report.
func (rep *eventsReport) writeText(w io.Writer) {
	fmt.Fprintf(w, "\nKV events: %d batches sent, %d applied, %d refused; hostile every %s (huge-count: %d events)",
		rep.Sent, rep.Applied, rep.Refused, rep.HostileEvery, rep.HugeEvents)
	if rep.Error != "" {
		fmt.Fprintf(w, " (%s)", rep.Error)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "source\tsent\tlost live\tdropped\thostile\treceived\tapplied\tdecode err\tengine refused\tmalformed\tdup\tgaps\tseqs lost\treplays ok\tfailed\trestarts\tengines\tstale\t")
	for _, s := range rep.Sources {
		name := s.Source
		if s.Failed {
			name += " (failed)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", name, s.Sent, s.LostLive, s.DroppedSeqs,
			s.Hostile, s.LiveReceived, s.Applied, s.DecodeErrors, s.EnginesRefused, s.Malformed, s.Duplicates, s.Gaps, s.GapBatchesLost,
			s.ReplaysOK, s.ReplaysFailed, s.Restarts, s.Engines, s.StaleEngines)
	}
	tw.Flush()
	var kinds []string
	for k := range numEvHostile {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, rep.HostileSent[k.String()]))
	}
	fmt.Fprintf(w, "hostile messages: %s\n", strings.Join(kinds, ", "))
	p := rep.Pinned
	fmt.Fprintf(w, "pinned prompts: %d of %d scored every published block after a %.0f ms catch-up (%d of %d blocks)",
		p.Complete, p.Prompts, rep.CatchUpMs, p.ScoredBlocks, p.PublishedBlocks)
	if p.Error != "" {
		fmt.Fprintf(w, " (%s)", p.Error)
	}
	fmt.Fprintf(w, "\nsources read %d times (%d errors)\n", rep.Polls, rep.PollErrors)
}
