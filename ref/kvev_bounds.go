package ref

// The bounds of one KV-event message (docs/spec/kv-events.md §2.10 A10) and
// of the hold queue's bytes (A7): the limits both decoder twins, the index's
// cursor and every caller of the decoders share. The words of the errors
// are here too, so that the twins refuse with byte-equal errors.

// KVMessageBytes is the size of a message in a hold queue (§2.10 A7): the
// lengths of its frames together.
func KVMessageBytes(frames [][]byte) int64 {
	var n int64
	for _, f := range frames {
		n += int64(len(f))
	}
	return n
}
