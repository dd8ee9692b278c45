package equiv

import (
	"testing"

	"github.com/cockroachdb/datadriven"
)

// handleClear has the stream's publisher publish and send a batch holding
// one AllBlocksCleared (§2.6: vLLM's reset_prefix_cache, SGLang's cache
// reset), as live would.
//
//	clear stream=S [rank=R|nil]
func (s *kvScenario) handleClear(t *testing.T, td *datadriven.TestData) string {
	name, p := s.pub(t, td)
	m := p.publish(kvB(kvArgRank(t, td), kvClr()), false)
	return s.step(name, s.ix.Live(name, kvLiveFrames(p, m)))
}
