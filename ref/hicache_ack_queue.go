package ref

import (
	"errors"
	"fmt"
	"maps"
	"slices"
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

// WriteFailureReason is why a reservation was refused (docs/spec/radix-acks.md §3.2 op 3).
type WriteFailureReason string

// The four refusal reasons, in the order ReserveWriteCP checks them.
const (
	// ReasonEvicted: the node's device value is gone.
	ReasonEvicted WriteFailureReason = "evicted"
	// ReasonPending: the node already has an ongoing registration.
	ReasonPending WriteFailureReason = "pending"
	// ReasonUndrainedAck: a queued, undrained ack still names the node.
	ReasonUndrainedAck WriteFailureReason = "undrained_ack"
	// ReasonHostFull: the host pool cannot hold the node even after evict_host.
	ReasonHostFull WriteFailureReason = "host_full"
)

// HiCacheWriteFailure is a refused reservation (docs/spec/radix-acks.md §3.2 op 3):
// "skip this round", not bad input. A refusal changes no state (§3.3 W10).
type HiCacheWriteFailure struct {
	// Node is the refused node.
	Node NodeID
	// Reason is why.
	Reason WriteFailureReason
}

// Error renders the node and the reason.
func (e *HiCacheWriteFailure) Error() string {
	return fmt.Sprintf("hicache write of node %d refused: %s", e.Node, e.Reason)
}

// Unwrap lets errors.Is(err, errHiCacheWriteFailure) match every reason.
func (e *HiCacheWriteFailure) Unwrap() error { return errHiCacheWriteFailure }

// asWriteFailure returns err's *HiCacheWriteFailure, if it has one.
func asWriteFailure(err error) (*HiCacheWriteFailure, bool) {
	var f *HiCacheWriteFailure
	ok := errors.As(err, &f)
	return f, ok
}

// FailAt injects write_backup's exception (docs/spec/radix-acks.md §3.2 op 5).
type FailAt string

// The injection points of WriteBackupCP.
const (
	// FailNone: no exception ("" means the same).
	FailNone FailAt = "none"
	// FailMidLayers: the exception fires after layers [0, L/2) are written.
	FailMidLayers FailAt = "mid_layers"
	// FailAfterAck: the exception fires after the final ack was appended.
	FailAfterAck FailAt = "after_ack"
)

// AckConfig configures one rank's write state.
type AckConfig struct {
	// NumLayers is L, the layers every registration writes; >= 1.
	NumLayers int `json:"num_layers"`
	// HostCapacity is the number of host slots; >= 0.
	HostCapacity int `json:"host_capacity"`
}

// Ack is one queued write ack: the node ids of one merged copy and whether
// its finish event has completed (docs/spec/radix-acks.md §3.2).
type Ack struct {
	// NodeIDs are the ids the ack completes, in registration order.
	NodeIDs []NodeID `json:"ids"`
	// Ready models finishEvent.query().
	Ready bool `json:"ready"`
}

// DrainResult is what one WritingCheck did.
type DrainResult struct {
	// Popped is the number of acks removed from the front.
	Popped int `json:"popped"`
	// Completed are the registrations completed, in drain order; never nil.
	Completed []NodeID `json:"completed"`
	// Duplicates counts the duplicate acks removed with a warning in this call.
	Duplicates int `json:"duplicates"`
}

// AckNodeState is one node of the node table.
type AckNodeState struct {
	// ID is the node id.
	ID NodeID `json:"id"`
	// ValueLen is the length of the node's device value.
	ValueLen int `json:"value_len"`
	// Evicted is set once the device value is gone.
	Evicted bool `json:"evicted"`
	// LockRef is request locks plus one per ongoing registration (§3.3 W6).
	LockRef int `json:"lock_ref"`
	// RequestLocks are the locks taken by requests (lock steps).
	RequestLocks int `json:"request_locks"`
	// HostValue are the node's host slots (registered or backed up); never nil.
	HostValue []SlotIdx `json:"host_value"`
	// BackedUp is set when a registration of the node drained.
	BackedUp bool `json:"backed_up"`
}

// RegistrationState is one ongoing registration (Ongoing).
type RegistrationState struct {
	// ID is the node id.
	ID NodeID `json:"id"`
	// HostSlots are the reserved host slots.
	HostSlots []SlotIdx `json:"host_slots"`
	// OwnedPages is how many pages of the node this rank owns.
	OwnedPages int `json:"owned_pages"`
	// NonCP marks a WriteNonCP registration (no layer state, ack at once).
	NonCP bool `json:"non_cp,omitempty"`
}

// PendingState is one registration whose final ack is not yet produced (PendingBk).
type PendingState struct {
	// ID is the node id.
	ID NodeID `json:"id"`
	// Written flags each layer already copied.
	Written []bool `json:"written"`
}

// AckState is the observable write state of one rank: what the twins must
// agree on after every step and what the §3.3 checkers read.
type AckState struct {
	// Config is the rank's configuration.
	Config AckConfig `json:"config"`
	// NextID is the id the next minted node takes.
	NextID NodeID `json:"next_id"`
	// MaxAppended is the max id ever appended through the funnel (-1 after Reset).
	MaxAppended NodeID `json:"max_appended"`
	// Queue is ack_write_queue, front first.
	Queue []Ack `json:"queue"`
	// Ongoing are the registrations holding a lock, ascending id.
	Ongoing []RegistrationState `json:"ongoing"`
	// Pending are the registrations without their final ack, in registration order.
	Pending []PendingState `json:"pending"`
	// Completed is the consumer's completed-ack memory, ascending.
	Completed []NodeID `json:"completed"`
	// DuplicateAcks counts duplicate acks removed with a warning since Reset.
	DuplicateAcks int `json:"duplicate_acks"`
	// Nodes is the node table, ascending id.
	Nodes []AckNodeState `json:"nodes"`
	// HostFree is the number of free host slots.
	HostFree int `json:"host_free"`
	// CopiedPages sums the owned pages of every layer copy.
	CopiedPages int64 `json:"copied_pages"`
	// ForeignWrites counts layer copies into a host slot that, at that
	// moment, did not belong to the writer's registration (§3.3 W8: 0).
	ForeignWrites int `json:"foreign_writes"`
	// FaultInjected is set once an ack was pushed by fault injection
	// (AppendWriteAck, InjectDuplicateAck); W1–W3 are then suspended.
	FaultInjected bool `json:"fault_injected,omitempty"`
}

// AckQueue is one rank's HiCache write state (docs/spec/radix-acks.md §3.2) with its
// node table and host allocator. Every call is atomic: on error nothing
// changes, except the terminal WritingCheck errors (ErrUnknownWriteAck,
// ErrAckForPendingBackup), after which the state is unspecified but equal
// between twins, and WriteBackupCP's injected failure, which rolls back.
type AckQueue interface {
	// DeclareNode adds a node with a device value of valueLen slots. id 0
	// mints the next id; otherwise id must be >= NextID (ids only grow).
	DeclareNode(id NodeID, valueLen int) (NodeID, error)
	// EvictDevice drops the node's device value (refused while locked).
	EvictDevice(id NodeID) error
	// Lock takes a request lock on the node.
	Lock(id NodeID) error
	// Unlock releases a request lock (ErrLockUnderflow without one).
	Unlock(id NodeID) error
	// AppendWriteAck is the funnel (§3.2 op 1), exposed for fault
	// injection: it pushes an ack naming arbitrary ids.
	AppendWriteAck(ids []NodeID) error
	// InjectDuplicateAck pushes a copy of the first queued ack naming id
	// through the funnel (§3.3 fault-injection mode).
	InjectDuplicateAck(id NodeID) error
	// NodeHasUndrainedWriteAck reports whether a queued ack names id (§3.2 op 2).
	NodeHasUndrainedWriteAck(id NodeID) bool
	// ReserveWriteCP registers a per-layer write of the node (§3.2 op 3).
	ReserveWriteCP(id NodeID, ownedPages int) error
	// LayerStep runs the forward's layer-l hook and returns the ids of the
	// merged final ack it appended (empty: none) (§3.2 op 4).
	LayerStep(l int) ([]NodeID, error)
	// WriteBackupCP is the write_backup fallback with an injected failure (§3.2 op 5).
	WriteBackupCP(id NodeID, ownedPages int, failAt FailAt) error
	// WriteNonCP is the upstream write-through path (§3.2 op 6).
	WriteNonCP(id NodeID) error
	// EventsComplete marks the first k unready acks ready (§3.2 op 7).
	EventsComplete(k int) error
	// ReadyPrefix counts the ready acks at the front (§3.2 op 8).
	ReadyPrefix() int
	// QueueLen is the number of queued acks.
	QueueLen() int
	// DuplicateAcks counts the duplicate-ack warnings since Reset.
	DuplicateAcks() int
	// WritingCheck drains agreed acks (§3.2 op 9).
	WritingCheck(agreed int) (DrainResult, error)
	// RollbackPendingBackup is write_backup's exception path (§3.2 op 11).
	RollbackPendingBackup(id NodeID) error
	// RollbackPreparedCPBackup is the prepare-path abort (§3.2 op 12).
	RollbackPreparedCPBackup(id NodeID) error
	// Reset clears everything (§3.2 op 13).
	Reset()
	// State returns the observable state.
	State() AckState
}

// NewAckQueueFunc constructs one rank's write state; ref.NewAckQueue and
// fast.NewAckQueue have this type.
type NewAckQueueFunc func(AckConfig) (AckQueue, error)

// MidLayersWritten is how many layers a mid_layers failure writes: [0, L/2).
func MidLayersWritten(numLayers int) int { return numLayers / 2 }

// ---- the reference implementation ----

type refAckNode struct {
	valueLen     int
	evicted      bool
	requestLocks int
	host         []SlotIdx
	backedUp     bool
}

type refReg struct {
	slots []SlotIdx
	owned int
	nonCP bool
}

type refPending struct {
	written []bool
}

// refAckQueue is the reference write state: maps, a plain FIFO, and the
// queue scan for every undrained-ack question.
type refAckQueue struct {
	cfg         AckConfig
	nodes       map[NodeID]*refAckNode
	nextID      NodeID
	ongoing     map[NodeID]*refReg
	pending     map[NodeID]*refPending
	regOrder    []NodeID
	queue       []Ack
	maxAppended NodeID
	completed   map[NodeID]bool
	duplicates  int
	// owner[s] is the id holding host slot s, or -1 when free.
	owner         []NodeID
	copied        int64
	foreign       int
	faultInjected bool
}

// NewAckQueue builds the reference write state of one rank (docs/spec/radix-acks.md
// §3.2) after validating cfg.
func NewAckQueue(cfg AckConfig) (AckQueue, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	q := &refAckQueue{cfg: cfg}
	q.Reset()
	return q, nil
}

// Reset is §3.2 op 13: everything cleared, max_appended -1, ids from 1.
func (q *refAckQueue) Reset() {
	q.nodes = map[NodeID]*refAckNode{}
	q.nextID = 1
	q.ongoing = map[NodeID]*refReg{}
	q.pending = map[NodeID]*refPending{}
	q.regOrder = nil
	q.queue = nil
	q.maxAppended = -1
	q.completed = map[NodeID]bool{}
	q.duplicates, q.copied, q.foreign, q.faultInjected = 0, 0, 0, false
	q.owner = make([]NodeID, q.cfg.HostCapacity)
	for i := range q.owner {
		q.owner[i] = -1
	}
}

func (q *refAckQueue) node(id NodeID) (*refAckNode, error) {
	n, ok := q.nodes[id]
	if !ok {
		return nil, UnknownNodeError(id)
	}
	return n, nil
}

func (q *refAckQueue) lockRef(id NodeID) int {
	n := q.nodes[id].requestLocks
	if _, ok := q.ongoing[id]; ok {
		n++
	}
	return n
}

// DeclareNode adds a node to the node table (§0.2: ids only grow).
func (q *refAckQueue) DeclareNode(id NodeID, valueLen int) (NodeID, error) {
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
func (q *refAckQueue) EvictDevice(id NodeID) error {
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
func (q *refAckQueue) Lock(id NodeID) error {
	n, err := q.node(id)
	if err != nil {
		return err
	}
	n.requestLocks++
	return nil
}

// Unlock releases a request lock; a registration's lock is not the caller's.
func (q *refAckQueue) Unlock(id NodeID) error {
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
func (q *refAckQueue) appendWriteAck(ids []NodeID) error {
	if err := CheckAppendIDs(ids); err != nil {
		return err
	}
	q.maxAppended = max(q.maxAppended, slices.Max(ids))
	q.queue = append(q.queue, Ack{NodeIDs: slices.Clone(ids)})
	return nil
}

// AppendWriteAck is the funnel used by fault injection (§3.3): the
// state is marked, which suspends W1–W3.
func (q *refAckQueue) AppendWriteAck(ids []NodeID) error {
	if err := q.appendWriteAck(ids); err != nil {
		return err
	}
	q.faultInjected = true
	return nil
}

// InjectDuplicateAck is §3.3's InjectDuplicateAck: a copy of the first
// queued ack naming id, pushed through the funnel.
func (q *refAckQueue) InjectDuplicateAck(id NodeID) error {
	for _, a := range q.queue {
		if slices.Contains(a.NodeIDs, id) {
			return q.AppendWriteAck(a.NodeIDs)
		}
	}
	return NotQueuedError(id)
}

// NodeHasUndrainedWriteAck scans the whole queue: the contract the fast
// twin's max-appended shortcut must equal (§3.3 W5).
func (q *refAckQueue) NodeHasUndrainedWriteAck(id NodeID) bool {
	for _, a := range q.queue {
		if slices.Contains(a.NodeIDs, id) {
			return true
		}
	}
	return false
}

// ReserveWriteCP is §3.2 op 3: the guards, then the registration and its
// per-layer written flags.
func (q *refAckQueue) ReserveWriteCP(id NodeID, ownedPages int) error {
	if err := q.reserve(id, ownedPages, false); err != nil {
		return err
	}
	q.pending[id] = &refPending{written: make([]bool, q.cfg.NumLayers)}
	q.regOrder = append(q.regOrder, id)
	return nil
}

// reserve runs the input checks and the four guards of §3.2 op 3 in order,
// then allocates host slots and registers the node (taking its lock).
func (q *refAckQueue) reserve(id NodeID, owned int, nonCP bool) error {
	n, err := q.node(id)
	if err != nil {
		return err
	}
	if err := CheckOwnedPages("owned", owned); err != nil {
		return err
	}
	switch {
	case n.evicted:
		return &HiCacheWriteFailure{Node: id, Reason: ReasonEvicted}
	case q.ongoing[id] != nil:
		return &HiCacheWriteFailure{Node: id, Reason: ReasonPending}
	case q.NodeHasUndrainedWriteAck(id):
		return &HiCacheWriteFailure{Node: id, Reason: ReasonUndrainedAck}
	case n.backedUp:
		return BackedUpError(id)
	}
	slots, ok := q.allocHost(n.valueLen)
	if !ok {
		return &HiCacheWriteFailure{Node: id, Reason: ReasonHostFull}
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
func (q *refAckQueue) allocHost(need int) ([]SlotIdx, bool) {
	if q.freeSlots() < need {
		victims, freed := q.hostVictims(need - q.freeSlots())
		if freed < need-q.freeSlots() {
			return nil, false
		}
		for _, v := range victims {
			q.freeHost(v)
		}
	}
	slots := []SlotIdx{}
	for s := range q.owner {
		if len(slots) == need {
			break
		}
		if q.owner[s] < 0 {
			slots = append(slots, SlotIdx(s))
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
func (q *refAckQueue) hostVictims(want int) ([]NodeID, int) {
	var victims []NodeID
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
func (q *refAckQueue) freeHost(id NodeID) {
	n := q.nodes[id]
	for _, s := range n.host {
		q.owner[s] = -1
	}
	n.host, n.backedUp = nil, false
}

// LayerStep is §3.2 op 4: layer l for every pending registration in
// registration order, then one merged final ack for those now complete.
func (q *refAckQueue) LayerStep(l int) ([]NodeID, error) {
	if l < 0 || l >= q.cfg.NumLayers {
		return nil, LayerRangeError(l, q.cfg.NumLayers)
	}
	for _, id := range q.regOrder {
		if p := q.pending[id]; !p.written[l] {
			q.copyLayer(id)
			p.written[l] = true
		}
	}
	return q.finishWritten(func(NodeID) bool { return true }), nil
}

// copyLayer copies one layer of the rank's owned pages of id into its
// registration's host slots: a no-op for a zero-owned rank. Each slot
// written that does not belong to id at this moment is a foreign write (W8).
func (q *refAckQueue) copyLayer(id NodeID) {
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
func (q *refAckQueue) finishWritten(sel func(NodeID) bool) []NodeID {
	done := []NodeID{}
	for _, id := range q.regOrder {
		if sel(id) && !slices.Contains(q.pending[id].written, false) {
			done = append(done, id)
		}
	}
	for _, id := range done {
		delete(q.pending, id)
		q.regOrder = slices.DeleteFunc(q.regOrder, func(x NodeID) bool { return x == id })
	}
	if len(done) > 0 {
		_ = q.appendWriteAck(done)
	}
	return done
}

// WriteBackupCP is §3.2 op 5: reserve, write all layers of this
// registration at once, and on the injected failure roll back and return it.
func (q *refAckQueue) WriteBackupCP(id NodeID, ownedPages int, failAt FailAt) error {
	if err := failAt.Validate("fail_at"); err != nil {
		return err
	}
	if err := q.ReserveWriteCP(id, ownedPages); err != nil {
		return err
	}
	layers := q.cfg.NumLayers
	if failAt == FailMidLayers {
		layers = MidLayersWritten(q.cfg.NumLayers)
	}
	for l := range layers {
		q.copyLayer(id)
		q.pending[id].written[l] = true
	}
	if failAt != FailMidLayers {
		q.finishWritten(func(x NodeID) bool { return x == id })
	}
	if failAt == FailMidLayers || failAt == FailAfterAck {
		_ = q.RollbackPendingBackup(id)
		return InjectedFailureError(failAt)
	}
	return nil
}

// WriteNonCP is §3.2 op 6: the same guards, a registration without layer
// state, and its ack at once.
func (q *refAckQueue) WriteNonCP(id NodeID) error {
	n, err := q.node(id)
	if err != nil {
		return err
	}
	if err := q.reserve(id, n.valueLen, true); err != nil {
		return err
	}
	return q.appendWriteAck([]NodeID{id})
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
func (q *refAckQueue) WritingCheck(agreed int) (DrainResult, error) {
	res := DrainResult{Completed: []NodeID{}}
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
func (q *refAckQueue) consume(id NodeID, res *DrainResult) error {
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
func (q *refAckQueue) scrubAcks(id NodeID) {
	kept := []Ack{}
	for _, a := range q.queue {
		a.NodeIDs = slices.DeleteFunc(slices.Clone(a.NodeIDs), func(x NodeID) bool { return x == id })
		if len(a.NodeIDs) > 0 {
			kept = append(kept, a)
		}
	}
	q.queue = kept
	q.pruneCompleted()
}

// RollbackPendingBackup is §3.2 op 11 (a)–(e).
func (q *refAckQueue) RollbackPendingBackup(id NodeID) error {
	reg := q.ongoing[id]
	if reg == nil {
		return NotRegisteredError(id)
	}
	// (a) the write-stream sync is implicit: layer copies are synchronous here.
	delete(q.pending, id) // (b)
	q.regOrder = slices.DeleteFunc(q.regOrder, func(x NodeID) bool { return x == id })
	q.scrubAcks(id)       // (c)
	delete(q.ongoing, id) // (d) the registration's lock goes with it
	q.freeHost(id)        // (e)
	return nil
}

// RollbackPreparedCPBackup is §3.2 op 12, identical to op 11.
func (q *refAckQueue) RollbackPreparedCPBackup(id NodeID) error {
	return q.RollbackPendingBackup(id)
}

// State returns the observable state: ongoing, completed and nodes in
// ascending id, pending in registration order, the queue front first.
func (q *refAckQueue) State() AckState {
	s := AckState{
		Config:        q.cfg,
		NextID:        q.nextID,
		MaxAppended:   q.maxAppended,
		Queue:         []Ack{},
		Ongoing:       []RegistrationState{},
		Pending:       []PendingState{},
		Completed:     slices.Sorted(maps.Keys(q.completed)),
		DuplicateAcks: q.duplicates,
		Nodes:         []AckNodeState{},
		HostFree:      q.freeSlots(),
		CopiedPages:   q.copied,
		ForeignWrites: q.foreign,
		FaultInjected: q.faultInjected,
	}
	if s.Completed == nil {
		s.Completed = []NodeID{}
	}
	for _, a := range q.queue {
		s.Queue = append(s.Queue, Ack{NodeIDs: slices.Clone(a.NodeIDs), Ready: a.Ready})
	}
	for _, id := range slices.Sorted(maps.Keys(q.ongoing)) {
		r := q.ongoing[id]
		s.Ongoing = append(s.Ongoing, RegistrationState{ID: id, HostSlots: slices.Clone(r.slots), OwnedPages: r.owned, NonCP: r.nonCP})
	}
	for _, id := range q.regOrder {
		s.Pending = append(s.Pending, PendingState{ID: id, Written: slices.Clone(q.pending[id].written)})
	}
	for _, id := range slices.Sorted(maps.Keys(q.nodes)) {
		n := q.nodes[id]
		host := slices.Clone(n.host)
		if host == nil {
			host = []SlotIdx{}
		}
		s.Nodes = append(s.Nodes, AckNodeState{ID: id, ValueLen: n.valueLen, Evicted: n.evicted,
			LockRef: q.lockRef(id), RequestLocks: n.requestLocks, HostValue: host, BackedUp: n.backedUp})
	}
	return s
}
