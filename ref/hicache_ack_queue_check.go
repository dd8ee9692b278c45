package ref

import (
	"fmt"

	"github.com/kvtwin/kvtwin/spec"
)

// Validation for the HiCache write-ack queue (docs/spec/radix-acks.md §3): sentinels, bounds, argument checks and rejections.

// Write-ack sentinels (docs/spec/radix-acks.md §0.3, §3.6).
var (
	// errEmptyAck: appendWriteAck with no ids.
	errEmptyAck = spec.NewSentinel("empty_ack", "an ack must name at least one node")
	// errDrainBeyondReady: WritingCheck asked to pop more acks than are ready.
	errDrainBeyondReady = spec.NewSentinel("drain_beyond_ready", "agreed drain count exceeds the ready prefix")
	// errNotRegistered: a rollback of an id with no ongoing registration.
	errNotRegistered = spec.NewSentinel("not_registered", "no ongoing write registration for this node")
	// errOwnedPages: an owned page count above MaxOwnedPages.
	errOwnedPages = spec.NewSentinel("owned_pages", "owned page count too large")
	// errNodeIDTaken: a declared node id that was already minted (ids only grow, §0.2).
	errNodeIDTaken = spec.NewSentinel("node_id_taken", "node ids are minted in increasing order")
	// errNodeLocked: evicting the device value of a locked node.
	errNodeLocked = spec.NewSentinel("node_locked", "a locked node cannot be evicted")
	// errAlreadyBackedUp: reserving a write for a node that already holds a host copy.
	errAlreadyBackedUp = spec.NewSentinel("already_backed_up", "node already holds a host copy")
	// errEventsBeyondQueue: completing more write events than there are unready acks.
	errEventsBeyondQueue = spec.NewSentinel("events_beyond_queue", "more events completed than unready acks")
)

// The rejections below are written once so both twins report byte-equal
// errors.

// UnknownNodeError rejects a node id that is not in the node table.
func UnknownNodeError(id spec.NodeID) error { return ForeignNodeError(id) }

// CheckDeclareNode validates DeclareNode's arguments against nextID.
func CheckDeclareNode(id spec.NodeID, valueLen int, nextID spec.NodeID) error {
	switch {
	case id < 0:
		return spec.Reject(spec.ErrNegative, "node", id, ">= 0")
	case id > spec.MaxAckNodeID:
		return spec.Reject(spec.ErrOverflow, "node", id, fmt.Sprintf("<= %d", spec.MaxAckNodeID))
	case id != 0 && id < nextID:
		return spec.Reject(errNodeIDTaken, "node", id, fmt.Sprintf(">= next_id (%d), or 0 for the next id", nextID))
	case valueLen < 0:
		return spec.Reject(spec.ErrNegative, "value_len", valueLen, ">= 0")
	}
	return nil
}

// CheckOwnedPages rejects a negative owned count or one above MaxOwnedPages;
// field names it.
func CheckOwnedPages(field string, owned int) error {
	if owned < 0 {
		return spec.Reject(spec.ErrNegative, field, owned, ">= 0")
	}
	if owned > spec.MaxOwnedPages {
		return spec.Reject(errOwnedPages, field, owned, fmt.Sprintf("<= %d", spec.MaxOwnedPages))
	}
	return nil
}

// CheckAppendIDs validates a funnel append: at least one id, none negative.
func CheckAppendIDs(ids []spec.NodeID) error {
	if len(ids) == 0 {
		return spec.Reject(errEmptyAck, "ids", 0, ">= 1 id")
	}
	return CheckNonNegative("ids", ids)
}

// LayerRangeError rejects a layer outside [0, L).
func LayerRangeError(l, numLayers int) error {
	return spec.Reject(spec.ErrLayerOutOfOrder, "layer", l, fmt.Sprintf("in [0, num_layers=%d)", numLayers))
}

// NotRegisteredError rejects a rollback of an id not in Ongoing.
func NotRegisteredError(id spec.NodeID) error {
	return spec.Reject(errNotRegistered, "node", id, "an id with an ongoing registration")
}

// NotQueuedError rejects a duplicate injection of an id no queued ack names.
func NotQueuedError(id spec.NodeID) error {
	return spec.Reject(spec.ErrUnknownWriteAck, "node", id, "an id named by a queued ack")
}

// LockedError rejects evicting a locked node.
func LockedError(id spec.NodeID, lockRef int) error {
	return spec.Reject(errNodeLocked, "node", id, fmt.Sprintf("lock_ref 0 (has %d)", lockRef))
}

// UnlockError rejects an unlock of a node without request locks.
func UnlockError(id spec.NodeID) error {
	return spec.Reject(spec.ErrLockUnderflow, "node", id, "a node with a request lock")
}

// BackedUpError rejects a reservation of a node that already has a host copy.
func BackedUpError(id spec.NodeID) error {
	return spec.Reject(errAlreadyBackedUp, "node", id, "a node without a host copy")
}

// CheckEventsComplete rejects k < 0 and k above the unready acks.
func CheckEventsComplete(k, unready int) error {
	if k < 0 {
		return spec.Reject(spec.ErrNegative, "k", k, ">= 0")
	}
	if k > unready {
		return spec.Reject(errEventsBeyondQueue, "k", k, fmt.Sprintf("<= unready acks (%d)", unready))
	}
	return nil
}

// CheckAgreed rejects a negative drain count and one above the ready prefix.
func CheckAgreed(agreed, ready int) error {
	if agreed < 0 {
		return spec.Reject(spec.ErrNegative, "agreed", agreed, ">= 0")
	}
	if agreed > ready {
		return spec.Reject(errDrainBeyondReady, "agreed", agreed, fmt.Sprintf("<= ready_prefix (%d)", ready))
	}
	return nil
}

// PendingAckError is the terminal error of a drained ack naming a pending registration.
func PendingAckError(id spec.NodeID) error {
	return spec.Reject(spec.ErrAckForPendingBackup, "ack", id, "an id whose layers are all written")
}

// UnknownAckError is the terminal error of a drained ack naming an unknown id.
func UnknownAckError(id spec.NodeID) error {
	return spec.Reject(spec.ErrUnknownWriteAck, "ack", id, "an ongoing or recently completed id")
}

// InjectedFailureError is WriteBackupCP's injected exception.
func InjectedFailureError(f spec.FailAt) error {
	return spec.Reject(spec.ErrWriteBackupFailed, "fail_at", string(f), "none (the exception was injected)")
}
