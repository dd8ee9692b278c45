package equiv

import (
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/kvtwin/kvtwin/spec"
)

// handleLive has the stream's publisher publish a batch of the input's
// events at its next seq, keep it in its replay buffer and send it on the live socket; the index
// receives it (§1.2, §3.1, A7). frames=2 and seq_bytes=N send a corrupt
// message instead, which the publisher never published: its topic and seq
// frames only, or its seq frame cut to N bytes.
//
//	live stream=S [rank=R|nil] [frames=2] [seq_bytes=N]
//	  EVENT…
func (s *kvScenario) handleLive(t *testing.T, td *datadriven.TestData) string {
	name, p := s.pub(t, td)
	payload := kvScenarioPubBatch(t, td, p)
	if td.HasArg("frames") || td.HasArg("seq_bytes") {
		fr := [][]byte{[]byte(p.topic), seqFrame(p.seq), payload}
		if td.HasArg("frames") {
			if n := kvArgUint(t, td, "frames", 0); n != 2 {
				td.Fatalf(t, "frames=%d: the corrupt message here has 2 frames", n)
			}
			fr = fr[:2]
		}
		if td.HasArg("seq_bytes") {
			n := kvArgUint(t, td, "seq_bytes", 0)
			if n >= 8 {
				td.Fatalf(t, "seq_bytes=%d: want a seq frame shorter than 8 bytes", n)
			}
			fr[1] = fr[1][:n]
		}
		return s.step(name, s.ix.Live(name, fr))
	}
	m := p.publish(payload, false)
	return s.step(name, s.ix.Live(name, kvLiveFrames(p, m)))
}

// kvLiveFrames is m as the SUB socket receives it: [topic, seq, payload].
func kvLiveFrames(p *kvScenarioPub, m kvPubMsg) [][]byte {
	return [][]byte{[]byte(p.topic), seqFrame(m.seq), m.payload}
}

// kvFrameBytes is frames as the index's methods take them.
func kvFrameBytes(fr []spec.HexBytes) [][]byte {
	out := make([][]byte, len(fr))
	for i, f := range fr {
		out[i] = f
	}
	return out
}
