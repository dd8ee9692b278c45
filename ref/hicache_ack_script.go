package ref

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
)

// The hicache.ack_script op (docs/spec/radix-acks.md §3): a list of steps run by a
// group of R ranks (CP/TP) that see the same operation sequence but own
// different pages of each node and complete their write events
// independently. The output is the trace of results and every rank's final
// observable state, so the stateful write-ack queue gets fixtures, an HTTP
// endpoint and the datadriven scenarios.

// Ack script step kinds.
const (
	// AckCreate replaces the group with R fresh ranks (ranks, layers, host_capacity).
	AckCreate = "create"
	// AckNode declares a node (node: 0 or omitted mints the next id; value_len).
	AckNode = "node"
	// AckEvictDevice drops a node's device value (node).
	AckEvictDevice = "evict_device"
	// AckLock takes a request lock (node).
	AckLock = "lock"
	// AckUnlock releases a request lock (node).
	AckUnlock = "unlock"
	// AckReserve is ReserveWriteCP (node, owned: pages per rank).
	AckReserve = "reserve"
	// AckLayerStep is the forward's layer hook on every rank (layer).
	AckLayerStep = "layer_step"
	// AckWriteBackup is WriteBackupCP (node, owned, fail_at).
	AckWriteBackup = "write_backup"
	// AckWriteNonCP is WriteNonCP (node).
	AckWriteNonCP = "write_noncp"
	// AckEventsComplete completes k write events on one rank, or on every rank when rank is omitted.
	AckEventsComplete = "events_complete"
	// AckWritingCheck drains MIN(ReadyPrefix) over ranks, or an explicit agreed count.
	AckWritingCheck = "writing_check"
	// AckRollback is RollbackPendingBackup (node).
	AckRollback = "rollback"
	// AckRollbackPrepared is RollbackPreparedCPBackup (node).
	AckRollbackPrepared = "rollback_prepared"
	// AckHas is NodeHasUndrainedWriteAck (node).
	AckHas = "has"
	// AckAppend pushes an arbitrary ack through the funnel (ids; fault injection).
	AckAppend = "append_ack"
	// AckInjectDuplicate pushes a copy of the first ack naming node (fault injection).
	AckInjectDuplicate = "inject_duplicate"
	// AckReset resets every rank.
	AckReset = "reset"
)

// AckStep is one step of an ack script. Which fields apply depends on Op.
type AckStep struct {
	// Op is one of the Ack* step kinds.
	Op string `json:"op"`
	// Ranks is the group size R >= 1 (create).
	Ranks int `json:"ranks,omitzero"`
	// Layers is the number of layers L >= 1 (create).
	Layers int `json:"layers,omitzero"`
	// HostCapacity is each rank's host slot count (create).
	HostCapacity int `json:"host_capacity,omitzero"`
	// Node is the node id (node: 0 mints the next id).
	Node NodeID `json:"node,omitzero"`
	// ValueLen is the declared node's device value length (node).
	ValueLen int `json:"value_len,omitzero"`
	// Owned are the node's pages each rank owns, one per rank (reserve, write_backup).
	Owned []int `json:"owned,omitzero"`
	// FailAt injects write_backup's exception (write_backup).
	FailAt FailAt `json:"fail_at,omitzero"`
	// Rank is the rank whose events complete; omitted means every rank (events_complete).
	Rank *int `json:"rank,omitzero"`
	// K is the number of events completed (events_complete).
	K int `json:"k,omitzero"`
	// Agreed overrides the MIN over ranks (writing_check).
	Agreed *int `json:"agreed,omitzero"`
	// Layer is the layer index (layer_step).
	Layer int `json:"layer,omitzero"`
	// IDs are the appended ack's ids (append_ack).
	IDs []NodeID `json:"ids,omitzero"`
}

// HiCacheAckScriptInput is the input of hicache.ack_script.
type HiCacheAckScriptInput struct {
	// Steps run in order; the first must be a create.
	Steps []AckStep `json:"steps"`
}

// AckOutcome is what one rank (or every rank alike) returned for a step:
// at most one result field, a refusal, or an error.
type AckOutcome struct {
	// Node is the id a node step declared.
	Node *NodeID `json:"node,omitempty"`
	// Has is the answer of a has step.
	Has *bool `json:"has,omitempty"`
	// Acked are the ids of the merged final ack a layer step appended.
	Acked []NodeID `json:"acked,omitempty"`
	// Drain is what a writing check did.
	Drain *DrainResult `json:"drain,omitempty"`
	// Refused is a reservation's HiCacheWriteFailure reason (no state change).
	Refused WriteFailureReason `json:"refused,omitempty"`
	// Error is the canonical rejection of the step.
	Error *ErrorObject `json:"error,omitempty"`
}

