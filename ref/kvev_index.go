package ref

import "errors"

// NewKVEvIndex is a placeholder until the reference index lands.
func NewKVEvIndex(cfg KVEvConfig, streams []KVEvStream) (KVEvIndex, error) {
	return nil, errors.New("kvev index: not implemented yet")
}
