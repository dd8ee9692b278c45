package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// This file runs the soak's KV-event publishers beside the HTTP load
// (issue 27): three real publishers (scripts/kvev_publisher.py: python3-zmq
// and python3-msgpack) feeding the child's `serve --events` for the whole
// run. One churns the index over several DP ranks (stores, removals,
// clears, batches lost and replayed, seqs dropped for good); one grows the
// pinned prompts the score checks read; one mixes hostile messages into a
// benign stream. soak_events_batches.go and soak_events_hostile.go build
// what they send, soak_events_watch.go watches what the server applied.

// eventsConfig is the publishers' part of soakConfig.
type eventsConfig struct {
	on           bool
	python       string
	script       string        // "": found from the working directory or the binary
	rate         int           // churn batches per second
	ranks        int           // churn DP ranks
	hostileEvery time.Duration // one hostile message per interval (0: none)
	hugeEvents   int           // events of a huge-count message
	stall        time.Duration // applied must grow over every window this long
}

// validate bounds the publishers' settings.
func (c eventsConfig) validate() error {
	switch {
	case !c.on:
		return nil
	case c.rate < 1 || c.rate > 10000:
		return fmt.Errorf("--events-rate %d: want 1 to 10000 batches per second", c.rate)
	case c.ranks < 1 || c.ranks > 64:
		return fmt.Errorf("--events-ranks %d: want 1 to 64", c.ranks)
	case c.hostileEvery < 0:
		return fmt.Errorf("--events-hostile-every %s: want >= 0", c.hostileEvery)
	case c.stall < 4*time.Second:
		return fmt.Errorf("--events-stall %s: want >= 4s (a replay may hold live batches for its 5 s timeout)", c.stall)
	}
	return checkHugeEvents(c.hugeEvents)
}

// sourceRole is what one publisher does.
type sourceRole int

const (
	roleChurn   sourceRole = iota // the churning engines
	rolePinned                    // the pinned prompts
	roleHostile                   // benign batches with hostile messages between them
	numRoles
)

func (r sourceRole) String() string { return [...]string{"churn", "pinned", "hostile"}[r] }

// name is the role's source name; its topic is kv@<name>@soak-model, the
// form llm-d's deployments use (spec §2.1), so the engines are <name>/rank.
func (r sourceRole) name() string { return "soak-" + r.String() }

func (r sourceRole) topic() string { return "kv@" + r.name() + "@soak-model" }

// wellBehaved reports whether the role's stream must keep applying and
// catch up at the end (the hostile one's cursor is thrown about by seq
// jumps and restarts on purpose).
func (r sourceRole) wellBehaved() bool { return r != roleHostile }

// Rates of the pinned source and of the hostile source's benign batches,
// in batches per second, and the hostile source's replay buffer: small,
// because a seq jump makes the subscriber see a restart and replay it all.
const (
	pinnedRate        = 20
	hostileBenignRate = 10
	hostileBuffer     = 256
)

// eventSource is one publisher and its counters (atomics: the report and
// the watch read them while its driver runs).
type eventSource struct {
	role sourceRole
	pub  *pyPublisher
	next uint64 // the publisher's next seq; the driver goroutine's alone

	emitted atomic.Int64 // batches sent live
	lost    atomic.Int64 // batches kept from the live socket (replay brings them)
	dropped atomic.Int64 // seqs consumed without a batch (unrecoverable gaps)
	hostile [numEvHostile]atomic.Int64
	failed  atomic.Bool
}

// sent is every batch the publisher made available, live or by replay.
func (s *eventSource) sent() int64 { return s.emitted.Load() + s.lost.Load() }

// hostileSent sums the hostile messages of every kind.
func (s *eventSource) hostileSent() int64 {
	var n int64
	for k := range numEvHostile {
		n += s.hostile[k].Load()
	}
	return n
}

// soakEvents is the publishers of one run and what they send.
type soakEvents struct {
	cfg     eventsConfig
	sources [numRoles]*eventSource
	pinned  *pinnedSet
	// The workloads; each is used by its source's driver goroutine only.
	churn       *churnWorkload
	pinnedBatch *pinnedWorkload
	benign      *churnWorkload
	hostile     *hostileEvents
	hostileTurn int
	// ownerReady is set once the pinned source's engines exist, so an
	// evOwner message is refused as another stream's engine rather than
	// creating that engine itself and locking the pinned source out.
	ownerReady atomic.Bool
	watch      eventsWatch
}

// startEvents starts the three publishers. On an error every process
// already started is stopped.
func startEvents(cfg eventsConfig, seed uint64) (*soakEvents, error) {
	rng := func(stream uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 1<<32+stream)) }
	ev := &soakEvents{cfg: cfg, pinned: newPinnedSet(rolePinned.name(), rng(0))}
	ev.churn = newChurnWorkload(rng(1), cfg.ranks, true)
	ev.pinnedBatch = &pinnedWorkload{rng: rng(2), set: ev.pinned}
	ev.benign = newChurnWorkload(rng(3), 1, false)
	ev.hostile = &hostileEvents{topic: roleHostile.topic(), ownerTopic: rolePinned.topic(), owner: ev.pinned.prompts[0],
		hugeEvents: cfg.hugeEvents, rng: rng(4)}
	for role := range numRoles {
		args := []string{"--topic", role.topic(), "--socket", "xpub"}
		if role == roleHostile {
			args = append(args, "--buffer", fmt.Sprint(hostileBuffer))
		}
		p, err := startPublisher(cfg.python, cfg.script, args...)
		if err != nil {
			ev.close()
			return nil, fmt.Errorf("soak: the KV-event publisher %s could not run (--events=false runs without it): %w", role.name(), err)
		}
		ev.sources[role] = &eventSource{role: role, pub: p}
	}
	return ev, nil
}

