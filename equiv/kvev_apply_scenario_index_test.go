package equiv

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/kvtwin/kvtwin/spec"
)

// handleIndex builds the index under test (§2.10 A1, A5): the config from
// the directive's arguments, one stream a line of input with its publisher
// (topic, reply layout, replay buffer). It prints each stream and its
// engine share, or the constructor's refusal.
//
//	index [max_engines=N] [max_engines_per_stream=N] [max_tokens_per_engine=N]
//	      [max_held=N] [max_held_bytes=N] [max_events=N] [max_decode_ratio=N]
//	  NAME [replay] [rank=R] [topic=T] [reply_topic] [buffer=N]
func (s *kvScenario) handleIndex(t *testing.T, td *datadriven.TestData) string {
	cfg := spec.KVEvConfig{
		MaxEngines:          int(kvArgUint(t, td, "max_engines", 0)),
		MaxEnginesPerStream: int(kvArgUint(t, td, "max_engines_per_stream", 0)),
		MaxTokensPerEngine:  int64(kvArgUint(t, td, "max_tokens_per_engine", 0)),
		MaxHeld:             int(kvArgUint(t, td, "max_held", 0)),
		MaxHeldBytes:        int64(kvArgUint(t, td, "max_held_bytes", 0)),
		MaxEvents:           int(kvArgUint(t, td, "max_events", 0)),
		MaxDecodeRatio:      int64(kvArgUint(t, td, "max_decode_ratio", 0)),
	}
	var streams []spec.KVEvStream
	pubs := map[string]*kvScenarioPub{}
	for line := range strings.SplitSeq(td.Input, "\n") {
		name, args, err := datadriven.ParseLine(line)
		if err != nil {
			td.Fatalf(t, "%v", err)
		}
		if name == "" {
			continue
		}
		st, p := kvScenarioStream(t, td, name, args)
		streams = append(streams, st)
		pubs[name] = p
	}
	ix, err := s.newIndex(cfg, streams)
	if err != nil {
		return "error: " + err.Error()
	}
	share, err := cfg.EngineShare(len(streams))
	s.ix, s.pubs, s.share = ix, pubs, share
	if err != nil {
		td.Fatalf(t, "the index was built but its share is refused: %v", err)
	}
	var out []string
	for _, st := range streams {
		out = append(out, kvScenarioStreamLine(st, share))
	}
	return strings.Join(out, "\n")
}

// kvScenarioStream is a stream line's stream and its publisher:
//
//	NAME [replay] [snapshot] [pid=XX] [rank=R] [topic=T] [reply_topic] [buffer=N]
//
// pid=XX gives the publisher a publisher id, the byte XX (hex) 16 times,
// which every batch it publishes carries as field 3 (§1.3, §3.5).
func kvScenarioStream(t *testing.T, td *datadriven.TestData, name string, args []datadriven.CmdArg) (spec.KVEvStream, *kvScenarioPub) {
	st := spec.KVEvStream{Name: name}
	p := &kvScenarioPub{}
	for _, a := range args {
		switch a.Key {
		case "replay":
			st.Replay, p.replay = true, true
		case "snapshot":
			st.Snapshot = true
		case "pid":
			p.pid = kvScenarioPID(t, td, a.SingleVal(t))
		case "rank":
			st.Rank = int64(kvParseUint(t, td, a.SingleVal(t)))
		case "topic":
			p.topic = a.SingleVal(t)
		case "reply_topic":
			p.replyTopic = true
		case "buffer":
			p.bufferSteps = int(kvParseUint(t, td, a.SingleVal(t)))
		default:
			td.Fatalf(t, "stream %s: unknown argument %s", name, a.Key)
		}
	}
	return st, p
}

// kvScenarioStreamLine describes a stream of the index and its share.
func kvScenarioStreamLine(st spec.KVEvStream, share int) string {
	replay := "no replay endpoint"
	if st.Replay {
		replay = "replay endpoint"
	}
	if st.Snapshot {
		replay += ", snapshot endpoint"
	}
	return fmt.Sprintf("%s: rank %d, %s, share %d engines", st.Name, st.Rank, replay, share)
}
