package equiv

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/kvtwin/kvtwin/spec"
)

// handleState prints the index's observable state (§2.10 A1): each
// stream's cursor, its counters that are not zero and its engines, then
// each engine, its counters that are not zero and its pools' pages in
// pre-order, indented by depth, each with its residency and bindings.
//
//	state
func (s *kvScenario) handleState(t *testing.T, td *datadriven.TestData) string {
	st := s.ix.State()
	var b strings.Builder
	for _, ss := range st.Streams {
		fmt.Fprintf(&b, "stream %s: %s\n", ss.Name, kvRenderCursor(ss))
		if c := kvNonZero(ss.Counters); c != "" {
			fmt.Fprintf(&b, "  %s\n", c)
		}
		var es []string
		for _, e := range ss.Engines {
			es = append(es, fmt.Sprintf("%s/%d", e.Source, e.DPRank))
		}
		if len(es) > 0 {
			fmt.Fprintf(&b, "  engines %s\n", strings.Join(es, " "))
		}
	}
	for _, e := range st.Engines {
		kvRenderEngine(&b, e)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func kvRenderCursor(ss spec.KVEvStreamState) string {
	var parts []string
	if ss.Known {
		parts = append(parts, fmt.Sprintf("next %d, last live %d", ss.Next, ss.LastLive))
	} else {
		parts = append(parts, "cursor unknown")
	}
	if ss.Replaying {
		parts = append(parts, fmt.Sprintf("replaying up to %d, held %d", ss.ReplayTarget, ss.Held))
	}
	if ss.Snapshotting {
		parts = append(parts, fmt.Sprintf("snapshot requested at %d, held %d", ss.ReplayTarget, ss.Held))
	}
	if ss.Resync {
		parts = append(parts, "resync at the next message")
	}
	if ss.StaleSince != nil {
		parts = append(parts, fmt.Sprintf("stale since %d", *ss.StaleSince))
	}
	if len(ss.PublisherID) > 0 {
		parts = append(parts, fmt.Sprintf("publisher %x", ss.PublisherID))
	}
	return strings.Join(parts, ", ")
}

func kvRenderEngine(b *strings.Builder, e spec.KVEvEngineState) {
	fmt.Fprintf(b, "engine %s/%d (stream %s", e.Source, e.DPRank, e.Stream)
	if e.Model != "" {
		fmt.Fprintf(b, ", model %s", e.Model)
	}
	b.WriteString(")")
	if e.Stale {
		fmt.Fprintf(b, ", stale since %d", e.StaleSince)
	}
	fmt.Fprintf(b, ", %d tokens\n", e.Tokens)
	if c := kvNonZero(e.Counters); c != "" {
		fmt.Fprintf(b, "  %s\n", c)
	}
	for _, p := range e.Pools {
		fmt.Fprintf(b, "  pool group %d %s, page size %d\n", p.Group, p.Tier, p.PageSize)
		for _, pg := range p.Pages {
			fmt.Fprintf(b, "    %s%s\n", strings.Repeat("  ", pg.Depth), kvRenderPage(pg))
		}
	}
}

func kvRenderPage(pg spec.KVEvPageState) string {
	var s strings.Builder
	if pg.Namespace != "" {
		fmt.Fprintf(&s, "ns %s ", pg.Namespace)
	}
	fmt.Fprintf(&s, "%v", pg.Tokens)
	if pg.Resident == 0 {
		s.WriteString(" hole")
	} else {
		fmt.Fprintf(&s, " resident %d", pg.Resident)
	}
	for _, bd := range pg.Bindings {
		fmt.Fprintf(&s, " %#x×%d", uint64(bd.Hash), bd.Count)
	}
	return s.String()
}

// kvNonZero lists a counters struct's non-zero fields by their JSON names.
func kvNonZero(c any) string {
	v := reflect.ValueOf(c)
	var parts []string
	for i := range v.NumField() {
		if n := v.Field(i).Uint(); n != 0 {
			name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
			parts = append(parts, fmt.Sprintf("%s %d", name, n))
		}
	}
	return strings.Join(parts, ", ")
}
