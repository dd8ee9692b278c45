package equiv

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/ref"
)

// KVEvApply is the differential spec of kvev.apply (docs/spec/kv-events.md
// §2-§3, §2.10). Its valid generator is a simulated fleet (kvFleet): 1–3
// publisher streams, each an engine model that caches chained blocks the
// way vLLM (multi-block runs, interior evictions, duplicate copies,
// tokenless CPU stores, groups, LoRA namespaces) or SGLang (one page per
// store, leaf evictions, signed hashes) does, and a publisher model with a
// replay buffer, dropped and never-sent seqs, restarts and malformed
// frames; the subscriber's side is a cursor model (kvCursor) of §3.1 and
// A7 that knows when the index asks for a replay and answers it in both
// reply layouts, fails it, or breaks it. The step-by-step comparison of
// the twins is TestKVEvTwinsAgreeAfterEveryMessage.
func KVEvApply() *Spec[ref.KVEvApplyInput, ref.KVEvApplyOutput] {
	return &Spec[ref.KVEvApplyInput, ref.KVEvApplyOutput]{
		Op:          catalog.KVEvApply(),
		Valid:       rapid.Custom(func(t *rapid.T) ref.KVEvApplyInput { return KVEvFleet(t, 40) }),
		Invalid:     rapid.Custom(kvApplyInvalid),
		Boundary:    kvApplyBoundary(),
		Regressions: kvApplyRegressions(),
		Rejects:     kvApplyRejects,
		Props: []Prop[ref.KVEvApplyInput, ref.KVEvApplyOutput]{
			{"state-invariants", kvStateInvariants},
			{"digest-is-a8", kvDigestIsA8},
			{"cursor-follows-3.1", kvCursorFollows},
			{"applied-at-most-once", kvAppliedAtMostOnce},
			{"score-stops-at-holes", kvScoreWalksState},
			{"refused-event-is-atomic", kvRefusedEventAtomic},
			{"decode-error-changes-no-pool", kvDecodeErrorChangesNothing},
			{"replayed-batch-twice-is-duplicate", kvReplayTwiceIsDuplicate},
			{"digest-independent-of-interleaving", kvDigestInterleaving},
			{"streams-are-independent", kvStreamsAreIndependent},
			{"hashed-score-equals-exact", kvHashedScoreIsExact},
		},
	}
}

// The cursor model (§3.1, §3.2, §2.10 A7): what the index must do with the
// seqs of one stream, independent of payloads (a batch the decoder or the
// pools refuse still counts as received, §2.7). The generator runs it to
// know when a replay is outstanding; the cursor-follows-3.1 property runs
// it over a script and compares its predictions with the trace.

// kvCursor is one stream's cursor as the model sees it.
type kvCursor struct {
	replay       bool
	maxHeld      int
	maxHeldBytes int64
	known        bool
	next         uint64
	// pastEnd: seq 2^64-1 was applied, so every seq is below next.
	pastEnd bool
	last    uint64 // lastLive
	// replaying is set while a replay is outstanding; target is the held
	// trigger's seq.
	replaying bool
	target    uint64
	held      []kvHeldMsg
	// request is the start of the replay the last step asked for.
	request *uint64
}

// kvCursorOut is what the model predicts for one step.
type kvCursorOut struct {
	applied, dups []uint64
	request       *uint64
	done          bool
	lost          []ref.KVEvGap
	restart       bool
	errCode       string
	// overflow: a held message was dropped (A7); its seq's loss is A3's.
	overflow bool
}

func newKVCursor(s ref.KVEvStream, cfg ref.KVEvConfig) *kvCursor {
	d := cfg.WithDefaults()
	return &kvCursor{replay: s.Replay, maxHeld: d.MaxHeld, maxHeldBytes: d.MaxHeldBytes}
}

// kvHeldMsg is a held message as the model sees it: its seq and its
// frames' bytes (A7).
type kvHeldMsg struct {
	seq  uint64
	size int64
}

// heldBytes is the hold queue's bytes (A7).
func (c *kvCursor) heldBytes() int64 {
	var n int64
	for _, m := range c.held {
		n += m.size
	}
	return n
}

