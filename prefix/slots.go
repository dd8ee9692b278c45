package prefix

import (
	"github.com/kvtwin/kvtwin/spec"
)

// slotAllocator hands out the slots [0, capacity) of one pool. Memory grows
// with the slots in use, not with the capacity: slots at or above next have
// never been handed out, and free holds the ones returned since. A pool of
// 2^24 slots therefore costs nothing until it fills.
//
// The order is deterministic: returned slots are reused first, the most
// recently returned first (free is a stack), then never-used slots in
// ascending order.
type slotAllocator struct {
	capacity int
	next     spec.SlotIdx
	free     []spec.SlotIdx
}

func newSlotAllocator(capacity int) slotAllocator { return slotAllocator{capacity: capacity} }

// available is the number of slots alloc can hand out now.
func (a *slotAllocator) available() int { return a.capacity - int(a.next) + len(a.free) }

// used is the number of slots handed out and not returned.
func (a *slotAllocator) used() int { return a.capacity - a.available() }

// alloc appends n slots to dst and returns it. Precondition: n <= available().
func (a *slotAllocator) alloc(dst []spec.SlotIdx, n int) []spec.SlotIdx {
	for ; n > 0 && len(a.free) > 0; n-- {
		dst = append(dst, a.free[len(a.free)-1])
		a.free = a.free[:len(a.free)-1]
	}
	for ; n > 0; n-- {
		dst = append(dst, a.next)
		a.next++
	}
	return dst
}

// release returns slots, which the tree gave back on eviction. Pushing them
// in reverse makes the next allocations pop them in the order given.
func (a *slotAllocator) release(slots []spec.SlotIdx) {
	for i := len(slots) - 1; i >= 0; i-- {
		a.free = append(a.free, slots[i])
	}
}
