package equiv

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// TestPerLayerScenarios runs the narrated per-layer transfer scenarios
// (testdata/per_layer_*.txt, one per historic bug of docs/spec/transfer.md §4.7; B4's
// pages come from transfer.filter_cp_rank, whose zoo mutant
// chunk-page-start-zero it replays): each
// command drives a reference run and a fast run in deterministic mode,
// requires identical results, checks the ten §4.8 invariants on both, and
// prints the outcome and the manager's state, so a file reads as the fixed
// behaviour along the bug's trace. Regenerate the expected output with
// `go test ./equiv -run TestPerLayerScenarios -rewrite`.
//
// Commands (arguments as in the per-layer script, docs/spec/transfer.md §4.8):
//
//	create layers=N hooked=H group=K            (item_len=2, 4 pages per layer each side)
//	register room=R chunk=C [infos=I]           (pages (0,1,3) → (2,3,0))
//	register_chunk room=R chunk=C page=P kv=(…) dst_full=(…)   (§4.2: the CP filter picks the pages)
//	forward h=H        the hooks of layers 0..H-1 inside one forward
//	events             completes every pending event
//	event e=E [fail]   complete batch=B [fail]  inject fault=submit|wait|sync
//	work [all]         one worker step, or steps until the queue is idle
//	finish room=R chunk=C    refinish    drop room=R    has room=R
func TestPerLayerScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if !strings.HasPrefix(filepath.Base(path), "per_layer_") {
			return
		}
		var sc perLayerScenario
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			out, err := sc.run(td, nil)
			if err != nil {
				td.Fatalf(t, "%v", err)
			}
			return out
		})
	})
}

// perLayerScenario holds the checked reference run and the other run
// (fast, or fast with a bug put back) a scenario file drives.
type perLayerScenario struct {
	refChk, othChk *perLayerChecker
}

// run expands one command into script steps, runs them on both runs and
// returns the printed outcome of the reference run; with bug != nil the
// second run carries the bug and is neither compared nor checked, and
// run returns its printout in err's place via sc.buggy.
func (sc *perLayerScenario) run(td *datadriven.TestData, bug *fault.Transfer) (string, error) {
	steps, err := perLayerScenarioSteps(td, sc.refChk, false)
	if err != nil {
		return "", err
	}
	if steps[0].Op == spec.PerLayerCreate {
		newOther := fast.NewPerLayerManager
		if bug != nil {
			newOther = perLayerManagerWithFaults(*bug)
		}
		refLog, othLog := &logRecorder{}, &logRecorder{}
		rr, err := ref.NewPerLayerRun(steps[0], ref.NewPerLayerManager, slog.New(refLog))
		if err != nil {
			return "", err
		}
		or, _ := ref.NewPerLayerRun(steps[0], newOther, slog.New(othLog))
		sc.refChk, sc.othChk = newPerLayerChecker(rr, refLog, steps[0]), newPerLayerChecker(or, othLog, steps[0])
		return "ok\n" + perLayerStateText(rr), nil
	}
	if sc.refChk == nil {
		return "", fmt.Errorf("the first command must be create")
	}
	var refRes, othRes []spec.PerLayerStepResult
	pages := pagesText(steps)
	for _, s := range steps {
		rr, err := sc.refChk.step(s)
		if err != nil {
			return "", fmt.Errorf("ref: %v", err)
		}
		or, err := sc.othChk.step(s)
		if err != nil && bug == nil {
			return "", fmt.Errorf("fast: %v", err)
		}
		refRes, othRes = append(refRes, rr), append(othRes, or)
		if s.Op == spec.PerLayerWorkerStep && td.HasArg("all") && (rr.Error != nil || rr.Work.Idle) {
			break
		}
	}
	if bug == nil {
		if a, b := mustJSON(refRes), mustJSON(othRes); a != b {
			return "", fmt.Errorf("ref and fast disagree:\nref  %s\nfast %s", a, b)
		}
		if a, b := mustJSON(sc.refChk.run.Manager.State()), mustJSON(sc.othChk.run.Manager.State()); a != b {
			return "", fmt.Errorf("ref and fast states disagree:\nref  %s\nfast %s", a, b)
		}
	}
	return pages + perLayerResultsText(refRes) + perLayerStateText(sc.refChk.run), nil
}