func seqOf(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

// live is a message on the SUB socket.
func (c *kvCursor) live(frames []ref.HexBytes) kvCursorOut {
	var o kvCursorOut
	switch {
	case len(frames) != 3:
		o.errCode = ref.ErrFrameCount.Code()
		return o
	case len(frames[1]) != 8:
		o.errCode = ref.ErrSeqWidth.Code()
		return o
	}
	m := kvHeldMsg{seq: seqOf(frames[1])}
	for _, f := range frames {
		m.size += int64(len(f))
	}
	if c.replaying {
		if len(c.held) >= c.maxHeld || c.heldBytes()+m.size > c.maxHeldBytes {
			o.overflow = true
		} else {
			c.held = append(c.held, m)
		}
		return o
	}
	c.rules(m, &o)
	return o
}

// rules is §3.1's live rules for the message m.
func (c *kvCursor) rules(m kvHeldMsg, o *kvCursorOut) {
	s := m.seq
	if c.known && s <= c.last { // step 2: a new publisher incarnation
		o.restart = true
		c.known = false
	}
	if !c.known { // step 1
		c.known, c.last, c.next, c.pastEnd = true, s, 0, false
		if s == 0 {
			c.apply(0, o)
			return
		}
		c.gap(m, o)
		return
	}
	c.last = s // step 3
	c.compare(m, o)
}

// compare is §3.1 step 3's comparison of m's seq with next.
func (c *kvCursor) compare(m kvHeldMsg, o *kvCursorOut) {
	switch s := m.seq; {
	case c.pastEnd || s < c.next:
		o.dups = append(o.dups, s)
	case s == c.next:
		c.apply(s, o)
	default:
		c.gap(m, o)
	}
}

// apply applies s and moves next past it (past 2^64-1: pastEnd).
func (c *kvCursor) apply(s uint64, o *kvCursorOut) {
	o.applied = append(o.applied, s)
	if s == math.MaxUint64 {
		c.next, c.pastEnd = s, true
		return
	}
	c.next = s + 1
}

// gap is [next, m.seq): replayed (the trigger held, whatever its size) or lost.
func (c *kvCursor) gap(m kvHeldMsg, o *kvCursorOut) {
	s := m.seq
	if c.replay {
		c.replaying, c.target, c.held = true, s, []kvHeldMsg{m}
		o.request = new(c.next)
		c.request = o.request
		return
	}
	o.lost = append(o.lost, ref.KVEvGap{From: c.next, To: s})
	c.apply(s, o)
}

// reply is one message on the DEALER socket.
func (c *kvCursor) reply(frames []ref.HexBytes) kvCursorOut {
	var o kvCursorOut
	n := len(frames)
	if !c.replaying || (n != 3 && n != 4) || len(frames[0]) != 0 || len(frames[n-2]) != 8 {
		o.errCode = ref.ErrReplayProtocol.Code()
		return o
	}
	s := seqOf(frames[n-2])
	if s == math.MaxUint64 && len(frames[n-1]) == 0 {
		o.done = true
		c.end(&o)
		return o
	}
	switch {
	case c.pastEnd || s < c.next:
		o.dups = append(o.dups, s)
		return o
	case s != c.next:
		o.lost = append(o.lost, ref.KVEvGap{From: c.next, To: s})
	}
	c.apply(s, &o)
	return o
}

// failed is a replay_failed step.
func (c *kvCursor) failed() kvCursorOut {
	var o kvCursorOut
	if !c.replaying {
		o.errCode = ref.ErrReplayProtocol.Code() // A7: nothing outstanding
		return o
	}
	c.end(&o)
	return o
}

// end finishes the outstanding replay (sentinel or failure): the rest of
// [next, trigger) is lost, then the hold queue drains (A7).
func (c *kvCursor) end(o *kvCursorOut) {
	if !c.pastEnd && c.next < c.target {
		o.lost = append(o.lost, ref.KVEvGap{From: c.next, To: c.target})
		c.next = c.target
	}
	c.replaying = false
	held := c.held
	c.held = nil
	if len(held) == 0 {
		return
	}
	c.compare(held[0], o) // the trigger: step 3's comparison only
	if c.replaying {
		c.held = append(c.held, held[1:]...)
		return
	}
	for i, m := range held[1:] {
		c.rules(m, o)
		if c.replaying {
			c.held = append(c.held, held[i+2:]...)
			return
		}
	}
}

// restart is §3.4's operator signal.
func (c *kvCursor) restart() kvCursorOut {
	c.known, c.replaying, c.held = false, false, nil
	return kvCursorOut{restart: true}
}

// The fleet.

// Encoding profiles of §1.4's per-version table.
const (
	profVLLMOld    = iota // array 6 (no medium), removed 2, batch [ts, events]
	profVLLMMedium        // array 7, removed 3, batch with rank
	profVLLMFull          // array 8..12 (lora_name, extra_keys, group_idx, spec kind), removed 3..4
	profVLLMMap           // map events (after #42892)
	profSGLOld            // array 6, removed 2, batch [ts, events], signed hashes
	profSGLArray          // array 7 (+ a salt map), removed 3, rank nil, signed hashes
	profSGLMap            // map events with cache_salt and session_id, rank nil
	kvProfiles
)

func profSGLang(p int) bool     { return p >= profSGLOld }
func profMedium(p int) bool     { return p != profVLLMOld && p != profSGLOld }
func profGroups(p int) bool     { return p == profVLLMFull || p == profVLLMMap }
func profRankNil(p int) bool    { return p == profSGLArray || p == profSGLMap }
func profShortBatch(p int) bool { return p == profVLLMOld || p == profSGLOld }

// kvFleet draws a kvev.apply script: the publishers' lives as the
// subscriber observes them.
type kvFleet struct {
	t       *rapid.T
	in      ref.KVEvApplyInput
	pubs    []*kvPub
	prompts [][]uint32
	// offloaded are the tokens of paths tokenless stores copied, and
	// offTier their tiers, for scores of those tiers.
	offloaded [][]uint32
	offTier   []string
	// cursors are the model's, by stream (the generator's own copy).
	cursors map[string]*kvCursor
}

// kvPub is one publisher stream: its configuration, publisher state,
// replay buffer and engines by DP rank.
type kvPub struct {
	cfg     ref.KVEvStream
	topic   string
	prof    int
	layout3 bool // replay replies carry the topic (vLLM after #45177)
	// replyTopicless: the 4-frame replies' topic frame is empty, so the
	// replayed batches name another engine than the live ones (A2, A7).
	replyTopicless bool
	bufSteps       int // the publisher's replay buffer (buffer_steps)
	ranks          []int64
	seq            uint64
	buffer         []kvPubMsg
	engines        map[int64]*kvEng
	reply          *kvReply
	incarn         int
}

type kvPubMsg struct {
	seq     uint64
	payload []byte
}

// kvReply is the answer the replay endpoint is giving: the buffer's
// batches with seq >= start, taken when the first reply is read.
type kvReply struct {
	start uint64
	snap  []kvPubMsg
	taken bool
}

// kvEng is an engine model: what the engine really holds, by pool.
type kvEng struct {
	ps     int
	shape  int // hash shape on the wire
	blocks map[kvBlockKey]*kvBlock
	// salt makes an incarnation's hashes differ from the last one's.
	salt byte
}

type kvBlockKey struct {
	group int64
	tier  string
	hash  uint64
}

type kvBlock struct {
	parent    uint64
	hasParent bool
	count     int
	tokens    []uint32
	ns        string
}

// KVEvFleet draws a kvev.apply script of about maxSteps steps (replies to
// an outstanding replay may add a few).
func KVEvFleet(t *rapid.T, maxSteps int) ref.KVEvApplyInput {
	f := newKVFleet(t)
	n := uniform(t, maxSteps+1, "steps")
	for len(f.in.Steps) < n {
		f.step()
	}
	return f.in
}

var kvStreamNames = []string{"vllm-0", "sgl-a", "node-2"}

func newKVFleet(t *rapid.T) *kvFleet {
	f := &kvFleet{t: t, cursors: map[string]*kvCursor{}}
	cfg := uniform(t, 14, "config")
	switch cfg {
	case 0:
		f.in.Config.MaxHeld = rapid.IntRange(1, 3).Draw(t, "max_held")
	case 1:
		f.in.Config.MaxTokensPerEngine = rapid.Int64Range(4, 48).Draw(t, "max_tokens")
	case 4:
		// A7: a hold queue of a few messages' bytes (a generated message
		// is some tens to hundreds of bytes).
		f.in.Config.MaxHeldBytes = rapid.Int64Range(40, 600).Draw(t, "max_held_bytes")
	case 5:
		// A10: batches of more events than this are refused whole.
		f.in.Config.MaxEvents = rapid.IntRange(1, 3).Draw(t, "max_events")
	}
	ns := rapid.IntRange(1, 3).Draw(t, "streams")
	switch cfg {
	case 2:
		// A fair share of 1 to 3 engines per stream (A5): at least one
		// engine per stream, or the config is refused.
		f.in.Config.MaxEngines = rapid.IntRange(ns, 3).Draw(t, "max_engines")
	case 3:
		f.in.Config.MaxEnginesPerStream = rapid.IntRange(1, 2).Draw(t, "max_engines_per_stream")
	}
	sharedPod := ns > 1 && oneIn(t, 6, "shared_pod")
	for i := range ns {
		p := &kvPub{
			cfg:            ref.KVEvStream{Name: kvStreamNames[i], Rank: rapid.Int64Range(0, 2).Draw(t, "rank"), Replay: rapid.IntRange(0, 2).Draw(t, "replay") > 0},
			prof:           uniform(t, kvProfiles, "profile"),
			layout3:        rapid.Bool().Draw(t, "layout3"),
			replyTopicless: oneIn(t, 16, "reply_topicless"),
			bufSteps:       rapid.SampledFrom([]int{2, 4, 8, 10000}).Draw(t, "buffer_steps"),
			engines:        map[int64]*kvEng{},
		}
		switch uniform(t, 4, "topic_kind") {
		case 0:
			p.topic = ""
		case 1:
			p.topic = rapid.SampledFrom([]string{"vllm", "kv@@x", "other@a@b"}).Draw(t, "topic")
		default:
			p.topic = fmt.Sprintf("kv@pod-%d@llama", i)
			if sharedPod && i > 0 {
				p.topic = "kv@pod-0@llama" // two streams claim one engine (A2)
			}
		}
		p.ranks = []int64{p.cfg.Rank}
		if !profRankNil(p.prof) && !profShortBatch(p.prof) && oneIn(t, 4, "two_ranks") {
			p.ranks = append(p.ranks, p.cfg.Rank+1)
		}
		f.pubs = append(f.pubs, p)
		f.in.Streams = append(f.in.Streams, p.cfg)
	}
	for _, p := range f.pubs {
		f.cursors[p.cfg.Name] = newKVCursor(p.cfg, f.in.Config)
	}
	return f
}

func (f *kvFleet) emit(s ref.KVEvStep) kvCursorOut {
	f.in.Steps = append(f.in.Steps, s)
	c := f.cursors[s.Stream]
	switch s.Op {
	case ref.KVStepLive:
		return c.live(s.Frames)
	case ref.KVStepReplay:
		return c.reply(s.Frames)
	case ref.KVStepReplayFailed:
		return c.failed()
	case ref.KVStepRestart:
		return c.restart()
	}
	return kvCursorOut{}
}

// after notes a replay the last step asked for.
func (f *kvFleet) after(p *kvPub, o kvCursorOut) {
	if o.request != nil {
		p.reply = &kvReply{start: *o.request}
	}
	if !f.cursors[p.cfg.Name].replaying {
		p.reply = nil
	}
}

// step draws the next observation (sometimes a few).
func (f *kvFleet) step() {
	t := f.t
	p := f.pubs[rapid.IntRange(0, len(f.pubs)-1).Draw(t, "stream")]
	c := f.cursors[p.cfg.Name]
	if c.replaying && p.reply == nil {
		// The publisher that was asked restarted: its answer never comes.
		f.after(p, f.emit(ref.KVEvStep{Op: ref.KVStepReplayFailed, Stream: p.cfg.Name, Reason: ref.ReplayReasonTimeout}))
		return
	}
	if c.replaying && rapid.IntRange(0, 9).Draw(t, "answer") < 7 {
		f.answer(p)
		return
	}
	switch op := uniform(t, 1000, "op"); {
	case op < 640:
		f.publish(p)
	case op < 790:
		f.score()
	case op < 820:
		f.restartPublisher(p)
	case op < 830:
		f.after(p, f.emit(ref.KVEvStep{Op: ref.KVStepRestart, Stream: p.cfg.Name}))
	case op < 860:
		f.emit(ref.KVEvStep{Op: ref.KVStepLive, Stream: p.cfg.Name, Frames: f.malformedLive(p)})
	case op < 870:
		// a stray reply while no replay is outstanding (A7: a protocol error)
		if !c.replaying && len(p.buffer) > 0 {
			m := p.buffer[len(p.buffer)-1]
			f.emit(ref.KVEvStep{Op: ref.KVStepReplay, Stream: p.cfg.Name, Frames: p.replyFrames(m)})
			return
		}
		f.publish(p)
	default:
		f.publish(p)
	}
}

// answer advances the outstanding replay of p: the next buffered batch,
// the sentinel, a failure, or a malformed reply then its failure.
func (f *kvFleet) answer(p *kvPub) {
	t, r := f.t, p.reply
	if !r.taken {
		r.taken = true
		for _, m := range p.buffer {
			if m.seq >= r.start {
				r.snap = append(r.snap, m)
			}
		}
	}
	name := p.cfg.Name
	switch k := uniform(t, 100, "reply"); {
	case k < 8:
		reason := rapid.SampledFrom([]string{ref.ReplayReasonTimeout, ref.ReplayReasonUnavailable}).Draw(t, "reason")
		f.after(p, f.emit(ref.KVEvStep{Op: ref.KVStepReplayFailed, Stream: name, Reason: reason}))
	case k < 12:
		f.emit(ref.KVEvStep{Op: ref.KVStepReplay, Stream: name, Frames: f.malformedReply(p)})
		f.after(p, f.emit(ref.KVEvStep{Op: ref.KVStepReplayFailed, Stream: name, Reason: ref.ReplayReasonProtocol}))
	case k < 20:
		f.publish(p) // a live message arrives meanwhile: held
	case len(r.snap) == 0:
		f.after(p, f.emit(ref.KVEvStep{Op: ref.KVStepReplay, Stream: name, Frames: p.sentinel()}))
	default:
		m := r.snap[0]
		r.snap = r.snap[1:]
		f.after(p, f.emit(ref.KVEvStep{Op: ref.KVStepReplay, Stream: name, Frames: p.replyFrames(m)}))
	}
}

func (p *kvPub) liveFrames(m kvPubMsg) []ref.HexBytes {
	return []ref.HexBytes{[]byte(p.topic), seqFrame(m.seq), m.payload}
}

// replyFrames is one buffered batch as the DEALER receives it (§3.2).
func (p *kvPub) replyFrames(m kvPubMsg) []ref.HexBytes {
	if p.layout3 {
		topic := p.topic
		if p.replyTopicless {
			topic = "" // a replay service that does not send the topic (§6's stored revision)
		}
		return []ref.HexBytes{{}, []byte(topic), seqFrame(m.seq), m.payload}
	}
	return []ref.HexBytes{{}, seqFrame(m.seq), m.payload}
}

func (p *kvPub) sentinel() []ref.HexBytes {
	if p.layout3 {
		return []ref.HexBytes{{}, {}, seqFrame(math.MaxUint64), {}}
	}
	return []ref.HexBytes{{}, seqFrame(math.MaxUint64), {}}
}

// malformedLive is a live message with the wrong frame count or seq width.
func (f *kvFleet) malformedLive(p *kvPub) []ref.HexBytes {
	fr := p.liveFrames(kvPubMsg{seq: p.seq, payload: kvE2})
	switch rapid.IntRange(0, 3).Draw(f.t, "malformed") {
	case 0:
		return fr[:2]
	case 1:
		return append(fr, ref.HexBytes{})
	case 2:
		fr[1] = fr[1][1:]
	default:
		fr[1] = append(fr[1], 0)
	}
	return fr
}

// malformedReply is a reply of the wrong layout (A7).
func (f *kvFleet) malformedReply(p *kvPub) []ref.HexBytes {
	fr := p.replyFrames(kvPubMsg{seq: p.reply.start, payload: kvE2})
	switch rapid.IntRange(0, 3).Draw(f.t, "malformed_reply") {
	case 0:
		return fr[1:] // no empty delimiter
	case 1:
		fr[len(fr)-2] = fr[len(fr)-2][:4]
	case 2:
		fr[0] = []byte("x")
	default:
		return append(fr, ref.HexBytes{})
	}
	return fr
}

// restartPublisher replaces the engine process: seq from 0, an empty
// replay buffer, empty caches; SGLang opens with AllBlocksCleared (§2.6).
// Discovery sometimes tells the subscriber at once (a restart step).
func (f *kvFleet) restartPublisher(p *kvPub) {
	p.seq, p.buffer, p.reply = 0, nil, nil
	p.incarn++
	if strings.HasPrefix(p.topic, "kv@pod-") && oneIn(f.t, 4, "new_pod_id") {
		p.topic = fmt.Sprintf("kv@pod-%s-r%d@llama", p.cfg.Name, p.incarn) // the replacement has another pod id
	}
	for _, e := range p.engines {
		e.blocks = map[kvBlockKey]*kvBlock{}
		e.salt++
	}
	if rapid.Bool().Draw(f.t, "discovered") {
		f.after(p, f.emit(ref.KVEvStep{Op: ref.KVStepRestart, Stream: p.cfg.Name}))
	}
	if profSGLang(p.prof) {
		f.send(p, p.ranks[0], []*mpVal{mpA(mpS(ref.EventCleared))})
	}
}

// publish draws a batch of one engine of p and sends it.
func (f *kvFleet) publish(p *kvPub) {
	t := f.t
	rank := rapid.SampledFrom(p.ranks).Draw(t, "batch_rank")
	e := f.engine(p, rank)
	var evs []*mpVal
	for range rapid.IntRange(1, 3).Draw(t, "batch_events") {
		evs = append(evs, f.events(p, e)...)
	}
	if oneIn(t, 25, "garbage") {
		evs = append(evs, kvGarbageEvent(t)) // the whole batch is refused (§1.4 rule 5)
	}
	f.send(p, rank, evs)
}

// send publishes a batch: seq drawn, kept in the replay buffer, delivered
// live, dropped by the PUB socket, or never sent (vLLM's seq consumed by a
// failed send: not in the buffer either).
func (f *kvFleet) send(p *kvPub, rank int64, evs []*mpVal) {
	t := f.t
	m := kvPubMsg{seq: p.seq, payload: p.batch(t, rank, evs)}
	p.seq++
	fate := uniform(t, 100, "fate")
	if fate >= 3 {
		p.buffer = append(p.buffer, m)
		if len(p.buffer) > p.bufSteps {
			p.buffer = p.buffer[1:]
		}
	}
	if fate < 15 {
		return // lost on the live socket
	}
	f.after(p, f.emit(ref.KVEvStep{Op: ref.KVStepLive, Stream: p.cfg.Name, Frames: p.liveFrames(m)}))
}

// batch encodes events as p's producer version does (§1.3).
func (p *kvPub) batch(t *rapid.T, rank int64, evs []*mpVal) []byte {
	ts := mpF64(1757500000.25 + float64(p.seq))
	events := mpA(evs...)
	var r *mpVal
	switch {
	case profRankNil(p.prof):
		r = mpNil()
	case !profShortBatch(p.prof):
		r = mpI(rank)
	}
	switch k := uniform(t, 20, "batch_layout"); {
	case r == nil:
		return mpA(ts, events).bytes()
	case k == 0:
		kv := []*mpVal{mpS("ts"), ts, mpS("events"), events}
		if r.k != mpKNil || rapid.Bool().Draw(t, "map_rank_nil") {
			kv = append(kv, mpS("data_parallel_rank"), r)
		}
		return mpM(kv...).bytes()
	case k == 1:
		return mpA(ts, events, r, mpB(bytes.Repeat([]byte{byte(p.incarn)}, 16))).bytes()
	}
	return mpA(ts, events, r).bytes()
}

// engine is p's engine of rank (rank: the batch's rank, or the stream's
// when the producer sends nil).
func (f *kvFleet) engine(p *kvPub, rank int64) *kvEng {
	if e := p.engines[rank]; e != nil {
		return e
	}
	shape := hashSigned
	if !profSGLang(p.prof) {
		shape = rapid.SampledFrom([]int{hashUint, hashUint, hashBin32}).Draw(f.t, "engine_hashes")
	}
	e := &kvEng{ps: rapid.SampledFrom([]int{1, 2, 4}).Draw(f.t, "page_size"), shape: shape, blocks: map[kvBlockKey]*kvBlock{}}
	p.engines[rank] = e
	return e
}

// prompt draws a request's tokens: an earlier prompt's prefix extended, or
// a fresh one, over a small alphabet so requests share prefixes.
func (f *kvFleet) prompt() []uint32 {
	t := f.t
	var p []uint32
	if len(f.prompts) > 0 && rapid.IntRange(0, 2).Draw(t, "extend") > 0 {
		prev := f.prompts[rapid.IntRange(0, len(f.prompts)-1).Draw(t, "prev")]
		p = append(p, prev[:rapid.IntRange(0, len(prev)).Draw(t, "keep")]...)
	}
	for range rapid.IntRange(1, 8).Draw(t, "new_tokens") {
		p = append(p, uint32(rapid.IntRange(1, 5).Draw(t, "token")))
	}
	if len(p) > 16 {
		p = p[:16]
	}
	f.prompts = append(f.prompts, p)
	return p
}

// kvNamespaces are the LoRA namespaces a store may carry (§2.2): none,
// an adapter name, a lora_id.
type kvLora struct {
	name *string
	id   *int64
}

func (l kvLora) ns() string {
	switch {
	case l.name != nil && *l.name != "":
		return *l.name
	case l.id != nil:
		return fmt.Sprintf("#%d", *l.id)
	}
	return ""
}

func (f *kvFleet) lora(p *kvPub) kvLora {
	switch uniform(f.t, 8, "lora") {
	case 0:
		return kvLora{id: new(int64(3))}
	case 1:
		if p.prof == profVLLMFull || p.prof == profVLLMMap {
			return kvLora{name: new("sql-lora")}
		}
	}
	return kvLora{}
}

// chain is a request's block hashes, vLLM-style: each a digest of its
// parent's digest, its tokens, namespace and salt (§1.5: vLLM sends the
// digest's last 8 bytes, SGLang its first 8 as int64).
func (e *kvEng) chain(tokens []uint32, ns string, salt string) (hashes []uint64, digests [][]byte) {
	var parent []byte
	for i := 0; (i+1)*e.ps <= len(tokens); i++ {
		h := sha256.New()
		h.Write(parent)
		h.Write([]byte{e.salt})
		h.Write([]byte(ns + "\x00" + salt + "\x00"))
		for _, tok := range tokens[i*e.ps : (i+1)*e.ps] {
			h.Write(binary.LittleEndian.AppendUint32(nil, tok))
		}
		d := h.Sum(nil)
		v := binary.BigEndian.Uint64(d[24:])
		if e.shape == hashSigned {
			v = binary.BigEndian.Uint64(d[:8])
		}
		hashes, digests, parent = append(hashes, v), append(digests, d), d
	}
	return hashes, digests
}

func (e *kvEng) hashVal(h uint64, digest []byte) *mpVal {
	return hashVal(h, e.shape, digest)
}

// sortedKeys lists e's blocks of tier deterministically.
func (e *kvEng) sortedKeys(tier string) []kvBlockKey {
	var ks []kvBlockKey
	for k := range e.blocks {
		if k.tier == tier {
			ks = append(ks, k)
		}
	}
	slices.SortFunc(ks, func(a, b kvBlockKey) int {
		if a.group != b.group {
			return int(a.group - b.group)
		}
		switch {
		case a.hash < b.hash:
			return -1
		case a.hash > b.hash:
			return 1
		}
		return 0
	})
	return ks
}

// events draws the events of one engine operation of p's engine e.
func (f *kvFleet) events(p *kvPub, e *kvEng) []*mpVal {
	t := f.t
	switch op := uniform(t, 100, "engine_op"); {
	case op < 50:
		return f.store(p, e)
	case op < 75:
		if evs := f.remove(p, e, "GPU"); evs != nil {
			return evs
		}
		return f.store(p, e)
	case op < 83:
		if !profMedium(p.prof) || profSGLang(p.prof) {
			return f.store(p, e)
		}
		if rapid.Bool().Draw(t, "tier_remove") {
			if evs := f.remove(p, e, rapid.SampledFrom(kvOtherTiers).Draw(t, "remove_tier")); evs != nil {
				return evs
			}
		}
		return f.cpuStore(p, e)
	case op < 88:
		e.blocks = map[kvBlockKey]*kvBlock{}
		return []*mpVal{f.render(p, evBody{tag: ref.EventCleared}, nil)}
	case op < 91:
		return []*mpVal{f.render(p, evBody{tag: "BlockEvicted", trailing: []*mpVal{mpA(mpU(1))}}, nil)}
	}
	return f.refused(p, e)
}

// storeBody is a BlockStored's fields (§1.4) in p's layout.
func (f *kvFleet) storeBody(p *kvPub, e *kvEng, hashes []*mpVal, parent *mpVal, tokens []uint32, bs int, lora kvLora, medium string, group int64) evBody {
	toks := make([]*mpVal, len(tokens))
	for i, tok := range tokens {
		toks[i] = mpU(uint64(tok))
	}
	vals := make([]*mpVal, 12)
	vals[1], vals[2], vals[3], vals[4] = mpA(hashes...), parent, mpA(toks...), mpU(uint64(bs))
	vals[5] = optOrNil(lora.id, mpI)
	if profMedium(p.prof) {
		vals[6] = f.mediumVal(medium)
	}
	if !profSGLang(p.prof) && p.prof != profVLLMOld && p.prof != profVLLMMedium {
		vals[7] = optOrNil(lora.name, mpS)
		vals[9] = mpI(group)
		if group == 0 && oneIn(f.t, 3, "group_nil") {
			vals[9] = nil
		}
		if oneIn(f.t, 4, "spec_kind") {
			vals[10] = mpS("full_attention")
		}
		if oneIn(f.t, 4, "extra_keys") {
			ek := make([]*mpVal, len(hashes))
			for i := range ek {
				ek[i] = mpNil()
			}
			vals[8] = mpA(ek...)
		}
	}
	return evBody{tag: ref.EventStored, vals: vals, required: 7}
}

func (f *kvFleet) mediumVal(tier string) *mpVal {
	if tier == "GPU" {
		switch uniform(f.t, 6, "gpu_spelling") {
		case 0:
			return nil
		case 1:
			return mpS("gpu")
		}
	}
	if tier == "CPU" && oneIn(f.t, 3, "cpu_lower") {
		return mpS("cpu")
	}
	return mpS(tier)
}

// render writes one event in p's form (sometimes the other one: a mixed
// fleet, §1.4), with the array length of p's producer version.
func (f *kvFleet) render(p *kvPub, b evBody, names []string) *mpVal {
	t := f.t
	mapForm := p.prof == profVLLMMap || p.prof == profSGLMap
	if oneIn(t, 20, "other_form") {
		mapForm = !mapForm
	}
	if mapForm {
		if b.tag == ref.EventRemoved {
			b.required = 2
		}
		if p.prof == profSGLMap && b.tag == ref.EventStored {
			b.extraKV = append(b.extraKV, mpS("cache_salt"), mpNil(), mpS("session_id"), mpS("s-1"))
		}
		return b.mapForm(names)
	}
	n := 1
	switch b.tag {
	case ref.EventStored:
		switch p.prof {
		case profVLLMOld, profSGLOld:
			n = 6
		case profVLLMMedium, profSGLArray:
			n = 7
			if p.prof == profSGLArray && oneIn(t, 3, "salted") {
				b.vals[7] = mpM(mpS("cache_salt"), mpS("salt-1"))
				n = 8
			}
		default:
			n = 8
			for i := 8; i < 12; i++ {
				if b.vals[i] != nil {
					n = i + 1
				}
			}
			n = max(n, rapid.IntRange(8, 12).Draw(t, "stored_len"))
		}
	case ref.EventRemoved:
		switch p.prof {
		case profVLLMOld, profSGLOld:
			n = 2
		default:
			n = 3
			if b.vals[3] != nil {
				n = 4
			}
		}
	case ref.EventCleared:
	default:
		n = 1
	}
	if len(b.vals) < n {
		b.vals = append(b.vals, make([]*mpVal, n-len(b.vals))...)
	}
	return b.arrayForm(n)
}

// store is a request's newly full blocks: one event for vLLM (parent: the
// block before the run), one per page for SGLang; sometimes vLLM stores
// blocks it already holds again (a second physical copy, §2.5), or a
// cache_salt request gives the same tokens other hashes (A4).
func (f *kvFleet) store(p *kvPub, e *kvEng) []*mpVal {
	t := f.t
	tokens := f.prompt()
	lora := f.lora(p)
	var group int64
	if profGroups(p.prof) && oneIn(t, 4, "group1") {
		group = 1
	}
	salt := ""
	if oneIn(t, 8, "cache_salt") {
		salt = "s1"
	}
	ns := lora.ns()
	hashes, digests := e.chain(tokens, ns, salt)
	if len(hashes) == 0 {
		return nil
	}
	// Mostly the GPU; sometimes another tier directly, with its tokens
	// sometimes not the GPU's (tiers that disagree on a hash's page make
	// the tokenless lookup order of §2.3 step 6 observable).
	tier := "GPU"
	if profMedium(p.prof) && !profSGLang(p.prof) && oneIn(t, 8, "tier_store") {
		tier = rapid.SampledFrom(kvOtherTiers[:2]).Draw(t, "store_tier")
		if oneIn(t, 3, "tier_tokens_differ") {
			tokens = slices.Clone(tokens)
			tokens[len(tokens)-1] += 10
		}
	}
	k0 := 0
	for k0 < len(hashes) && e.blocks[kvBlockKey{group, tier, hashes[k0]}] != nil {
		k0++
	}
	sgl := profSGLang(p.prof)
	if !sgl && (k0 == len(hashes) || oneIn(t, 6, "duplicate")) {
		k0 = rapid.IntRange(0, max(0, min(k0, len(hashes)-1))).Draw(t, "dup_from")
	}
	if k0 == len(hashes) {
		return nil
	}
	m := rapid.IntRange(k0+1, len(hashes)).Draw(t, "store_to")
	if k0 > 0 && oneIn(t, 8, "namespace_switch") {
		// The run continues a prefix of another namespace: its pages are in
		// the run's namespace under a parent page of the prefix's (A4's
		// prefix hashes chain "whatever their namespace").
		lora = kvLora{id: new(int64(7))}
		if ns == "#7" {
			lora = kvLora{}
		}
		ns = lora.ns()
		h2, d2 := e.chain(tokens, ns, salt)
		hashes, digests = slices.Clone(hashes), slices.Clone(digests)
		copy(hashes[k0:], h2[k0:])
		copy(digests[k0:], d2[k0:])
	}
	var evs []*mpVal
	emit := func(from, to int) {
		hv := make([]*mpVal, 0, to-from)
		for i := from; i < to; i++ {
			hv = append(hv, e.hashVal(hashes[i], digests[i]))
			k := kvBlockKey{group, tier, hashes[i]}
			b := e.blocks[k]
			if b == nil {
				b = &kvBlock{tokens: tokens[i*e.ps : (i+1)*e.ps], ns: ns}
				if i > 0 {
					b.parent, b.hasParent = hashes[i-1], true
				}
				e.blocks[k] = b
			}
			b.count++
		}
		var parent *mpVal
		if from > 0 {
			parent = e.hashVal(hashes[from-1], digests[from-1])
		}
		body := f.storeBody(p, e, hv, parent, tokens[from*e.ps:to*e.ps], e.ps, lora, tier, group)
		evs = append(evs, f.render(p, body, storedNames))
	}
	if sgl {
		for i := k0; i < m; i++ {
			emit(i, i+1)
		}
	} else {
		emit(k0, m)
	}
	return evs
}

// remove evicts blocks of tier: any blocks for vLLM (interior ones
// included, §2.4), a leaf for SGLang.
func (f *kvFleet) remove(p *kvPub, e *kvEng, tier string) []*mpVal {
	t := f.t
	keys := e.sortedKeys(tier)
	if profSGLang(p.prof) {
		var leaves []kvBlockKey
		for _, k := range keys {
			leaf := true
			for _, o := range keys {
				if b := e.blocks[o]; b.hasParent && b.parent == k.hash && o.group == k.group {
					leaf = false
					break
				}
			}
			if leaf {
				leaves = append(leaves, k)
			}
		}
		keys = leaves
	}
	if len(keys) == 0 {
		return nil
	}
	n := 1
	if !profSGLang(p.prof) {
		n = rapid.IntRange(1, min(3, len(keys))).Draw(t, "remove_n")
	}
	var hv []*mpVal
	group := int64(-1)
	for range n {
		k := rapid.SampledFrom(keys).Draw(t, "victim")
		if group >= 0 && k.group != group {
			continue // one event names one pool
		}
		group = k.group
		hv = append(hv, e.hashVal(k.hash, nil))
		if b := e.blocks[k]; b != nil {
			if b.count--; b.count <= 0 {
				delete(e.blocks, k)
			}
		}
	}
	if oneIn(t, 12, "unknown_removal") {
		hv = append(hv, e.hashVal(rapid.Uint64().Draw(t, "unknown_hash"), nil))
	}
	vals := []*mpVal{nil, mpA(hv...), nil, nil}
	if profMedium(p.prof) {
		vals[2] = f.mediumVal(tier)
	}
	if profGroups(p.prof) && (group != 0 || rapid.Bool().Draw(t, "removed_group0")) {
		vals[3] = mpI(group)
	}
	return []*mpVal{f.render(p, evBody{tag: ref.EventRemoved, vals: vals, required: 2}, removedNames)}
}

// cpuStore is vLLM's offload: a tokenless store of GPU blocks into the
// CPU tier (§2.3 step 6) — a request's blocks from its first one, or one
// block whose ancestors the CPU pool then holds as holes — sometimes of a
// hash no tier has (an orphan that is not stale).
func (f *kvFleet) cpuStore(p *kvPub, e *kvEng) []*mpVal {
	t := f.t
	dest := rapid.SampledFrom(kvOtherTiers).Draw(t, "offload_tier")
	var keys []kvBlockKey
	for _, tier := range append([]string{"GPU"}, kvOtherTiers...) {
		if tier != dest {
			keys = append(keys, e.sortedKeys(tier)...)
		}
	}
	var hv []*mpVal
	var group int64
	if len(keys) > 0 {
		k := rapid.SampledFrom(keys).Draw(t, "offload")
		group = k.group
		path := []kvBlockKey{k}
		for b := e.blocks[k]; b != nil && b.hasParent && rapid.IntRange(0, 7).Draw(t, "offload_parent") > 0; {
			pk := kvBlockKey{k.group, k.tier, b.parent}
			if b = e.blocks[pk]; b != nil {
				path = append(path, pk)
			}
		}
		slices.Reverse(path)
		var toks []uint32
		for _, k := range path {
			toks = append(toks, e.blocks[k].tokens...)
		}
		f.offloaded, f.offTier = append(f.offloaded, toks), append(f.offTier, dest)
		for _, k := range path {
			hv = append(hv, e.hashVal(k.hash, nil))
			ck := kvBlockKey{k.group, dest, k.hash}
			if e.blocks[ck] == nil {
				b := *e.blocks[k]
				b.count = 0
				e.blocks[ck] = &b
			}
			e.blocks[ck].count++
		}
	}
	if len(hv) == 0 || oneIn(t, 10, "cpu_orphan_too") {
		hv = append(hv, e.hashVal(rapid.Uint64().Draw(t, "cpu_orphan"), nil))
	}
	body := f.storeBody(p, e, hv, nil, nil, e.ps, kvLora{}, dest, group)
	return []*mpVal{f.render(p, body, storedNames)}
}

// kvOtherTiers are the tiers besides the GPU (the first two also take
// full stores); scores ask for them upper- or lower-cased.
var kvOtherTiers = []string{"CPU", "DISK", "CPU", "NVME"}

// refused is an event §2.3 refuses whole: a token count that is not n·bs,
// a block size other than the pool's, or a hash bound to another page.
func (f *kvFleet) refused(p *kvPub, e *kvEng) []*mpVal {
	t := f.t
	tokens := f.prompt()
	hashes, digests := e.chain(tokens, "", "")
	if len(hashes) == 0 {
		return nil
	}
	hv := []*mpVal{e.hashVal(hashes[0], digests[0])}
	bs := e.ps
	toks := tokens[:e.ps]
	switch rapid.IntRange(0, 2).Draw(t, "refusal") {
	case 0: // one token more than one block holds
		toks = append(slices.Clone(tokens[:e.ps]), 9)
	case 1:
		bs = e.ps * 2
		toks = append(slices.Clone(tokens[:e.ps]), tokens[:e.ps]...)
	default:
		if keys := e.sortedKeys("GPU"); len(keys) > 0 {
			k := rapid.SampledFrom(keys).Draw(t, "conflict_with")
			hv = []*mpVal{e.hashVal(k.hash, nil)}
			toks = []uint32{}
			for range e.ps {
				toks = append(toks, 99)
			}
		}
	}
	body := f.storeBody(p, e, hv, nil, toks, bs, kvLora{}, "GPU", 0)
	return []*mpVal{f.render(p, body, storedNames)}
}

// kvGarbageEvent is an event the decoder refuses (§1.4).
func kvGarbageEvent(t *rapid.T) *mpVal {
	return rapid.SampledFrom([]*mpVal{
		mpA(mpS(ref.EventRemoved), mpA()),
		mpA(mpS(ref.EventStored), mpA(mpU(1)), mpNil(), mpA(mpI(-1)), mpU(1)),
		mpU(7),
		mpM(mpS("block_hashes"), mpA(mpU(1))),
	}).Draw(t, "garbage_event")
}

// score asks for a prompt's score: a prompt some engine may hold, its
// prefix or an altered one, in a namespace, group and tier.
func (f *kvFleet) score() {
	t := f.t
	var toks []int64
	if len(f.prompts) > 0 && !oneIn(t, 8, "fresh_prompt") {
		p := f.prompts[rapid.IntRange(0, len(f.prompts)-1).Draw(t, "score_prompt")]
		for _, x := range p[:rapid.IntRange(0, len(p)).Draw(t, "score_keep")] {
			toks = append(toks, int64(x))
		}
	}
	for range rapid.IntRange(0, 3).Draw(t, "score_tail") {
		toks = append(toks, rapid.Int64Range(1, 5).Draw(t, "score_token"))
	}
	s := ref.KVEvStep{Op: ref.KVStepScore, Tokens: toks, Exact: rapid.Bool().Draw(t, "exact")}
	if len(f.offloaded) > 0 && oneIn(t, 4, "score_offloaded") {
		s.Tokens = nil
		for _, x := range f.offloaded[rapid.IntRange(0, len(f.offloaded)-1).Draw(t, "offloaded")] {
			s.Tokens = append(s.Tokens, int64(x))
		}
		s.Tier = f.offTier[rapid.IntRange(0, len(f.offTier)-1).Draw(t, "offloaded_tier")]
		f.emit(s)
		return
	}
	s.Namespace = rapid.SampledFrom([]string{"", "", "", "#3", "sql-lora", "#7"}).Draw(t, "score_ns")
	if oneIn(t, 4, "score_group") {
		s.Group = 1
	}
	s.Tier = rapid.SampledFrom([]string{"", "", "GPU", "gpu", "CPU", "cpu", "disk", "NVME"}).Draw(t, "score_tier")
	f.emit(s)
}

// kvApplyInvalid draws a fleet script and breaks it once in a way §2.10 A1
// refuses whole: an unknown op, a stream not configured, a bad replay
// failure reason, a score token outside [0, 2^32), a bad config, a bad
// stream list.
func kvApplyInvalid(t *rapid.T) Bad[ref.KVEvApplyInput] {
	in := KVEvFleet(t, 12)
	at := rapid.IntRange(0, len(in.Steps)).Draw(t, "at")
	insert := func(s ref.KVEvStep) {
		in.Steps = slices.Insert(slices.Clone(in.Steps), at, s)
	}
	name := in.Streams[0].Name
	switch uniform(t, 7, "violation") {
	case 0:
		insert(ref.KVEvStep{Op: rapid.SampledFrom([]string{"", "Live", "snapshot", "replay_request", "scores"}).Draw(t, "bad_op"), Stream: name})
		return Bad[ref.KVEvApplyInput]{in, ref.ErrBadEnum}
	case 1:
		s := ref.KVEvStep{Op: rapid.SampledFrom([]string{ref.KVStepLive, ref.KVStepReplay, ref.KVStepReplayFailed, ref.KVStepRestart}).Draw(t, "op"),
			Stream: rapid.SampledFrom([]string{"", "vllm-9", "VLLM-0"}).Draw(t, "bad_stream"), Reason: ref.ReplayReasonTimeout}
		if s.Op == ref.KVStepLive {
			s.Frames = kvMsg("t", 0, kvE2).Frames
		}
		insert(s)
		return Bad[ref.KVEvApplyInput]{in, ref.ErrUnknownStream}
	case 2:
		insert(ref.KVEvStep{Op: ref.KVStepReplayFailed, Stream: name, Reason: rapid.SampledFrom([]string{"", "Timeout", "eof"}).Draw(t, "bad_reason")})
		return Bad[ref.KVEvApplyInput]{in, ref.ErrBadEnum}
	case 3:
		toks := []int64{1, 2}
		toks = slices.Insert(toks, rapid.IntRange(0, 2).Draw(t, "bad_tok_at"), rapid.SampledFrom([]int64{-1, 1 << 32, math.MaxInt64, math.MinInt64}).Draw(t, "bad_tok"))
		insert(ref.KVEvStep{Op: ref.KVStepScore, Tokens: toks})
		return Bad[ref.KVEvApplyInput]{in, ref.ErrTokenRange}
	case 4:
		bad := rapid.SampledFrom([]int64{-1, -1 << 40}).Draw(t, "negative")
		n := len(in.Streams)
		switch rapid.IntRange(0, 15).Draw(t, "bad_config") {
		case 0:
			in.Config.MaxEngines = int(bad)
		case 1:
			in.Config.MaxEngines = ref.MaxKVEvEngines + 1
		case 2:
			in.Config.MaxTokensPerEngine = bad
		case 3:
			in.Config.MaxTokensPerEngine = ref.MaxKVEvTokensPerEngine + 1
		case 4:
			in.Config.MaxHeld = int(bad)
		case 5:
			in.Config.MaxHeld = ref.MaxKVEvHeld + 1
		case 6:
			in.Config.MaxEvents = int(bad)
		case 7:
			in.Config.MaxEvents = ref.MaxKVEvents + 1
		case 8:
			in.Config.MaxDecodeRatio = bad
		case 9:
			in.Config.MaxDecodeRatio = ref.MaxKVDecodeRatio + 1
		case 10:
			in.Config.MaxHeldBytes = bad
		case 11:
			in.Config.MaxHeldBytes = ref.MaxKVHeldBytes + 1
		case 12:
			in.Config.MaxEnginesPerStream = int(bad)
		case 13:
			in.Config.MaxEnginesPerStream = ref.MaxKVEvEngines + 1
		case 14:
			// A share of 3 past floor((3n-1) / n) = 2 (A5).
			in.Config.MaxEngines, in.Config.MaxEnginesPerStream = 3*n-1, 3
		default:
			// More streams than engines: some stream's share would be 0 (A5).
			in.Streams = append(slices.Clone(in.Streams), ref.KVEvStream{Name: "extra"})
			in.Config.MaxEngines, in.Config.MaxEnginesPerStream = n, 0
		}
		return Bad[ref.KVEvApplyInput]{in, ref.ErrTooLarge}
	case 5:
		in.Streams = slices.Clone(in.Streams)
		i := rapid.IntRange(0, len(in.Streams)-1).Draw(t, "bad_stream_at")
		in.Streams[i].Rank = rapid.SampledFrom([]int64{-1, math.MinInt64}).Draw(t, "bad_rank")
		return Bad[ref.KVEvApplyInput]{in, ref.ErrNegative}
	}
	in.Streams = slices.Clone(in.Streams)
	if rapid.Bool().Draw(t, "empty_name") || len(in.Streams) == 1 {
		in.Streams = append(in.Streams, ref.KVEvStream{Name: ""})
	} else {
		in.Streams[len(in.Streams)-1].Name = in.Streams[0].Name
	}
	return Bad[ref.KVEvApplyInput]{in, ref.ErrBadEnum}
}

// Script builders for the tables.

func kvLive(stream, topic string, seq uint64, payload []byte) ref.KVEvStep {
	return ref.KVEvStep{Op: ref.KVStepLive, Stream: stream, Frames: []ref.HexBytes{[]byte(topic), seqFrame(seq), payload}}
}

// kvReplayed is one replayed batch, with the topic frame (vLLM after
// #45177) or without it (topic nil).
func kvReplayed(stream string, topic *string, seq uint64, payload []byte) ref.KVEvStep {
	fr := []ref.HexBytes{{}, seqFrame(seq), payload}
	if topic != nil {
		fr = []ref.HexBytes{{}, []byte(*topic), seqFrame(seq), payload}
	}
	return ref.KVEvStep{Op: ref.KVStepReplay, Stream: stream, Frames: fr}
}

func kvSentinelStep(stream string, layout3 bool) ref.KVEvStep {
	p := &kvPub{cfg: ref.KVEvStream{Name: stream}, layout3: layout3}
	return ref.KVEvStep{Op: ref.KVStepReplay, Stream: stream, Frames: p.sentinel()}
}

func kvFailed(stream, reason string) ref.KVEvStep {
	return ref.KVEvStep{Op: ref.KVStepReplayFailed, Stream: stream, Reason: reason}
}

func kvScoreStep(tokens ...int64) ref.KVEvStep {
	return ref.KVEvStep{Op: ref.KVStepScore, Tokens: tokens}
}

// kvB is a batch [ts, events, rank] (rank nil when rank < 0).
func kvB(rank int64, evs ...*mpVal) []byte {
	r := mpNil()
	if rank >= 0 {
		r = mpI(rank)
	}
	return mpA(mpF64(1757500000.25), mpA(evs...), r).bytes()
}

// kvSt is a 7-element BlockStored (vLLM with medium, §1.4): hashes,
// parent (0: none), tokens, block size, medium.
func kvSt(hashes []uint64, parent uint64, tokens []uint32, bs int, medium string) *mpVal {
	hv := make([]*mpVal, len(hashes))
	for i, h := range hashes {
		hv[i] = mpU(h)
	}
	p := mpNil()
	if parent != 0 {
		p = mpU(parent)
	}
	tv := make([]*mpVal, len(tokens))
	for i, tok := range tokens {
		tv[i] = mpU(uint64(tok))
	}
	return mpA(mpS(ref.EventStored), mpA(hv...), p, mpA(tv...), mpU(uint64(bs)), mpNil(), mpS(medium))
}

// kvStX is kvSt with group, lora name and lora id (12 elements).
func kvStX(hashes []uint64, parent uint64, tokens []uint32, bs int, medium string, group int64, loraName string, loraID int64) *mpVal {
	v := kvSt(hashes, parent, tokens, bs, medium)
	lid, ln := mpNil(), mpNil()
	if loraID >= 0 {
		lid = mpI(loraID)
	}
	if loraName != "" {
		ln = mpS(loraName)
	}
	v.elems[5] = lid
	v.elems = append(v.elems, ln, mpNil(), mpI(group), mpNil(), mpNil())
	return v
}

func kvRm(medium string, hashes ...uint64) *mpVal {
	hv := make([]*mpVal, len(hashes))
	for i, h := range hashes {
		hv[i] = mpU(h)
	}
	return mpA(mpS(ref.EventRemoved), mpA(hv...), mpS(medium))
}

func kvClr() *mpVal { return mpA(mpS(ref.EventCleared)) }

// kvEmpty is the 3-byte batch [0, []] (§1.3: ts 0, no events).
var kvEmpty = []byte{0x92, 0x00, 0x90}

func kvScript(streams []ref.KVEvStream, steps ...ref.KVEvStep) ref.KVEvApplyInput {
	return ref.KVEvApplyInput{Streams: streams, Steps: steps}
}

func kvOne(name string, replay bool) []ref.KVEvStream {
	return []ref.KVEvStream{{Name: name, Replay: replay}}
}

// Hashes of the tables.
const (
	kvH1 = 0x1111111111111111
	kvH2 = 0xF0E1D2C3B4A59687
	kvHA = 0xA1
	kvHB = 0xB2
	kvHC = 0xC3
)

func toks(ts ...uint32) []uint32 { return ts }

// kvChain is live seqs from..to-1 of stream s, each storing one page of
// page size 2 under the previous one (hashes 0x100+seq).
func kvChain(s, topic string, from, to uint64) []ref.KVEvStep {
	var st []ref.KVEvStep
	for q := from; q < to; q++ {
		st = append(st, kvLive(s, topic, q, kvChainBatch(q)))
	}
	return st
}

func kvChainBatch(q uint64) []byte {
	var parent uint64
	if q > 0 {
		parent = 0x100 + q - 1
	}
	return kvB(0, kvSt([]uint64{0x100 + q}, parent, toks(uint32(q+1), uint32(q+1)), 2, "GPU"))
}

func kvChainScore(n uint64) ref.KVEvStep {
	var ts []int64
	for q := range n {
		ts = append(ts, int64(q+1), int64(q+1))
	}
	return kvScoreStep(ts...)
}

func kvApplyBoundary() []Case[ref.KVEvApplyInput] {
	const v, s = "vllm-0", "sgl-0"
	e1req := kvScoreStep(1, 2, 3, 4, 128, 255, 256, 65536, 9)
	topic := "kv@10.0.0.7@llama"
	withTopic := func(st ...ref.KVEvStep) []ref.KVEvStep { return st }
	// §5.4: 0,1,2 applied; live 5 asks for 3; replay 3,4,5, sentinel; the
	// held live 5 is a duplicate.
	replay54 := append(kvChain(v, "", 0, 3), kvLive(v, "", 5, kvChainBatch(5)),
		kvReplayed(v, nil, 3, kvChainBatch(3)), kvReplayed(v, nil, 4, kvChainBatch(4)), kvReplayed(v, nil, 5, kvChainBatch(5)),
		kvSentinelStep(v, false), kvChainScore(6))
	restart54 := append(slices.Clone(replay54), kvLive(v, "", 2, kvChainBatch(2)),
		kvReplayed(v, nil, 0, kvChainBatch(0)), kvReplayed(v, nil, 1, kvChainBatch(1)), kvReplayed(v, nil, 2, kvChainBatch(2)),
		kvSentinelStep(v, false), kvChainScore(6))
	noReplay54 := append(kvChain(v, "", 0, 3), kvLive(v, "", 5, kvChainBatch(5)), kvChainScore(3))
	held := func(n int) ref.KVEvConfig { return ref.KVEvConfig{MaxHeld: n} }
	two := []ref.KVEvStream{{Name: v, Replay: true}, {Name: s, Rank: 1}}
	twoPods := []ref.KVEvStream{{Name: v}, {Name: s}}
	// One page of 4097 tokens (fast keeps pages of more than 4096 tokens
	// outside its token slab), and a prompt of it and one more token.
	var big []uint32
	var bigPrompt []int64
	for t := range uint32(4097) {
		big = append(big, t%1000)
		bigPrompt = append(bigPrompt, int64(t%1000))
	}
	bigPrompt = append(bigPrompt, 1)
	cases := []Case[ref.KVEvApplyInput]{
		{"5.1-e1-e2-score", kvScript(kvOne(v, false), kvLive(v, topic, 0, kvE1), e1req, kvLive(v, topic, 1, kvE2), e1req)},
		{"5.1-e3-restores-h2-under-h1", kvScript(kvOne(v, false), kvLive(v, topic, 0, kvE1), kvLive(v, topic, 1, kvE2), kvLive(v, topic, 2, kvE3), e1req)},
		{"5.1-e4-store-remove-clear-net-empty", kvScript(kvOne(v, false), kvLive(v, topic, 0, kvE4), kvScoreStep(1, 2, 3, 4))},
		{"5.1-e5-sglang-negative-hash-stream-rank", kvScript([]ref.KVEvStream{{Name: s, Rank: 2}}, kvLive(s, "", 0, kvE5), kvScoreStep(7, 8, 9))},
		{"5.1-e6-bin-hash-removes-the-int-stored-block", kvScript(kvOne(v, false),
			kvLive(v, topic, 0, kvB(0, kvSt([]uint64{0x18191a1b1c1d1e1f}, 0, toks(1, 2, 3, 4), 4, "GPU"))), kvLive(v, topic, 1, kvE6), kvScoreStep(1, 2, 3, 4))},
		{"5.2-topic-names-source-and-model", kvScript(kvOne(v, false), kvLive(v, topic, 0, kvE1))},
		{"5.4-replay-then-held-duplicate", kvScript(kvOne(v, true), replay54...)},
		{"5.4-seq-regression-restarts-and-replays-from-0", kvScript(kvOne(v, true), restart54...)},
		{"5.4-no-replay-gap-goes-stale", kvScript(kvOne(v, false), noReplay54...)},
		{"cold-start-replay-from-0-three-frame-layout", kvScript(kvOne(v, true), append(withTopic(kvLive(v, topic, 2, kvChainBatch(2)),
			kvReplayed(v, &topic, 0, kvChainBatch(0)), kvReplayed(v, &topic, 1, kvChainBatch(1)), kvReplayed(v, &topic, 2, kvChainBatch(2)), kvSentinelStep(v, true)), kvChainScore(3))...)},
		{"two-frame-replay-takes-the-trigger-topic", kvScript(kvOne(v, true), kvLive(v, topic, 1, kvChainBatch(1)),
			kvReplayed(v, nil, 0, kvChainBatch(0)), kvSentinelStep(v, false), kvChainScore(2))},
		{"replay-history-expired-first-seq-past-start", kvScript(kvOne(v, true), append(kvChain(v, "", 0, 2), kvLive(v, "", 6, kvChainBatch(6)),
			kvReplayed(v, nil, 4, kvChainBatch(4)), kvReplayed(v, nil, 5, kvChainBatch(5)), kvReplayed(v, nil, 6, kvChainBatch(6)), kvSentinelStep(v, false), kvChainScore(7))...)},
		{"replay-sentinel-before-the-trigger", kvScript(kvOne(v, true), append(kvChain(v, "", 0, 2), kvLive(v, "", 5, kvChainBatch(5)),
			kvReplayed(v, nil, 2, kvChainBatch(2)), kvSentinelStep(v, false), kvChainScore(6))...)},
		{"replay-failed-timeout", kvScript(kvOne(v, true), append(kvChain(v, "", 0, 2), kvLive(v, "", 4, kvChainBatch(4)), kvFailed(v, ref.ReplayReasonTimeout), kvChainScore(5))...)},
		{"replay-failed-unavailable", kvScript(kvOne(v, true), append(kvChain(v, "", 0, 2), kvLive(v, "", 4, kvChainBatch(4)),
			kvReplayed(v, nil, 2, kvChainBatch(2)), kvFailed(v, ref.ReplayReasonUnavailable), kvChainScore(5))...)},
		{"replay-malformed-then-failed-protocol", kvScript(kvOne(v, true), append(kvChain(v, "", 0, 2), kvLive(v, "", 4, kvChainBatch(4)),
			ref.KVEvStep{Op: ref.KVStepReplay, Stream: v, Frames: []ref.HexBytes{seqFrame(2), kvChainBatch(2)}},
			ref.KVEvStep{Op: ref.KVStepReplay, Stream: v, Frames: []ref.HexBytes{{}, seqFrame(2)[:7], kvChainBatch(2)}},
			kvFailed(v, ref.ReplayReasonProtocol), kvChainScore(5))...)},
		{"reply-while-not-replaying", kvScript(kvOne(v, true), kvLive(v, "", 0, kvChainBatch(0)), kvReplayed(v, nil, 1, kvChainBatch(1)), kvSentinelStep(v, true), kvChainScore(2))},
		{"live-during-replay-held-then-drained", kvScript(kvOne(v, true), kvLive(v, "", 0, kvChainBatch(0)), kvLive(v, "", 2, kvChainBatch(2)),
			kvLive(v, "", 3, kvChainBatch(3)), kvLive(v, "", 5, kvChainBatch(5)), kvReplayed(v, nil, 1, kvChainBatch(1)), kvSentinelStep(v, false),
			kvReplayed(v, nil, 4, kvChainBatch(4)), kvSentinelStep(v, false), kvChainScore(6))},
		{"held-overflow-at-max-held-2", ref.KVEvApplyInput{Config: held(2), Streams: kvOne(v, true), Steps: []ref.KVEvStep{
			kvLive(v, "", 0, kvChainBatch(0)), kvLive(v, "", 2, kvChainBatch(2)), kvLive(v, "", 3, kvChainBatch(3)), kvLive(v, "", 4, kvChainBatch(4)),
			kvLive(v, "", 5, kvChainBatch(5)), kvReplayed(v, nil, 1, kvChainBatch(1)), kvSentinelStep(v, false), kvChainScore(6)}}},
		{"malformed-live-during-replay-does-not-touch-the-cursor", kvScript(kvOne(v, true), kvLive(v, "", 1, kvChainBatch(1)),
			ref.KVEvStep{Op: ref.KVStepLive, Stream: v, Frames: []ref.HexBytes{{}, seqFrame(2)}},
			ref.KVEvStep{Op: ref.KVStepLive, Stream: v, Frames: []ref.HexBytes{{}, seqFrame(2)[:3], kvChainBatch(2)}},
			kvReplayed(v, nil, 0, kvChainBatch(0)), kvSentinelStep(v, false), kvLive(v, "", 2, kvChainBatch(2)), kvChainScore(3))},
		{"restart-step-while-replaying-drops-held", kvScript(kvOne(v, true), kvLive(v, "", 0, kvChainBatch(0)), kvLive(v, "", 3, kvChainBatch(3)),
			ref.KVEvStep{Op: ref.KVStepRestart, Stream: v}, kvReplayed(v, nil, 1, kvChainBatch(1)), kvLive(v, "", 0, kvChainBatch(0)), kvChainScore(4))},
		{"restart-step-then-first-message-zero", kvScript(kvOne(v, false), append(kvChain(v, "", 0, 3), ref.KVEvStep{Op: ref.KVStepRestart, Stream: v},
			kvLive(v, "", 0, kvChainBatch(0)), kvChainScore(3))...)},
		{"replay-failed-without-a-replay", kvScript(kvOne(v, true), kvLive(v, "", 0, kvChainBatch(0)), kvFailed(v, ref.ReplayReasonTimeout), kvLive(v, "", 1, kvChainBatch(1)), kvChainScore(2))},
		{"two-streams-interleaved-one-replays", kvScript(two, kvLive(v, "kv@a@m", 0, kvChainBatch(0)), kvLive(s, "kv@b@m", 0, kvE5),
			kvLive(v, "kv@a@m", 2, kvChainBatch(2)), kvLive(s, "kv@b@m", 1, kvB(-1, kvClr())), kvReplayed(v, nil, 1, kvChainBatch(1)),
			kvSentinelStep(v, false), kvChainScore(3))},
		{"engine-owner-two-streams-one-pod", kvScript(twoPods, kvLive(v, "kv@pod@m", 0, kvChainBatch(0)), kvLive(s, "kv@pod@m", 0, kvChainBatch(0)),
			kvLive(s, "kv@pod@m", 1, kvChainBatch(1)), kvChainScore(2))},
		{"empty-topics-keep-two-streams-apart", kvScript(twoPods, kvLive(v, "", 0, kvChainBatch(0)), kvLive(s, "", 0, kvChainBatch(0)), kvChainScore(1))},
		{"topic-forms-a2", kvScript([]ref.KVEvStream{{Name: "a"}, {Name: "b"}, {Name: "c"}},
			kvLive("a", "kv@x@m@n", 0, kvChainBatch(0)), kvLive("b", "kv@@m", 0, kvChainBatch(0)), kvLive("c", "kv@y@", 0, kvChainBatch(0)))},
		{"engine-budget-max-engines-1", ref.KVEvApplyInput{Config: ref.KVEvConfig{MaxEngines: 1}, Streams: kvOne(v, false), Steps: []ref.KVEvStep{
			kvLive(v, "", 0, kvChainBatch(0)), kvLive(v, "", 1, kvB(1, kvSt([]uint64{7}, 0, toks(1, 1), 2, "GPU"))),
			kvLive(v, "", 2, kvChainBatch(2)), kvChainScore(1)}}},
		{kvCaseFairShare, ref.KVEvApplyInput{Config: ref.KVEvConfig{MaxEngines: 4}, Streams: twoPods, Steps: kvRanks(v, s)}},
		{kvCaseShareRestart, ref.KVEvApplyInput{Config: ref.KVEvConfig{MaxEnginesPerStream: 1}, Streams: kvOne(v, false), Steps: []ref.KVEvStep{
			kvLive(v, "", 0, kvRankBatch(0)), kvLive(v, "", 1, kvRankBatch(1)), {Op: ref.KVStepRestart, Stream: v},
			kvLive(v, "", 0, kvRankBatch(1)), kvScoreStep(1, 2)}}},
		{"pool-budget-refuses-a-store", ref.KVEvApplyInput{Config: ref.KVEvConfig{MaxTokensPerEngine: 4}, Streams: kvOne(v, false), Steps: []ref.KVEvStep{
			kvLive(v, "", 0, kvB(0, kvSt([]uint64{1, 2}, 0, toks(1, 1, 2, 2), 2, "GPU"), kvSt([]uint64{3}, 2, toks(3, 3), 2, "GPU"))), kvScoreStep(1, 1, 2, 2, 3, 3)}}},
		{"dp-rank-from-the-batch-and-nil-rank-from-the-stream", kvScript([]ref.KVEvStream{{Name: v, Rank: 3}},
			kvLive(v, "", 0, kvB(1, kvSt([]uint64{1}, 0, toks(1), 1, "GPU"))), kvLive(v, "", 1, kvB(-1, kvSt([]uint64{1}, 0, toks(1), 1, "GPU"))), kvScoreStep(1))},
		{"token-count-refused-the-rest-applies", kvScript(kvOne(v, false), kvLive(v, "", 0, kvB(0,
			kvSt([]uint64{kvHA}, 0, toks(1, 2), 2, "GPU"), kvSt([]uint64{kvHB}, kvHA, toks(3, 4, 5), 2, "GPU"), kvSt([]uint64{kvHC}, kvHA, toks(3, 4), 2, "GPU"))), kvScoreStep(1, 2, 3, 4))},
		{"block-size-change-refused", kvScript(kvOne(v, false), kvLive(v, "", 0, kvB(0,
			kvSt([]uint64{kvHA}, 0, toks(1, 2), 2, "GPU"), kvSt([]uint64{kvHB}, 0, toks(1, 2, 3, 4), 4, "GPU"), kvSt([]uint64{kvHC}, 0, toks(5, 6, 7, 8), 4, "CPU"))), kvScoreStep(1, 2), ref.KVEvStep{Op: ref.KVStepScore, Tokens: []int64{5, 6, 7, 8}, Tier: "cpu"})},
		{"hash-conflict-refused-whole", kvScript(kvOne(v, false), kvLive(v, "", 0, kvB(0,
			kvSt([]uint64{kvHA, kvHB}, 0, toks(1, 2, 3, 4), 2, "GPU"), kvSt([]uint64{kvHC, kvHA}, 0, toks(9, 9, 8, 8), 2, "GPU"))), kvScoreStep(9, 9), kvScoreStep(1, 2, 3, 4))},
		{"interior-eviction-hole-then-restore-reconnects", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvSt([]uint64{kvHA, kvHB, kvHC}, 0, toks(1, 1, 2, 2, 3, 3), 2, "GPU"))), kvLive(v, "", 1, kvB(0, kvRm("GPU", kvHB))),
			kvScoreStep(1, 1, 2, 2, 3, 3), kvLive(v, "", 2, kvB(0, kvSt([]uint64{kvHB}, kvHA, toks(2, 2), 2, "GPU"))), kvScoreStep(1, 1, 2, 2, 3, 3),
			kvLive(v, "", 3, kvB(0, kvRm("GPU", kvHC, kvHB))), kvScoreStep(1, 1, 2, 2, 3, 3))},
		{"two-hashes-bind-one-page", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvSt([]uint64{kvH1}, 0, toks(1, 2), 2, "GPU"), kvSt([]uint64{kvH2}, 0, toks(1, 2), 2, "GPU"))),
			kvLive(v, "", 1, kvB(0, kvRm("GPU", kvH1))), kvScoreStep(1, 2), kvLive(v, "", 2, kvB(0, kvRm("GPU", kvH2))), kvScoreStep(1, 2))},
		{"removal-never-below-zero", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvSt([]uint64{kvHA, kvHB}, 0, toks(1, 1, 2, 2), 2, "GPU"))),
			kvLive(v, "", 1, kvB(0, kvRm("GPU", kvHA, kvHA, 0xdead))), kvLive(v, "", 2, kvB(0, kvSt([]uint64{kvHA}, 0, toks(1, 1), 2, "GPU"))), kvScoreStep(1, 1, 2, 2))},
		{"duplicate-copies-count", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvSt([]uint64{kvHA, kvHB}, 0, toks(1, 1, 2, 2), 2, "GPU"), kvSt([]uint64{kvHA}, 0, toks(1, 1), 2, "GPU"))),
			kvLive(v, "", 1, kvB(0, kvRm("GPU", kvHA, kvHB))), kvScoreStep(1, 1, 2, 2))},
		{"tokenless-cpu-store-copies-the-path", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvSt([]uint64{kvHA, kvHB, kvHC}, 0, toks(1, 1, 2, 2, 3, 3), 2, "GPU"))),
			kvLive(v, "", 1, kvB(0, kvSt([]uint64{kvHC}, 0, nil, 2, "CPU"), kvSt([]uint64{0xbad}, 0, nil, 2, "cpu"))),
			ref.KVEvStep{Op: ref.KVStepScore, Tokens: []int64{1, 1, 2, 2, 3, 3}, Tier: "CPU"},
			kvLive(v, "", 2, kvB(0, kvSt([]uint64{kvHA}, 0, nil, 2, "CPU"))),
			ref.KVEvStep{Op: ref.KVStepScore, Tokens: []int64{1, 1, 2, 2, 3, 3}, Tier: "CPU", Exact: true},
			kvLive(v, "", 3, kvB(0, kvRm("CPU", kvHC))), ref.KVEvStep{Op: ref.KVStepScore, Tokens: []int64{1, 1, 2, 2, 3, 3}, Tier: "CPU"})},
		{"groups-and-namespaces-are-separate", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvStX([]uint64{1}, 0, toks(1, 2), 2, "GPU", 1, "", -1), kvStX([]uint64{2}, 0, toks(1, 2), 2, "GPU", 0, "sql-lora", 3),
				kvStX([]uint64{3}, 0, toks(1, 2), 2, "GPU", 0, "", 3), kvStX([]uint64{4}, 0, toks(1, 2), 2, "GPU", 0, "", -1))),
			kvScoreStep(1, 2), ref.KVEvStep{Op: ref.KVStepScore, Tokens: []int64{1, 2}, Group: 1},
			ref.KVEvStep{Op: ref.KVStepScore, Tokens: []int64{1, 2}, Namespace: "sql-lora"}, ref.KVEvStep{Op: ref.KVStepScore, Tokens: []int64{1, 2}, Namespace: "#3"},
			ref.KVEvStep{Op: ref.KVStepScore, Tokens: []int64{1, 2}, Namespace: "#4", Exact: true})},
		{"page-sizes-differ-per-engine", kvScript(twoPods, kvLive(v, "", 0, kvB(0, kvSt([]uint64{1, 2}, 0, toks(1, 2, 3, 4), 2, "GPU"))),
			kvLive(s, "", 0, kvB(0, kvSt([]uint64{1}, 0, toks(1, 2, 3, 4), 4, "GPU"))), kvScoreStep(1, 2, 3, 4, 5), kvScoreStep(1, 2, 3))},
		{"orphan-marks-stale-clear-unmarks", kvScript(kvOne(v, false), kvLive(v, "", 0, kvB(0, kvSt([]uint64{kvHB}, kvHA, toks(1, 1), 2, "GPU"))),
			kvScoreStep(1, 1), kvLive(v, "", 1, kvB(0, kvClr(), kvSt([]uint64{kvHA}, 0, toks(1, 1), 2, "GPU"))), kvScoreStep(1, 1))},
		{"decode-error-marks-stale-and-counts", kvScript(kvOne(v, false), kvLive(v, "", 0, kvChainBatch(0)),
			kvLive(v, "", 1, kvB(0, kvSt([]uint64{9}, 0, toks(9, 9), 2, "GPU"), mpA(mpS(ref.EventRemoved), mpA()))), kvLive(v, "", 2, kvB(0, kvClr())), kvChainScore(1))},
		{"unknown-events-skipped-and-counted", kvScript(kvOne(v, false), kvLive(v, "", 0, kvB(0, mpA(mpS("BlockEvicted"), mpU(1)), kvSt([]uint64{1}, 0, toks(1), 1, "GPU"))), kvScoreStep(1))},
		{"empty-prompt-and-short-prompt-score-zero", kvScript(kvOne(v, false), kvLive(v, "", 0, kvChainBatch(0)), kvScoreStep(), kvScoreStep(1))},
		{"seq-max-live-first-message-no-replay", kvScript(kvOne(v, false), kvLive(v, "", math.MaxUint64, kvChainBatch(0)), kvChainScore(1))},
		// A4: a page's prefix hash is the chain seeded with its own
		// namespace over the tokens of its whole path, whatever its
		// ancestors' namespaces. [10] (LoRA 7 under the base model's [1])
		// and [11] (LoRA 7 under LoRA 3's [2]) have different parents but
		// the same tokens 1 2 3 4, so the same prefix hash: [11] is refused
		// with no hash bound twice.
		{"chain-collision-without-hash-collision-lora-7-under-two-namespaces", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvStX([]uint64{1}, 0, toks(1, 2), 2, "GPU", 0, "", -1), kvStX([]uint64{2}, 0, toks(1, 2), 2, "GPU", 0, "", 3),
				kvStX([]uint64{10}, 1, toks(3, 4), 2, "GPU", 0, "", 7), kvStX([]uint64{11}, 2, toks(3, 4), 2, "GPU", 0, "", 7))),
			ref.KVEvStep{Op: ref.KVStepScore, Tokens: []int64{1, 2, 3, 4}, Namespace: "#7"},
			ref.KVEvStep{Op: ref.KVStepScore, Tokens: []int64{1, 2}, Namespace: "#3"})},
		// §2.3 step 6: tokenless stores copy pages from another tier.
		{"tokenless-cpu-store-block-size-differs-from-gpu", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvSt([]uint64{kvHA, kvHB}, 0, toks(1, 1, 2, 2), 2, "GPU"))),
			kvLive(v, "", 1, kvB(0, kvSt([]uint64{kvHB}, 0, nil, 4, "CPU"))),
			ref.KVEvStep{Op: ref.KVStepScore, Tokens: []int64{1, 1, 2, 2}, Tier: "CPU"})},
		{"tokenless-cpu-store-of-a-hash-cpu-binds-to-other-tokens", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvSt([]uint64{kvHA}, 0, toks(1, 1), 2, "GPU"), kvSt([]uint64{kvHA}, 0, toks(5, 5), 2, "CPU"))),
			kvLive(v, "", 1, kvB(0, kvSt([]uint64{kvHA}, 0, nil, 2, "CPU"))),
			ref.KVEvStep{Op: ref.KVStepScore, Tokens: []int64{1, 1}, Tier: "CPU"}, ref.KVEvStep{Op: ref.KVStepScore, Tokens: []int64{5, 5}, Tier: "CPU"})},
		// The copy of GPU's [10] (LoRA 7 over 1 2 | 3 4 under a base-model
		// page) would get the prefix hash of CPU's [11] (LoRA 7 over the
		// same tokens under a LoRA-3 page): a chain collision.
		{"tokenless-copy-chain-collides-with-a-cpu-page", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvStX([]uint64{1}, 0, toks(1, 2), 2, "GPU", 0, "", -1), kvStX([]uint64{10}, 1, toks(3, 4), 2, "GPU", 0, "", 7),
				kvStX([]uint64{2}, 0, toks(1, 2), 2, "CPU", 0, "", 3), kvStX([]uint64{11}, 2, toks(3, 4), 2, "CPU", 0, "", 7))),
			kvLive(v, "", 1, kvB(0, kvSt([]uint64{10}, 0, nil, 2, "CPU"))),
			ref.KVEvStep{Op: ref.KVStepScore, Tokens: []int64{1, 2, 3, 4}, Tier: "CPU", Namespace: "#7"})},
		// Two LoRA-7 pages under one base-model page: the second copy's
		// chain in namespace #7 starts from the copied parent's.
		{"tokenless-copy-two-lora-7-pages-under-a-base-page", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvStX([]uint64{1}, 0, toks(1, 2), 2, "GPU", 0, "", -1), kvStX([]uint64{10}, 1, toks(3, 4), 2, "GPU", 0, "", 7),
				kvStX([]uint64{11}, 1, toks(5, 6), 2, "GPU", 0, "", 7))),
			kvLive(v, "", 1, kvB(0, kvSt([]uint64{10, 11}, 0, nil, 2, "CPU"))),
			ref.KVEvStep{Op: ref.KVStepScore, Tokens: []int64{1, 2, 3, 4}, Tier: "CPU", Namespace: "#7"},
			ref.KVEvStep{Op: ref.KVStepScore, Tokens: []int64{1, 2, 5, 6}, Tier: "CPU", Namespace: "#7"})},
		// A tokenless copy of a page the CPU tier already holds on the same
		// path adds a copy (the removal then leaves one).
		{"tokenless-copy-again-counts", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvSt([]uint64{kvHA, kvHB}, 0, toks(1, 1, 2, 2), 2, "GPU"))),
			kvLive(v, "", 1, kvB(0, kvSt([]uint64{kvHB}, 0, nil, 2, "CPU"), kvSt([]uint64{kvHB}, 0, nil, 2, "CPU"))),
			kvLive(v, "", 2, kvB(0, kvRm("CPU", kvHB))), ref.KVEvStep{Op: ref.KVStepScore, Tokens: []int64{1, 1, 2, 2}, Tier: "CPU", Exact: true})},
		// A tokenless SSD store searches the other tiers, GPU first (none
		// here), then CPU before DISK: the hash is in both, CPU's page wins.
		{"tokenless-store-searches-non-gpu-tiers-by-name", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvSt([]uint64{kvHA}, 0, toks(7, 7), 2, "DISK"), kvSt([]uint64{kvHA}, 0, toks(1, 1), 2, "CPU"))),
			kvLive(v, "", 1, kvB(0, kvSt([]uint64{kvHA}, 0, nil, 2, "ssd"))),
			ref.KVEvStep{Op: ref.KVStepScore, Tokens: []int64{1, 1}, Tier: "SSD"}, ref.KVEvStep{Op: ref.KVStepScore, Tokens: []int64{7, 7}, Tier: "SSD"})},
		// [HA] is held and counted again, then [HB] conflicts (bound under
		// HA to 2 2): the refusal undoes HA's second copy, so the removal
		// of HA evicts it.
		{"restore-then-refused-undoes-the-count", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvSt([]uint64{kvHA, kvHB}, 0, toks(1, 1, 2, 2), 2, "GPU"))),
			kvLive(v, "", 1, kvB(0, kvSt([]uint64{kvHA, kvHB}, 0, toks(1, 1, 9, 9), 2, "GPU"))),
			kvLive(v, "", 2, kvB(0, kvRm("GPU", kvHA))), kvScoreStep(1, 1, 2, 2))},
		{"store-block-size-4097", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvSt([]uint64{1}, 0, big, 4097, "GPU"))), kvScoreStep(bigPrompt...))},
		// The same reply twice: the second is below next, a duplicate.
		{"replay-reply-delivered-twice", kvScript(kvOne(v, true), kvLive(v, "", 0, kvChainBatch(0)), kvLive(v, "", 2, kvChainBatch(2)),
			kvReplayed(v, nil, 1, kvChainBatch(1)), kvReplayed(v, nil, 1, kvChainBatch(1)), kvSentinelStep(v, false), kvChainScore(3))},
		// A7's byte bound: [topic "", seq, 92 00 90] is 0 + 8 + 3 = 11
		// bytes; under max_held_bytes 22 the trigger (2) and 3 fill the
		// queue exactly, 4 is dropped (held_overflow, stale at 4), and the
		// replay then fills 1; the drain applies 2 and 3.
		{"a7-held-bytes-22-holds-two-11-byte-messages", ref.KVEvApplyInput{Config: ref.KVEvConfig{MaxHeldBytes: 22}, Streams: kvOne(v, true), Steps: []ref.KVEvStep{
			kvLive(v, "", 0, kvEmpty), kvLive(v, "", 2, kvEmpty), kvLive(v, "", 3, kvEmpty), kvLive(v, "", 4, kvEmpty),
			kvReplayed(v, nil, 1, kvEmpty), kvSentinelStep(v, false), kvLive(v, "", 5, kvEmpty)}}},
		// A trigger past max_held_bytes is held all the same; the next
		// live message is not.
		{"a7-trigger-past-max-held-bytes-is-held", ref.KVEvApplyInput{Config: ref.KVEvConfig{MaxHeldBytes: 1}, Streams: kvOne(v, true), Steps: []ref.KVEvStep{
			kvLive(v, "", 1, kvChainBatch(1)), kvLive(v, "", 2, kvChainBatch(2)), kvReplayed(v, nil, 0, kvChainBatch(0)), kvSentinelStep(v, false), kvChainScore(3)}}},
		// A10's max_events 2: a batch of 3 events is refused whole (a
		// decode error, stale at its seq), the next one of 2 applies.
		{"a10-max-events-2-refuses-a-batch-of-3", ref.KVEvApplyInput{Config: ref.KVEvConfig{MaxEvents: 2}, Streams: kvOne(v, false), Steps: []ref.KVEvStep{
			kvLive(v, "", 0, kvB(0, kvSt([]uint64{kvHA}, 0, toks(1, 1), 2, "GPU"), kvClr(), kvSt([]uint64{kvHB}, 0, toks(2, 2), 2, "GPU"))),
			kvLive(v, "", 1, kvB(0, kvSt([]uint64{kvHA}, 0, toks(1, 1), 2, "GPU"), kvSt([]uint64{kvHB}, kvHA, toks(2, 2), 2, "GPU"))),
			kvScoreStep(1, 1, 2, 2)}}},
		// A10's decoded cost at max_decode_ratio 1: 258 × [""] (530 bytes,
		// 66,048 <= 66,066) applies as 258 unknown events, 259 (532 bytes,
		// 66,304 > 66,068) is refused whole.
		{"a10-ratio-1-258-events-apply-259-refused", ref.KVEvApplyInput{Config: ref.KVEvConfig{MaxDecodeRatio: 1}, Streams: kvOne(v, false), Steps: []ref.KVEvStep{
			kvLive(v, "", 0, kvEmptyTags(0, 258, "", nil)), kvLive(v, "", 1, kvEmptyTags(0, 259, "", nil))}}},
		// refused whole (kvApplyRejects)
		{"script-unknown-op", kvScript(kvOne(v, false), ref.KVEvStep{Op: "snapshot", Stream: v})},
		{"script-unknown-stream", kvScript(kvOne(v, false), kvLive("vllm-9", "", 0, kvE2))},
		{"script-bad-replay-failed-reason", kvScript(kvOne(v, true), kvFailed(v, "eof"))},
		{"script-score-token-2-pow-32", kvScript(kvOne(v, false), kvScoreStep(1, 1<<32))},
		{"script-max-held-past-the-cap", ref.KVEvApplyInput{Config: held(ref.MaxKVEvHeld + 1), Streams: kvOne(v, false)}},
		{"script-max-held-bytes-past-the-cap", ref.KVEvApplyInput{Config: ref.KVEvConfig{MaxHeldBytes: ref.MaxKVHeldBytes + 1}, Streams: kvOne(v, false)}},
		{"script-max-events-negative", ref.KVEvApplyInput{Config: ref.KVEvConfig{MaxEvents: -1}, Streams: kvOne(v, false)}},
		{"script-max-decode-ratio-past-the-cap", ref.KVEvApplyInput{Config: ref.KVEvConfig{MaxDecodeRatio: ref.MaxKVDecodeRatio + 1}, Streams: kvOne(v, false)}},
		{"script-duplicate-stream-name", kvScript([]ref.KVEvStream{{Name: v}, {Name: v}})},
		{"script-negative-stream-rank", kvScript([]ref.KVEvStream{{Name: v, Rank: -1}})},
		{"script-more-streams-than-max-engines", ref.KVEvApplyInput{Config: ref.KVEvConfig{MaxEngines: 1}, Streams: twoPods}},
		{"script-engine-share-past-the-fair-share", ref.KVEvApplyInput{Config: ref.KVEvConfig{MaxEngines: 8, MaxEnginesPerStream: 3},
			Streams: []ref.KVEvStream{{Name: "a"}, {Name: "b"}, {Name: "c"}}}},
		{"script-max-engines-per-stream-past-the-cap", ref.KVEvApplyInput{Config: ref.KVEvConfig{MaxEnginesPerStream: ref.MaxKVEvEngines + 1}, Streams: kvOne(v, false)}},
	}
	return cases
}