// AckStepResult is the result of one step on the group.
type AckStepResult struct {
	// Op echoes the step's op.
	Op string `json:"op"`
	// AckOutcome is the outcome every rank returned, when they agree.
	AckOutcome
	// Diverged holds each rank's outcome, in rank order, when the ranks
	// disagree (a broken §3.3 W11); the embedded outcome is then empty.
	Diverged []AckOutcome `json:"diverged,omitempty"`
	// Terminal marks a terminal consumer error (ErrUnknownWriteAck,
	// ErrAckForPendingBackup): the scheduler stops and the script ends here.
	Terminal bool `json:"terminal,omitempty"`
	// ReadyPrefix is each rank's ready prefix after the step.
	ReadyPrefix []int `json:"ready_prefix"`
	// DuplicateAcks is each rank's duplicate-ack warning count after the step.
	DuplicateAcks []int `json:"duplicate_acks"`
}

// HiCacheAckScriptOutput is the output of hicache.ack_script.
type HiCacheAckScriptOutput struct {
	// Trace has one result per step run.
	Trace []AckStepResult `json:"trace"`
	// Ranks is each rank's final observable state, in rank order.
	Ranks []AckState `json:"ranks"`
	// Halted is set when a terminal error ended the run before the last step.
	Halted bool `json:"halted,omitempty"`
}

func ackStepConfig(s AckStep) AckConfig {
	return AckConfig{NumLayers: s.Layers, HostCapacity: s.HostCapacity}
}

// RunHiCacheAckScript runs a validated script on ranks built by newQueue. Both
// twins of hicache.ack_script call it with their own constructor, so the
// group semantics are written once and the write states are what differs.
func RunHiCacheAckScript(lim Limits, in HiCacheAckScriptInput, newQueue NewAckQueueFunc) (HiCacheAckScriptOutput, error) {
	if err := validateAckScript(lim, in); err != nil {
		return HiCacheAckScriptOutput{}, err
	}
	var group []AckQueue
	out := HiCacheAckScriptOutput{Trace: make([]AckStepResult, 0, len(in.Steps)), Ranks: []AckState{}}
	for i, s := range in.Steps {
		at := Idx("steps", i) + "."
		if s.Op == AckCreate {
			g, err := newGroup(s, newQueue)
			if err != nil {
				return HiCacheAckScriptOutput{}, prefixField(err, at)
			}
			group = g
		}
		r := RunAckGroupStep(group, s, i)
		out.Trace = append(out.Trace, r)
		if r.Terminal {
			out.Halted = i < len(in.Steps)-1
			break
		}
	}
	for _, q := range group {
		out.Ranks = append(out.Ranks, q.State())
	}
	return out, nil
}

func newGroup(s AckStep, newQueue NewAckQueueFunc) ([]AckQueue, error) {
	g := make([]AckQueue, s.Ranks)
	for r := range g {
		q, err := newQueue(ackStepConfig(s))
		if err != nil {
			return nil, err
		}
		g[r] = q
	}
	return g, nil
}

// RunAckGroupStep runs one step on every rank of group (a create step only
// reports the fresh group) and returns its result; error fields are
// prefixed with steps[index]. The state machine calls it too, so it and the script share the
// group semantics: a writing check drains MIN(ReadyPrefix) over ranks, or
// an explicit agreed count; events_complete with a rank touches only it.
// A group step whose count some rank must reject (an agreed count beyond a
// rank's ready prefix, k beyond a rank's unready acks, a negative count)
// is refused as a whole with the first such rank's error and changes no
// rank: the all-reduce and the event sweep are group operations, and bad
// input must not split the ranks.
func RunAckGroupStep(group []AckQueue, s AckStep, index int) AckStepResult {
	r := AckStepResult{Op: s.Op}
	var outs []AckOutcome
	switch {
	case s.Op == AckCreate:
		outs = []AckOutcome{{}}
	case s.Op == AckEventsComplete && s.Rank != nil:
		outs = []AckOutcome{runAckStep(group[*s.Rank], s, 0, 0, index)}
	case s.Op == AckEventsComplete:
		outs = allOrNone(group, s, 0, index, func(q AckQueue) bool { return s.K < 0 || s.K > q.QueueLen()-q.ReadyPrefix() })
	case s.Op == AckWritingCheck:
		outs = writingCheck(group, s, index)
	default:
		for rank, q := range group {
			outs = append(outs, runAckStep(q, s, rank, 0, index))
		}
	}
	if agree(outs) {
		r.AckOutcome = outs[0]
	} else {
		r.Diverged = outs
	}
	for _, o := range outs {
		if s.Op == AckWritingCheck && o.Error != nil &&
			(o.Error.Code == ErrUnknownWriteAck.Code() || o.Error.Code == ErrAckForPendingBackup.Code()) {
			r.Terminal = true
		}
	}
	r.ReadyPrefix, r.DuplicateAcks = make([]int, len(group)), make([]int, len(group))
	for rank, q := range group {
		r.ReadyPrefix[rank] = q.ReadyPrefix()
		r.DuplicateAcks[rank] = q.DuplicateAcks()
	}
	return r
}

func writingCheck(group []AckQueue, s AckStep, index int) []AckOutcome {
	agreed := AgreedDrain(group)
	if s.Agreed != nil {
		agreed = *s.Agreed
	}
	return allOrNone(group, s, agreed, index, func(q AckQueue) bool { return agreed < 0 || agreed > q.ReadyPrefix() })
}

