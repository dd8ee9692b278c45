package equiv

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/spec"
)

// TestKVEvScenarios runs the narrated event-fed index scenarios
// (testdata/kvev_*.txt, docs/spec/kv-events.md §2-§3) on both twins, each
// built by catalog.KVEvIndex as the server builds it: every file is a
// story of one stream's cursor or of the index's pools (gaps and replays,
// held messages, restarts, stale marking, engine shares, clears, scores),
// written as what the publishers do and what the index answers, and both
// twins must print exactly the expected output. A file named for a bug-zoo
// mutant (kvev_<mutant id>.txt) tells that mutant's story, and
// TestKVEvScenariosShowTheirBug checks that the mutant's index tells it
// otherwise. Regenerate the expected output, after checking it by hand,
// with `go test ./equiv -run TestKVEvScenarios -rewrite`.
//
// The commands, one handler file each (kvev_apply_scenario_<command>_test.go,
// as etcd raft's interaction tests have):
//
//	index [max_engines=N] [max_engines_per_stream=N] [max_tokens_per_engine=N]
//	      [max_held=N] [max_held_bytes=N] [max_events=N] [max_decode_ratio=N]
//	  NAME [replay] [rank=R] [topic=T] [reply_topic] [buffer=N]   one line per stream
//	live stream=S [rank=R|nil] [frames=2] [seq_bytes=N]           then one event a line
//	gap stream=S [rank=R|nil] [unsent]                            then one event a line
//	replay stream=S [n=K] [seq=N] [sentinel] [fail=REASON] [bad=delimiter|seq]
//	restart stream=S [discovered]
//	add                                                           then one stream line, as index's
//	remove stream=S
//	clear stream=S [rank=R|nil]
//	score tokens=(…) [tier=T] [ns=NS] [group=G] [exact]
//	state
//
// Events (one a line, the input of live and gap):
//
//	stored hashes=(…) [parent=H] tokens=(…) block_size=N [medium=M] [group=G] [lora_id=N] [lora_name=S]
//	removed hashes=(…) [medium=M]
//	cleared
//	garbage                  an event the decoder refuses: the whole batch is lost
//
// A hash is an unsigned int (decimal or 0x…), a negative int (an SGLang
// hash, sent signed) or bin:<hex> (a bin hash).
func TestKVEvScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/kvev_*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no kvev scenario files: %v", err)
	}
	for _, file := range files {
		for _, impl := range []catalog.Impl{catalog.Ref, catalog.Fast} {
			newIndex, err := catalog.KVEvIndex(impl)
			if err != nil {
				t.Fatal(err)
			}
			t.Run(filepath.Base(file)+"/"+string(impl), func(t *testing.T) {
				sc := &kvScenario{newIndex: newIndex}
				datadriven.RunTest(t, file, sc.run)
			})
		}
	}
}

// kvScenarioBugs maps each scenario file named for a bug-zoo mutant
// (equiv/mutants/kvev_apply.go) to the fault that mutant switches on.
var kvScenarioBugs = []struct {
	id     string
	faults fault.KVEv
}{
	{"orphan-store-at-root", fault.KVEv{OrphanAtRoot: true}},
	{"replay-without-delimiter", fault.KVEv{ReplayNoDelimiter: true}},
	{"gaps-only-logged", fault.KVEv{GapsOnlyLogged: true}},
	{"all-blocks-cleared-ignored", fault.KVEv{ClearIgnored: true}},
	{"residency-as-set", fault.KVEv{CountsAsSet: true}},
	{"unsigned-hashes-only-index", fault.KVEv{UnsignedHashesOnly: true}},
	{"signed-hashes-only-index", fault.KVEv{SignedHashesOnly: true}},
	{"snapshot-seq-applied-again", fault.KVEv{SnapshotSeqAppliedAgain: true}},
}

