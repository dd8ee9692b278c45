package spec

// KVEvDecodeInput is the input of kvev.decode: the frames of one live message.
type KVEvDecodeInput struct {
	// Frames are the message's frames as received.
	Frames []HexBytes `json:"frames"`
	// Limits are the bounds of one message (§2.10 A10); omitted or zero
	// fields take their defaults.
	Limits KVDecodeLimits `json:"limits,omitzero"`
}

// KVEvDecodeOutput is the output of kvev.decode: the decoded message
// itself, the KVMessage every consumer of the event wire reads.
type KVEvDecodeOutput = KVMessage

// FrameBytes returns the frames as byte slices (views, not copies).
func (in KVEvDecodeInput) FrameBytes() [][]byte { return FrameBytes(in.Frames) }
