package tracegen

// engineSim is one engine's GPU block pool, modelled on vLLM v1's
// BlockPool: a fixed set of physical blocks, a hash → cached blocks map
// (vLLM does not de-duplicate: one hash may have several physical copies,
// docs/spec/kv-events.md §2.5), reference counts, and the free queue of
// unreferenced blocks in LRU order. New blocks are popped from the front
// of the queue; popping a block that still holds a hash evicts it, which
// vLLM publishes as one BlockRemoved per block. A capacity of 0 means
// unlimited: blocks are created on demand and nothing is evicted.
type engineSim struct {
	capacity int
	// Physical blocks, indexed by block id.
	hash   []uint64 // block hash, valid while cached
	parent []uint64 // parent block hash (noneHash for a first block), valid while cached
	cached []bool
	ref    []int32
	prev   []int32 // free-queue links, -1 at the ends
	next   []int32
	inFree []bool
	head   int32 // free-queue front (next to pop), -1 when empty
	tail   int32

	// byHash lists the cached copies of each hash in caching order; the
	// first is what a prefix lookup finds.
	byHash map[uint64][]int32
	// children counts cached copies whose parent hash is the key, to tell
	// an interior removal (the last copy of a hash that still has cached
	// children) from a leaf removal.
	children map[uint64]int32
}

func newEngineSim(capacity int) *engineSim {
	s := &engineSim{capacity: capacity, head: -1, tail: -1,
		byHash: map[uint64][]int32{}, children: map[uint64]int32{}}
	if capacity > 0 {
		s.grow(capacity)
		for id := range int32(capacity) {
			s.pushBack(id)
		}
	}
	return s
}

// grow adds n uncached, unreferenced physical blocks outside the free queue.
func (s *engineSim) grow(n int) {
	for range n {
		s.hash = append(s.hash, 0)
		s.parent = append(s.parent, 0)
		s.cached = append(s.cached, false)
		s.ref = append(s.ref, 0)
		s.prev = append(s.prev, -1)
		s.next = append(s.next, -1)
		s.inFree = append(s.inFree, false)
	}
}

func (s *engineSim) pushBack(id int32) {
	s.prev[id], s.next[id], s.inFree[id] = s.tail, -1, true
	if s.tail >= 0 {
		s.next[s.tail] = id
	} else {
		s.head = id
	}
	s.tail = id
}

func (s *engineSim) unlink(id int32) {
	p, n := s.prev[id], s.next[id]
	if p >= 0 {
		s.next[p] = n
	} else {
		s.head = n
	}
	if n >= 0 {
		s.prev[n] = p
	} else {
		s.tail = p
	}
	s.prev[id], s.next[id], s.inFree[id] = -1, -1, false
}

// lookup returns the first cached copy of h, or -1.
func (s *engineSim) lookup(h uint64) int32 {
	if c := s.byHash[h]; len(c) > 0 {
		return c[0]
	}
	return -1
}

// touch takes a reference on a cached block found by a prefix hit,
// taking it out of the free queue if it was unreferenced.
func (s *engineSim) touch(id int32) {
	if s.ref[id] == 0 && s.inFree[id] {
		s.unlink(id)
	}
	s.ref[id]++
}

// removal is one evicted block.
type removal struct {
	hash     uint64
	interior bool // the hash's last copy went while cached children remain
}

// allocate returns a fresh block with one reference, evicting the front of
// the free queue when it is cached. The evicted block, if any, is reported.
func (s *engineSim) allocate() (int32, *removal) {
	if s.capacity == 0 {
		s.grow(1)
		id := int32(len(s.ref) - 1)
		s.ref[id] = 1
		return id, nil
	}
	id := s.head
	if id < 0 {
		panic("kvevgen: free queue empty (request larger than the capacity)")
	}
	s.unlink(id)
	var rm *removal
	if s.cached[id] {
		rm = s.evict(id)
	}
	s.ref[id] = 1
	return id, rm
}

// evict drops id's hash from the cache.
func (s *engineSim) evict(id int32) *removal {
	h := s.hash[id]
	copies := s.byHash[h]
	for i, c := range copies {
		if c == id {
			copies = append(copies[:i], copies[i+1:]...)
			break
		}
	}
	if len(copies) == 0 {
		delete(s.byHash, h)
	} else {
		s.byHash[h] = copies
	}
	p := s.parent[id]
	if s.children[p]--; s.children[p] == 0 {
		delete(s.children, p)
	}
	s.cached[id] = false
	return &removal{hash: h, interior: len(copies) == 0 && s.children[h] > 0}
}

// cache gives block id the hash h under parent p.
func (s *engineSim) cache(id int32, h, p uint64) {
	s.hash[id], s.parent[id], s.cached[id] = h, p, true
	s.byHash[h] = append(s.byHash[h], id)
	s.children[p]++
}

// release drops one reference; an unreferenced block joins the back of the
// free queue (in the capacity-limited pool).
func (s *engineSim) release(id int32) {
	s.ref[id]--
	if s.ref[id] == 0 && s.capacity > 0 {
		s.pushBack(id)
	}
}

// leading counts the leading hashes of hs that are cached.
func (s *engineSim) leading(hs []uint64) int {
	for i, h := range hs {
		if len(s.byHash[h]) == 0 {
			return i
		}
	}
	return len(hs)
}

// resident returns hash → cached copies.
func (s *engineSim) resident() map[uint64]int64 {
	out := make(map[uint64]int64, len(s.byHash))
	for h, c := range s.byHash {
		out[h] = int64(len(c))
	}
	return out
}