// The engine-share cases of the boundary table (§2.10 A2, A5, A9), whose
// outcome TestKVEvEngineShareCasesGiveTheSpecsNumbersOnBothTwins pins by
// hand.
const (
	// kvCaseFairShare: max_engines 4 over two streams is a share of 2
	// each; the first stream sends ranks 0-3, the second then 0-2.
	kvCaseFairShare = "engine-share-fair-share-of-max-engines-4-over-two-streams"
	// kvCaseShareRestart: a share of 1; rank 1 is refused until the
	// stream's restart drops rank 0.
	kvCaseShareRestart = "engine-share-of-1-given-back-by-a-restart"
)

// kvRankBatch is a batch of DP rank r storing one page [1, 2] under hash
// 0x10+r.
func kvRankBatch(r int64) []byte {
	return kvB(r, kvSt([]uint64{0x10 + uint64(r)}, 0, toks(1, 2), 2, "GPU"))
}

// kvRanks is kvCaseFairShare's steps: stream a sends ranks 0-3 (seqs
// 0-3), stream b ranks 0-2 (seqs 0-2), then a score of [1, 2].
func kvRanks(a, b string) []ref.KVEvStep {
	var st []ref.KVEvStep
	for r := range int64(4) {
		st = append(st, kvLive(a, "", uint64(r), kvRankBatch(r)))
	}
	for r := range int64(3) {
		st = append(st, kvLive(b, "", uint64(r), kvRankBatch(r)))
	}
	return append(st, kvScoreStep(1, 2))
}

