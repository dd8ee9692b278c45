package ref

import (
	"errors"
	"maps"
	"slices"

	"github.com/kvtwin/kvtwin/spec"
)

// This file holds the HiCache write-ack queue (docs/spec/radix-acks.md §3): the types
// both twins share, the sentinels of §0.3/§3.6, the AckQueue interface and
// the reference implementation, which reads like §3.2 and answers
// NodeHasUndrainedWriteAck by scanning the queue.
//
// One AckQueue is the write state of ONE rank together with what §3 needs
// from its surroundings: a flat node table (id → value length, evicted or
// not, lock refs, host value) and a host slot allocator of fixed capacity.
// The group of CP/TP ranks that see the same operation sequence is modelled
// by the script op (hicache_ack_script.go), which drives one AckQueue per rank.

// asWriteFailure returns err's *HiCacheWriteFailure, if it has one.
func asWriteFailure(err error) (*spec.HiCacheWriteFailure, bool) {
	var f *spec.HiCacheWriteFailure
	ok := errors.As(err, &f)
	return f, ok
}

// MidLayersWritten is how many layers a mid_layers failure writes: [0, L/2).
func MidLayersWritten(numLayers int) int { return numLayers / 2 }

// ---- the reference implementation ----

type refAckNode struct {
	valueLen     int
	evicted      bool
	requestLocks int
	host         []spec.SlotIdx
	backedUp     bool
}

type refReg struct {
	slots []spec.SlotIdx
	owned int
	nonCP bool
}

type refPending struct {
	written []bool
}

// refAckQueue is the reference write state: maps, a plain FIFO, and the
// queue scan for every undrained-ack question.
type refAckQueue struct {
	cfg         spec.AckConfig
	nodes       map[spec.NodeID]*refAckNode
	nextID      spec.NodeID
	ongoing     map[spec.NodeID]*refReg
	pending     map[spec.NodeID]*refPending
	regOrder    []spec.NodeID
	queue       []spec.Ack
	maxAppended spec.NodeID
	completed   map[spec.NodeID]bool
	duplicates  int
	// owner[s] is the id holding host slot s, or -1 when free.
	owner         []spec.NodeID
	copied        int64
	foreign       int
	faultInjected bool
}

// NewAckQueue builds the reference write state of one rank (docs/spec/radix-acks.md
// §3.2) after validating cfg.
func NewAckQueue(cfg spec.AckConfig) (spec.AckQueue, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	q := &refAckQueue{cfg: cfg}
	q.Reset()
	return q, nil
}

// Reset is §3.2 op 13: everything cleared, max_appended -1, ids from 1.
func (q *refAckQueue) Reset() {
	q.nodes = map[spec.NodeID]*refAckNode{}
	q.nextID = 1
	q.ongoing = map[spec.NodeID]*refReg{}
	q.pending = map[spec.NodeID]*refPending{}
	q.regOrder = nil
	q.queue = nil
	q.maxAppended = -1
	q.completed = map[spec.NodeID]bool{}
	q.duplicates, q.copied, q.foreign, q.faultInjected = 0, 0, 0, false
	q.owner = make([]spec.NodeID, q.cfg.HostCapacity)
	for i := range q.owner {
		q.owner[i] = -1
	}
}

func (q *refAckQueue) node(id spec.NodeID) (*refAckNode, error) {
	n, ok := q.nodes[id]
	if !ok {
		return nil, UnknownNodeError(id)
	}
	return n, nil
}

func (q *refAckQueue) lockRef(id spec.NodeID) int {
	n := q.nodes[id].requestLocks
	if _, ok := q.ongoing[id]; ok {
		n++
	}
	return n
}

