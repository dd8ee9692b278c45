package equiv

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/kvtwin/kvtwin/spec"
)

// handleReplay has the stream's replay endpoint answer (§3.2, A7). By
// default it answers the replay the index asked for: the buffered batches
// with seq >= start as the endpoint held them when the request came, the
// first n of them (default all), then the sentinel once all are sent; one
// line per reply. seq=N sends the buffered batch N alone (a reply the index
// did not ask for, or a second copy), sentinel the sentinel alone.
// fail=timeout|unavailable|protocol is the subscriber's replay_failed
// instead of a reply; bad=delimiter sends the next reply without its empty
// delimiter frame, bad=seq with a 7-byte seq.
//
//	replay stream=S [n=K] [seq=N] [sentinel] [fail=REASON] [bad=delimiter|seq]
func (s *kvScenario) handleReplay(t *testing.T, td *datadriven.TestData) string {
	name, p := s.pub(t, td)
	switch {
	case td.HasArg("fail"):
		return s.step(name, s.ix.ReplayFailed(name, kvArgString(t, td, "fail", "")))
	case td.HasArg("seq"):
		seq := kvArgUint(t, td, "seq", 0)
		for _, m := range p.buffer {
			if m.seq == seq {
				return "reply " + fmt.Sprint(seq) + ": " + s.reply(name, p.replyFrames(m))
			}
		}
		td.Fatalf(t, "seq %d is not in the replay buffer (%s)", seq, p.bufferRange())
	case td.HasArg("sentinel"):
		return "sentinel: " + s.reply(name, p.sentinelFrames())
	}
	r := p.reply
	if r == nil {
		td.Fatalf(t, "the index asked for no replay; seq=N sends a reply anyway")
	}
	if !r.taken {
		r.taken = true
		for _, m := range p.buffer {
			if m.seq >= r.start {
				r.snap = append(r.snap, m)
			}
		}
	}
	if bad := kvArgString(t, td, "bad", ""); bad != "" {
		return "bad reply: " + s.reply(name, p.badReply(t, td, bad))
	}
	n := int(kvArgUint(t, td, "n", uint64(len(r.snap))))
	var out []string
	for _, m := range r.snap[:min(n, len(r.snap))] {
		out = append(out, fmt.Sprintf("reply %d: %s", m.seq, s.reply(name, p.replyFrames(m))))
	}
	r.snap = r.snap[min(n, len(r.snap)):]
	if len(r.snap) == 0 {
		out = append(out, "sentinel: "+s.reply(name, p.sentinelFrames()))
	}
	return strings.Join(out, "\n")
}

// reply runs one DEALER message on the index.
func (s *kvScenario) reply(stream string, fr []spec.HexBytes) string {
	return s.step(stream, s.ix.Replay(stream, kvFrameBytes(fr)))
}

// replyFrames is m as the DEALER receives it: [empty, (topic,) seq, payload].
func (p *kvScenarioPub) replyFrames(m kvPubMsg) []spec.HexBytes {
	if p.replyTopic {
		return []spec.HexBytes{{}, []byte(p.topic), seqFrame(m.seq), m.payload}
	}
	return []spec.HexBytes{{}, seqFrame(m.seq), m.payload}
}

// sentinelFrames is the end of a replay: seq ff…ff, an empty payload.
func (p *kvScenarioPub) sentinelFrames() []spec.HexBytes {
	if p.replyTopic {
		return []spec.HexBytes{{}, {}, seqFrame(math.MaxUint64), {}}
	}
	return []spec.HexBytes{{}, seqFrame(math.MaxUint64), {}}
}

// badReply is the next reply broken the way bad names.
func (p *kvScenarioPub) badReply(t *testing.T, td *datadriven.TestData, bad string) []spec.HexBytes {
	m := kvPubMsg{seq: p.reply.start, payload: kvEmpty}
	if len(p.reply.snap) > 0 {
		m = p.reply.snap[0]
	}
	fr := p.replyFrames(m)
	switch bad {
	case "delimiter":
		return fr[1:]
	case "seq":
		fr[len(fr)-2] = fr[len(fr)-2][:7]
		return fr
	}
	td.Fatalf(t, "bad=%s: want delimiter or seq", bad)
	return nil
}
