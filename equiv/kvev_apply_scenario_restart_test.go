package equiv

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// handleRestart replaces the stream's publisher process (§3.4): its next
// seq is 0 and its replay buffer empty. The index learns of it only from
// the seqs that follow, unless discovered, when the operator's or the
// discovery's signal reaches it too (A1's restart step).
//
// pid=XX gives the new process a new publisher id (§3.5).
//
//	restart stream=S [discovered] [pid=XX]
func (s *kvScenario) handleRestart(t *testing.T, td *datadriven.TestData) string {
	name, p := s.pub(t, td)
	p.seq, p.buffer, p.reply = 0, nil, nil
	out := "publisher restarted: next seq 0, replay buffer empty"
	if td.HasArg("pid") {
		p.pid = kvScenarioPID(t, td, kvArgString(t, td, "pid", ""))
		out += fmt.Sprintf(", publisher id %x", p.pid)
	}
	if td.HasArg("discovered") {
		out += "\nindex: " + s.step(name, s.ix.Restart(name))
	}
	return out
}
