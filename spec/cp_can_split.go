package spec

// ForwardMode is the forward batch's mode (§5.1).
type ForwardMode string

// The forward modes of §5.1.
const (
	// ModeExtend is a prefill/extend forward, the CP split's own mode.
	ModeExtend ForwardMode = "EXTEND"
	// ModeMixed mixes extend and decode requests; never zigzag-split.
	ModeMixed ForwardMode = "MIXED"
	// ModeDecode is a decode forward.
	ModeDecode ForwardMode = "DECODE"
	// ModeTargetVerify is the speculative target-verify forward.
	ModeTargetVerify ForwardMode = "TARGET_VERIFY"
	// ModeDraftExtend is the speculative draft extend.
	ModeDraftExtend ForwardMode = "DRAFT_EXTEND"
	// ModeDraftExtendV2 is SPEC_V2's draft extend.
	ModeDraftExtendV2 ForwardMode = "DRAFT_EXTEND_V2"
	// ModeIdle is an idle forward (no requests on this rank).
	ModeIdle ForwardMode = "IDLE"
)

const (
	// ReasonCPDisabled: CP is off or the group has one rank (step 1).
	ReasonCPDisabled = "cp disabled"
	// ReasonNotCPExtend: the mode is not a context-parallel extend (step 2).
	ReasonNotCPExtend = "mode not CP extend"
	// ReasonEmptyExtend: the batch extends no tokens (step 5).
	ReasonEmptyExtend = "empty extend"
	// ReasonSubThreshold: without compute padding some request has fewer
	// than 2·cp tokens, so the batch runs as normal prefill (step 6).
	ReasonSubThreshold = "sub-threshold request"
	// ReasonPadded: split with the fork's compute-padded layout (step 6).
	ReasonPadded = "cp extend, compute-padded"
)

// CPCanSplitInput is the forward batch metadata Decide reads (§5.1). Fields
// other than Mode are metadata: they are only read, and only validated,
// for eligible forwards.
type CPCanSplitInput struct {
	// Mode is the forward mode, one of §5.1's seven.
	Mode ForwardMode `json:"mode"`
	// CPEnabled says whether attention context parallelism is on.
	CPEnabled bool `json:"cp_enabled"`
	// CPSize is the attention-CP group size; <= 1 means no split.
	CPSize int `json:"cp_size"`
	// UsesCPSharedKV is the fork's shared-KV flag, set on every forward when on.
	UsesCPSharedKV bool `json:"uses_cp_shared_kv"`
	// BatchSize is B, the number of requests in the forward.
	BatchSize int `json:"batch_size"`
	// ExtendLens are the extend lengths L_i (extend_seq_lens_cpu); null = missing.
	ExtendLens []int `json:"extend_lens"`
	// PrefixLens are the prefix lengths P_i (extend_prefix_lens_cpu); null = missing.
	PrefixLens []int `json:"prefix_lens"`
	// SeqLens are the sequence lengths; null skips the P_i + L_i check.
	SeqLens []int `json:"seq_lens"`
	// PageSize is the KV page size in tokens (the page plan's unit).
	PageSize int `json:"page_size"`
	// Granule is the compute-padding granule g; 0 means PageSize (§5.1:
	// g == ps for shared-KV).
	Granule int `json:"granule,omitzero"`
}

// CPCanSplitOutput is the decision (§5.1 Decision).
type CPCanSplitOutput struct {
	// Split says whether the forward is zigzag-split.
	Split bool `json:"split"`
	// Reason is one of the Reason* constants.
	Reason string `json:"reason"`
	// Layout is the CP layout when Split, else null.
	Layout *Layout `json:"layout"`
}