// DeclareNode adds a node to the node table (§0.2: ids only grow).
func (q *refAckQueue) DeclareNode(id spec.NodeID, valueLen int) (spec.NodeID, error) {
	if err := CheckDeclareNode(id, valueLen, q.nextID); err != nil {
		return 0, err
	}
	if id == 0 {
		id = q.nextID
	}
	q.nodes[id] = &refAckNode{valueLen: valueLen}
	q.nextID = id + 1
	return id, nil
}

// EvictDevice drops the device value of an unlocked node.
func (q *refAckQueue) EvictDevice(id spec.NodeID) error {
	n, err := q.node(id)
	if err != nil {
		return err
	}
	if lr := q.lockRef(id); lr > 0 {
		return LockedError(id, lr)
	}
	n.evicted = true
	return nil
}

// Lock takes a request lock (W6's requestLocks).
func (q *refAckQueue) Lock(id spec.NodeID) error {
	n, err := q.node(id)
	if err != nil {
		return err
	}
	n.requestLocks++
	return nil
}

// Unlock releases a request lock; a registration's lock is not the caller's.
func (q *refAckQueue) Unlock(id spec.NodeID) error {
	n, err := q.node(id)
	if err != nil {
		return err
	}
	if n.requestLocks == 0 {
		return UnlockError(id)
	}
	n.requestLocks--
	return nil
}

// appendWriteAck is the funnel: the only code that pushes to the queue.
func (q *refAckQueue) appendWriteAck(ids []spec.NodeID) error {
	if err := CheckAppendIDs(ids); err != nil {
		return err
	}
	q.maxAppended = max(q.maxAppended, slices.Max(ids))
	q.queue = append(q.queue, spec.Ack{NodeIDs: slices.Clone(ids)})
	return nil
}

// AppendWriteAck is the funnel used by fault injection (§3.3): the
// state is marked, which suspends W1–W3.
func (q *refAckQueue) AppendWriteAck(ids []spec.NodeID) error {
	if err := q.appendWriteAck(ids); err != nil {
		return err
	}
	q.faultInjected = true
	return nil
}

// InjectDuplicateAck is §3.3's InjectDuplicateAck: a copy of the first
// queued ack naming id, pushed through the funnel.
func (q *refAckQueue) InjectDuplicateAck(id spec.NodeID) error {
	for _, a := range q.queue {
		if slices.Contains(a.NodeIDs, id) {
			return q.AppendWriteAck(a.NodeIDs)
		}
	}
	return NotQueuedError(id)
}

// NodeHasUndrainedWriteAck scans the whole queue: the contract the fast
// twin's max-appended shortcut must equal (§3.3 W5).
func (q *refAckQueue) NodeHasUndrainedWriteAck(id spec.NodeID) bool {
	for _, a := range q.queue {
		if slices.Contains(a.NodeIDs, id) {
			return true
		}
	}
	return false
}

// ReserveWriteCP is §3.2 op 3: the guards, then the registration and its
// per-layer written flags.
func (q *refAckQueue) ReserveWriteCP(id spec.NodeID, ownedPages int) error {
	if err := q.reserve(id, ownedPages, false); err != nil {
		return err
	}
	q.pending[id] = &refPending{written: make([]bool, q.cfg.NumLayers)}
	q.regOrder = append(q.regOrder, id)
	return nil
}

// reserve runs the input checks and the four guards of §3.2 op 3 in order,
// then allocates host slots and registers the node (taking its lock).
func (q *refAckQueue) reserve(id spec.NodeID, owned int, nonCP bool) error {
	n, err := q.node(id)
	if err != nil {
		return err
	}
	if err := CheckOwnedPages("owned", owned); err != nil {
		return err
	}
	switch {
	case n.evicted:
		return &spec.HiCacheWriteFailure{Node: id, Reason: spec.ReasonEvicted}
	case q.ongoing[id] != nil:
		return &spec.HiCacheWriteFailure{Node: id, Reason: spec.ReasonPending}
	case q.NodeHasUndrainedWriteAck(id):
		return &spec.HiCacheWriteFailure{Node: id, Reason: spec.ReasonUndrainedAck}
	case n.backedUp:
		return BackedUpError(id)
	}
	slots, ok := q.allocHost(n.valueLen)
	if !ok {
		return &spec.HiCacheWriteFailure{Node: id, Reason: spec.ReasonHostFull}
	}
	for _, s := range slots {
		q.owner[s] = id
	}
	n.host = slots
	q.ongoing[id] = &refReg{slots: slots, owned: owned, nonCP: nonCP}
	return nil
}

