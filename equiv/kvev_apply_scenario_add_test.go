package equiv

import (
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// handleAdd adds the stream of its one input line at run time (§2.10
// A11) and gives it that line's publisher; it prints the stream and its
// share, or the refusal (the publisher of a refused add is not kept).
//
//	add
//	  NAME [replay] [rank=R] [topic=T] [reply_topic] [buffer=N]
func (s *kvScenario) handleAdd(t *testing.T, td *datadriven.TestData) string {
	name, args, err := datadriven.ParseLine(strings.TrimSpace(td.Input))
	if err != nil || name == "" {
		td.Fatalf(t, "add takes one stream line: %v", err)
	}
	st, p := kvScenarioStream(t, td, name, args)
	if err := s.ix.AddStream(st); err != nil {
		return kvRenderStep(kvOutcomeOf("", err))
	}
	s.pubs[name] = p
	return "added " + kvScenarioStreamLine(st, s.share)
}
