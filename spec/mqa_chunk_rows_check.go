package spec

// ErrConfig: an invalid or ambiguous configuration knob (§8.1: both caps
// set, a cap that is not a positive finite number). §9 uses it too for the
// layer count and pipeline size, which the spec gives no sentinel of their own.
var ErrConfig = NewSentinel("config", "invalid configuration")
