package ref

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"

	"github.com/kvtwin/kvtwin/spec"
)

// The hicache.ack_script op (docs/spec/radix-acks.md §3): a list of steps run by a
// group of R ranks (CP/TP) that see the same operation sequence but own
// different pages of each node and complete their write events
// independently. The output is the trace of results and every rank's final
// observable state, so the stateful write-ack queue gets fixtures, an HTTP
// endpoint and the datadriven scenarios.

func ackStepConfig(s spec.AckStep) spec.AckConfig {
	return spec.AckConfig{NumLayers: s.Layers, HostCapacity: s.HostCapacity}
}

// RunHiCacheAckScript runs a validated script on ranks built by newQueue. Both
// twins of hicache.ack_script call it with their own constructor, so the
// group semantics are written once and the write states are what differs.
func RunHiCacheAckScript(lim spec.Limits, in spec.HiCacheAckScriptInput, newQueue spec.NewAckQueueFunc) (spec.HiCacheAckScriptOutput, error) {
	if err := validateAckScript(lim, in); err != nil {
		return spec.HiCacheAckScriptOutput{}, err
	}
	var group []spec.AckQueue
	out := spec.HiCacheAckScriptOutput{Trace: make([]spec.AckStepResult, 0, len(in.Steps)), Ranks: []spec.AckState{}}
	for i, s := range in.Steps {
		at := spec.Idx("steps", i) + "."
		if s.Op == spec.AckCreate {
			g, err := newGroup(s, newQueue)
			if err != nil {
				return spec.HiCacheAckScriptOutput{}, prefixField(err, at)
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

func newGroup(s spec.AckStep, newQueue spec.NewAckQueueFunc) ([]spec.AckQueue, error) {
	g := make([]spec.AckQueue, s.Ranks)
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
func RunAckGroupStep(group []spec.AckQueue, s spec.AckStep, index int) spec.AckStepResult {
	r := spec.AckStepResult{Op: s.Op}
	var outs []spec.AckOutcome
	switch {
	case s.Op == spec.AckCreate:
		outs = []spec.AckOutcome{{}}
	case s.Op == spec.AckEventsComplete && s.Rank != nil:
		outs = []spec.AckOutcome{runAckStep(group[*s.Rank], s, 0, 0, index)}
	case s.Op == spec.AckEventsComplete:
		outs = allOrNone(group, s, 0, index, func(q spec.AckQueue) bool { return s.K < 0 || s.K > q.QueueLen()-q.ReadyPrefix() })
	case s.Op == spec.AckWritingCheck:
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
		if s.Op == spec.AckWritingCheck && o.Error != nil &&
			(o.Error.Code == spec.ErrUnknownWriteAck.Code() || o.Error.Code == spec.ErrAckForPendingBackup.Code()) {
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

func writingCheck(group []spec.AckQueue, s spec.AckStep, index int) []spec.AckOutcome {
	agreed := AgreedDrain(group)
	if s.Agreed != nil {
		agreed = *s.Agreed
	}
	return allOrNone(group, s, agreed, index, func(q spec.AckQueue) bool { return agreed < 0 || agreed > q.ReadyPrefix() })
}

// allOrNone runs s on every rank, unless rejects says some rank must
// reject it: then only that (first) rank runs it, to report its canonical
// error, and no rank changes.
func allOrNone(group []spec.AckQueue, s spec.AckStep, agreed, index int, rejects func(spec.AckQueue) bool) []spec.AckOutcome {
	for rank, q := range group {
		if rejects(q) {
			return []spec.AckOutcome{runAckStep(q, s, rank, agreed, index)}
		}
	}
	var outs []spec.AckOutcome
	for rank, q := range group {
		outs = append(outs, runAckStep(q, s, rank, agreed, index))
	}
	return outs
}

// AgreedDrain is the MIN of ReadyPrefix over the group (the TP all-reduce
// of §3.1 step 3).
func AgreedDrain(group []spec.AckQueue) int {
	m := 0
	for i, q := range group {
		if p := q.ReadyPrefix(); i == 0 || p < m {
			m = p
		}
	}
	return m
}

func agree(outs []spec.AckOutcome) bool {
	for _, o := range outs[1:] {
		if !sameOutcome(outs[0], o) {
			return false
		}
	}
	return true
}

// sameOutcome reports whether two outcomes encode to the same JSON.
func sameOutcome(a, b spec.AckOutcome) bool {
	eqPtr := func(x, y *int64) bool { return x == nil && y == nil || x != nil && y != nil && *x == *y }
	eqBool := func(x, y *bool) bool { return x == nil && y == nil || x != nil && y != nil && *x == *y }
	eqDrain := func(x, y *spec.DrainResult) bool {
		return x == nil && y == nil || x != nil && y != nil && x.Popped == y.Popped &&
			x.Duplicates == y.Duplicates && slices.Equal(x.Completed, y.Completed)
	}
	eqErr := func(x, y *spec.ErrorObject) bool {
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
func runAckStep(q spec.AckQueue, s spec.AckStep, rank, agreed, index int) spec.AckOutcome {
	var o spec.AckOutcome
	var err error
	switch s.Op {
	case spec.AckNode:
		var id spec.NodeID
		id, err = q.DeclareNode(s.Node, s.ValueLen)
		if err == nil {
			o.Node = &id
		}
	case spec.AckEvictDevice:
		err = q.EvictDevice(s.Node)
	case spec.AckLock:
		err = q.Lock(s.Node)
	case spec.AckUnlock:
		err = q.Unlock(s.Node)
	case spec.AckReserve:
		err = q.ReserveWriteCP(s.Node, s.Owned[rank])
	case spec.AckLayerStep:
		o.Acked, err = q.LayerStep(s.Layer)
		if len(o.Acked) == 0 {
			o.Acked = nil
		}
	case spec.AckWriteBackup:
		err = q.WriteBackupCP(s.Node, s.Owned[rank], s.FailAt)
	case spec.AckWriteNonCP:
		err = q.WriteNonCP(s.Node)
	case spec.AckEventsComplete:
		err = q.EventsComplete(s.K)
	case spec.AckWritingCheck:
		var d spec.DrainResult
		d, err = q.WritingCheck(agreed)
		o.Drain = &d
	case spec.AckRollback:
		err = q.RollbackPendingBackup(s.Node)
	case spec.AckRollbackPrepared:
		err = q.RollbackPreparedCPBackup(s.Node)
	case spec.AckHas:
		o.Has = new(q.NodeHasUndrainedWriteAck(s.Node))
	case spec.AckAppend:
		err = q.AppendWriteAck(s.IDs)
	case spec.AckInjectDuplicate:
		err = q.InjectDuplicateAck(s.Node)
	case spec.AckReset:
		q.Reset()
	}
	return withError(o, err, index)
}

func withError(o spec.AckOutcome, err error, index int) spec.AckOutcome {
	if err == nil {
		return o
	}
	if f, ok := asWriteFailure(err); ok {
		return spec.AckOutcome{Refused: f.Reason}
	}
	e := spec.ErrorObjectOf(prefixField(err, spec.Idx("steps", index)+"."))
	o.Error = &e
	if !errors.Is(err, spec.ErrUnknownWriteAck) && !errors.Is(err, spec.ErrAckForPendingBackup) {
		o.Drain = nil // a rejected drain did nothing; a terminal one reports what it did
	}
	return o
}

// HiCacheAckScript is the reference twin of hicache.ack_script (docs/spec/radix-acks.md §3).
func HiCacheAckScript(lim spec.Limits, in spec.HiCacheAckScriptInput) (spec.HiCacheAckScriptOutput, error) {
	return RunHiCacheAckScript(lim, in, NewAckQueue)
}
