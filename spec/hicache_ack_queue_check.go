package spec

var (
	// ErrAckForPendingBackup: a drained ack names a registration whose layers are not all written (terminal).
	ErrAckForPendingBackup = NewSentinel("ack_for_pending_backup", "final ack for a registration with unwritten layers")
	// ErrUnknownWriteAck: a drained ack names an id neither ongoing nor recently completed (terminal).
	ErrUnknownWriteAck = NewSentinel("unknown_write_ack", "ack for an id neither ongoing nor recently completed")
	// ErrHiCacheWriteFailure is the sentinel every *HiCacheWriteFailure unwraps to.
	ErrHiCacheWriteFailure = NewSentinel("hicache_write_failure", "write-through refused this round")
	// ErrWriteBackupFailed: the injected write_backup exception (§3.2 op 5); the registration was rolled back.
	ErrWriteBackupFailed = NewSentinel("write_backup_failed", "write_backup raised; its registration was rolled back")
	// ErrBadNumLayers: a write state with fewer than one layer.
	ErrBadNumLayers = NewSentinel("bad_num_layers", "num_layers must be >= 1")
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
