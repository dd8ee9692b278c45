package equiv

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestOwnerScenarios runs the narrated §4.6 scenario files
// (testdata/owners_*.txt) on both trees: each file is the situation of a
// historic owner-count bug, with the fixed behaviour as the expected
// output, and the bug zoo's mutant of the same name puts the bug back.
func TestOwnerScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/owners_*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no owner scenario files: %v", err)
	}
	twins := []struct {
		name string
		new  spec.NewRadixTreeFunc
	}{{"ref", ref.NewRadixTree}, {"fast", fast.NewRadixTree}}
	for _, file := range files {
		for _, tw := range twins {
			t.Run(filepath.Base(file)+"/"+tw.name, func(t *testing.T) {
				s := &ownerScenario{newTree: tw.new}
				datadriven.RunTest(t, file, s.run)
			})
		}
	}
}

// ownerScenario is one file's tree and its command interpreter.
type ownerScenario struct {
	newTree spec.NewRadixTreeFunc
	tree    spec.RadixTree
}

// run executes one directive and renders its result:
//
//	create page_size=P cp_size=N [cp_draft_size=M]
//	insert key=(…)            the already-present prefix length
//	match key=(…)             the matched slots and the last node
//	lock node=ID              the size delta
//	plan need=(…) free=(…) [node=ID] [cp_size=N] [dry_run]
//	owners                    every node's owner metadata
//	counters                  the planner's counters
func (s *ownerScenario) run(t *testing.T, td *datadriven.TestData) string {
	if td.Cmd != "create" && s.tree == nil {
		t.Fatalf("%s: create the tree first", td.Pos)
	}
	switch td.Cmd {
	case "create":
		cfg := spec.TreeConfig{PageSize: intArg(t, td, "page_size", 1), CPSize: intArg(t, td, "cp_size", 0), CPDraftSize: intArg(t, td, "cp_draft_size", 0)}
		tr, err := s.newTree(cfg)
		if err != nil {
			return "error: " + err.Error()
		}
		s.tree = tr
		return fmt.Sprintf("page_size %d, cp sizes %v", cfg.PageSize, cfg.CPSizes())
	case "insert":
		n, err := s.tree.Insert(spec.RadixKey{Units: unitsArg(t, td, "key")}, nil, 0)
		return result(fmt.Sprintf("prefix_len %d", n), err)
	case "match":
		m, err := s.tree.MatchPrefix(spec.RadixKey{Units: unitsArg(t, td, "key")})
		return result(fmt.Sprintf("slots %v, last node %d", m.Indices, m.LastNode), err)
	case "lock":
		d, err := s.tree.IncLockRef(spec.NodeID(intArg(t, td, "node", 0)))
		return result(fmt.Sprintf("delta %d", d), err)
	case "plan":
		req := spec.OwnerPlanRequest{CPSize: intArg(t, td, "cp_size", 0), Need: intsArg(t, td, "need"), Free: intsArg(t, td, "free"),
			Locked: spec.NodeID(intArg(t, td, "node", 0)), DryRun: td.HasArg("dry_run")}
		p, err := s.tree.EvictOwnerLanes(req)
		return result(renderPlan(p, req.DryRun), err)
	case "owners":
		return renderOwners(s.tree.State())
	case "counters":
		st := s.tree.State()
		return fmt.Sprintf("owner_count_recomputations %d\nmeta_misses %d\nload_refusals %d", st.OwnerCountRecomputations, st.MetaMisses, st.LoadRefusals)
	}
	t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
	return ""
}

func result(ok string, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return ok
}

func renderPlan(p spec.OwnerPlan, dry bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "deficit %v\nvictims %v\nremaining %v\n", p.Deficit, p.Victims, p.Remaining)
	switch {
	case dry:
		fmt.Fprintf(&b, "dry run: admitted %v, nothing evicted", p.Admitted)
	case p.Admitted:
		fmt.Fprintf(&b, "admitted: evicted %d units %v", p.Evicted, p.Freed)
	default:
		b.WriteString("refused: nothing evicted, one warning")
	}
	return b.String()
}

func renderOwners(st spec.TreeState) string {
	var b strings.Builder
	for i, n := range st.Nodes {
		if i > 0 {
			b.WriteString("\n")
		}
		if n.CP == nil {
			fmt.Fprintf(&b, "node %d %v: no metadata", n.ID, n.Key)
			continue
		}
		fmt.Fprintf(&b, "node %d %v: start %d, pages %d, owners %v", n.ID, n.Key, n.CP.StartPage, n.CP.NumPages, n.CP.PageOwners)
		for _, c := range n.CP.OwnerCounts {
			fmt.Fprintf(&b, ", N=%d counts %v", c.CPSize, c.Counts)
		}
	}
	return b.String()
}

func intArg(t *testing.T, td *datadriven.TestData, key string, def int) int {
	if !td.HasArg(key) {
		return def
	}
	var v int
	td.ScanArgs(t, key, &v)
	return v
}

func intsArg(t *testing.T, td *datadriven.TestData, key string) []int {
	arg, ok := td.Arg(key)
	if !ok {
		t.Fatalf("%s: missing %s", td.Pos, key)
	}
	out := make([]int, len(arg.Vals))
	for i, v := range arg.Vals {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("%s: %s[%d] = %q: %v", td.Pos, key, i, v, err)
		}
		out[i] = n
	}
	return out
}

func unitsArg(t *testing.T, td *datadriven.TestData, key string) []spec.Unit {
	ints := intsArg(t, td, key)
	units := make([]spec.Unit, len(ints))
	for i, v := range ints {
		units[i] = spec.Unit(v)
	}
	return units
}
