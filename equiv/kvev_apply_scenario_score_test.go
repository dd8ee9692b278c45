package equiv

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/kvtwin/kvtwin/spec"
)

// handleScore asks the index for a prompt's score (§2.8): one line per
// engine with a pool for the query's group and tier, its leading resident
// blocks, in tokens too, and whether it is stale.
//
//	score tokens=(…) [tier=T] [ns=NS] [group=G] [exact]
func (s *kvScenario) handleScore(t *testing.T, td *datadriven.TestData) string {
	q := spec.KVEvScoreQuery{Tier: kvArgString(t, td, "tier", ""), Namespace: kvArgString(t, td, "ns", ""),
		Group: int64(kvArgUint(t, td, "group", 0)), Exact: td.HasArg("exact")}
	if a, ok := td.Arg("tokens"); ok {
		for _, v := range a.Vals {
			if v != "" {
				q.Tokens = append(q.Tokens, int64(kvParseUint(t, td, v)))
			}
		}
	}
	scores, err := s.ix.Score(q)
	if err != nil {
		return "error: " + err.Error()
	}
	if len(scores) == 0 {
		return "no engine has a pool for the query"
	}
	var out []string
	for _, sc := range scores {
		blocks := "blocks"
		if sc.Blocks == 1 {
			blocks = "block"
		}
		line := fmt.Sprintf("%s/%d: %d %s, %d tokens (page size %d)", sc.Source, sc.DPRank, sc.Blocks, blocks, sc.Tokens, sc.PageSize)
		if sc.Stale {
			line += ", stale"
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}
