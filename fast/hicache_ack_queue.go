package fast

import (
	"cmp"
	"maps"
	"slices"

	"github.com/kvtwin/kvtwin/internal/fault"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// ackNode is one node of the write state's node table, with its
// registration, pending layer state and completed-ack mark attached, so
// the consumer and the guards find them without map lookups.
type ackNode struct {
	id           spec.NodeID
	valueLen     int
	evicted      bool
	requestLocks int
	host         []spec.SlotIdx
	backedUp     bool
	reg          *ackReg
	pend         *ackPend
	completed    bool
}

// ackReg is an ongoing registration (Ongoing).
type ackReg struct {
	slots []spec.SlotIdx
	owned int
	nonCP bool
}

// ackPend is a registration's layer-write state (PendingBk). It keeps its
// own view of the slots and owned pages, as the historic layer-write state
// did, which is what lets a stale one write into freed slots (B3.b).
type ackPend struct {
	node     *ackNode
	written  []bool
	nWritten int
	slots    []spec.SlotIdx
	owned    int
}

// AckQueue is the production write state of one rank (docs/spec/radix-acks.md §3.2):
// the max id ever appended, kept by the one append funnel, so that
// NodeHasUndrainedWriteAck on a freshly minted id is one compare; a FIFO
// with a moving head; per-layer written counts; a lowest-free hint for the
// host allocator. Its observable behaviour equals ref.NewAckQueue's. An
// AckQueue is not safe for concurrent use.
type AckQueue struct {
	cfg         spec.AckConfig
	nodes       map[spec.NodeID]*ackNode
	nextID      spec.NodeID
	ongoing     int
	regOrder    []*ackPend
	queue       []spec.Ack
	head        int
	maxAppended spec.NodeID
	completed   []*ackNode
	duplicates  int
	owner       []spec.NodeID
	free        int
	lowFree     int
	copied      int64
	foreign     int
	injected    bool
	// faults re-introduces historic bugs for the bug zoo; always zero in
	// write states built by NewAckQueue.
	faults fault.Ack
}

var _ spec.AckQueue = (*AckQueue)(nil)

// NewAckQueue builds the fast write state of one rank after validating cfg
// as ref.NewAckQueue does; it has type spec.NewAckQueueFunc.
func NewAckQueue(cfg spec.AckConfig) (spec.AckQueue, error) {
	return newAckQueueWithFaults(cfg, fault.Ack{})
}

// newAckQueueWithFaults is NewAckQueue with the historic bugs f selects put
// back, for the bug zoo only: fault.Hooks hands it to equiv/mutants
// (hooks.go). Called with the zero value it is NewAckQueue.
func newAckQueueWithFaults(cfg spec.AckConfig, f fault.Ack) (spec.AckQueue, error) {
	q, err := newAckQueue(cfg, f)
	if err != nil {
		return nil, err
	}
	return q, nil
}

func newAckQueue(cfg spec.AckConfig, f fault.Ack) (*AckQueue, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	q := &AckQueue{cfg: cfg, faults: f, owner: make([]spec.NodeID, cfg.HostCapacity)}
	q.Reset()
	return q, nil
}

// Reset clears everything (§3.2 op 13).
func (q *AckQueue) Reset() {
	q.nodes = map[spec.NodeID]*ackNode{}
	q.nextID, q.ongoing, q.maxAppended = 1, 0, -1
	q.regOrder, q.queue, q.head, q.completed = nil, nil, 0, nil
	q.duplicates, q.copied, q.foreign, q.injected = 0, 0, 0, false
	for i := range q.owner {
		q.owner[i] = -1
	}
	q.free, q.lowFree = len(q.owner), 0
}

func (q *AckQueue) node(id spec.NodeID) (*ackNode, error) {
	if n := q.nodes[id]; n != nil {
		return n, nil
	}
	return nil, ref.UnknownNodeError(id)
}

func (n *ackNode) lockRef() int {
	if n.reg != nil {
		return n.requestLocks + 1
	}
	return n.requestLocks
}

// DeclareNode adds a node to the node table.
func (q *AckQueue) DeclareNode(id spec.NodeID, valueLen int) (spec.NodeID, error) {
	if err := ref.CheckDeclareNode(id, valueLen, q.nextID); err != nil {
		return 0, err
	}
	if id == 0 {
		id = q.nextID
	}
	q.nodes[id] = &ackNode{id: id, valueLen: valueLen}
	q.nextID = id + 1
	return id, nil
}

// EvictDevice drops the node's device value; a locked node is refused.
func (q *AckQueue) EvictDevice(id spec.NodeID) error {
	n, err := q.node(id)
	if err != nil {
		return err
	}
	if lr := n.lockRef(); lr > 0 {
		return ref.LockedError(id, lr)
	}
	n.evicted = true
	return nil
}

// Lock takes a request lock.
func (q *AckQueue) Lock(id spec.NodeID) error {
	n, err := q.node(id)
	if err != nil {
		return err
	}
	n.requestLocks++
	return nil
}

// Unlock releases a request lock.
func (q *AckQueue) Unlock(id spec.NodeID) error {
	n, err := q.node(id)
	if err != nil {
		return err
	}
	if n.requestLocks == 0 {
		return ref.UnlockError(id)
	}
	n.requestLocks--
	return nil
}

// appendWriteAck is the funnel (§3.2 op 1): every push to the queue raises
// maxAppended here. ids must be non-empty and are copied.
func (q *AckQueue) appendWriteAck(ids []spec.NodeID) {
	q.maxAppended = max(q.maxAppended, slices.Max(ids))
	q.push(ids)
}

// push appends to the queue without touching maxAppended; only the funnel
// and the B3.a fault call it.
func (q *AckQueue) push(ids []spec.NodeID) {
	if q.head > 0 && q.head == len(q.queue) {
		q.queue, q.head = q.queue[:0], 0
	}
	q.queue = append(q.queue, spec.Ack{NodeIDs: slices.Clone(ids)})
}

// AppendWriteAck is the funnel exposed for fault injection.
func (q *AckQueue) AppendWriteAck(ids []spec.NodeID) error {
	if err := ref.CheckAppendIDs(ids); err != nil {
		return err
	}
	q.appendWriteAck(ids)
	q.injected = true
	return nil
}

// InjectDuplicateAck pushes a copy of the first queued ack naming id.
func (q *AckQueue) InjectDuplicateAck(id spec.NodeID) error {
	for _, a := range q.queue[q.head:] {
		if slices.Contains(a.NodeIDs, id) {
			return q.AppendWriteAck(a.NodeIDs)
		}
	}
	return ref.NotQueuedError(id)
}

// NodeHasUndrainedWriteAck answers from maxAppended when id was never
// appended (every freshly minted id: one compare), else by scanning.
func (q *AckQueue) NodeHasUndrainedWriteAck(id spec.NodeID) bool {
	if id > q.maxAppended {
		return false
	}
	for i := q.head; i < len(q.queue); i++ {
		if slices.Contains(q.queue[i].NodeIDs, id) {
			return true
		}
	}
	return false
}

// ReserveWriteCP registers a per-layer write (§3.2 op 3).
func (q *AckQueue) ReserveWriteCP(id spec.NodeID, ownedPages int) error {
	_, err := q.reserveCP(id, ownedPages)
	return err
}

// reserveCP reserves and creates the layer-write state; it reports whether
// a registration was made (the early-return fault skips it).
func (q *AckQueue) reserveCP(id spec.NodeID, owned int) (*ackNode, error) {
	n, err := q.node(id)
	if err != nil {
		return nil, err
	}
	if q.faults.ZeroOwnedReturnsEarly && owned == 0 {
		return nil, nil
	}
	if err := q.reserve(n, owned, false); err != nil {
		return nil, err
	}
	p := &ackPend{node: n, written: make([]bool, q.cfg.NumLayers), slots: n.reg.slots, owned: owned}
	n.pend = p
	q.regOrder = append(q.regOrder, p)
	return n, nil
}

// reserve runs the input checks and the four guards of §3.2 op 3 in
// order, then allocates host slots and registers n (taking its lock).
func (q *AckQueue) reserve(n *ackNode, owned int, nonCP bool) error {
	if err := ref.CheckOwnedPages("owned", owned); err != nil {
		return err
	}
	switch {
	case n.evicted:
		return &spec.HiCacheWriteFailure{Node: n.id, Reason: spec.ReasonEvicted}
	case n.reg != nil:
		return &spec.HiCacheWriteFailure{Node: n.id, Reason: spec.ReasonPending}
	case q.NodeHasUndrainedWriteAck(n.id):
		return &spec.HiCacheWriteFailure{Node: n.id, Reason: spec.ReasonUndrainedAck}
	case n.backedUp:
		return ref.BackedUpError(n.id)
	}
	if !q.makeRoom(n.valueLen) {
		return &spec.HiCacheWriteFailure{Node: n.id, Reason: spec.ReasonHostFull}
	}
	slots := make([]spec.SlotIdx, 0, n.valueLen)
	for s := q.lowFree; len(slots) < n.valueLen; s++ {
		if q.owner[s] < 0 {
			q.owner[s] = n.id
			slots = append(slots, spec.SlotIdx(s))
		}
	}
	q.free -= n.valueLen
	q.advanceLowFree()
	n.host = slots
	n.reg = &ackReg{slots: slots, owned: owned, nonCP: nonCP}
	q.ongoing++
	return nil
}

func (q *AckQueue) advanceLowFree() {
	for q.lowFree < len(q.owner) && q.owner[q.lowFree] >= 0 {
		q.lowFree++
	}
}

// makeRoom is evict_host's one retry (§3.1), as in ref: when too few slots
// are free, free the host copies of unlocked, device-evicted, backed-up
// nodes in ascending id, but only when that makes enough room.
func (q *AckQueue) makeRoom(need int) bool {
	if q.free >= need {
		return true
	}
	var victims []*ackNode
	freed := 0
	for _, id := range slices.Sorted(maps.Keys(q.nodes)) {
		if q.free+freed >= need {
			break
		}
		if n := q.nodes[id]; n.backedUp && n.evicted && n.lockRef() == 0 {
			victims = append(victims, n)
			freed += len(n.host)
		}
	}
	if q.free+freed < need {
		return false
	}
	for _, n := range victims {
		q.freeHost(n)
	}
	return true
}

func (q *AckQueue) freeHost(n *ackNode) {
	for _, s := range n.host {
		q.owner[s] = -1
		q.lowFree = min(q.lowFree, int(s))
	}
	q.free += len(n.host)
	n.host, n.backedUp = nil, false
}

// LayerStep runs layer l for every pending registration and appends one
// merged final ack for those it completed (§3.2 op 4).
func (q *AckQueue) LayerStep(l int) ([]spec.NodeID, error) {
	if l < 0 || l >= q.cfg.NumLayers {
		return nil, ref.LayerRangeError(l, q.cfg.NumLayers)
	}
	for _, p := range q.regOrder {
		if !p.written[l] {
			q.copyLayer(p, l)
		}
	}
	return q.finish(nil), nil
}

func (q *AckQueue) copyLayer(p *ackPend, l int) {
	p.written[l] = true
	p.nWritten++
	if p.owned == 0 {
		return
	}
	q.copied += int64(p.owned)
	for _, s := range p.slots {
		if q.owner[s] != p.node.id {
			q.foreign++
		}
	}
}

// finish removes the completed layer states (only: when non-nil) in
// registration order and appends their merged final ack.
func (q *AckQueue) finish(only *ackPend) []spec.NodeID {
	done := []spec.NodeID{}
	zeroOwned := true
	kept := q.regOrder[:0]
	for _, p := range q.regOrder {
		if p.nWritten == len(p.written) && (only == nil || p == only) {
			done = append(done, p.node.id)
			zeroOwned = zeroOwned && p.owned == 0
			if p.node.pend == p {
				p.node.pend = nil
			}
			continue
		}
		kept = append(kept, p)
	}
	clear(q.regOrder[len(kept):])
	q.regOrder = kept
	switch {
	case len(done) == 0:
	case zeroOwned && q.faults.FunnelBypass:
		q.push(done)
	default:
		q.appendWriteAck(done)
	}
	return done
}

// WriteBackupCP is the write_backup fallback (§3.2 op 5).
func (q *AckQueue) WriteBackupCP(id spec.NodeID, ownedPages int, failAt spec.FailAt) error {
	if err := failAt.Validate("fail_at"); err != nil {
		return err
	}
	n, err := q.reserveCP(id, ownedPages)
	if err != nil || n == nil {
		return err
	}
	p := n.pend
	layers := q.cfg.NumLayers
	if failAt == spec.FailMidLayers {
		layers = ref.MidLayersWritten(layers)
	}
	for l := range layers {
		q.copyLayer(p, l)
	}
	if failAt != spec.FailMidLayers {
		q.finish(p)
	}
	if failAt == spec.FailMidLayers || failAt == spec.FailAfterAck {
		q.rollback(n, !q.faults.RollbackNoScrub)
		return ref.InjectedFailureError(failAt)
	}
	return nil
}

// WriteNonCP is the upstream write-through path (§3.2 op 6).
func (q *AckQueue) WriteNonCP(id spec.NodeID) error {
	n, err := q.node(id)
	if err != nil {
		return err
	}
	if err := q.reserve(n, n.valueLen, true); err != nil {
		return err
	}
	if q.faults.FunnelBypass {
		q.push([]spec.NodeID{id})
	} else {
		q.appendWriteAck([]spec.NodeID{id})
	}
	return nil
}

// EventsComplete marks the first k unready acks ready (§3.2 op 7).
func (q *AckQueue) EventsComplete(k int) error {
	first := q.head + q.ReadyPrefix()
	if err := ref.CheckEventsComplete(k, len(q.queue)-first); err != nil {
		return err
	}
	for i := first; i < first+k; i++ {
		q.queue[i].Ready = true
	}
	return nil
}

// ReadyPrefix counts the ready acks at the front (§3.2 op 8).
func (q *AckQueue) ReadyPrefix() int {
	n := q.head
	for n < len(q.queue) && q.queue[n].Ready {
		n++
	}
	return n - q.head
}

// QueueLen is the number of queued acks.
func (q *AckQueue) QueueLen() int { return len(q.queue) - q.head }

// DuplicateAcks counts the duplicate-ack warnings since Reset.
func (q *AckQueue) DuplicateAcks() int { return q.duplicates }

// WritingCheck is the consumer (§3.2 op 9).
func (q *AckQueue) WritingCheck(agreed int) (spec.DrainResult, error) {
	res := spec.DrainResult{Completed: []spec.NodeID{}}
	if err := ref.CheckAgreed(agreed, q.ReadyPrefix()); err != nil {
		return res, err
	}
	if q.ongoing == 0 && (q.faults.EarlyReturnOnEmptyOngoing || q.head == len(q.queue)) {
		return res, nil
	}
	for range agreed {
		a := q.queue[q.head]
		q.queue[q.head] = spec.Ack{}
		q.head++
		res.Popped++
		for _, id := range a.NodeIDs {
			if err := q.consume(id, &res); err != nil {
				return res, err
			}
		}
	}
	q.compact()
	q.prune()
	return res, nil
}

// compact moves the live queue to the front once the drained head is at
// least half the backing array, so draining stays amortised O(1) per ack.
func (q *AckQueue) compact() {
	if q.head == 0 || 2*q.head < len(q.queue) {
		return
	}
	n := copy(q.queue, q.queue[q.head:])
	clear(q.queue[n:])
	q.queue, q.head = q.queue[:n], 0
}

func (q *AckQueue) consume(id spec.NodeID, res *spec.DrainResult) error {
	n := q.nodes[id]
	switch {
	case n != nil && n.pend != nil:
		return ref.PendingAckError(id)
	case n != nil && n.reg != nil:
		n.reg = nil
		q.ongoing--
		n.backedUp = true
		res.Completed = append(res.Completed, id)
		if !q.faults.ForgetCompleted && !n.completed {
			n.completed = true
			q.completed = append(q.completed, n)
		}
	case n != nil && n.completed:
		res.Duplicates++
		q.duplicates++
	case q.faults.BlindPop:
	default:
		return ref.UnknownAckError(id)
	}
	return nil
}

// prune forgets completed ids no queued ack names, in one pass over the queue.
func (q *AckQueue) prune() {
	if len(q.completed) == 0 {
		return
	}
	queued := map[spec.NodeID]bool{}
	for _, a := range q.queue[q.head:] {
		for _, id := range a.NodeIDs {
			queued[id] = true
		}
	}
	kept := q.completed[:0]
	for _, n := range q.completed {
		if queued[n.id] {
			kept = append(kept, n)
		} else {
			n.completed = false
		}
	}
	clear(q.completed[len(kept):])
	q.completed = kept
}

// scrub removes id from every queued ack and drops acks left empty (§3.2 op 10).
func (q *AckQueue) scrub(id spec.NodeID) {
	live := q.queue[q.head:]
	kept := live[:0]
	for _, a := range live {
		if slices.Contains(a.NodeIDs, id) {
			a.NodeIDs = slices.DeleteFunc(slices.Clone(a.NodeIDs), func(x spec.NodeID) bool { return x == id })
		}
		if len(a.NodeIDs) > 0 {
			kept = append(kept, a)
		}
	}
	clear(live[len(kept):])
	q.queue = q.queue[:q.head+len(kept)]
	q.prune()
}

// RollbackPendingBackup is write_backup's exception path (§3.2 op 11).
func (q *AckQueue) RollbackPendingBackup(id spec.NodeID) error {
	n := q.nodes[id]
	if n == nil || n.reg == nil {
		return ref.NotRegisteredError(id)
	}
	q.rollback(n, !q.faults.RollbackNoScrub)
	return nil
}

// RollbackPreparedCPBackup is the prepare-path abort (§3.2 op 12); it
// scrubbed even before the fix.
func (q *AckQueue) RollbackPreparedCPBackup(id spec.NodeID) error {
	n := q.nodes[id]
	if n == nil || n.reg == nil {
		return ref.NotRegisteredError(id)
	}
	q.rollback(n, true)
	return nil
}

// rollback is §3.2 op 11 (a)–(e); the write-stream sync (a) is implicit
// because layer copies are synchronous here.
func (q *AckQueue) rollback(n *ackNode, scrub bool) {
	if p := n.pend; p != nil && !q.faults.RollbackKeepsLayerState {
		n.pend = nil
		q.regOrder = slices.DeleteFunc(q.regOrder, func(x *ackPend) bool { return x == p })
	}
	if scrub {
		q.scrub(n.id)
	}
	n.reg = nil
	q.ongoing--
	q.freeHost(n)
}

// State returns the observable state, in the orders ref uses.
func (q *AckQueue) State() spec.AckState {
	s := spec.AckState{
		Config: q.cfg, NextID: q.nextID, MaxAppended: q.maxAppended,
		Queue: make([]spec.Ack, 0, len(q.queue)-q.head), Ongoing: []spec.RegistrationState{},
		Pending: make([]spec.PendingState, 0, len(q.regOrder)), Completed: make([]spec.NodeID, 0, len(q.completed)),
		DuplicateAcks: q.duplicates, Nodes: make([]spec.AckNodeState, 0, len(q.nodes)), HostFree: q.free,
		CopiedPages: q.copied, ForeignWrites: q.foreign, FaultInjected: q.injected,
	}
	for _, a := range q.queue[q.head:] {
		s.Queue = append(s.Queue, spec.Ack{NodeIDs: slices.Clone(a.NodeIDs), Ready: a.Ready})
	}
	for _, p := range q.regOrder {
		s.Pending = append(s.Pending, spec.PendingState{ID: p.node.id, Written: slices.Clone(p.written)})
	}
	for _, n := range q.completed {
		s.Completed = append(s.Completed, n.id)
	}
	slices.Sort(s.Completed)
	ids := slices.Sorted(maps.Keys(q.nodes))
	for _, id := range ids {
		n := q.nodes[id]
		host := slices.Clone(n.host)
		if host == nil {
			host = []spec.SlotIdx{}
		}
		s.Nodes = append(s.Nodes, spec.AckNodeState{ID: id, ValueLen: n.valueLen, Evicted: n.evicted, LockRef: n.lockRef(),
			RequestLocks: n.requestLocks, HostValue: host, BackedUp: n.backedUp})
		if r := n.reg; r != nil {
			s.Ongoing = append(s.Ongoing, spec.RegistrationState{ID: id, HostSlots: slices.Clone(r.slots), OwnedPages: r.owned, NonCP: r.nonCP})
		}
	}
	slices.SortFunc(s.Ongoing, func(a, b spec.RegistrationState) int { return cmp.Compare(a.ID, b.ID) })
	return s
}
