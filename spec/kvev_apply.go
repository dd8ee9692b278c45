package spec

// KVEvApplyInput is the input of kvev.apply.
type KVEvApplyInput struct {
	// Config bounds the index.
	Config KVEvConfig `json:"config,omitzero"`
	// Streams are the publisher streams, names unique.
	Streams []KVEvStream `json:"streams"`
	// Steps run in order.
	Steps []KVEvStep `json:"steps"`
}

// KVEvApplyOutput is the output of kvev.apply.
type KVEvApplyOutput struct {
	// Trace has one result per step.
	Trace []KVEvStepResult `json:"trace"`
	// State is the index after the last step.
	State KVEvState `json:"state"`
}