var kvApplyRejects = map[string]*ref.Sentinel{
	"script-unknown-op":                          ref.ErrBadEnum,
	"script-unknown-stream":                      ref.ErrUnknownStream,
	"script-bad-replay-failed-reason":            ref.ErrBadEnum,
	"script-score-token-2-pow-32":                ref.ErrTokenRange,
	"script-max-held-past-the-cap":               ref.ErrTooLarge,
	"script-duplicate-stream-name":               ref.ErrBadEnum,
	"script-negative-stream-rank":                ref.ErrNegative,
	"script-more-streams-than-max-engines":       ref.ErrTooLarge,
	"script-engine-share-past-the-fair-share":    ref.ErrTooLarge,
	"script-max-engines-per-stream-past-the-cap": ref.ErrTooLarge,
	"script-max-held-bytes-past-the-cap":         ref.ErrTooLarge,
	"script-max-events-negative":                 ref.ErrTooLarge,
	"script-max-decode-ratio-past-the-cap":       ref.ErrTooLarge,
}

// kvApplyRegressions are the bug zoo's minimal scenarios, one per mutant
// (equiv/mutants/kvev_apply.go), each narrated: what the historic
// consumer did and what a router reading its index would have seen.
func kvApplyRegressions() []Case[ref.KVEvApplyInput] {
	const v = "vllm-0"
	return []Case[ref.KVEvApplyInput]{
		// §2.3 step 3 (llm-d #372 and its later fallback): the consumer
		// restarted without replay and its first message stores [5 6 7 8]
		// under a parent it never saw. llm-d attached the block at the
		// root, so a prompt starting 5 6 7 8 scored 1 block on an engine
		// that holds it only after some unknown prefix — a false prefix
		// hit, served as fresh. Fixed: an orphan, score 0, engine stale.
		{"orphan-store-at-root", kvScript(kvOne(v, false),
			kvLive(v, "kv@pod-a@llama", 0, kvB(0, kvSt([]uint64{kvH2}, kvH1, toks(5, 6, 7, 8), 4, "GPU"))),
			kvScoreStep(5, 6, 7, 8))},
		// §3.2 (AIBrix's client, Mooncake's conductor before its PR #3616):
		// on a cold start at seq 3 the subscriber sent the bare 8-byte start
		// without the empty delimiter frame; vLLM's ROUTER saw 2 frames and
		// never answered, the subscriber timed out, and the router's index
		// lacked batches 0-2 for as long as the engine lived. Fixed: the
		// request is [empty, start].
		{"replay-without-delimiter", kvScript(kvOne(v, true),
			kvLive(v, "", 3, kvChainBatch(3)), kvFailed(v, ref.ReplayReasonTimeout), kvChainScore(4))},
		// §3.1, §3.3: batch 1 (say, the removal of block 1 1) was dropped
		// by the PUB socket; the consumer logged the gap and went on, so the
		// router kept sending prompts 1 1 … to the engine on an index it
		// knew to be incomplete, with no stale flag. Fixed: [1, 2) is lost
		// and the engine stale (score 1, stale).
		{"gaps-only-logged", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvChainBatch(0)), kvLive(v, "", 2, kvB(0, kvSt([]uint64{0x300}, 0, toks(3, 3), 2, "GPU"))), kvChainScore(1))},
		// §2.6 (llm-d only logged AllBlocksCleared): after vLLM's
		// reset_prefix_cache the index kept the engine's blocks, and the
		// router sent a prompt 1 1 to an engine that had dropped them.
		// Fixed: the clear empties the engine, score 0.
		{"all-blocks-cleared-ignored", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvChainBatch(0)), kvLive(v, "", 1, kvB(0, kvClr())), kvChainScore(1))},
		// §2.5: two requests filled the same block (hash HA) on their own
		// and vLLM announced both copies, then evicted one. A set-based
		// index dropped the block, so the router stopped sending the
		// prefix 1 1 to the engine that still holds the other copy. Fixed:
		// counts 2 then 1, score 1.
		{"residency-as-set", kvScript(kvOne(v, false),
			kvLive(v, "", 0, kvB(0, kvSt([]uint64{kvHA}, 0, toks(1, 1), 2, "GPU"))),
			kvLive(v, "", 1, kvB(0, kvSt([]uint64{kvHA}, 0, toks(1, 1), 2, "GPU"))),
			kvLive(v, "", 2, kvB(0, kvRm("GPU", kvHA))), kvScoreStep(1, 1))},
		// §1.5 through the index: an SGLang stream (E5, hash -1) fed to a
		// u64-only decoder refused every batch, so the router saw the
		// SGLang engine with no blocks (and stale). Fixed: score 1.
		{"unsigned-hashes-only-index", kvScript([]ref.KVEvStream{{Name: "sgl-0"}},
			kvLive("sgl-0", "", 0, kvE5), kvScoreStep(7, 8))},
		// §1.5 through the index: vLLM's int hashes >= 2^63 (E1's H2) fed
		// to an i64-only decoder: the batch refused, the engine empty and
		// stale, score 0 instead of 2.
		{"signed-hashes-only-index", kvScript(kvOne(v, false),
			kvLive(v, "kv@10.0.0.7@llama", 0, kvE1), kvScoreStep(1, 2, 3, 4, 128, 255, 256, 65536))},
	}
}

