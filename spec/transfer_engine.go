package spec

import (
	"time"
)

// Engine is the Mooncake batch API of docs/spec/transfer.md §0.
type Engine interface {
	// SyncTransfer copies every block and returns 0, or a negative status on failure.
	SyncTransfer(session string, blocks []Block) int
	// SubmitAsync hands blocks to the engine and returns a batch id; 0
	// means the submit failed. It must not block (§4.3 SubmitGroup step 7
	// calls it under the context lock).
	SubmitAsync(session string, blocks []Block) uint64
	// WaitBatches blocks until every listed batch finished; 0 iff all succeeded.
	WaitBatches(ids []uint64) int
}

// Engine call kinds (EngineCall.Kind).
const (
	// CallSync is a SyncTransfer.
	CallSync = "sync"
	// CallAsync is a SubmitAsync.
	CallAsync = "async"
	// CallWait is a WaitBatches.
	CallWait = "wait"
)

// EngineFault names an injectable engine failure (§4.9).
type EngineFault string

// The injectable engine faults: the next call of the kind fails.
const (
	// FaultSubmit: the next SubmitAsync returns batch id 0.
	FaultSubmit EngineFault = "submit"
	// FaultWait: the next WaitBatches fails every batch it waits.
	FaultWait EngineFault = "wait"
	// FaultSync: the next SyncTransfer returns -1 and copies nothing.
	FaultSync EngineFault = "sync"
)

// validate rejects an unknown fault with ErrBadEnum.
func (f EngineFault) Validate(field string) error {
	switch f {
	case FaultSubmit, FaultWait, FaultSync:
		return nil
	}
	return Reject(ErrBadEnum, field, string(f), "one of submit, wait, sync")
}

// EngineCall is one recorded engine call, in call order.
type EngineCall struct {
	// Kind is CallSync, CallAsync or CallWait.
	Kind string `json:"kind"`
	// Session names the context that made the call (sync, async).
	Session string `json:"session,omitempty"`
	// Batch is the id an async submit returned (0: the submit failed).
	Batch uint64 `json:"batch,omitempty"`
	// Batches are the ids a wait listed.
	Batches []uint64 `json:"batches,omitempty"`
	// Blocks are the blocks handed over (sync, async).
	Blocks []Block `json:"blocks,omitempty"`
	// Status is the call's status (0 ok, -1 failed); for async, -1 iff the id is 0.
	Status int `json:"status"`
}

// Event is a recorded point on the compute stream (§4.4 step 4, §4.9).
type Event interface {
	// ID is the event's sequence number (1, 2, … per factory), for traces.
	ID() int
	// Wait blocks until the event completes or timeout passes; it returns
	// nil, the completion error, or errEventTimeout.
	Wait(timeout time.Duration) error
	// Query reports without blocking whether the event completed (cudaEventQuery).
	Query() bool
}

// EventFactory records one event per call (§4.4 step 4).
type EventFactory interface {
	// Record records the next event. It must not block.
	Record() Event
}
