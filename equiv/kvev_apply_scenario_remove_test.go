package equiv

import (
	"testing"

	"github.com/cockroachdb/datadriven"
)

// handleRemove removes the stream at run time (§2.10 A11). Its publisher
// is kept: it may go on publishing, and the index answers it as a stream
// it does not have until the stream is added again.
//
//	remove stream=S
func (s *kvScenario) handleRemove(t *testing.T, td *datadriven.TestData) string {
	name := kvArgString(t, td, "stream", "")
	if err := s.ix.RemoveStream(name); err != nil {
		return kvRenderStep(kvOutcomeOf("", err))
	}
	return "removed " + name + ": its engines, cursor and held messages are gone"
}