// Properties.

// kvRunStep dispatches one step on ix as the kvev.apply interpreter does
// (ref.RunKVEvApply), so a property can look at the index between steps.
func kvRunStep(ix ref.KVEvIndex, s ref.KVEvStep) ref.KVEvStepResult {
	fb := func(fs []ref.HexBytes) [][]byte {
		out := make([][]byte, len(fs))
		for i, f := range fs {
			out[i] = f
		}
		return out
	}
	switch s.Op {
	case ref.KVStepLive:
		return ix.Live(s.Stream, fb(s.Frames))
	case ref.KVStepReplay:
		return ix.Replay(s.Stream, fb(s.Frames))
	case ref.KVStepReplayFailed:
		return ix.ReplayFailed(s.Stream, s.Reason)
	case ref.KVStepRestart:
		return ix.Restart(s.Stream)
	}
	scores, err := ix.Score(ref.KVEvScoreQuery{Tokens: s.Tokens, Namespace: s.Namespace, Group: s.Group, Tier: s.Tier, Exact: s.Exact})
	r := ref.KVEvStepResult{Op: s.Op, Scores: scores}
	if err != nil {
		r.Error = new(ref.ErrorObjectOf(err))
	}
	return r
}

// kvStepped runs in on a fresh index of newIndex, calling visit after
// every step with its result and the index; visit returns false to stop.
func kvStepped(newIndex ref.NewKVEvIndexFunc, in ref.KVEvApplyInput, visit func(i int, r ref.KVEvStepResult, ix ref.KVEvIndex) bool) error {
	ix, err := newIndex(in.Config, in.Streams)
	if err != nil {
		return err
	}
	for i, s := range in.Steps {
		if !visit(i, kvRunStep(ix, s), ix) {
			break
		}
	}
	return nil
}

