package ref

import "fmt"

// Validation for the HiCache write-ack queue (docs/spec/radix-acks.md §3): sentinels, bounds, argument checks and rejections.

// Write-ack sentinels (docs/spec/radix-acks.md §0.3, §3.6).
var (
	// errEmptyAck: appendWriteAck with no ids.
	errEmptyAck = NewSentinel("empty_ack", "an ack must name at least one node")
	// errDrainBeyondReady: WritingCheck asked to pop more acks than are ready.
	errDrainBeyondReady = NewSentinel("drain_beyond_ready", "agreed drain count exceeds the ready prefix")
	// ErrAckForPendingBackup: a drained ack names a registration whose layers are not all written (terminal).
	ErrAckForPendingBackup = NewSentinel("ack_for_pending_backup", "final ack for a registration with unwritten layers")
	// ErrUnknownWriteAck: a drained ack names an id neither ongoing nor recently completed (terminal).
	ErrUnknownWriteAck = NewSentinel("unknown_write_ack", "ack for an id neither ongoing nor recently completed")
	// errNotRegistered: a rollback of an id with no ongoing registration.
	errNotRegistered = NewSentinel("not_registered", "no ongoing write registration for this node")
	// errHiCacheWriteFailure is the sentinel every *HiCacheWriteFailure unwraps to.
	errHiCacheWriteFailure = NewSentinel("hicache_write_failure", "write-through refused this round")
	// ErrWriteBackupFailed: the injected write_backup exception (§3.2 op 5); the registration was rolled back.
	ErrWriteBackupFailed = NewSentinel("write_backup_failed", "write_backup raised; its registration was rolled back")
	// ErrBadNumLayers: a write state with fewer than one layer.
	ErrBadNumLayers = NewSentinel("bad_num_layers", "num_layers must be >= 1")
	// errOwnedPages: an owned page count above MaxOwnedPages.
	errOwnedPages = NewSentinel("owned_pages", "owned page count too large")
	// errNodeIDTaken: a declared node id that was already minted (ids only grow, §0.2).
	errNodeIDTaken = NewSentinel("node_id_taken", "node ids are minted in increasing order")
	// errNodeLocked: evicting the device value of a locked node.
	errNodeLocked = NewSentinel("node_locked", "a locked node cannot be evicted")
	// errAlreadyBackedUp: reserving a write for a node that already holds a host copy.
	errAlreadyBackedUp = NewSentinel("already_backed_up", "node already holds a host copy")
	// errEventsBeyondQueue: completing more write events than there are unready acks.
	errEventsBeyondQueue = NewSentinel("events_beyond_queue", "more events completed than unready acks")
)

// MaxOwnedPages bounds one rank's owned page count, so the copied-pages
// counter cannot overflow. Owned pages are not bounded by the node's
// length: the model does not know the page size (§3.2 needs only whether
// the count is zero).
const MaxOwnedPages = 1 << 20

// MaxAckNodeID bounds declared node ids, so nextID+2 (§3.3 W5) never overflows.
const MaxAckNodeID NodeID = 1 << 40

// Validate rejects an unknown injection point with ErrBadEnum.
func (f FailAt) Validate(field string) error {
	switch f {
	case "", FailNone, FailMidLayers, FailAfterAck:
		return nil
	}
	return Reject(ErrBadEnum, field, string(f), "one of none, mid_layers, after_ack")
}

// Validate rejects num_layers < 1 and a negative host capacity.
func (c AckConfig) Validate() error {
	if c.NumLayers < 1 {
		return Reject(ErrBadNumLayers, "num_layers", c.NumLayers, ">= 1")
	}
	if c.HostCapacity < 0 {
		return Reject(ErrNegative, "host_capacity", c.HostCapacity, ">= 0")
	}
	return nil
}

// The rejections below are written once so both twins report byte-equal
// errors.

// UnknownNodeError rejects a node id that is not in the node table.
func UnknownNodeError(id NodeID) error { return ForeignNodeError(id) }

