package scaleout

import (
	"errors"
	"sync/atomic"

	"github.com/kvtwin/kvtwin/spec"
)

// swapIndex is the index a replica feeds and serves (Replica.Index): every
// call goes to the current index, which a restore from a snapshot (§4.3
// option (a)) replaces once, before the replica applies its first
// message. A call in flight on the index it replaced finishes there.
type swapIndex struct {
	cur atomic.Pointer[spec.KVEvIndex]
}

func newSwapIndex(ix spec.KVEvIndex) *swapIndex {
	s := &swapIndex{}
	s.set(ix)
	return s
}

func (s *swapIndex) set(ix spec.KVEvIndex) { s.cur.Store(&ix) }
func (s *swapIndex) get() spec.KVEvIndex   { return *s.cur.Load() }

// Live implements spec.KVEvIndex.
func (s *swapIndex) Live(stream string, frames [][]byte) spec.KVEvStepResult {
	return s.get().Live(stream, frames)
}

// Replay implements spec.KVEvIndex.
func (s *swapIndex) Replay(stream string, frames [][]byte) spec.KVEvStepResult {
	return s.get().Replay(stream, frames)
}

// ReplayFailed implements spec.KVEvIndex.
func (s *swapIndex) ReplayFailed(stream, reason string) spec.KVEvStepResult {
	return s.get().ReplayFailed(stream, reason)
}

// Restart implements spec.KVEvIndex.
func (s *swapIndex) Restart(stream string) spec.KVEvStepResult { return s.get().Restart(stream) }

// Score implements spec.KVEvIndex.
func (s *swapIndex) Score(q spec.KVEvScoreQuery) ([]spec.KVEvScore, error) {
	return s.get().Score(q)
}

// State implements spec.KVEvIndex.
func (s *swapIndex) State() spec.KVEvState { return s.get().State() }

// Digest implements spec.KVEvIndex.
func (s *swapIndex) Digest() [32]byte { return s.get().Digest() }

// AddStream implements spec.KVEvIndex.
func (s *swapIndex) AddStream(st spec.KVEvStream) error { return s.get().AddStream(st) }

// RemoveStream implements spec.KVEvIndex.
func (s *swapIndex) RemoveStream(name string) error { return s.get().RemoveStream(name) }

// Summary is the current index's state without pages where it can report
// one (the fast index's Summary), else its State.
func (s *swapIndex) Summary() spec.KVEvState {
	ix := s.get()
	if sm, ok := ix.(interface{ Summary() spec.KVEvState }); ok {
		return sm.Summary()
	}
	return ix.State()
}

// errNoSnapshotter: the current index cannot write a snapshot.
var errNoSnapshotter = errors.New("kvevjs: the index does not implement spec.KVEvSnapshotter")

// Snapshot implements spec.KVEvSnapshotter through the current index.
func (s *swapIndex) Snapshot(covers uint64) ([]byte, error) {
	sn, ok := s.get().(spec.KVEvSnapshotter)
	if !ok {
		return nil, errNoSnapshotter
	}
	return sn.Snapshot(covers)
}