func kvJSON(v any) string {
	b, err := catalog.Marshal(v)
	if err != nil {
		return "unencodable: " + err.Error()
	}
	return string(b)
}

func kvEqual(a, b any) bool { return kvJSON(a) == kvJSON(b) }

// kvStateInvariants checks the final state's structure (§2.1-§2.5, A4,
// A5): sorted engines and pools, no empty pool, whole pages in a valid
// pre-order with sorted siblings, residency = the sum of the bindings, a
// hash bound once per pool, no hole without a resident descendant
// (pruning), an engine's tokens = its pages × page size within the
// budget, and streams naming exactly the engines they feed.
func kvStateInvariants(_ ref.Limits, in ref.KVEvApplyInput, out ref.KVEvApplyOutput) error {
	st := out.State
	budget := in.Config.WithDefaults().MaxTokensPerEngine
	if len(st.Streams) != len(in.Streams) {
		return fmt.Errorf("%d streams in the state, %d configured", len(st.Streams), len(in.Streams))
	}
	fed := map[ref.KVEvEngineKey]string{}
	for i, s := range st.Streams {
		if s.Name != in.Streams[i].Name {
			return fmt.Errorf("streams[%d] is %q, configured %q", i, s.Name, in.Streams[i].Name)
		}
		if !s.Replaying && s.Held != 0 {
			return fmt.Errorf("stream %s holds %d messages without a replay", s.Name, s.Held)
		}
		if s.Held > in.Config.WithDefaults().MaxHeld {
			return fmt.Errorf("stream %s holds %d messages, max_held %d", s.Name, s.Held, in.Config.WithDefaults().MaxHeld)
		}
		for j, k := range s.Engines {
			if j > 0 && kvKeyCmp(s.Engines[j-1], k) >= 0 {
				return fmt.Errorf("stream %s: engines not sorted: %v", s.Name, s.Engines)
			}
			fed[k] = s.Name
		}
	}
	if max := in.Config.WithDefaults().MaxEngines; len(st.Engines) > max {
		return fmt.Errorf("%d engines, max_engines %d", len(st.Engines), max)
	}
	share, err := in.Config.EngineShare(len(in.Streams))
	if err != nil {
		return err
	}
	for _, s := range st.Streams {
		if len(s.Engines) > share {
			return fmt.Errorf("stream %s feeds %d engines, its share is %d", s.Name, len(s.Engines), share)
		}
	}
	for i, e := range st.Engines {
		k := ref.KVEvEngineKey{Source: e.Source, DPRank: e.DPRank}
		if i > 0 && kvKeyCmp(ref.KVEvEngineKey{Source: st.Engines[i-1].Source, DPRank: st.Engines[i-1].DPRank}, k) >= 0 {
			return fmt.Errorf("engines not sorted at %d", i)
		}
		if fed[k] != e.Stream {
			return fmt.Errorf("engine %v is fed by %q, the streams say %q", k, e.Stream, fed[k])
		}
		delete(fed, k)
		var tokens int64
		for j, p := range e.Pools {
			if j > 0 && (e.Pools[j-1].Group > p.Group || e.Pools[j-1].Group == p.Group && e.Pools[j-1].Tier >= p.Tier) {
				return fmt.Errorf("engine %v: pools not sorted", k)
			}
			if p.Tier != strings.ToUpper(p.Tier) || p.Tier == "" {
				return fmt.Errorf("engine %v: tier %q", k, p.Tier)
			}
			if err := kvPoolInvariants(p); err != nil {
				return fmt.Errorf("engine %v pool (%d, %s): %w", k, p.Group, p.Tier, err)
			}
			tokens += int64(len(p.Pages)) * p.PageSize
		}
		if tokens != e.Tokens || tokens > budget {
			return fmt.Errorf("engine %v: reports %d tokens, pages hold %d, budget %d", k, e.Tokens, tokens, budget)
		}
		if !e.Stale && e.StaleSince != 0 {
			return fmt.Errorf("engine %v: stale_since %d but not stale", k, e.StaleSince)
		}
	}
	if len(fed) > 0 {
		return fmt.Errorf("streams name engines the index does not have: %v", fed)
	}
	return nil
}