// CheckDeclareNode validates DeclareNode's arguments against nextID.
func CheckDeclareNode(id NodeID, valueLen int, nextID NodeID) error {
	switch {
	case id < 0:
		return Reject(ErrNegative, "node", id, ">= 0")
	case id > MaxAckNodeID:
		return Reject(ErrOverflow, "node", id, fmt.Sprintf("<= %d", MaxAckNodeID))
	case id != 0 && id < nextID:
		return Reject(errNodeIDTaken, "node", id, fmt.Sprintf(">= next_id (%d), or 0 for the next id", nextID))
	case valueLen < 0:
		return Reject(ErrNegative, "value_len", valueLen, ">= 0")
	}
	return nil
}

// CheckOwnedPages rejects a negative owned count or one above MaxOwnedPages;
// field names it.
func CheckOwnedPages(field string, owned int) error {
	if owned < 0 {
		return Reject(ErrNegative, field, owned, ">= 0")
	}
	if owned > MaxOwnedPages {
		return Reject(errOwnedPages, field, owned, fmt.Sprintf("<= %d", MaxOwnedPages))
	}
	return nil
}

// CheckAppendIDs validates a funnel append: at least one id, none negative.
func CheckAppendIDs(ids []NodeID) error {
	if len(ids) == 0 {
		return Reject(errEmptyAck, "ids", 0, ">= 1 id")
	}
	return CheckNonNegative("ids", ids)
}

// LayerRangeError rejects a layer outside [0, L).
func LayerRangeError(l, numLayers int) error {
	return Reject(ErrLayerOutOfOrder, "layer", l, fmt.Sprintf("in [0, num_layers=%d)", numLayers))
}

// NotRegisteredError rejects a rollback of an id not in Ongoing.
func NotRegisteredError(id NodeID) error {
	return Reject(errNotRegistered, "node", id, "an id with an ongoing registration")
}

// NotQueuedError rejects a duplicate injection of an id no queued ack names.
func NotQueuedError(id NodeID) error {
	return Reject(ErrUnknownWriteAck, "node", id, "an id named by a queued ack")
}

// LockedError rejects evicting a locked node.
func LockedError(id NodeID, lockRef int) error {
	return Reject(errNodeLocked, "node", id, fmt.Sprintf("lock_ref 0 (has %d)", lockRef))
}

// UnlockError rejects an unlock of a node without request locks.
func UnlockError(id NodeID) error {
	return Reject(ErrLockUnderflow, "node", id, "a node with a request lock")
}

// BackedUpError rejects a reservation of a node that already has a host copy.
func BackedUpError(id NodeID) error {
	return Reject(errAlreadyBackedUp, "node", id, "a node without a host copy")
}

// CheckEventsComplete rejects k < 0 and k above the unready acks.
func CheckEventsComplete(k, unready int) error {
	if k < 0 {
		return Reject(ErrNegative, "k", k, ">= 0")
	}
	if k > unready {
		return Reject(errEventsBeyondQueue, "k", k, fmt.Sprintf("<= unready acks (%d)", unready))
	}
	return nil
}

// CheckAgreed rejects a negative drain count and one above the ready prefix.
func CheckAgreed(agreed, ready int) error {
	if agreed < 0 {
		return Reject(ErrNegative, "agreed", agreed, ">= 0")
	}
	if agreed > ready {
		return Reject(errDrainBeyondReady, "agreed", agreed, fmt.Sprintf("<= ready_prefix (%d)", ready))
	}
	return nil
}

// PendingAckError is the terminal error of a drained ack naming a pending registration.
func PendingAckError(id NodeID) error {
	return Reject(ErrAckForPendingBackup, "ack", id, "an id whose layers are all written")
}

// UnknownAckError is the terminal error of a drained ack naming an unknown id.
func UnknownAckError(id NodeID) error {
	return Reject(ErrUnknownWriteAck, "ack", id, "an ongoing or recently completed id")
}

// InjectedFailureError is WriteBackupCP's injected exception.
func InjectedFailureError(f FailAt) error {
	return Reject(ErrWriteBackupFailed, "fail_at", string(f), "none (the exception was injected)")
}
