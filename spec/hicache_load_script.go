package spec

// Misuse kinds of a load op (docs/spec/radix-acks.md §5.2, §5.4).
const (
	// MisuseOtherOp submits the next layer under another op id (op_id+1):
	// ErrDescriptorOpMismatch.
	MisuseOtherOp = "other_op"
	// MisuseSkipLayer submits the layer after the next: ErrLayerOutOfOrder.
	MisuseSkipLayer = "skip_layer"
	// MisuseEndEarly calls EndLoad: ErrEndBeforeComplete unless every layer
	// was submitted (then it ends the op, and the regular EndLoad is refused).
	MisuseEndEarly = "end_early"
	// MisuseCancel cancels the op: no further layer is submitted.
	MisuseCancel = "cancel"
	// MisuseReusePrevious submits the next layer of this op on the previous
	// op's descriptor (§5.4 B5.b): ErrDescriptorClosed.
	MisuseReusePrevious = "reuse_previous"
)

// LoadMisuse is one misuse step of a load op, run before the op submits
// layer At (At == layers: after the last layer, before EndLoad).
type LoadMisuse struct {
	// Kind is other_op, skip_layer, end_early, cancel or reuse_previous.
	Kind string `json:"kind"`
	// At is the layer before whose submit the step runs, in [0, layers].
	At int `json:"at"`
}

// LoadOp is one load operation (a merged batch, §5.1) of a load script.
type LoadOp struct {
	// OpID identifies the load op.
	OpID uint64 `json:"op_id"`
	// HostIdx are the host token slots, whole pages, in caller order.
	HostIdx []SlotIdx `json:"host_idx"`
	// DevIdx are the device token slots; DevIdx[i] receives HostIdx[i].
	DevIdx []SlotIdx `json:"dev_idx"`
	// PageSize is the op's page size in tokens, >= 1.
	PageSize int `json:"page_size"`
	// Unavailable is set when the backend lacks the prepared submit.
	Unavailable bool `json:"unavailable,omitzero"`
	// Policy is strict ("" too) or allow_fallback.
	Policy LoadPolicy `json:"policy,omitzero"`
	// Misuse are the op's misuse steps, run in order at their layers.
	Misuse []LoadMisuse `json:"misuse,omitzero"`
}

// HiCacheLoadScriptInput is the input of hicache.load_script.
type HiCacheLoadScriptInput struct {
	// Pools configures the host and device arenas every op loads between.
	Pools LoadPools `json:"pools"`
	// Ops run in order.
	Ops []LoadOp `json:"ops"`
}

// MisuseResult is the outcome of one misuse step.
type MisuseResult struct {
	// Kind echoes the step's kind.
	Kind string `json:"kind"`
	// At echoes the step's layer.
	At int `json:"at"`
	// Error is the refusal; null when the call was accepted.
	Error *ErrorObject `json:"error"`
	// NoTarget is set for reuse_previous when no earlier op has a descriptor.
	NoTarget bool `json:"no_target,omitzero"`
}

// LoadOpResult is what one load op did.
type LoadOpResult struct {
	// OpID echoes the op id.
	OpID uint64 `json:"op_id"`
	// BeginError is BeginLoad's refusal; the op did nothing else.
	BeginError *ErrorObject `json:"begin_error,omitempty"`
	// Descriptor is the descriptor's serial: a fresh one per op (D3).
	Descriptor int `json:"descriptor"`
	// Fallback is set when the op ran the per-layer fallback path.
	Fallback bool `json:"fallback"`
	// Runs are the descriptor's runs, in caller order.
	Runs []Run `json:"runs"`
	// Builds counts the page-list builds when the op closed.
	Builds int `json:"builds"`
	// Layers counts the layers submitted.
	Layers int `json:"layers"`
	// Misuse are the misuse steps' outcomes, in order.
	Misuse []MisuseResult `json:"misuse"`
	// SubmitError is the first refused regular submit (the op stops there).
	SubmitError *ErrorObject `json:"submit_error,omitempty"`
	// EndError is EndLoad's refusal; null when the op ended (or was cancelled).
	EndError *ErrorObject `json:"end_error,omitempty"`
	// AfterEnd are the refusals of a submit, an EndLoad and a Cancel probed
	// after the op closed (D4); empty when it never closed.
	AfterEnd []ErrorObject `json:"after_end"`
}

// DeviceBytes is the device arena after the script: its SHA-256 always,
// the bytes themselves (base64 in JSON) for arenas of at most
// maxInlineDeviceBytes.
type DeviceBytes struct {
	// SHA256 is the hex SHA-256 of every KV layer, then every index slot.
	SHA256 string `json:"sha256"`
	// KV are the device KV layers (small arenas only).
	KV [][]byte `json:"kv,omitempty"`
	// Index are the device index slots (small arenas only).
	Index [][]byte `json:"index,omitempty"`
}

// HiCacheLoadScriptOutput is the output of hicache.load_script.
type HiCacheLoadScriptOutput struct {
	// Trace has one result per op.
	Trace []LoadOpResult `json:"trace"`
	// Fallbacks is the loader's fallback log.
	Fallbacks []FallbackEvent `json:"fallbacks"`
	// Device is the device arena after the last op.
	Device DeviceBytes `json:"device"`
}