// allocHost takes the need lowest free slots. When too few are free it runs
// evict_host once and retries (§3.1): evict_host frees the host copies of
// backed-up nodes whose device value is evicted and that hold no lock, in
// ascending id, until enough slots are free. It evicts only when that
// suffices, so a ReasonHostFull refusal changes nothing (§3.3 W10).
func (q *refAckQueue) allocHost(need int) ([]spec.SlotIdx, bool) {
	if q.freeSlots() < need {
		victims, freed := q.hostVictims(need - q.freeSlots())
		if freed < need-q.freeSlots() {
			return nil, false
		}
		for _, v := range victims {
			q.freeHost(v)
		}
	}
	slots := []spec.SlotIdx{}
	for s := range q.owner {
		if len(slots) == need {
			break
		}
		if q.owner[s] < 0 {
			slots = append(slots, spec.SlotIdx(s))
		}
	}
	return slots, true
}

func (q *refAckQueue) freeSlots() int {
	n := 0
	for _, o := range q.owner {
		if o < 0 {
			n++
		}
	}
	return n
}

// hostVictims lists evict_host's victims, ascending id, until at least
// want slots would be freed; it returns the victims and the slots they free.
func (q *refAckQueue) hostVictims(want int) ([]spec.NodeID, int) {
	var victims []spec.NodeID
	freed := 0
	for _, id := range slices.Sorted(maps.Keys(q.nodes)) {
		if freed >= want {
			break
		}
		n := q.nodes[id]
		if n.backedUp && n.evicted && q.lockRef(id) == 0 {
			victims = append(victims, id)
			freed += len(n.host)
		}
	}
	return victims, freed
}

// freeHost releases the node's host slots.
func (q *refAckQueue) freeHost(id spec.NodeID) {
	n := q.nodes[id]
	for _, s := range n.host {
		q.owner[s] = -1
	}
	n.host, n.backedUp = nil, false
}

// LayerStep is §3.2 op 4: layer l for every pending registration in
// registration order, then one merged final ack for those now complete.
func (q *refAckQueue) LayerStep(l int) ([]spec.NodeID, error) {
	if l < 0 || l >= q.cfg.NumLayers {
		return nil, LayerRangeError(l, q.cfg.NumLayers)
	}
	for _, id := range q.regOrder {
		if p := q.pending[id]; !p.written[l] {
			q.copyLayer(id)
			p.written[l] = true
		}
	}
	return q.finishWritten(func(spec.NodeID) bool { return true }), nil
}

// copyLayer copies one layer of the rank's owned pages of id into its
// registration's host slots: a no-op for a zero-owned rank. Each slot
// written that does not belong to id at this moment is a foreign write (W8).
func (q *refAckQueue) copyLayer(id spec.NodeID) {
	reg := q.ongoing[id]
	if reg.owned == 0 {
		return
	}
	q.copied += int64(reg.owned)
	for _, s := range reg.slots {
		if q.owner[s] != id {
			q.foreign++
		}
	}
}

// finishWritten moves the registrations selected by sel whose layers are
// all written out of the pending state, in registration order, and
// appends their one merged final ack.
func (q *refAckQueue) finishWritten(sel func(spec.NodeID) bool) []spec.NodeID {
	done := []spec.NodeID{}
	for _, id := range q.regOrder {
		if sel(id) && !slices.Contains(q.pending[id].written, false) {
			done = append(done, id)
		}
	}
	for _, id := range done {
		delete(q.pending, id)
		q.regOrder = slices.DeleteFunc(q.regOrder, func(x spec.NodeID) bool { return x == id })
	}
	if len(done) > 0 {
		_ = q.appendWriteAck(done)
	}
	return done
}