func kvKeyCmp(a, b ref.KVEvEngineKey) int {
	if c := strings.Compare(a.Source, b.Source); c != 0 {
		return c
	}
	switch {
	case a.DPRank < b.DPRank:
		return -1
	case a.DPRank > b.DPRank:
		return 1
	}
	return 0
}

// kvNode is a page of a pool rebuilt from its pre-order listing.
type kvNode struct {
	page     ref.KVEvPageState
	children []*kvNode
}

// kvTree rebuilds a pool's tree from its pages (pre-order with depths).
func kvTree(p ref.KVEvPoolState) (*kvNode, error) {
	root := &kvNode{page: ref.KVEvPageState{Depth: -1}}
	path := []*kvNode{root}
	for i, pg := range p.Pages {
		if pg.Depth < 0 || pg.Depth > len(path)-1 {
			return nil, fmt.Errorf("pages[%d]: depth %d after a page of depth %d", i, pg.Depth, len(path)-2)
		}
		path = path[:pg.Depth+1]
		n := &kvNode{page: pg}
		parent := path[len(path)-1]
		parent.children = append(parent.children, n)
		path = append(path, n)
	}
	return root, nil
}

func kvPageCmp(a, b ref.KVEvPageState) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return slices.Compare(a.Tokens, b.Tokens)
}

func kvPoolInvariants(p ref.KVEvPoolState) error {
	if p.PageSize < 1 || len(p.Pages) == 0 {
		return fmt.Errorf("page size %d, %d pages (an empty pool is deleted, A5)", p.PageSize, len(p.Pages))
	}
	root, err := kvTree(p)
	if err != nil {
		return err
	}
	bound := map[ref.EvHash]bool{}
	var walk func(n *kvNode) (resident bool, err error)
	walk = func(n *kvNode) (bool, error) {
		any := false
		for j, c := range n.children {
			if j > 0 && kvPageCmp(n.children[j-1].page, c.page) >= 0 {
				return false, fmt.Errorf("children of a page not sorted by (namespace, tokens): %v then %v", n.children[j-1].page.Tokens, c.page.Tokens)
			}
			r, err := walk(c)
			if err != nil {
				return false, err
			}
			any = any || r
		}
		if n.page.Depth < 0 {
			return any, nil
		}
		pg := n.page
		if int64(len(pg.Tokens)) != p.PageSize {
			return false, fmt.Errorf("page %v of %d tokens, page size %d", pg.Tokens, len(pg.Tokens), p.PageSize)
		}
		var sum int64
		for j, b := range pg.Bindings {
			if j > 0 && pg.Bindings[j-1].Hash >= b.Hash {
				return false, fmt.Errorf("page %v: bindings not sorted by hash", pg.Tokens)
			}
			if b.Count < 0 {
				return false, fmt.Errorf("page %v: binding %016x count %d", pg.Tokens, uint64(b.Hash), b.Count)
			}
			if bound[b.Hash] {
				return false, fmt.Errorf("hash %016x bound to two pages", uint64(b.Hash))
			}
			bound[b.Hash] = true
			sum += b.Count
		}
		if sum != pg.Resident {
			return false, fmt.Errorf("page %v: resident %d, bindings sum to %d", pg.Tokens, pg.Resident, sum)
		}
		if pg.Resident == 0 && !any {
			return false, fmt.Errorf("page %v (depth %d) is a hole with no resident descendant (not pruned)", pg.Tokens, pg.Depth)
		}
		return any || pg.Resident > 0, nil
	}
	_, err = walk(root)
	return err
}

