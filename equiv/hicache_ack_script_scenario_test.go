package equiv

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestAckScenarios runs the narrated write-ack scenarios
// (testdata/ack_*.txt, one per historic bug of docs/spec/radix-acks.md §3.5 and the
// rank-divergence early return): each command drives a reference group and
// a fast group, requires identical results, checks every §3.3 invariant,
// and prints the outcome and each rank's observable state, so a file reads
// as the fixed behaviour along the bug's trace. Regenerate the expected
// output with `go test ./equiv -run TestAckScenarios -rewrite`.
//
// Commands (arguments as in the ack script, docs/spec/radix-acks.md §3.2):
//
//	create ranks=R layers=L capacity=C
//	node [id=N] len=V          evict node=N       lock node=N     unlock node=N
//	reserve node=N owned=(o0,o1,…)                write_backup node=N owned=(…) [fail=mid_layers|after_ack]
//	write_noncp node=N         layer l=L          events k=K [rank=R]
//	drain [agreed=A]           rollback node=N    rollback_prepared node=N
//	has node=N                 append ids=(…)     dup node=N      reset
func TestAckScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if !strings.HasPrefix(filepath.Base(path), "ack_") {
			return
		}
		var sc ackScenario
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			return sc.run(t, td)
		})
	})
}

// ackScenario holds the two groups a scenario file drives.
type ackScenario struct {
	refGroup, fastGroup []spec.AckQueue
	halted              bool
	steps               int
}

