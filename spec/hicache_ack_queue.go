package spec

import (
	"fmt"
)

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

// Unwrap lets errors.Is(err, ErrHiCacheWriteFailure) match every reason.
func (e *HiCacheWriteFailure) Unwrap() error { return ErrHiCacheWriteFailure }

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