// kvDigest is A8's digest of a state, recomputed from its engines.
func kvDigest(st ref.KVEvState) string {
	h := sha256.New()
	u64 := func(v uint64) { h.Write(binary.LittleEndian.AppendUint64(nil, v)) }
	str := func(s string) { u64(uint64(len(s))); h.Write([]byte(s)) }
	u64(uint64(len(st.Engines)))
	for _, e := range st.Engines {
		str(e.Source)
		u64(uint64(e.DPRank))
		if e.Stale {
			h.Write([]byte{1})
		} else {
			h.Write([]byte{0})
		}
		u64(uint64(len(e.Pools)))
		for _, p := range e.Pools {
			u64(uint64(p.Group))
			str(p.Tier)
			u64(uint64(p.PageSize))
			u64(uint64(len(p.Pages)))
			for _, pg := range p.Pages {
				u64(uint64(pg.Depth))
				str(pg.Namespace)
				u64(uint64(len(pg.Tokens)))
				for _, tok := range pg.Tokens {
					h.Write(binary.LittleEndian.AppendUint32(nil, tok))
				}
				u64(uint64(len(pg.Bindings)))
				for _, b := range pg.Bindings {
					u64(uint64(b.Hash))
					u64(uint64(b.Count))
				}
			}
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// kvDigestIsA8: the reported digest is A8's encoding of the reported
// engines, so the digest covers exactly what the state shows.
func kvDigestIsA8(_ ref.Limits, _ ref.KVEvApplyInput, out ref.KVEvApplyOutput) error {
	if want := kvDigest(out.State); out.State.Digest != want {
		return fmt.Errorf("digest %s, A8 over the state gives %s", out.State.Digest, want)
	}
	return nil
}

// kvCursorFollows runs the cursor model over the script and compares
// every stream step's applied and duplicate seqs, replay request, replay
// completion, lost runs, restart, held count and step error with the trace
// (§3.1, §3.2, A7).
func kvCursorFollows(_ ref.Limits, in ref.KVEvApplyInput, out ref.KVEvApplyOutput) error {
	cur := map[string]*kvCursor{}
	for _, s := range in.Streams {
		cur[s.Name] = newKVCursor(s, in.Config)
	}
	for i, s := range in.Steps {
		c := cur[s.Stream]
		var o kvCursorOut
		switch s.Op {
		case ref.KVStepLive:
			o = c.live(s.Frames)
		case ref.KVStepReplay:
			o = c.reply(s.Frames)
		case ref.KVStepReplayFailed:
			o = c.failed()
		case ref.KVStepRestart:
			o = c.restart()
		default:
			continue
		}
		r := out.Trace[i]
		var req *uint64
		if len(r.ReplayRequest) > 0 {
			if len(r.ReplayRequest) != 2 || len(r.ReplayRequest[0]) != 0 || len(r.ReplayRequest[1]) != 8 {
				return fmt.Errorf("step %d: replay request %x is not [empty, 8-byte start] (§3.2)", i, r.ReplayRequest)
			}
			req = new(seqOf(r.ReplayRequest[1]))
		}
		code := ""
		if r.Error != nil {
			code = r.Error.Code
		}
		got := fmt.Sprintf("applied %v dups %v request %v done %t restart %t held %d error %q", r.Applied, r.Duplicates, kvPtr(req), r.ReplayDone, r.Restart, r.Held, code)
		held := len(c.held)
		want := fmt.Sprintf("applied %v dups %v request %v done %t restart %t held %d error %q", o.applied, o.dups, kvPtr(o.request), o.done, o.restart, held, o.errCode)
		if got != want {
			return fmt.Errorf("step %d (%s %s): the trace has %s; §3.1/A7 give %s", i, s.Op, s.Stream, got, want)
		}
		if !o.overflow && !kvEqual(r.Lost, o.lost) && (len(r.Lost) > 0 || len(o.lost) > 0) {
			return fmt.Errorf("step %d (%s %s): lost %v; §3.1/A7 give %v", i, s.Op, s.Stream, r.Lost, o.lost)
		}
	}
	return nil
}

func kvPtr(p *uint64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

// kvAppliedAtMostOnce is §2.5/§2.7: within a publisher incarnation a
// stream applies each seq at most once, in increasing order, duplicates
// dropped; a restart starts a new incarnation.
func kvAppliedAtMostOnce(_ ref.Limits, in ref.KVEvApplyInput, out ref.KVEvApplyOutput) error {
	last := map[string]uint64{}
	seen := map[string]bool{}
	// pending counts the restarts a stream reported (a seq regression
	// found live or while held messages drain) that no non-increasing seq
	// has yet accounted for: the restart may fall between two seqs the
	// same step applies, or before a seq a later step applies, so each
	// excuses exactly one seq that does not increase. A restart step
	// forgets the stream's history outright, so it excuses nothing later.
	pending := map[string]int{}
	for i, s := range in.Steps {
		r := out.Trace[i]
		if s.Op == ref.KVStepRestart {
			seen[s.Stream], pending[s.Stream] = false, 0
		} else if r.Restart {
			pending[s.Stream]++
		}
		for _, q := range r.Applied {
			if seen[s.Stream] && q <= last[s.Stream] {
				if pending[s.Stream] == 0 {
					return fmt.Errorf("step %d: stream %s applies seq %d after %d", i, s.Stream, q, last[s.Stream])
				}
				pending[s.Stream]--
			}
			last[s.Stream], seen[s.Stream] = q, true
		}
		for _, q := range r.Duplicates {
			if slices.Contains(r.Applied, q) {
				return fmt.Errorf("step %d: seq %d both applied and dropped", i, q)
			}
		}
	}
	return nil
}

// kvScoreWalksState is §2.8 against the state: every score equals a walk
// over the index's pages at that step (engines with a pool for the
// query's group and tier; whole pages; the namespace's child page by
// page; stop at the first missing page or hole), in blocks of that pool.
func kvScoreWalksState(_ ref.Limits, in ref.KVEvApplyInput, out ref.KVEvApplyOutput) error {
	var ferr error
	err := kvStepped(ref.NewKVEvIndex, in, func(i int, r ref.KVEvStepResult, ix ref.KVEvIndex) bool {
		if !kvEqual(r, out.Trace[i]) {
			ferr = fmt.Errorf("step %d: stepping the index gives %s, the script %s", i, kvJSON(r), kvJSON(out.Trace[i]))
			return false
		}
		s := in.Steps[i]
		if s.Op != ref.KVStepScore || r.Error != nil {
			return true
		}
		want := kvWalkScores(ix.State(), s)
		if !kvEqual(want, r.Scores) {
			ferr = fmt.Errorf("step %d: scores %s; a walk over the state gives %s", i, kvJSON(r.Scores), kvJSON(want))
			return false
		}
		return true
	})
	if err != nil {
		return err
	}
	return ferr
}

func kvWalkScores(st ref.KVEvState, s ref.KVEvStep) []ref.KVEvScore {
	tier := strings.ToUpper(s.Tier)
	if tier == "" {
		tier = "GPU"
	}
	var out []ref.KVEvScore
	for _, e := range st.Engines {
		for _, p := range e.Pools {
			if p.Group != s.Group || p.Tier != tier {
				continue
			}
			n := 0
			if root, err := kvTree(p); err == nil {
				node := root
				for (n+1)*int(p.PageSize) <= len(s.Tokens) {
					page := s.Tokens[n*int(p.PageSize) : (n+1)*int(p.PageSize)]
					var next *kvNode
					for _, c := range node.children {
						if c.page.Namespace == s.Namespace && slices.EqualFunc(c.page.Tokens, page, func(a uint32, b int64) bool { return int64(a) == b }) {
							next = c
						}
					}
					if next == nil || next.page.Resident == 0 {
						break
					}
					node, n = next, n+1
				}
			}
			out = append(out, ref.KVEvScore{Source: e.Source, DPRank: e.DPRank, Blocks: n, Tokens: int64(n) * p.PageSize, PageSize: p.PageSize, Stale: e.Stale})
		}
	}
	return out
}

// kvPools is the part of a state that events change: every engine's pools.
func kvPools(st ref.KVEvState) string {
	type eng struct {
		Key   ref.KVEvEngineKey
		Pools []ref.KVEvPoolState
	}
	var es []eng
	for _, e := range st.Engines {
		es = append(es, eng{ref.KVEvEngineKey{Source: e.Source, DPRank: e.DPRank}, e.Pools})
	}
	return kvJSON(es)
}

// kvDecodeFrames is the decode input of a live or replayed batch's
// frames (the topic of a 2-frame reply does not matter to the pools).
func kvDecodeFrames(s ref.KVEvStep) (ref.KVEvDecodeInput, bool) {
	switch {
	case s.Op == ref.KVStepLive && len(s.Frames) == 3:
		return ref.KVEvDecodeInput{Frames: s.Frames}, true
	case s.Op == ref.KVStepReplay && len(s.Frames) == 4:
		return ref.KVEvDecodeInput{Frames: s.Frames[1:]}, true
	case s.Op == ref.KVStepReplay && len(s.Frames) == 3:
		return ref.KVEvDecodeInput{Frames: []ref.HexBytes{{}, s.Frames[1], s.Frames[2]}}, true
	}
	return ref.KVEvDecodeInput{}, false
}

// kvWithFrames returns s with its batch replaced by payload.
func kvWithPayload(s ref.KVEvStep, payload []byte) ref.KVEvStep {
	s.Frames = slices.Clone(s.Frames)
	s.Frames[len(s.Frames)-1] = payload
	return s
}

// kvRefusedEventAtomic is §2.7: an event the pools refuse changes nothing
// — the batch without it leaves every pool as the batch with it does (the
// other events still apply). Checked for the first two single-batch steps
// with a refused event.
func kvRefusedEventAtomic(lim ref.Limits, in ref.KVEvApplyInput, _ ref.KVEvApplyOutput) error {
	type refusal struct {
		step, event int
		pools       string
	}
	var rs []refusal
	if err := kvStepped(ref.NewKVEvIndex, in, func(i int, r ref.KVEvStepResult, ix ref.KVEvIndex) bool {
		if len(r.Applied) != 1 {
			return true
		}
		for _, e := range r.Errors {
			if e.Event >= 0 && e.Seq == r.Applied[0] {
				if fr, ok := kvDecodeFrames(in.Steps[i]); ok && seqOf(fr.Frames[1]) == e.Seq {
					rs = append(rs, refusal{i, e.Event, kvPools(ix.State())})
					break
				}
			}
		}
		return len(rs) < 2
	}); err != nil {
		return err
	}
	for _, rf := range rs {
		fr, _ := kvDecodeFrames(in.Steps[rf.step])
		msg, err := ref.KVEvDecode(lim, fr)
		if err != nil {
			return fmt.Errorf("step %d: the batch with a refused event does not decode: %v", rf.step, err)
		}
		evs := slices.Delete(slices.Clone(msg.Batch.Events), rf.event, rf.event+1)
		msg.Batch.Events = evs
		payload := encodeBatch(msg.Batch, msg.Batch.Form, func(j int) string { return evs[j].Form }, hashUint).bytes()
		variant := in
		variant.Steps = append(slices.Clone(in.Steps[:rf.step]), kvWithPayload(in.Steps[rf.step], payload))
		var got string
		if err := kvStepped(ref.NewKVEvIndex, variant, func(i int, _ ref.KVEvStepResult, ix ref.KVEvIndex) bool {
			if i == rf.step {
				got = kvPools(ix.State())
			}
			return true
		}); err != nil {
			return err
		}
		if got != rf.pools {
			return fmt.Errorf("step %d: event %d was refused, but the batch without it leaves the pools\n%s\nnot\n%s", rf.step, rf.event, got, rf.pools)
		}
	}
	return nil
}

// kvDecodeErrorChangesNothing is §2.7 (and A2's refusals): a batch
// refused whole leaves every pool as it was.
func kvDecodeErrorChangesNothing(_ ref.Limits, in ref.KVEvApplyInput, _ ref.KVEvApplyOutput) error {
	var before string
	var ferr error
	ix0, err := ref.NewKVEvIndex(in.Config, in.Streams)
	if err != nil {
		return err
	}
	before = kvPools(ix0.State())
	for i, s := range in.Steps {
		r := kvRunStep(ix0, s)
		after := kvPools(ix0.State())
		whole := len(r.Errors) == 1 && r.Errors[0].Event == -1
		if whole && len(r.Applied) == 1 && !r.Restart && before != after {
			ferr = fmt.Errorf("step %d: the batch was refused whole (%s) but the pools changed:\n%s\nto\n%s", i, r.Errors[0].Error.Code, before, after)
			break
		}
		before = after
	}
	return ferr
}

// kvReplayTwiceIsDuplicate is §2.5 with §3.1: the same replayed batch
// received twice is a duplicate the second time — nothing else in the
// trace changes, the digest stays, and only the stream's duplicate
// counter moves.
func kvReplayTwiceIsDuplicate(lim ref.Limits, in ref.KVEvApplyInput, out ref.KVEvApplyOutput) error {
	at := -1
	for i, s := range in.Steps {
		r := out.Trace[i]
		if s.Op == ref.KVStepReplay && len(r.Applied) == 1 && !r.ReplayDone && r.Error == nil && len(r.ReplayRequest) == 0 {
			at = i
			break
		}
	}
	if at < 0 {
		return nil
	}
	variant := in
	variant.Steps = slices.Insert(slices.Clone(in.Steps), at+1, in.Steps[at])
	got, err := ref.KVEvApply(lim, variant)
	if err != nil {
		return fmt.Errorf("the script with step %d twice is rejected: %v", at, err)
	}
	seq := out.Trace[at].Applied[0]
	if r := got.Trace[at+1]; len(r.Applied) != 0 || !slices.Equal(r.Duplicates, []uint64{seq}) {
		return fmt.Errorf("step %d repeated: %s, want seq %d a duplicate", at, kvJSON(r), seq)
	}
	others := append(slices.Clone(got.Trace[:at+1]), got.Trace[at+2:]...)
	if !kvEqual(others, out.Trace) {
		return fmt.Errorf("step %d repeated changes the rest of the trace", at)
	}
	if got.State.Digest != out.State.Digest {
		return fmt.Errorf("step %d repeated: digest %s, was %s", at, got.State.Digest, out.State.Digest)
	}
	want := out.State
	want.Streams = slices.Clone(out.State.Streams)
	for j := range want.Streams {
		if want.Streams[j].Name == in.Steps[at].Stream {
			want.Streams[j].Counters.Duplicates++
		}
	}
	if !kvEqual(want, got.State) {
		return fmt.Errorf("step %d repeated: the state differs by more than one duplicate:\n%s\nwant\n%s", at, kvJSON(got.State), kvJSON(want))
	}
	return nil
}

// kvDigestInterleaving is §4.3's convergence criterion: the same streams'
// steps merged in another order (each stream's order kept, scores left
// out) give the same engines and digest. Skipped when a batch was refused
// for engine ownership, which does depend on which stream came first; an
// engine-budget refusal does not, since each stream has its own share (A5).
func kvDigestInterleaving(lim ref.Limits, in ref.KVEvApplyInput, out ref.KVEvApplyOutput) error {
	if len(in.Streams) < 2 || kvOrderDependent(out) {
		return nil
	}
	queues := map[string][]ref.KVEvStep{}
	for _, s := range in.Steps {
		if s.Op != ref.KVStepScore {
			queues[s.Stream] = append(queues[s.Stream], s)
		}
	}
	variant := ref.KVEvApplyInput{Config: in.Config, Streams: in.Streams}
	for round := 0; len(variant.Steps) < len(in.Steps); round++ {
		moved := false
		for j := len(in.Streams) - 1; j >= 0; j-- {
			name := in.Streams[j].Name
			if q := queues[name]; len(q) > 0 {
				n := min(len(q), 1+round%3)
				variant.Steps = append(variant.Steps, q[:n]...)
				queues[name] = q[n:]
				moved = true
			}
		}
		if !moved {
			break
		}
	}
	got, err := ref.KVEvApply(lim, variant)
	if err != nil {
		return fmt.Errorf("the re-interleaved script is rejected: %v", err)
	}
	if kvOrderDependent(got) {
		return nil
	}
	if got.State.Digest != out.State.Digest || !kvEqual(got.State.Engines, out.State.Engines) {
		return fmt.Errorf("re-interleaving the streams changes the engines: digest %s, was %s", got.State.Digest, out.State.Digest)
	}
	return nil
}

func kvOrderDependent(out ref.KVEvApplyOutput) bool {
	for _, r := range out.Trace {
		for _, e := range r.Errors {
			if e.Error.Code == ref.ErrEngineOwner.Code() {
				return true
			}
		}
	}
	return false
}

// kvStreamsAreIndependent is A2 and A5's promise that no stream can lock
// another out: the script without one stream's steps (and without the
// scores, which read every engine) gives every other stream the same step
// results, the same cursor and counters and the same engines. The stream
// left out is the one with the most engine refusals (the first on a tie),
// the likeliest to have crowded the others under a shared cap. Skipped
// when a batch was refused for engine ownership, which is one stream's
// engine taken by another by design.
func kvStreamsAreIndependent(lim ref.Limits, in ref.KVEvApplyInput, out ref.KVEvApplyOutput) error {
	if len(in.Streams) < 2 || kvOrderDependent(out) {
		return nil
	}
	drop := out.State.Streams[0]
	for _, st := range out.State.Streams[1:] {
		if st.Counters.EnginesRefused > drop.Counters.EnginesRefused {
			drop = st
		}
	}
	variant := ref.KVEvApplyInput{Config: in.Config, Streams: in.Streams}
	var kept []int // indexes in in.Steps of the variant's steps
	for i, s := range in.Steps {
		if s.Op != ref.KVStepScore && s.Stream != drop.Name {
			variant.Steps = append(variant.Steps, s)
			kept = append(kept, i)
		}
	}
	got, err := ref.KVEvApply(lim, variant)
	if err != nil {
		return fmt.Errorf("the script without stream %s is rejected: %v", drop.Name, err)
	}
	for j, i := range kept {
		if !kvEqual(got.Trace[j], out.Trace[i]) {
			return fmt.Errorf("without stream %s, step %d gives %s, not %s", drop.Name, i, kvJSON(got.Trace[j]), kvJSON(out.Trace[i]))
		}
	}
	others := func(st ref.KVEvState) string {
		var ss []ref.KVEvStreamState
		for _, s := range st.Streams {
			if s.Name != drop.Name {
				ss = append(ss, s)
			}
		}
		var es []ref.KVEvEngineState
		for _, e := range st.Engines {
			if e.Stream != drop.Name {
				es = append(es, e)
			}
		}
		return kvJSON([]any{ss, es})
	}
	if a, b := others(got.State), others(out.State); a != b {
		return fmt.Errorf("without stream %s the other streams end as\n%s\nnot\n%s", drop.Name, a, b)
	}
	return nil
}

// kvHashedScoreIsExact is A4: on generated scripts (no two prefixes share
// a chain hash) every hashed score equals the exact one.
func kvHashedScoreIsExact(lim ref.Limits, in ref.KVEvApplyInput, out ref.KVEvApplyOutput) error {
	exact := in
	exact.Steps = slices.Clone(in.Steps)
	for i := range exact.Steps {
		exact.Steps[i].Exact = exact.Steps[i].Exact || exact.Steps[i].Op == ref.KVStepScore
	}
	want, err := ref.KVEvApply(lim, exact)
	if err != nil {
		return fmt.Errorf("the exact script was rejected: %v", err)
	}
	for i, s := range in.Steps {
		if s.Op == ref.KVStepScore && !s.Exact && !kvEqual(out.Trace[i], want.Trace[i]) {
			return fmt.Errorf("step %d: hashed score %s, exact %s", i, kvJSON(out.Trace[i]), kvJSON(want.Trace[i]))
		}
	}
	return nil
}