// pagesText shows the page pairs a register_chunk command built.
func pagesText(steps []spec.PerLayerStep) string {
	if len(steps) == 1 && steps[0].Op == spec.PerLayerRegister {
		return fmt.Sprintf("pages owned=%v dst=%v\n", steps[0].Owned, steps[0].Dst)
	}
	return ""
}

// buggyText is what the bug run printed for the last command.
func (sc *perLayerScenario) buggyText(res []spec.PerLayerStepResult) string {
	return perLayerResultsText(res) + perLayerStateText(sc.othChk.run)
}

// perLayerScenarioSteps expands one command; chunkPageStartZero builds
// register_chunk's pages the way B4 did (docs/spec/transfer.md §1.6: the filter
// called with chunk_page_start = 0, as the zoo's chunk-page-start-zero
// mutant of transfer.filter_cp_rank does).
func perLayerScenarioSteps(td *datadriven.TestData, chk *perLayerChecker, chunkPageStartZero bool) ([]spec.PerLayerStep, error) {
	arg := func(key string) int {
		n, _ := strconv.Atoi(argVal(td, key))
		return n
	}
	room, chunk := uint64(arg("room")), int64(arg("chunk"))
	switch td.Cmd {
	case "create":
		return []spec.PerLayerStep{{Op: spec.PerLayerCreate, Layers: arg("layers"), Hooked: arg("hooked"), Group: arg("group"),
			ItemLen: 2, SrcPages: 4, DstPages: 4}}, nil
	case "register":
		infos := 1
		if td.HasArg("infos") {
			infos = arg("infos")
		}
		s := perLayerReg(room, chunk)
		s.Infos = infos
		return []spec.PerLayerStep{s}, nil
	case "register_chunk":
		return registerChunk(td, room, chunk, arg("page"), chunkPageStartZero)
	case "forward":
		return perLayerForward(arg("h"), 0, 0), nil
	case "events":
		var out []spec.PerLayerStep
		if chk != nil {
			for _, e := range chk.run.Events.Pending() {
				out = append(out, spec.PerLayerStep{Op: spec.PerLayerCompleteEvent, Event: e})
			}
		}
		return out, nil
	case "event":
		return []spec.PerLayerStep{{Op: spec.PerLayerCompleteEvent, Event: arg("e"), Fail: td.HasArg("fail")}}, nil
	case "complete":
		return []spec.PerLayerStep{{Op: spec.PerLayerEngineComplete, Batch: uint64(arg("batch")), Fail: td.HasArg("fail")}}, nil
	case "inject":
		return []spec.PerLayerStep{{Op: spec.PerLayerInject, Fault: spec.EngineFault(argVal(td, "fault"))}}, nil
	case "work":
		n := 1
		if td.HasArg("all") {
			n = 1 << 12
		}
		out := make([]spec.PerLayerStep, n)
		for i := range out {
			out[i] = spec.PerLayerStep{Op: spec.PerLayerWorkerStep}
		}
		return out, nil
	case "finish":
		return []spec.PerLayerStep{{Op: spec.PerLayerFinish, Room: room, Chunk: chunk}}, nil
	case "refinish":
		return []spec.PerLayerStep{{Op: spec.PerLayerRefinish}}, nil
	case "drop":
		return []spec.PerLayerStep{{Op: spec.PerLayerDrop, Room: room}}, nil
	case "has":
		return []spec.PerLayerStep{{Op: spec.PerLayerHas, Room: room}}, nil
	}
	return nil, fmt.Errorf("unknown command %q", td.Cmd)
}