// serveArgs are the child's --events flags: every source with its replay
// endpoint, subscribed to the kv@ topic prefix. The publishers start
// sending once the child is ready, so its /readyz must not wait for them
// to catch up (--events-ready-grace 0: ready at once, lagging sources
// listed).
func (ev *soakEvents) serveArgs() []string {
	out := []string{"--events-ready-grace", "0s"}
	for _, s := range ev.sources {
		out = append(out, "--events", fmt.Sprintf("%s=%s,replay=%s,topic=kv@", s.role.name(), s.pub.pub, s.pub.replay))
	}
	return out
}

// subscribeTimeout is how long a publisher waits for the child's SUB.
const subscribeTimeout = 20 * time.Second

// awaitSubscribers waits until every publisher's XPUB has seen the child
// subscribe: a message sent before that is dropped by ZeroMQ, and the
// hostile messages, which nothing replays, would go unseen.
func (ev *soakEvents) awaitSubscribers() error {
	for _, s := range ev.sources {
		if err := s.pub.do(pubCommand{"op": "await_subscribers", "n": 1, "timeout": subscribeTimeout.Seconds()}, nil); err != nil {
			return fmt.Errorf("soak: kvtwin serve did not subscribe to %s: %w", s.role.name(), err)
		}
	}
	return nil
}

// close stops every publisher and returns why any did not exit cleanly.
func (ev *soakEvents) close() []string {
	var errs []string
	for _, s := range ev.sources {
		if s == nil {
			continue
		}
		if err := s.pub.close(); err != nil {
			errs = append(errs, fmt.Sprintf("publisher %s: %v", s.role.name(), err))
		}
	}
	return errs
}

// runSource drives one publisher until ctx ends: batches at its rate and,
// for the hostile source, a hostile message every cfg.hostileEvery. A
// failed command stops this source and fails the run.
func (r *soakRun) runSource(ctx context.Context, s *eventSource) {
	ev := r.events
	rate := map[sourceRole]int{roleChurn: ev.cfg.rate, rolePinned: pinnedRate, roleHostile: hostileBenignRate}[s.role]
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	var hostile <-chan time.Time
	if s.role == roleHostile && ev.cfg.hostileEvery > 0 {
		ht := time.NewTicker(ev.cfg.hostileEvery)
		defer ht.Stop()
		hostile = ht.C
	}
	for {
		var err error
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			err = ev.sendBatch(s)
		case <-hostile:
			err = ev.sendHostile(s)
		}
		if err != nil {
			s.failed.Store(true)
			r.fail(fmt.Sprintf("KV-event publisher %s failed after %s: %v", s.role.name(), time.Since(r.start).Round(time.Millisecond), err))
			return
		}
	}
}

// sendBatch sends the source's next well-behaved batch.
func (ev *soakEvents) sendBatch(s *eventSource) error {
	var cmd pubCommand
	switch s.role {
	case roleChurn:
		cmd = ev.churn.batch()
	case rolePinned:
		cmd = ev.pinnedBatch.batch()
	default:
		cmd = ev.benign.batch()
	}
	var ans struct{ Seq uint64 }
	if err := s.pub.do(cmd, &ans); err != nil {
		return err
	}
	s.next = ans.Seq + 1
	switch cmd["op"] {
	case "emit":
		s.emitted.Add(1)
	case "lose":
		s.lost.Add(1)
	default:
		s.dropped.Add(1)
	}
	return nil
}

// sendHostile sends the next hostile kind in turn (evOwner only once the
// pinned engines exist; rank-cycle as a burst of rankBurst batches). A kind
// that is a batch draws its seq first.
func (ev *soakEvents) sendHostile(s *eventSource) error {
	kind := evHostileKind(ev.hostileTurn % int(numEvHostile))
	ev.hostileTurn++
	if kind == evOwner && !ev.ownerReady.Load() {
		kind = evGarbage
	}
	n := 1
	if kind == evRankCycle {
		n = rankBurst
	}
	for range n {
		if err := ev.sendHostileKind(s, kind); err != nil {
			return err
		}
	}
	return nil
}

// sendHostileKind sends one hostile message of kind.
func (ev *soakEvents) sendHostileKind(s *eventSource, kind evHostileKind) error {
	seq := s.next
	if kind.needsSeq() {
		var ans struct{ Seq uint64 }
		if err := s.pub.do(pubCommand{"op": "drop"}, &ans); err != nil {
			return err
		}
		seq, s.next = ans.Seq, ans.Seq+1
	}
	frames, err := ev.hostile.frames(kind, seq)
	if err != nil {
		return fmt.Errorf("hostile %s: %w", kind, err)
	}
	if err := s.pub.do(pubCommand{"op": "frames", "frames": frames}, nil); err != nil {
		return fmt.Errorf("hostile %s: %w", kind, err)
	}
	s.hostile[kind].Add(1)
	return nil
}

// sendMarker sends an empty batch on rank 0 and returns its seq: once the
// server's cursor is past it, everything sent before it was applied or
// counted lost.
func (ev *soakEvents) sendMarker(s *eventSource) (uint64, error) {
	var ans struct{ Seq uint64 }
	if err := s.pub.do(pubCommand{"op": "emit", "events": []pubEvent{}, "rank": 0}, &ans); err != nil {
		return 0, err
	}
	s.next = ans.Seq + 1
	s.emitted.Add(1)
	return ans.Seq, nil
}