// TestKVEvScenariosShowTheirBug runs each scenario file named for a mutant
// on the fast index with that mutant's fault switched on: some directive's
// output must differ from the file's, so each file tells a story that
// actually tells the bug apart from the fixed index.
func TestKVEvScenariosShowTheirBug(t *testing.T) {
	for _, bug := range kvScenarioBugs {
		t.Run(bug.id, func(t *testing.T) {
			sc := &kvScenario{newIndex: func(cfg spec.KVEvConfig, streams []spec.KVEvStream) (spec.KVEvIndex, error) {
				return fault.Installed().NewKVEvIndex(cfg, streams, bug.faults)
			}}
			differs := ""
			datadriven.RunTest(t, filepath.Join("testdata", "kvev_"+bug.id+".txt"), func(t *testing.T, td *datadriven.TestData) string {
				if differs == "" {
					if got := sc.run(t, td); got != strings.TrimSuffix(td.Expected, "\n") {
						differs = fmt.Sprintf("%s: %s gives %q", td.Pos, td.Cmd, got)
					}
				}
				return td.Expected
			})
			if differs == "" {
				t.Fatalf("the scenario never tells the bug from the fixed index")
			}
			t.Logf("the bug shows first at %s", differs)
		})
	}
}

// kvScenario is one scenario file's world: the index under test, built by
// one twin's constructor, and a model of each stream's publisher.
type kvScenario struct {
	newIndex spec.NewKVEvIndexFunc
	ix       spec.KVEvIndex
	pubs     map[string]*kvScenarioPub
	// share is every stream's engine share, fixed when the index was built.
	share int
}

// kvScenarioPub is a publisher as the scenario drives it (§1.1-§1.2, §3.2):
// the seq it assigns next, its replay buffer, its topic and reply layout,
// and the replay the index last asked it for.
type kvScenarioPub struct {
	// replay: the stream has a replay endpoint, so the buffer matters.
	replay bool
	topic  string
	// replyTopic: replies carry the topic frame (vLLM after #45177).
	replyTopic bool
	// pid is the publisher id its batches carry (nil: none; §3.5).
	pid []byte
	// bufferSteps bounds the replay buffer (0: unbounded).
	bufferSteps int
	seq         uint64
	buffer      []kvPubMsg
	// reply is the outstanding replay request and, once the endpoint
	// started answering it, the batches it answers with.
	reply *kvReply
}

// run executes one directive (the dispatch of the handler files).
func (s *kvScenario) run(t *testing.T, td *datadriven.TestData) string {
	if td.Cmd != "index" && s.ix == nil {
		td.Fatalf(t, "create the index first")
	}
	switch td.Cmd {
	case "index":
		return s.handleIndex(t, td)
	case "live":
		return s.handleLive(t, td)
	case "gap":
		return s.handleGap(t, td)
	case "replay":
		return s.handleReplay(t, td)
	case "restart":
		return s.handleRestart(t, td)
	case "add":
		return s.handleAdd(t, td)
	case "remove":
		return s.handleRemove(t, td)
	case "clear":
		return s.handleClear(t, td)
	case "score":
		return s.handleScore(t, td)
	case "state":
		return s.handleState(t, td)
	case "snapshot":
		return s.handleSnapshot(t, td)
	case "silence":
		return s.handleSilence(t, td)
	}
	td.Fatalf(t, "unknown command %q", td.Cmd)
	return ""
}

// pub is the publisher of the directive's stream= argument.
func (s *kvScenario) pub(t *testing.T, td *datadriven.TestData) (string, *kvScenarioPub) {
	name := kvArgString(t, td, "stream", "")
	p, ok := s.pubs[name]
	if !ok {
		td.Fatalf(t, "stream=%q is not one of the index's streams", name)
	}
	return name, p
}

// publish assigns the publisher's next seq to a batch and keeps it in the
// replay buffer unless it was never sent (unsent).
func (p *kvScenarioPub) publish(payload []byte, unsent bool) kvPubMsg {
	m := kvPubMsg{seq: p.seq, payload: payload}
	p.seq++
	if !unsent {
		p.buffer = append(p.buffer, m)
		if p.bufferSteps > 0 && len(p.buffer) > p.bufferSteps {
			p.buffer = p.buffer[len(p.buffer)-p.bufferSteps:]
		}
	}
	return m
}

// bufferRange lists the seqs in the replay buffer.
func (p *kvScenarioPub) bufferRange() string {
	seqs := make([]uint64, len(p.buffer))
	for i, m := range p.buffer {
		seqs[i] = m.seq
	}
	return "replay buffer [" + kvSeqs(seqs) + "]"
}