// allOrNone runs s on every rank, unless rejects says some rank must
// reject it: then only that (first) rank runs it, to report its canonical
// error, and no rank changes.
func allOrNone(group []AckQueue, s AckStep, agreed, index int, rejects func(AckQueue) bool) []AckOutcome {
	for rank, q := range group {
		if rejects(q) {
			return []AckOutcome{runAckStep(q, s, rank, agreed, index)}
		}
	}
	var outs []AckOutcome
	for rank, q := range group {
		outs = append(outs, runAckStep(q, s, rank, agreed, index))
	}
	return outs
}

// AgreedDrain is the MIN of ReadyPrefix over the group (the TP all-reduce
// of §3.1 step 3).
func AgreedDrain(group []AckQueue) int {
	m := 0
	for i, q := range group {
		if p := q.ReadyPrefix(); i == 0 || p < m {
			m = p
		}
	}
	return m
}

func agree(outs []AckOutcome) bool {
	for _, o := range outs[1:] {
		if !sameOutcome(outs[0], o) {
			return false
		}
	}
	return true
}

// sameOutcome reports whether two outcomes encode to the same JSON.
func sameOutcome(a, b AckOutcome) bool {
	eqPtr := func(x, y *int64) bool { return x == nil && y == nil || x != nil && y != nil && *x == *y }
	eqBool := func(x, y *bool) bool { return x == nil && y == nil || x != nil && y != nil && *x == *y }
	eqDrain := func(x, y *DrainResult) bool {
		return x == nil && y == nil || x != nil && y != nil && x.Popped == y.Popped &&
			x.Duplicates == y.Duplicates && slices.Equal(x.Completed, y.Completed)
	}
	eqErr := func(x, y *ErrorObject) bool {
		if x == nil || y == nil {
			return x == nil && y == nil
		}
		bx, _ := json.Marshal(x)
		by, _ := json.Marshal(y)
		return bytes.Equal(bx, by)
	}
	return eqPtr(a.Node, b.Node) && eqBool(a.Has, b.Has) && slices.Equal(a.Acked, b.Acked) &&
		eqDrain(a.Drain, b.Drain) && a.Refused == b.Refused && eqErr(a.Error, b.Error)
}

// runAckStep runs s on one rank (rank selects its owned pages; agreed is a
// writing check's drain count).
func runAckStep(q AckQueue, s AckStep, rank, agreed, index int) AckOutcome {
	var o AckOutcome
	var err error
	switch s.Op {
	case AckNode:
		var id NodeID
		id, err = q.DeclareNode(s.Node, s.ValueLen)
		if err == nil {
			o.Node = &id
		}
	case AckEvictDevice:
		err = q.EvictDevice(s.Node)
	case AckLock:
		err = q.Lock(s.Node)
	case AckUnlock:
		err = q.Unlock(s.Node)
	case AckReserve:
		err = q.ReserveWriteCP(s.Node, s.Owned[rank])
	case AckLayerStep:
		o.Acked, err = q.LayerStep(s.Layer)
		if len(o.Acked) == 0 {
			o.Acked = nil
		}
	case AckWriteBackup:
		err = q.WriteBackupCP(s.Node, s.Owned[rank], s.FailAt)
	case AckWriteNonCP:
		err = q.WriteNonCP(s.Node)
	case AckEventsComplete:
		err = q.EventsComplete(s.K)
	case AckWritingCheck:
		var d DrainResult
		d, err = q.WritingCheck(agreed)
		o.Drain = &d
	case AckRollback:
		err = q.RollbackPendingBackup(s.Node)
	case AckRollbackPrepared:
		err = q.RollbackPreparedCPBackup(s.Node)
	case AckHas:
		o.Has = new(q.NodeHasUndrainedWriteAck(s.Node))
	case AckAppend:
		err = q.AppendWriteAck(s.IDs)
	case AckInjectDuplicate:
		err = q.InjectDuplicateAck(s.Node)
	case AckReset:
		q.Reset()
	}
	return withError(o, err, index)
}

func withError(o AckOutcome, err error, index int) AckOutcome {
	if err == nil {
		return o
	}
	if f, ok := asWriteFailure(err); ok {
		return AckOutcome{Refused: f.Reason}
	}
	e := ErrorObjectOf(prefixField(err, Idx("steps", index)+"."))
	o.Error = &e
	if !errors.Is(err, ErrUnknownWriteAck) && !errors.Is(err, ErrAckForPendingBackup) {
		o.Drain = nil // a rejected drain did nothing; a terminal one reports what it did
	}
	return o
}

// HiCacheAckScript is the reference twin of hicache.ack_script (docs/spec/radix-acks.md §3).
func HiCacheAckScript(lim Limits, in HiCacheAckScriptInput) (HiCacheAckScriptOutput, error) {
	return RunHiCacheAckScript(lim, in, NewAckQueue)
}
