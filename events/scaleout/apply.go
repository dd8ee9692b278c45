package scaleout

import (
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/kvtwin/kvtwin/spec"
)

// applier applies relayed messages, in stream order, to an index: the
// replica's rule of docs/spec/kv-events.md §4.3, shared by a replica (live
// and while rebuilding) and by a relay rebuilding its own index from the
// stream when it starts.
//
// Per source (subject token), with E the epoch of the last message applied:
//   - a Kvtwin-Reset whose epoch differs from E, or comes first, is
//     Restart (§3.4); one whose epoch is E is a duplicate (a publish retried
//     past the duplicate window) and is dropped;
//   - a batch whose epoch differs from E is preceded by Restart: its
//     epoch's reset message was lost (a publish the relay gave up on) or
//     expired with the history before it;
//   - a batch of epoch E whose seq is at most the last seq applied in E is a
//     duplicate and is dropped (the index would take it for a publisher
//     restart, §3.1 step 2);
//   - every other batch is Live(stream, [topic, seq, body]). The index's
//     cursor does the rest: a seq jump is an unrecoverable gap that marks
//     the stream's engines stale (§3.3, A3), and so is a first batch whose
//     seq is not 0 (§3.1 step 1: the history before it is not in the
//     stream). When the index's stream has a replay endpoint configured (a
//     relay's own index), the replay it asks for is answered at once with
//     ReplayFailed("unavailable"): the stream is all there is.
//
// Kvtwin-Gap is counted, not acted on: the seq jump it accompanies already
// tells the index.
type applier struct {
	ix  spec.KVEvIndex
	log *slog.Logger
	// sources by token; the map is fixed at construction.
	sources map[string]*sourceState

	mu      sync.Mutex
	ignored uint64 // messages for a token that is not a source
}

// sourceState is what the applier knows of one source.
type sourceState struct {
	name  string // the index's stream
	token string
	rank  int64

	mu sync.Mutex
	// known: a message of the source was applied; epoch is its epoch.
	known bool
	epoch uint64
	// seqKnown: a batch of epoch was applied; seq is the last one's seq.
	seqKnown bool
	seq      uint64
	c        SourceCounters
	// snap is the state as of the last message applied, published under
	// mu for readers that must not wait for an index call in progress
	// (Status, and through it /readyz).
	snap atomic.Pointer[SourceState]
}

// SourceCounters count what a stream reader did with one source's messages.
type SourceCounters struct {
	// Batches counts batches passed to the index.
	Batches uint64 `json:"batches"`
	// Resets counts reset messages applied as a restart.
	Resets uint64 `json:"resets"`
	// EpochChanges counts batches of a new epoch that came without its
	// reset message; each was preceded by a restart.
	EpochChanges uint64 `json:"epoch_changes"`
	// Duplicates counts batches and resets dropped as already applied.
	Duplicates uint64 `json:"duplicates"`
	// GapFlags counts batches that carried Kvtwin-Gap.
	GapFlags uint64 `json:"gap_flags"`
	// Gaps counts runs of seqs the index found missing (it marks the
	// source's engines stale); GapBatchesLost the seqs in them.
	Gaps           uint64 `json:"gaps"`
	GapBatchesLost uint64 `json:"gap_batches_lost"`
	// Refused counts batches or events the index refused (§2.7) and steps
	// it rejected.
	Refused uint64 `json:"refused"`
	// RankMismatches counts messages whose Kvtwin-Rank differs from the
	// rank configured here for the source.
	RankMismatches uint64 `json:"rank_mismatches"`
}

// SourceState is one source as a stream reader sees it.
type SourceState struct {
	// Name is the index's stream; Token the subject token.
	Name  string `json:"name"`
	Token string `json:"token"`
	// Rank is the rank configured here for batches whose rank is nil.
	Rank int64 `json:"rank"`
	// Epoch is the epoch of the last message applied (EpochKnown false
	// before the first).
	EpochKnown bool   `json:"epoch_known"`
	Epoch      uint64 `json:"epoch"`
	// Seq is the last batch seq applied in Epoch (SeqKnown false before).
	SeqKnown bool           `json:"seq_known"`
	Seq      uint64         `json:"seq"`
	Counters SourceCounters `json:"counters"`
}

