package equiv

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// handleGap has the stream's publisher publish a batch of the input's
// events that the index never receives live: the PUB socket dropped it
// past its high-water mark (it stays in the replay buffer, §3.2), or, with
// unsent, its send failed after the seq was taken (vLLM: in neither the
// socket nor the buffer). The index is not called; the output is the seq
// and, for a stream with a replay endpoint, what the buffer now holds.
//
//	gap stream=S [rank=R|nil] [unsent]
//	  EVENT…
func (s *kvScenario) handleGap(t *testing.T, td *datadriven.TestData) string {
	_, p := s.pub(t, td)
	unsent := td.HasArg("unsent")
	m := p.publish(kvScenarioPubBatch(t, td, p), unsent)
	out := fmt.Sprintf("seq %d lost on the live socket", m.seq)
	if unsent {
		out = fmt.Sprintf("seq %d never sent", m.seq)
	}
	if p.replay {
		out += "; " + p.bufferRange()
	}
	return out
}
