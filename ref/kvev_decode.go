package ref

import "errors"

// KVEvDecode is a placeholder until the reference decoder lands.
func KVEvDecode(lim Limits, in KVEvDecodeInput) (KVMessage, error) {
	return KVMessage{}, errors.New("kvev decode: not implemented yet")
}