// registerChunk is build_per_layer_context's page selection (§4.2 steps
// 3 and 5) on one CP rank of one: the chunk's prefill pages kv are
// filtered with chunk_page_start = chunk / page (0 under B4), and the
// decode pages are the request's dst_full at the returned positions.
func registerChunk(td *datadriven.TestData, room uint64, chunk int64, page int, b4 bool) ([]spec.PerLayerStep, error) {
	kv, full := argInts(td, "kv"), argInts(td, "dst_full")
	in := spec.TransferFilterCPRankInput{KV: kv, ChunkPageStart: chunk / int64(page), CPRank: 0, CPSize: 1}
	if b4 {
		in.ChunkPageStart = 0
	}
	f, err := fast.TransferFilterCPRank(spec.DefaultLimits(), in)
	if err != nil {
		return nil, err
	}
	dst := make([]int64, len(f.Positions))
	for i, p := range f.Positions {
		dst[i] = full[p]
	}
	return []spec.PerLayerStep{{Op: spec.PerLayerRegister, Room: room, Chunk: chunk, Infos: 1, Owned: f.Owned, Dst: dst}}, nil
}

func argInts(td *datadriven.TestData, key string) []int64 {
	for _, a := range td.CmdArgs {
		if a.Key == key {
			out := make([]int64, len(a.Vals))
			for i, v := range a.Vals {
				n, _ := strconv.Atoi(v)
				out[i] = int64(n)
			}
			return out
		}
	}
	return nil
}

// argVal is the first value of the command's argument key, or "".
func argVal(td *datadriven.TestData, key string) string {
	for _, a := range td.CmdArgs {
		if a.Key == key && len(a.Vals) > 0 {
			return a.Vals[0]
		}
	}
	return ""
}

// perLayerResultsText prints a command's results: one line per step, with a
// run of worker steps and event completions folded into one line.
func perLayerResultsText(res []spec.PerLayerStepResult) string {
	var b strings.Builder
	var events []string
	var batches []string
	work := 0
	for _, r := range res {
		switch {
		case r.Error != nil:
			fmt.Fprintf(&b, "%s: error %s (%s)\n", r.Op, r.Error.Code, r.Error.Message)
		case r.Op == spec.PerLayerLayerEnd || r.Op == spec.PerLayerForwardBegin || r.Op == spec.PerLayerForwardEnd:
			if r.Event != 0 {
				events = append(events, strconv.Itoa(r.Event))
			}
		case r.Op == spec.PerLayerWorkerStep:
			if !r.Work.Idle {
				work++
				if r.Work.Batch != 0 {
					batches = append(batches, strconv.FormatUint(r.Work.Batch, 10))
				}
			}
		case r.Op == spec.PerLayerCompleteEvent:
		case r.Registered != nil:
			fmt.Fprintf(&b, "registered %t\n", *r.Registered)
		case r.Status != nil:
			fmt.Fprintf(&b, "monolithic status=%d\n", *r.Status)
		case r.Finish != nil && !r.Finish.Handled:
			b.WriteString("not handled: use the monolithic send\n")
		case r.Finish != nil:
			fmt.Fprintf(&b, "status=%d chunk=%d", r.Finish.Status, r.Finish.Chunk)
			if r.Finish.Reason != "" {
				fmt.Fprintf(&b, " reason=%q", r.Finish.Reason)
			}
			b.WriteString("\n")
		case r.Drained != nil:
			fmt.Fprintf(&b, "drained %d\n", *r.Drained)
		case r.Has != nil:
			fmt.Fprintf(&b, "has %t\n", *r.Has)
		default:
			b.WriteString("ok\n")
		}
	}
	if len(events) > 0 {
		fmt.Fprintf(&b, "events recorded [%s]\n", strings.Join(events, " "))
	}
	if work > 0 {
		fmt.Fprintf(&b, "%d work items, batches [%s]\n", work, strings.Join(batches, " "))
	}
	if b.Len() == 0 {
		b.WriteString("ok\n")
	}
	return b.String()
}