func (sc *ackScenario) run(t *testing.T, td *datadriven.TestData) string {
	s := scenarioStep(t, td)
	if sc.halted {
		td.Fatalf(t, "the run ended at a terminal error; no step may follow")
	}
	if s.Op == spec.AckCreate {
		sc.refGroup, sc.fastGroup = make([]spec.AckQueue, s.Ranks), make([]spec.AckQueue, s.Ranks)
		for r := range s.Ranks {
			cfg := spec.AckConfig{NumLayers: s.Layers, HostCapacity: s.HostCapacity}
			rq, err := ref.NewAckQueue(cfg)
			if err != nil {
				td.Fatalf(t, "%v", err)
			}
			fq, _ := fast.NewAckQueue(cfg)
			sc.refGroup[r], sc.fastGroup[r] = rq, fq
		}
	} else if sc.refGroup == nil {
		td.Fatalf(t, "the first command must be create")
	}
	rr := ref.RunAckGroupStep(sc.refGroup, s, sc.steps)
	fr := ref.RunAckGroupStep(sc.fastGroup, s, sc.steps)
	sc.steps++
	rb, _ := json.Marshal(rr)
	fb, _ := json.Marshal(fr)
	if string(rb) != string(fb) {
		td.Fatalf(t, "ref and fast disagree:\nref  %s\nfast %s", rb, fb)
	}
	rs, fs := groupStates(sc.refGroup), groupStates(sc.fastGroup)
	if a, b := mustJSON(rs), mustJSON(fs); a != b {
		td.Fatalf(t, "ref and fast states differ:\nref  %s\nfast %s", a, b)
	}
	sc.halted = rr.Terminal
	if !sc.halted {
		for r, st := range fs {
			if err := ref.CheckAckState(st); err != nil {
				td.Fatalf(t, "rank %d: %v", r, err)
			}
		}
		if err := ref.CheckAckRanks(fs); err != nil {
			td.Fatalf(t, "%v", err)
		}
	}
	var b strings.Builder
	b.WriteString(formatOutcome(rr))
	for r, st := range fs {
		fmt.Fprintf(&b, "r%d: %s\n", r, formatAckState(st))
	}
	return b.String()
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// scenarioStep turns a datadriven command into an ack script step.
func scenarioStep(t *testing.T, td *datadriven.TestData) spec.AckStep {
	s := spec.AckStep{Op: td.Cmd}
	scan := func(key string, dest any) { td.MaybeScanArgs(t, key, dest) }
	switch td.Cmd {
	case "create":
		td.ScanArgs(t, "ranks", &s.Ranks)
		td.ScanArgs(t, "layers", &s.Layers)
		td.ScanArgs(t, "capacity", &s.HostCapacity)
	case "node":
		scan("id", &s.Node)
		td.ScanArgs(t, "len", &s.ValueLen)
	case "evict":
		s.Op = spec.AckEvictDevice
	case "layer":
		s.Op = spec.AckLayerStep
		td.ScanArgs(t, "l", &s.Layer)
	case "events":
		s.Op = spec.AckEventsComplete
		td.ScanArgs(t, "k", &s.K)
		if td.HasArg("rank") {
			s.Rank = new(0)
			td.ScanArgs(t, "rank", s.Rank)
		}
	case "drain":
		s.Op = spec.AckWritingCheck
		if td.HasArg("agreed") {
			s.Agreed = new(0)
			td.ScanArgs(t, "agreed", s.Agreed)
		}
	case "append":
		s.Op = spec.AckAppend
		td.ScanArgs(t, "ids", &s.IDs)
	case "dup":
		s.Op = spec.AckInjectDuplicate
	case "write_backup":
		var fail string
		scan("fail", &fail)
		s.FailAt = spec.FailAt(fail)
	case "reserve", "write_noncp", "rollback", "rollback_prepared", "has", "lock", "unlock", "reset":
	default:
		td.Fatalf(t, "unknown command %q", td.Cmd)
	}
	if td.HasArg("node") {
		td.ScanArgs(t, "node", &s.Node)
	}
	if td.HasArg("owned") {
		td.ScanArgs(t, "owned", &s.Owned)
	}
	return s
}

// formatOutcome renders a step's outcome on one line (one per rank when
// the ranks diverged).
func formatOutcome(r spec.AckStepResult) string {
	if r.Diverged != nil {
		var b strings.Builder
		b.WriteString("DIVERGED\n")
		for rank, o := range r.Diverged {
			fmt.Fprintf(&b, "  r%d %s\n", rank, formatOne(o))
		}
		return b.String()
	}
	line := formatOne(r.AckOutcome)
	if r.Terminal {
		line += " — TERMINAL: the scheduler stops"
	}
	return line + "\n"
}

func formatOne(o spec.AckOutcome) string {
	switch {
	case o.Error != nil:
		return fmt.Sprintf("error %s: %s", o.Error.Code, o.Error.Message)
	case o.Refused != "":
		return "refused: " + string(o.Refused)
	case o.Node != nil:
		return fmt.Sprintf("node %d", *o.Node)
	case o.Has != nil:
		return fmt.Sprintf("has = %t", *o.Has)
	case o.Acked != nil:
		return fmt.Sprintf("final ack %v appended", o.Acked)
	case o.Drain != nil:
		return fmt.Sprintf("drained %d ack(s): completed %v, duplicates %d", o.Drain.Popped, o.Drain.Completed, o.Drain.Duplicates)
	}
	return "ok"
}

// formatAckState renders one rank's state on one line: max appended, the
// queue (R = ready), ongoing registrations with their host slots, pending
// layer flags (one digit per layer), completed memory, warnings, the locked
// or backed-up nodes, free host slots and pages copied by layer steps.
func formatAckState(s spec.AckState) string {
	var q []string
	for _, a := range s.Queue {
		ready := ""
		if a.Ready {
			ready = "R"
		}
		q = append(q, fmt.Sprintf("%v%s", a.NodeIDs, ready))
	}
	var ongoing []string
	for _, r := range s.Ongoing {
		ongoing = append(ongoing, fmt.Sprintf("%d@%v", r.ID, r.HostSlots))
	}
	var pending []string
	for _, p := range s.Pending {
		bits := ""
		for _, w := range p.Written {
			bits += map[bool]string{true: "1", false: "0"}[w]
		}
		pending = append(pending, fmt.Sprintf("%d:%s", p.ID, bits))
	}
	var locks []string
	for _, n := range s.Nodes {
		if n.LockRef > 0 || n.BackedUp {
			tag := fmt.Sprintf("%d:lock%d", n.ID, n.LockRef)
			if n.BackedUp {
				tag += "+backed"
			}
			locks = append(locks, tag)
		}
	}
	out := fmt.Sprintf("max=%d queue=[%s] ongoing=[%s] pending=[%s] completed=%v dups=%d nodes=[%s] free=%d copied=%d",
		s.MaxAppended, strings.Join(q, " "), strings.Join(ongoing, " "), strings.Join(pending, " "),
		s.Completed, s.DuplicateAcks, strings.Join(locks, " "), s.HostFree, s.CopiedPages)
	if s.ForeignWrites > 0 {
		out += fmt.Sprintf(" FOREIGN_WRITES=%d", s.ForeignWrites)
	}
	if s.FaultInjected {
		out += " (fault-injected: W1–W3 suspended)"
	}
	return out
}

// scenarioBugs maps each write-ack scenario to the fault its narration
// describes (the same fault as the bug-zoo mutant of that name).
var scenarioBugs = []struct {
	id     string
	faults fault.Ack
}{
	{"ack-funnel-bypass", fault.Ack{FunnelBypass: true}},
	{"rollback-leaves-orphan-ack", fault.Ack{RollbackNoScrub: true}},
	{"rollback-leaves-layer-state", fault.Ack{RollbackKeepsLayerState: true}},
	{"consumer-forgets-completed", fault.Ack{ForgetCompleted: true}},
	{"blind-pop-unknown-ack", fault.Ack{BlindPop: true}},
	{"zero-owned-rank-returns-early", fault.Ack{ZeroOwnedReturnsEarly: true}},
	{"writing-check-strands-duplicates", fault.Ack{EarlyReturnOnEmptyOngoing: true}},
}

// TestAckScenariosReplayTheirBug replays each scenario's commands on a fast
// group with the scenario's bug put back: somewhere along the trace its
// results or states must differ from ref's, so each file narrates a trace
// that actually tells the bug apart.
func TestAckScenariosReplayTheirBug(t *testing.T) {
	for _, bug := range scenarioBugs {
		t.Run(bug.id, func(t *testing.T) {
			var refGroup, bugGroup []spec.AckQueue
			steps, differs, done := 0, "", false
			datadriven.RunTest(t, filepath.Join("testdata", "ack_"+bug.id+".txt"), func(t *testing.T, td *datadriven.TestData) string {
				if done {
					return td.Expected
				}
				s := scenarioStep(t, td)
				if s.Op == spec.AckCreate {
					refGroup, bugGroup = make([]spec.AckQueue, s.Ranks), make([]spec.AckQueue, s.Ranks)
					for r := range s.Ranks {
						cfg := spec.AckConfig{NumLayers: s.Layers, HostCapacity: s.HostCapacity}
						refGroup[r], _ = ref.NewAckQueue(cfg)
						bugGroup[r], _ = fault.Installed().NewAckQueue(cfg, bug.faults)
					}
				}
				rr := ref.RunAckGroupStep(refGroup, s, steps)
				br := ref.RunAckGroupStep(bugGroup, s, steps)
				steps++
				if mustJSON(rr) != mustJSON(br) || mustJSON(groupStates(refGroup)) != mustJSON(groupStates(bugGroup)) {
					differs, done = fmt.Sprintf("%s: %s", td.Pos, td.Cmd), true
				}
				done = done || rr.Terminal || br.Terminal
				return td.Expected
			})
			if differs == "" {
				t.Fatalf("the scenario never tells the bug from the fixed queue")
			}
			t.Logf("the bug shows first at %s", differs)
		})
	}
}