// observe notes what a step result asks of the publisher: a replay request
// opens one; a stream no longer replaying has none.
func (s *kvScenario) observe(stream string, r spec.KVEvStepResult) {
	p := s.pubs[stream]
	if len(r.ReplayRequest) == 2 && len(r.ReplayRequest[1]) == 8 {
		p.reply = &kvReply{start: binary.BigEndian.Uint64(r.ReplayRequest[1])}
	}
	for _, st := range s.ix.State().Streams {
		if st.Name == stream && !st.Replaying {
			p.reply = nil
		}
	}
}

// batch is the directive's input as a batch [ts, events, rank] (§1.3).
func kvScenarioBatch(t *testing.T, td *datadriven.TestData) []byte {
	var evs []*mpVal
	for line := range strings.SplitSeq(td.Input, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		evs = append(evs, kvScenarioEvent(t, td, line))
	}
	return kvB(kvArgRank(t, td), evs...)
}

// kvScenarioPubBatch is the directive's batch as p publishes it: with its
// publisher id as field 4 when it has one (§1.3, §3.5).
func kvScenarioPubBatch(t *testing.T, td *datadriven.TestData, p *kvScenarioPub) []byte {
	if p.pid == nil {
		return kvScenarioBatch(t, td)
	}
	var evs []*mpVal
	for line := range strings.SplitSeq(td.Input, "\n") {
		if strings.TrimSpace(line) != "" {
			evs = append(evs, kvScenarioEvent(t, td, line))
		}
	}
	r := mpNil()
	if rank := kvArgRank(t, td); rank >= 0 {
		r = mpI(rank)
	}
	return mpA(mpF64(1757500000.25), mpA(evs...), r, mpB(p.pid)).bytes()
}

// kvScenarioEvent is one event line in the encoding of kvSt, kvStX and kvRm
// (array form, §1.4).
func kvScenarioEvent(t *testing.T, td *datadriven.TestData, line string) *mpVal {
	kind, args, err := datadriven.ParseLine(line)
	if err != nil {
		td.Fatalf(t, "%v", err)
	}
	arg := func(key string) (datadriven.CmdArg, bool) {
		for _, a := range args {
			if a.Key == key {
				return a, true
			}
		}
		return datadriven.CmdArg{}, false
	}
	one := func(key, def string) string {
		if a, ok := arg(key); ok && len(a.Vals) == 1 {
			return a.Vals[0]
		}
		return def
	}
	hashes := func() []*mpVal {
		a, _ := arg("hashes")
		var hv []*mpVal
		for _, v := range a.Vals {
			hv = append(hv, kvScenarioHash(t, td, v))
		}
		return hv
	}
	switch kind {
	case "stored":
		ev := mpA(mpS(spec.EventStored), mpA(hashes()...), mpNil(), kvScenarioTokens(t, td, arg), mpU(kvParseUint(t, td, one("block_size", "1"))), mpNil(), mpS(one("medium", "GPU")))
		if h := one("parent", ""); h != "" {
			ev.elems[2] = kvScenarioHash(t, td, h)
		}
		_, hasGroup := arg("group")
		_, hasID := arg("lora_id")
		_, hasName := arg("lora_name")
		if hasGroup || hasID || hasName {
			ln := mpNil()
			if hasName {
				ln = mpS(one("lora_name", ""))
			}
			if hasID {
				ev.elems[5] = mpI(int64(kvParseUint(t, td, one("lora_id", "0"))))
			}
			ev.elems = append(ev.elems, ln, mpNil(), mpI(int64(kvParseUint(t, td, one("group", "0")))), mpNil(), mpNil())
		}
		return ev
	case "removed":
		return mpA(mpS(spec.EventRemoved), mpA(hashes()...), mpS(one("medium", "GPU")))
	case "cleared":
		return kvClr()
	case "garbage":
		return mpA(mpS(spec.EventRemoved), mpA()) // no hash: the decoder refuses the batch (§1.4)
	}
	td.Fatalf(t, "unknown event %q", kind)
	return nil
}

func kvScenarioTokens(t *testing.T, td *datadriven.TestData, arg func(string) (datadriven.CmdArg, bool)) *mpVal {
	a, _ := arg("tokens")
	var tv []*mpVal
	for _, v := range a.Vals {
		if v != "" {
			tv = append(tv, mpU(kvParseUint(t, td, v)))
		}
	}
	return mpA(tv...)
}

