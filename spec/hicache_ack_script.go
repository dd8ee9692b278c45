package spec

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
