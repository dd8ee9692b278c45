package equiv

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"pgregory.net/rapid"

	"github.com/kvtwin/kvtwin/spec"
)

// The fleet simulator, kvev.apply's valid generator (KVEvFleet): the
// lives of 1-3 publisher streams as the subscriber observes them, each a
// publisher model with a replay buffer, dropped and never-sent seqs,
// restarts and malformed frames, with the cursor model (kvev_cursor.go)
// run alongside to know when a replay is outstanding and how it is
// answered. The engines behind each stream are kvev_engine.go's.

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
	in      spec.KVEvApplyInput
	pubs    []*kvPub
	prompts [][]uint32
	// offloaded are the tokens of paths tokenless stores copied, and
	// offTier their tiers, for scores of those tiers.
	offloaded [][]uint32
	offTier   []string
	// cursors are the model's, by stream (the generator's own copy).
	cursors map[string]*kvCursor
	// cover is the part of kvev.apply the steps stay inside.
	cover Coverage
}

// kvPub is one publisher stream: its configuration, publisher state,
// replay buffer and engines by DP rank.
type kvPub struct {
	cfg     spec.KVEvStream
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
	// lastLive and lastReply are the frames last delivered live and as a
	// replay reply, for redelivery at the same seq.
	lastLive, lastReply []spec.HexBytes
	// removed: the operator removed the stream (A11); the publisher goes
	// on, and the index answers it as a stream it does not have.
	removed bool
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
func KVEvFleet(t *rapid.T, maxSteps int) spec.KVEvApplyInput {
	return kvEvFleet(t, maxSteps, Coverage{})
}

// kvEvFleet is KVEvFleet inside c: without score steps a publish takes a
// score's place, and without hashed scores every score is exact.
func kvEvFleet(t *rapid.T, maxSteps int, c Coverage) spec.KVEvApplyInput {
	f := newKVFleet(t)
	f.cover = c
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
			cfg: spec.KVEvStream{Name: kvStreamNames[i], Rank: rapid.Int64Range(0, 2).Draw(t, "rank"), Replay: rapid.IntRange(0, 2).Draw(t, "replay") > 0,
				Snapshot: oneIn(t, 3, "snapshot")},
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

func (f *kvFleet) emit(s spec.KVEvStep) kvCursorOut {
	f.in.Steps = append(f.in.Steps, s)
	c := f.cursors[s.Stream]
	if p := f.pub(s.Stream); p != nil && p.removed {
		return kvCursorOut{} // the index has no such stream now
	}
	switch s.Op {
	case spec.KVStepLive:
		return c.live(s.Frames)
	case spec.KVStepReplay:
		return c.reply(s.Frames)
	case spec.KVStepReplayFailed:
		return c.failed()
	case spec.KVStepRestart:
		return c.restart()
	}
	return kvCursorOut{}
}

// pub is the publisher of stream name, or nil.
func (f *kvFleet) pub(name string) *kvPub {
	for _, p := range f.pubs {
		if p.cfg.Name == name {
			return p
		}
	}
	return nil
}

// removeStream is the operator removing p's stream (A11): the index forgets its
// cursor and engines, so the cursor model starts over too.
func (f *kvFleet) removeStream(p *kvPub) {
	f.emit(spec.KVEvStep{Op: spec.KVStepRemoveStream, Stream: p.cfg.Name})
	p.removed, p.reply = true, nil
	f.cursors[p.cfg.Name] = newKVCursor(p.cfg, f.in.Config)
}

// readdStream is the operator adding p's stream again (A11): new to the index,
// with the share it had.
func (f *kvFleet) readdStream(p *kvPub) {
	f.emit(spec.KVEvStep{Op: spec.KVStepAddStream, Config: new(p.cfg)})
	p.removed = false
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
	if p.removed && f.cover.Step(spec.KVStepAddStream) && rapid.Bool().Draw(t, "readd") {
		f.readdStream(p)
		return
	}
	c := f.cursors[p.cfg.Name]
	if c.replaying && p.reply == nil {
		// The publisher that was asked restarted: its answer never comes.
		f.after(p, f.emit(spec.KVEvStep{Op: spec.KVStepReplayFailed, Stream: p.cfg.Name, Reason: spec.ReplayReasonTimeout}))
		return
	}
	if c.replaying && rapid.IntRange(0, 9).Draw(t, "answer") < 7 {
		f.answer(p)
		return
	}
	switch op := uniform(t, 1000, "op"); {
	case op < 640:
		f.publish(p)
	case op < 790 && f.cover.Step(spec.KVStepScore):
		f.score()
	case op < 790:
		f.publish(p)
	case op < 820:
		f.restartPublisher(p)
	case op < 830:
		f.after(p, f.emit(spec.KVEvStep{Op: spec.KVStepRestart, Stream: p.cfg.Name}))
	case op < 860:
		f.emit(spec.KVEvStep{Op: spec.KVStepLive, Stream: p.cfg.Name, Frames: f.malformedLive(p)})
	case op < 870:
		// a stray reply while no replay is outstanding (A7: a protocol error)
		if !c.replaying && len(p.buffer) > 0 {
			m := p.buffer[len(p.buffer)-1]
			f.emit(spec.KVEvStep{Op: spec.KVStepReplay, Stream: p.cfg.Name, Frames: p.replyFrames(m)})
			return
		}
		f.publish(p)
	case op < 885:
		f.redeliver(p)
	case op < 893 && !p.removed && f.cover.Step(spec.KVStepRemoveStream):
		f.removeStream(p)
	case op < 896 && !p.removed && f.cover.Step(spec.KVStepAddStream):
		// An add of a name the index has (A11: refused, nothing changes).
		f.emit(spec.KVEvStep{Op: spec.KVStepAddStream, Config: new(p.cfg)})
	case op < 950 && p.cfg.Snapshot && !p.removed:
		f.snapshot(p)
	default:
		f.publish(p)
	}
}

// redeliver delivers p's last message again at the seq it had (a reach
// class of issue 30): the last reply of the outstanding replay (§3.1 step
// 3: a duplicate), or the last live message (step 2: a new publisher
// incarnation as far as the subscriber can tell).
func (f *kvFleet) redeliver(p *kvPub) {
	name := p.cfg.Name
	switch {
	case f.cursors[name].replaying && p.lastReply != nil:
		f.after(p, f.emit(spec.KVEvStep{Op: spec.KVStepReplay, Stream: name, Frames: p.lastReply}))
	case p.lastLive != nil:
		f.after(p, f.emit(spec.KVEvStep{Op: spec.KVStepLive, Stream: name, Frames: p.lastLive}))
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
		reason := rapid.SampledFrom([]string{spec.ReplayReasonTimeout, spec.ReplayReasonUnavailable}).Draw(t, "reason")
		f.after(p, f.emit(spec.KVEvStep{Op: spec.KVStepReplayFailed, Stream: name, Reason: reason}))
	case k < 12:
		f.emit(spec.KVEvStep{Op: spec.KVStepReplay, Stream: name, Frames: f.malformedReply(p)})
		f.after(p, f.emit(spec.KVEvStep{Op: spec.KVStepReplayFailed, Stream: name, Reason: spec.ReplayReasonProtocol}))
	case k < 20:
		f.publish(p) // a live message arrives meanwhile: held
	case len(r.snap) == 0:
		f.after(p, f.emit(spec.KVEvStep{Op: spec.KVStepReplay, Stream: name, Frames: p.sentinel()}))
	default:
		m := r.snap[0]
		r.snap = r.snap[1:]
		p.lastReply = p.replyFrames(m)
		f.after(p, f.emit(spec.KVEvStep{Op: spec.KVStepReplay, Stream: name, Frames: p.lastReply}))
	}
}

func (p *kvPub) liveFrames(m kvPubMsg) []spec.HexBytes {
	return []spec.HexBytes{[]byte(p.topic), seqFrame(m.seq), m.payload}
}

// replyFrames is one buffered batch as the DEALER receives it (§3.2).
func (p *kvPub) replyFrames(m kvPubMsg) []spec.HexBytes {
	if p.layout3 {
		topic := p.topic
		if p.replyTopicless {
			topic = "" // a replay service that does not send the topic (§6's stored revision)
		}
		return []spec.HexBytes{{}, []byte(topic), seqFrame(m.seq), m.payload}
	}
	return []spec.HexBytes{{}, seqFrame(m.seq), m.payload}
}

func (p *kvPub) sentinel() []spec.HexBytes {
	if p.layout3 {
		return []spec.HexBytes{{}, {}, seqFrame(math.MaxUint64), {}}
	}
	return []spec.HexBytes{{}, seqFrame(math.MaxUint64), {}}
}

// malformedLive is a live message with the wrong frame count or seq width.
func (f *kvFleet) malformedLive(p *kvPub) []spec.HexBytes {
	fr := p.liveFrames(kvPubMsg{seq: p.seq, payload: kvE2})
	switch rapid.IntRange(0, 3).Draw(f.t, "malformed") {
	case 0:
		return fr[:2]
	case 1:
		return append(fr, spec.HexBytes{})
	case 2:
		fr[1] = fr[1][1:]
	default:
		fr[1] = append(fr[1], 0)
	}
	return fr
}

// malformedReply is a reply of the wrong layout (A7).
func (f *kvFleet) malformedReply(p *kvPub) []spec.HexBytes {
	fr := p.replyFrames(kvPubMsg{seq: p.reply.start, payload: kvE2})
	switch rapid.IntRange(0, 3).Draw(f.t, "malformed_reply") {
	case 0:
		return fr[1:] // no empty delimiter
	case 1:
		fr[len(fr)-2] = fr[len(fr)-2][:4]
	case 2:
		fr[0] = []byte("x")
	default:
		return append(fr, spec.HexBytes{})
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
		f.after(p, f.emit(spec.KVEvStep{Op: spec.KVStepRestart, Stream: p.cfg.Name}))
	}
	if profSGLang(p.prof) {
		f.send(p, p.ranks[0], []*mpVal{mpA(mpS(spec.EventCleared))})
	}
}

// pid is p's publisher id: its incarnation's byte, 16 times (§3.5).
func (p *kvPub) pid() []byte { return bytes.Repeat([]byte{byte(p.incarn)}, spec.KVPublisherIDBytes) }

// snapshot is p's snapshot endpoint or its subscriber at work (§3.5, A13):
// a reply covering the last seq published whose chunks are the payloads
// of up to the last four buffered batches (a differential input, not the
// publisher's block set), an unavailable or malformed reply, a
// snapshot_failed, or a heartbeat loss. The cursor model does not follow
// snapshots; the twins are compared step by step all the same.
func (f *kvFleet) snapshot(p *kvPub) {
	t, name := f.t, p.cfg.Name
	seq := int64(p.seq) - 1
	pid := p.pid()
	switch k := uniform(t, 100, "snapshot"); {
	case k < 10:
		f.emit(spec.KVEvStep{Op: spec.KVStepSnapshotFailed, Stream: name, Reason: spec.ReplayReasonTimeout})
		return
	case k < 20:
		f.emit(spec.KVEvStep{Op: spec.KVStepHeartbeatLost, Stream: name})
		return
	case k < 28:
		seq = -2 // unavailable
	case k < 33:
		pid = pid[:15] // malformed
	case k < 40:
		pid = bytes.Repeat([]byte{0xee}, spec.KVPublisherIDBytes) // another publisher's
	}
	frames := []spec.HexBytes{binary.BigEndian.AppendUint64(nil, uint64(seq)), pid}
	if seq >= 0 {
		n := rapid.IntRange(0, min(4, len(p.buffer))).Draw(t, "chunks")
		for _, m := range p.buffer[len(p.buffer)-n:] {
			frames = append(frames, m.payload)
		}
	}
	f.emit(spec.KVEvStep{Op: spec.KVStepSnapshotReply, Stream: name, Frames: frames})
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
	p.lastLive = p.liveFrames(m)
	f.after(p, f.emit(spec.KVEvStep{Op: spec.KVStepLive, Stream: p.cfg.Name, Frames: p.lastLive}))
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
	case k == 1 || p.cfg.Snapshot && k > 1:
		// A publisher id (§3.5); a stream with a snapshot endpoint's
		// batches carry it unless map-shaped (A13).
		return mpA(ts, events, r, mpB(p.pid())).bytes()
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
	s := spec.KVEvStep{Op: spec.KVStepScore, Tokens: toks, Exact: rapid.Bool().Draw(t, "exact")}
	s.Exact = s.Exact || !f.cover.Option(kvHashedScore)
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
