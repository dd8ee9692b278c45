package equiv

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/kvtwin/kvtwin/spec"
)

// handleSnapshot has the stream's snapshot endpoint answer the index's
// snapshot request (§3.5, §2.10 A13): one REP reply [seq, publisher id,
// chunk…]. The chunks are written by hand: the input's events, the blocks
// the publisher holds, as one chunk (chunks=N splits them into N chunks of
// consecutive events; chunks=0 sends none). seq=N is the last seq the
// snapshot covers (default: the last seq the publisher published, -1 when
// none), unavailable sends seq -2, pid=XX another publisher id than the
// publisher's, bad=seq a 7-byte seq frame and bad=pid a 15-byte id;
// fail=REASON is the subscriber's snapshot_failed instead of a reply.
//
//	snapshot stream=S [seq=N] [unavailable] [pid=XX] [chunks=N] [bad=seq|pid] [fail=REASON]
//	  EVENT…
func (s *kvScenario) handleSnapshot(t *testing.T, td *datadriven.TestData) string {
	name, p := s.pub(t, td)
	b, ok := s.ix.(spec.KVEvBootstrapper)
	if !ok {
		td.Fatalf(t, "the index does not serve the snapshot bootstrap")
	}
	if td.HasArg("fail") {
		return "snapshot failed: " + s.step(name, b.SnapshotFailed(name, kvArgString(t, td, "fail", "")))
	}
	seq := int64(p.seq) - 1
	if td.HasArg("seq") {
		seq = int64(kvParseUint(t, td, kvArgString(t, td, "seq", "0")))
	}
	if td.HasArg("unavailable") {
		seq = -2
	}
	pid := p.pid
	if td.HasArg("pid") {
		pid = kvScenarioPID(t, td, kvArgString(t, td, "pid", ""))
	}
	frames := [][]byte{binary.BigEndian.AppendUint64(nil, uint64(seq)), bytes.Clone(pid)}
	var evs []*mpVal
	for line := range strings.SplitSeq(td.Input, "\n") {
		if strings.TrimSpace(line) != "" {
			evs = append(evs, kvScenarioEvent(t, td, line))
		}
	}
	n := int(kvArgUint(t, td, "chunks", 1))
	for i := range n {
		lo, hi := i*len(evs)/n, (i+1)*len(evs)/n
		frames = append(frames, mpA(mpF64(1757500000.25), mpA(evs[lo:hi]...), mpI(0), mpB(p.pid)).bytes())
	}
	switch bad := kvArgString(t, td, "bad", ""); bad {
	case "seq":
		frames[0] = frames[0][:7]
	case "pid":
		frames[1] = frames[1][:15]
	case "":
	default:
		td.Fatalf(t, "bad=%s: want seq or pid", bad)
	}
	return fmt.Sprintf("reply at seq %d: ", seq) + s.step(name, b.SnapshotReply(name, frames))
}

// handleSilence is the subscriber's heartbeat loss (§3.5, A13): no message
// on the stream's live socket for longer than the heartbeat bound.
//
//	silence stream=S
func (s *kvScenario) handleSilence(t *testing.T, td *datadriven.TestData) string {
	name, _ := s.pub(t, td)
	b, ok := s.ix.(spec.KVEvBootstrapper)
	if !ok {
		td.Fatalf(t, "the index does not serve the snapshot bootstrap")
	}
	return "heartbeat lost: " + s.step(name, b.HeartbeatLost(name))
}

// kvScenarioPID is the 16-byte publisher id of the byte XX (hex).
func kvScenarioPID(t *testing.T, td *datadriven.TestData, v string) []byte {
	b, err := hex.DecodeString(v)
	if err != nil || len(b) != 1 {
		td.Fatalf(t, "pid=%s: want one byte in hex", v)
	}
	return bytes.Repeat(b, spec.KVPublisherIDBytes)
}
