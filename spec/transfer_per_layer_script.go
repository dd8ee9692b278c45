package spec

// Per-layer script step kinds.
const (
	// PerLayerCreate builds the arenas and the manager (layers N, hooked H, group K, item_len, src_pages, dst_pages).
	PerLayerCreate = "create"
	// PerLayerRegister registers a chunk (room, chunk, infos, owned, dst).
	PerLayerRegister = "register"
	// PerLayerForwardBegin starts a forward.
	PerLayerForwardBegin = "forward_begin"
	// PerLayerForwardEnd ends the forward.
	PerLayerForwardEnd = "forward_end"
	// PerLayerLayerEnd is the layer-end hook (layer).
	PerLayerLayerEnd = "layer_end"
	// PerLayerCompleteEvent completes a recorded event (event, fail).
	PerLayerCompleteEvent = "complete_event"
	// PerLayerWorkerStep runs the front work item.
	PerLayerWorkerStep = "worker_step"
	// PerLayerEngineComplete completes an async batch (batch, fail).
	PerLayerEngineComplete = "engine_complete"
	// PerLayerInject arms an engine fault (fault).
	PerLayerInject = "inject"
	// PerLayerFinish is Manager.Finish (room, chunk).
	PerLayerFinish = "finish"
	// PerLayerRefinish finishes the last finished context again.
	PerLayerRefinish = "refinish"
	// PerLayerDrop is Manager.Drop (room).
	PerLayerDrop = "drop"
	// PerLayerHas is Manager.HasRoom (room).
	PerLayerHas = "has"
	// PerLayerMonolithic is the monolithic send of a chunk (room, chunk, owned, dst): the §4.4 fallback path.
	PerLayerMonolithic = "monolithic"
)

// ErrPageOutOfArena: a register step names a page outside the arena's pages per layer.
var ErrPageOutOfArena = NewSentinel("page_out_of_arena", "page outside the arena")

// PerLayerStep is one step of a per-layer script. Which fields apply depends on Op.
type PerLayerStep struct {
	// Op is one of the PerLayer* step kinds.
	Op string `json:"op"`
	// Layers is N, the transfer entries per context (create).
	Layers int `json:"layers,omitzero"`
	// Hooked is H (create).
	Hooked int `json:"hooked,omitzero"`
	// Group is K (create).
	Group int `json:"group,omitzero"`
	// ItemLen is the bytes per page (create).
	ItemLen int `json:"item_len,omitzero"`
	// SrcPages and DstPages are the pages per layer of each arena (create).
	SrcPages int `json:"src_pages,omitzero"`
	// DstPages is the decode arena's pages per layer (create).
	DstPages int `json:"dst_pages,omitzero"`
	// Room is the bootstrap room (register, finish, drop, has, monolithic).
	Room uint64 `json:"room,omitzero"`
	// Chunk is the chunk key (register, finish, monolithic).
	Chunk int64 `json:"chunk,omitzero"`
	// Infos is the number of non-dummy decode infos of the room (register).
	Infos int `json:"infos,omitzero"`
	// Owned are the CP-filtered prefill pages (register, monolithic).
	Owned []int64 `json:"owned,omitzero"`
	// Dst are the decode pages receiving Owned (register, monolithic).
	Dst []int64 `json:"dst,omitzero"`
	// Layer is the hooked layer (layer_end).
	Layer int `json:"layer,omitzero"`
	// Event is the event id (complete_event).
	Event int `json:"event,omitzero"`
	// Batch is the batch id (engine_complete).
	Batch uint64 `json:"batch,omitzero"`
	// Fail completes the event or batch with a failure.
	Fail bool `json:"fail,omitzero"`
	// Fault is the armed engine fault (inject).
	Fault EngineFault `json:"fault,omitzero"`
}

// TransferPerLayerScriptInput is the input of transfer.per_layer_script.
type TransferPerLayerScriptInput struct {
	// Steps run in order; the first must be a create.
	Steps []PerLayerStep `json:"steps"`
}

// PerLayerStepResult is the result of one step: at most one result field, or an error.
type PerLayerStepResult struct {
	// Op echoes the step's op.
	Op string `json:"op"`
	// Registered is Register's answer.
	Registered *bool `json:"registered,omitempty"`
	// Event is the event a boundary layer_end recorded.
	Event int `json:"event,omitempty"`
	// Work is what a worker step did.
	Work *WorkResult `json:"work,omitempty"`
	// Finish is what finish / refinish returned.
	Finish *FinishResult `json:"finish,omitempty"`
	// Drained is the number of contexts a drop drained.
	Drained *int `json:"drained,omitempty"`
	// Has is HasRoom's answer.
	Has *bool `json:"has,omitempty"`
	// Status is a monolithic send's status.
	Status *int `json:"status,omitempty"`
	// Error is the canonical rejection of the step (nothing changed).
	Error *ErrorObject `json:"error,omitempty"`
}

// TransferPerLayerScriptOutput is the output of transfer.per_layer_script.
type TransferPerLayerScriptOutput struct {
	// Trace has one result per step.
	Trace []PerLayerStepResult `json:"trace"`
	// State is the manager's final state.
	State PerLayerState `json:"state"`
	// Calls is the engine's call log, in call order; never nil.
	Calls []EngineCall `json:"calls"`
	// Unwaited are the async batch ids never listed by a wait; never nil.
	Unwaited []uint64 `json:"unwaited"`
	// DstDigest is the hex SHA-256 of the final destination arena.
	DstDigest string `json:"dst_digest"`
}
