package spec

import (
	"log/slog"
	"time"
)

// PerLayerConfig is the manager's configuration (§4.1).
type PerLayerConfig struct {
	// Hooked is H, the number of layers whose write hook fires; in [0, MaxTransferLayers].
	Hooked int `json:"hooked"`
	// Group is K, the layers per submit; >= 1 (1 means per-layer).
	Group int `json:"group"`
}

// IsBoundary reports whether layer l closes a group: every K-th layer and
// the last hooked one (§4.4 OnLayerEnd step 2).
func (c PerLayerConfig) IsBoundary(l int) bool { return (l+1)%c.Group == 0 || l+1 == c.Hooked }

// GroupStart is the first layer of l's group, (l/K)*K.
func (c PerLayerConfig) GroupStart(l int) int { return l / c.Group * c.Group }

// LayerPlan is what build_per_layer_context produced for one chunk (§4.2):
// the engine session and, per transfer entry l in [0, N), its blocks
// (build_layer_blocks). len(Blocks) is the context's N.
type LayerPlan struct {
	// Session names the decode session (and the context in engine logs).
	Session string
	// Blocks[l] are entry l's blocks; may be empty (an empty-layer skip).
	Blocks [][]Block
}

// BuildFunc builds a chunk's plan; nil means "use the monolithic send".
type BuildFunc func() *LayerPlan

// ContextState is the observable state of one context (§4.3).
type ContextState struct {
	// Room is the request's bootstrap room.
	Room uint64 `json:"room"`
	// Chunk is the chunk key (start_send_idx).
	Chunk int64 `json:"chunk"`
	// Session is the plan's session.
	Session string `json:"session"`
	// Layers is N.
	Layers int `json:"layers"`
	// Enqueued are the layers NoteEnqueued accepted, ascending; never nil.
	Enqueued []int `json:"enqueued"`
	// Target is the completion target: |Enqueued| (the count of accepted notes).
	Target int `json:"target"`
	// Submitted are the layers handed to the engine (async or sync), ascending; never nil.
	Submitted []int `json:"submitted"`
	// Processed counts layers the workers are done with.
	Processed int `json:"processed"`
	// Batches are the async batch ids, in submit order; never nil.
	Batches []uint64 `json:"batches"`
	// Failed is set once a failure was recorded.
	Failed bool `json:"failed,omitempty"`
	// Reason is the first failure's reason.
	Reason string `json:"reason,omitempty"`
	// Sealed is set once Finish or Drain started: no more enqueues.
	Sealed bool `json:"sealed,omitempty"`
	// Finished is set once Finish or Drain completed.
	Finished bool `json:"finished,omitempty"`
	// Status is the final status (0 or -1) once Finished.
	Status int `json:"status"`
}

// RoomState is one room's FIFO of contexts, front first.
type RoomState struct {
	// Room is the bootstrap room.
	Room uint64 `json:"room"`
	// Contexts are the registered, unfinished chunks in send order.
	Contexts []ContextState `json:"contexts"`
}

// WorkItemState is one queued work item.
type WorkItemState struct {
	// Room and Chunk name the context.
	Room uint64 `json:"room"`
	// Chunk is the context's chunk key.
	Chunk int64 `json:"chunk"`
	// Session is the context's session (distinguishes an orphaned context).
	Session string `json:"session"`
	// Layers are the newly enqueued layers.
	Layers []int `json:"layers"`
	// Event is the id of the boundary event the item waits on.
	Event int `json:"event"`
}

// PerLayerState is the manager's whole observable state.
type PerLayerState struct {
	// Forward is set between ForwardBegin and ForwardEnd.
	Forward bool `json:"forward"`
	// Builds counts build calls (§4.8.8: a deduplicated Register builds nothing).
	Builds int `json:"builds"`
	// Events counts recorded boundary events.
	Events int `json:"events"`
	// Rooms are the active rooms in activation order; never nil.
	Rooms []RoomState `json:"rooms"`
	// Queue is the work queue, front first; never nil.
	Queue []WorkItemState `json:"queue"`
}

// WorkResult is what one worker step did.
type WorkResult struct {
	// Idle is set when the queue was empty.
	Idle bool `json:"idle,omitempty"`
	// Room and Chunk name the item's context.
	Room uint64 `json:"room,omitempty"`
	// Chunk is the item's chunk key.
	Chunk int64 `json:"chunk,omitempty"`
	// Layers are the item's layers.
	Layers []int `json:"layers,omitempty"`
	// Batch is the async batch id submitted (0: none).
	Batch uint64 `json:"batch,omitempty"`
}

// FinishResult is Manager.Finish's answer (§4.4).
type FinishResult struct {
	// Handled is false when the caller must use the monolithic send.
	Handled bool `json:"handled"`
	// Status is the context's final status (0 or -1) when handled.
	Status int `json:"status"`
	// Chunk is the chunk key of the context that finished (B6 shows here).
	Chunk int64 `json:"chunk"`
	// Session is the finished context's session ("" when not handled).
	Session string `json:"session,omitempty"`
	// Reason is the failure reason when Status != 0.
	Reason string `json:"reason,omitempty"`
}

// PerLayerManager is the per-layer transfer manager of §4.4; both twins
// implement it. Every refused call returns a Reject error and changes nothing.
type PerLayerManager interface {
	// Register registers chunk chunkKey of room before the forward
	// (§4.4). It returns false when the caller must use the monolithic send.
	Register(room uint64, chunkKey int64, nonDummyInfos int, build BuildFunc) (bool, error)
	// HasRoom reports whether the room has a registered, unfinished chunk.
	HasRoom(room uint64) bool
	// ForwardBegin starts a forward (Register is refused until ForwardEnd).
	ForwardBegin() error
	// ForwardEnd ends the forward.
	ForwardEnd() error
	// OnLayerEnd is the layer-end notifier (§4.4); it returns the recorded
	// event id at a boundary with active contexts, else 0. It never blocks.
	OnLayerEnd(l int) (int, error)
	// WorkerStep runs the front work item (deterministic mode only).
	WorkerStep() (WorkResult, error)
	// Finish finishes the room's front chunk if it is chunkKey (§4.4).
	Finish(room uint64, chunkKey int64) (FinishResult, error)
	// Refinish calls Finish again on the most recently finished context
	// (§4.8.9 idempotence); false when none finished yet.
	Refinish() (FinishResult, bool)
	// Drop drains every context of room (§4.4) and returns how many.
	Drop(room uint64) int
	// State returns the observable state.
	State() PerLayerState
	// Close stops the workers (a no-op in deterministic mode).
	Close()
}

// NewPerLayerManagerFunc constructs a manager in deterministic mode over
// engine and events, logging to logger (nil: discard).
type NewPerLayerManagerFunc func(cfg PerLayerConfig, engine Engine, events EventFactory, logger *slog.Logger) (PerLayerManager, error)

// ReasonSubmitFailed is SubmitGroup's id-0 reason (§4.3 step 7).
const ReasonSubmitFailed = "submit failed"

// ReasonDropped is Drain's reason (§4.3).
const ReasonDropped = "dropped"

// FinishTimings are the durations §9's DEBUG breakdown reports.
type FinishTimings struct {
	// WaitEnqueued is the wait for processed >= target.
	WaitEnqueued time.Duration
	// Fallback is the sync transfer of the missed layers.
	Fallback time.Duration
	// WaitBatches is the wait on the async batches.
	WaitBatches time.Duration
}