// perLayerStateText prints the manager's state: counters, the queue length,
// each room's contexts (layer sets as ranges) and the engine's unwaited batches.
func perLayerStateText(run *ref.PerLayerRun) string {
	st := run.Manager.State()
	var b strings.Builder
	fmt.Fprintf(&b, "builds=%d events=%d queue=%d unwaited=%v\n", st.Builds, st.Events, len(st.Queue), run.Engine.Unwaited())
	for _, r := range st.Rooms {
		for _, c := range r.Contexts {
			fmt.Fprintf(&b, "  room %d chunk %d: N=%d enq=%s tgt=%d sub=%s proc=%d batches=%d", r.Room, c.Chunk, c.Layers,
				ranges(c.Enqueued), c.Target, ranges(c.Submitted), c.Processed, len(c.Batches))
			if c.Failed {
				fmt.Fprintf(&b, " failed=%q", c.Reason)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

func ranges(xs []int) string {
	var parts []string
	for i := 0; i < len(xs); {
		j := i
		for j+1 < len(xs) && xs[j+1] == xs[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(xs[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", xs[i], xs[j]))
		}
		i = j + 1
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// perLayerManagerWithFaults is fast.NewPerLayerManager (a deterministic
// manager) with f, through the bug zoo's hook table (fault.Hooks).
func perLayerManagerWithFaults(f fault.Transfer) spec.NewPerLayerManagerFunc {
	return func(cfg spec.PerLayerConfig, engine spec.Engine, events spec.EventFactory, logger *slog.Logger) (spec.PerLayerManager, error) {
		return fault.Installed().NewPerLayerManager(cfg, engine, events, logger, f)
	}
}

// perLayerScenarioBugs maps each per-layer scenario to the fault its narration
// describes (the bug-zoo mutant of that name) and the notes' symptom the
// buggy run must print somewhere along the trace.
var perLayerScenarioBugs = []struct {
	id      string
	faults  fault.Transfer
	b4      bool
	symptom string
}{
	{"chunk-page-start-zero", fault.Transfer{}, true, "pages owned=[2 3] dst=[0 1]"},
	{"finish-requires-all-layers", fault.Transfer{FinishRequiresAll: true}, false, `reason="finish TIMEOUT processed=78/79"`},
	{"enqueue-without-dedup", fault.Transfer{NoEnqueueDedup: true}, false, `reason="finish TIMEOUT processed=78/156"`},
	{"register-overwrites-room", fault.Transfer{RegisterOverwrites: true}, false, "builds=2"},
	{"finish-per-info", fault.Transfer{RegisterAnyInfos: true}, false, "registered true"},
	{"one-context-per-room", fault.Transfer{OneContextPerRoom: true}, false, "status=0 chunk=4"},
}

// TestPerLayerScenariosReplayTheirBug replays each scenario on a fast manager
// with the scenario's bug put back: the run must differ from the fixed
// manager somewhere along the trace and print the notes' symptom.
func TestPerLayerScenariosReplayTheirBug(t *testing.T) {
	for _, bug := range perLayerScenarioBugs {
		t.Run(bug.id, func(t *testing.T) {
			var sc perLayerScenario
			differs, shown := "", false
			datadriven.RunTest(t, filepath.Join("testdata", "per_layer_"+bug.id+".txt"), func(t *testing.T, td *datadriven.TestData) string {
				steps, err := perLayerScenarioSteps(td, sc.refChk, false)
				if err != nil {
					td.Fatalf(t, "%v", err)
				}
				bugSteps, _ := perLayerScenarioSteps(td, sc.othChk, bug.b4)
				if steps[0].Op == spec.PerLayerCreate {
					out, err := sc.run(td, &bug.faults)
					if err != nil {
						td.Fatalf(t, "%v", err)
					}
					return out
				}
				var refRes, bugRes []spec.PerLayerStepResult
				for i, s := range steps {
					rr, _ := sc.refChk.step(s)
					br, _ := sc.othChk.step(bugSteps[i])
					refRes, bugRes = append(refRes, rr), append(bugRes, br)
					if s.Op == spec.PerLayerWorkerStep && (rr.Error != nil || rr.Work.Idle) {
						break
					}
				}
				fixed := pagesText(steps) + perLayerResultsText(refRes) + perLayerStateText(sc.refChk.run)
				buggy := pagesText(bugSteps) + sc.buggyText(bugRes)
				if differs == "" && fixed != buggy {
					differs = fmt.Sprintf("%s: the buggy manager printed\n%s", td.Pos, buggy)
				}
				shown = shown || strings.Contains(buggy, bug.symptom)
				return fixed
			})
			if differs == "" {
				t.Fatalf("the scenario never tells the bug from the fixed manager")
			}
			if !shown {
				t.Fatalf("the buggy run never printed the symptom %q", bug.symptom)
			}
			t.Logf("the bug shows first at %s", differs)
		})
	}
}