func newApplier(ix spec.KVEvIndex, log *slog.Logger, streams []spec.KVEvStream) *applier {
	a := &applier{ix: ix, log: log, sources: make(map[string]*sourceState, len(streams))}
	for _, s := range streams {
		tok := Token(s.Name)
		st := &sourceState{name: s.Name, token: tok, rank: s.Rank}
		st.publish()
		a.sources[tok] = st
	}
	return a
}

// apply applies one message; it reports whether the message was for a source.
func (a *applier) apply(m wireMsg) bool {
	st := a.sources[m.token]
	if st == nil {
		a.mu.Lock()
		a.ignored++
		a.mu.Unlock()
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	defer st.publish() // before the unlock: snapshots follow the order of applies
	if m.hasRank && m.rank != st.rank {
		if st.c.RankMismatches == 0 {
			a.log.Warn("the relay's rank for the source differs from this reader's: batches without a rank are indexed under different engines",
				"source", st.name, "relay_rank", m.rank, "rank", st.rank)
		}
		st.c.RankMismatches++
	}
	if m.reset {
		if st.known && st.epoch == m.epoch {
			st.c.Duplicates++
			return true
		}
		a.restart(st, m.epoch)
		st.c.Resets++
		return true
	}
	switch {
	case !st.known:
		st.known, st.epoch = true, m.epoch
	case st.epoch != m.epoch:
		a.log.Info("new epoch without its reset message: restarting the source", "source", st.name, "epoch", m.epoch, "was", st.epoch)
		a.restart(st, m.epoch)
		st.c.EpochChanges++
	case st.seqKnown && m.seq <= st.seq:
		st.c.Duplicates++
		return true
	}
	if m.gap {
		st.c.GapFlags++
	}
	st.seqKnown, st.seq = true, m.seq
	st.c.Batches++
	a.note(st, a.ix.Live(st.name, m.frames()))
	return true
}

// restart is §3.4's restart of st's stream, entering epoch.
func (a *applier) restart(st *sourceState, epoch uint64) {
	a.note(st, a.ix.Restart(st.name))
	st.known, st.epoch, st.seqKnown, st.seq = true, epoch, false, 0
}

// note counts a result and answers a replay request (a relay's own index)
// with ReplayFailed: the stream holds nothing more.
func (a *applier) note(st *sourceState, r spec.KVEvStepResult) {
	for range 1 + maxReplayRounds {
		if r.Error != nil {
			st.c.Refused++
			a.log.Warn("the index rejected a relayed message", "source", st.name, "err", r.Error.Message)
		}
		st.c.Refused += uint64(len(r.Errors))
		for _, g := range r.Lost {
			st.c.Gaps++
			st.c.GapBatchesLost += g.To - g.From
			a.log.Debug("batches missing from the stream: the source's engines are stale", "source", st.name, "from", g.From, "to", g.To)
		}
		if len(r.ReplayRequest) == 0 {
			return
		}
		r = a.ix.ReplayFailed(st.name, spec.ReplayReasonUnavailable)
	}
}

// maxReplayRounds bounds the ReplayFailed answers to one message: one
// suffices (the triggering message is the only one held), the bound only
// guards against an index that keeps asking.
const maxReplayRounds = 4

// states returns every source's state, sorted by token.
func (a *applier) states(order []string) []SourceState {
	out := make([]SourceState, 0, len(order))
	for _, tok := range order {
		out = append(out, *a.sources[tok].snap.Load())
	}
	return out
}

// publish stores the source's state for states. Called with mu held (or
// before the source is shared).
func (st *sourceState) publish() {
	st.snap.Store(&SourceState{
		Name: st.name, Token: st.token, Rank: st.rank,
		EpochKnown: st.known, Epoch: st.epoch, SeqKnown: st.seqKnown, Seq: st.seq, Counters: st.c,
	})
}

func (a *applier) ignoredCount() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ignored
}