// WriteBackupCP is §3.2 op 5: reserve, write all layers of this
// registration at once, and on the injected failure roll back and return it.
func (q *refAckQueue) WriteBackupCP(id spec.NodeID, ownedPages int, failAt spec.FailAt) error {
	if err := failAt.Validate("fail_at"); err != nil {
		return err
	}
	if err := q.ReserveWriteCP(id, ownedPages); err != nil {
		return err
	}
	layers := q.cfg.NumLayers
	if failAt == spec.FailMidLayers {
		layers = MidLayersWritten(q.cfg.NumLayers)
	}
	for l := range layers {
		q.copyLayer(id)
		q.pending[id].written[l] = true
	}
	if failAt != spec.FailMidLayers {
		q.finishWritten(func(x spec.NodeID) bool { return x == id })
	}
	if failAt == spec.FailMidLayers || failAt == spec.FailAfterAck {
		_ = q.RollbackPendingBackup(id)
		return InjectedFailureError(failAt)
	}
	return nil
}

// WriteNonCP is §3.2 op 6: the same guards, a registration without layer
// state, and its ack at once.
func (q *refAckQueue) WriteNonCP(id spec.NodeID) error {
	n, err := q.node(id)
	if err != nil {
		return err
	}
	if err := q.reserve(id, n.valueLen, true); err != nil {
		return err
	}
	return q.appendWriteAck([]spec.NodeID{id})
}

// EventsComplete is §3.2 op 7: the first k unready acks become ready.
func (q *refAckQueue) EventsComplete(k int) error {
	unready := 0
	for _, a := range q.queue {
		if !a.Ready {
			unready++
		}
	}
	if err := CheckEventsComplete(k, unready); err != nil {
		return err
	}
	for i := range q.queue {
		if k == 0 {
			break
		}
		if !q.queue[i].Ready {
			q.queue[i].Ready = true
			k--
		}
	}
	return nil
}

// ReadyPrefix is §3.2 op 8.
func (q *refAckQueue) ReadyPrefix() int {
	n := 0
	for n < len(q.queue) && q.queue[n].Ready {
		n++
	}
	return n
}

// QueueLen is the number of queued acks.
func (q *refAckQueue) QueueLen() int { return len(q.queue) }

// DuplicateAcks counts the duplicate-ack warnings since Reset.
func (q *refAckQueue) DuplicateAcks() int { return q.duplicates }

// WritingCheck is §3.2 op 9: pop agreed acks and complete, warn about or
// fail fast on each id in order, then prune the completed memory. On a
// terminal error the acks already popped stay popped and nothing is pruned.
func (q *refAckQueue) WritingCheck(agreed int) (spec.DrainResult, error) {
	res := spec.DrainResult{Completed: []spec.NodeID{}}
	if err := CheckAgreed(agreed, q.ReadyPrefix()); err != nil {
		return res, err
	}
	if len(q.ongoing) == 0 && len(q.queue) == 0 {
		return res, nil
	}
	for range agreed {
		a := q.queue[0]
		q.queue = q.queue[1:]
		res.Popped++
		for _, id := range a.NodeIDs {
			if err := q.consume(id, &res); err != nil {
				return res, err
			}
		}
	}
	q.pruneCompleted()
	return res, nil
}

// consume handles one drained id: complete, duplicate, or a terminal error.
func (q *refAckQueue) consume(id spec.NodeID, res *spec.DrainResult) error {
	switch {
	case q.pending[id] != nil:
		return PendingAckError(id)
	case q.ongoing[id] != nil:
		delete(q.ongoing, id)
		q.nodes[id].backedUp = true
		q.completed[id] = true
		res.Completed = append(res.Completed, id)
	case q.completed[id]:
		res.Duplicates++
		q.duplicates++
	default:
		return UnknownAckError(id)
	}
	return nil
}