// kvScenarioHash reads a hash as the publisher sends it (§1.5).
func kvScenarioHash(t *testing.T, td *datadriven.TestData, v string) *mpVal {
	switch {
	case strings.HasPrefix(v, "bin:"):
		b, err := hex.DecodeString(strings.TrimPrefix(v, "bin:"))
		if err != nil {
			td.Fatalf(t, "hash %q: %v", v, err)
		}
		return mpB(b)
	case strings.HasPrefix(v, "-"):
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			td.Fatalf(t, "hash %q: %v", v, err)
		}
		return mpI(n)
	}
	return mpU(kvParseUint(t, td, v))
}

// kvScenarioStep runs one observation on the index, notes what it asks of
// the publisher and renders it.
func (s *kvScenario) step(stream string, r spec.KVEvStepResult) string {
	s.observe(stream, r)
	return kvRenderStep(r)
}

// kvRenderStep is a step result on one line, in the order things happen:
// a restart, losses, the seqs applied and dropped, refusals, a replay
// request, the hold queue, the replay's end, a step error.
func kvRenderStep(r spec.KVEvStepResult) string {
	var parts []string
	add := func(format string, args ...any) { parts = append(parts, fmt.Sprintf(format, args...)) }
	if r.Restart {
		add("restart")
	}
	for _, g := range r.Lost {
		add("lost [%d, %d)", g.From, g.To)
	}
	if len(r.Applied) > 0 {
		add("applied %s", kvSeqs(r.Applied))
	}
	if len(r.Duplicates) > 0 {
		add("duplicates %s", kvSeqs(r.Duplicates))
	}
	for _, e := range r.Errors {
		where := fmt.Sprintf("seq %d event %d", e.Seq, e.Event)
		if e.Event < 0 {
			where = fmt.Sprintf("seq %d", e.Seq)
		}
		if e.Engine != nil {
			where += fmt.Sprintf(" (engine %s/%d)", e.Engine.Source, e.Engine.DPRank)
		}
		add("refused %s: %s: %s", where, e.Error.Code, e.Error.Message)
	}
	if rq := r.ReplayRequest; len(rq) > 0 {
		if len(rq) == 2 && len(rq[0]) == 0 && len(rq[1]) == 8 {
			add("replay requested from %d", binary.BigEndian.Uint64(rq[1]))
		} else {
			add("replay requested with frames %x", rq)
		}
	}
	if len(r.SnapshotRequest) == 1 && string(r.SnapshotRequest[0]) == spec.KVSnapshotRequestFrame {
		add("snapshot requested")
	} else if len(r.SnapshotRequest) > 0 {
		add("snapshot requested with frames %x", r.SnapshotRequest)
	}
	if r.Held > 0 {
		add("held %d", r.Held)
	}
	if r.ReplayDone {
		add("replay done")
	}
	if r.SnapshotDone {
		add("snapshot installed")
	}
	if r.Error != nil {
		add("error %s: %s", r.Error.Code, r.Error.Message)
	}
	if len(parts) == 0 {
		return "no effect"
	}
	return strings.Join(parts, "; ")
}

func kvSeqs(seqs []uint64) string {
	s := make([]string, len(seqs))
	for i, q := range seqs {
		s[i] = strconv.FormatUint(q, 10)
	}
	return strings.Join(s, " ")
}

// Arguments.

func kvArgString(t *testing.T, td *datadriven.TestData, key, def string) string {
	a, ok := td.Arg(key)
	if !ok {
		return def
	}
	return a.SingleVal(t)
}

func kvArgUint(t *testing.T, td *datadriven.TestData, key string, def uint64) uint64 {
	a, ok := td.Arg(key)
	if !ok {
		return def
	}
	return kvParseUint(t, td, a.SingleVal(t))
}

// kvArgRank is rank=R (default 0) or rank=nil (the stream's rank, -1 for kvB).
func kvArgRank(t *testing.T, td *datadriven.TestData) int64 {
	switch r := kvArgString(t, td, "rank", "0"); r {
	case "nil":
		return -1
	default:
		return int64(kvParseUint(t, td, r))
	}
}

func kvParseUint(t *testing.T, td *datadriven.TestData, v string) uint64 {
	n, err := strconv.ParseUint(strings.TrimSpace(v), 0, 64)
	if err != nil {
		td.Fatalf(t, "%q: %v", v, err)
	}
	return n
}