// pruneCompleted forgets every completed id no queued ack names any more.
func (q *refAckQueue) pruneCompleted() {
	for id := range q.completed {
		if !q.NodeHasUndrainedWriteAck(id) {
			delete(q.completed, id)
		}
	}
}

// scrubAcks removes id from every ack and drops acks left empty (§3.2 op 10).
func (q *refAckQueue) scrubAcks(id spec.NodeID) {
	kept := []spec.Ack{}
	for _, a := range q.queue {
		a.NodeIDs = slices.DeleteFunc(slices.Clone(a.NodeIDs), func(x spec.NodeID) bool { return x == id })
		if len(a.NodeIDs) > 0 {
			kept = append(kept, a)
		}
	}
	q.queue = kept
	q.pruneCompleted()
}

// RollbackPendingBackup is §3.2 op 11 (a)–(e).
func (q *refAckQueue) RollbackPendingBackup(id spec.NodeID) error {
	reg := q.ongoing[id]
	if reg == nil {
		return NotRegisteredError(id)
	}
	// (a) the write-stream sync is implicit: layer copies are synchronous here.
	delete(q.pending, id) // (b)
	q.regOrder = slices.DeleteFunc(q.regOrder, func(x spec.NodeID) bool { return x == id })
	q.scrubAcks(id)       // (c)
	delete(q.ongoing, id) // (d) the registration's lock goes with it
	q.freeHost(id)        // (e)
	return nil
}

// RollbackPreparedCPBackup is §3.2 op 12, identical to op 11.
func (q *refAckQueue) RollbackPreparedCPBackup(id spec.NodeID) error {
	return q.RollbackPendingBackup(id)
}

// State returns the observable state: ongoing, completed and nodes in
// ascending id, pending in registration order, the queue front first.
func (q *refAckQueue) State() spec.AckState {
	s := spec.AckState{
		Config:        q.cfg,
		NextID:        q.nextID,
		MaxAppended:   q.maxAppended,
		Queue:         []spec.Ack{},
		Ongoing:       []spec.RegistrationState{},
		Pending:       []spec.PendingState{},
		Completed:     slices.Sorted(maps.Keys(q.completed)),
		DuplicateAcks: q.duplicates,
		Nodes:         []spec.AckNodeState{},
		HostFree:      q.freeSlots(),
		CopiedPages:   q.copied,
		ForeignWrites: q.foreign,
		FaultInjected: q.faultInjected,
	}
	if s.Completed == nil {
		s.Completed = []spec.NodeID{}
	}
	for _, a := range q.queue {
		s.Queue = append(s.Queue, spec.Ack{NodeIDs: slices.Clone(a.NodeIDs), Ready: a.Ready})
	}
	for _, id := range slices.Sorted(maps.Keys(q.ongoing)) {
		r := q.ongoing[id]
		s.Ongoing = append(s.Ongoing, spec.RegistrationState{ID: id, HostSlots: slices.Clone(r.slots), OwnedPages: r.owned, NonCP: r.nonCP})
	}
	for _, id := range q.regOrder {
		s.Pending = append(s.Pending, spec.PendingState{ID: id, Written: slices.Clone(q.pending[id].written)})
	}
	for _, id := range slices.Sorted(maps.Keys(q.nodes)) {
		n := q.nodes[id]
		host := slices.Clone(n.host)
		if host == nil {
			host = []spec.SlotIdx{}
		}
		s.Nodes = append(s.Nodes, spec.AckNodeState{ID: id, ValueLen: n.valueLen, Evicted: n.evicted,
			LockRef: q.lockRef(id), RequestLocks: n.requestLocks, HostValue: host, BackedUp: n.backedUp})
	}
	return s
}
