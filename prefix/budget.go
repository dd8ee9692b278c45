package prefix

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/kvtwin/kvtwin/spec"
)

// The memory model of a pool. A pool may grow to CapacityTokens cached
// units in at most CapacityTokens/PageSize nodes (every node holds at least
// one whole page), so its worst-case heap is
//
//	CapacityTokens × BytesPerToken + CapacityTokens/PageSize × (BytesPerNode + 2×MaxNamespaceBytes)
//
// and a Registry reserves exactly that when the pool is created. Both
// constants are measured, not guessed: TestBytesPerTokenAndNodeBoundTheMeasuredHeap
// (budget_test.go) fills pools of both trees to capacity in the costliest
// shapes and checks each constant is at least, and at most 3×, the
// runtime.MemStats HeapAlloc growth it stands for. Measured on linux/amd64,
// go1.26 (bytes per cached unit or per node, after runtime.GC):
//
//	                                                   fast     ref
//	long runs, after a full evict and refill (unit)    24.6     24.6
//	single-token leaves under the root (node)           547      432
//	chains, every node with one child (node)           1060      915
//	64-unit EAGLE pages of 20-digit bigrams (node)     2073     3300
//	two 128-byte namespace strings (node, extra)        256      256
//
// A unit costs its key (8 bytes), its slot (8) and, after evictions, its
// place on the pool's free list (8). A node costs its struct, its key and
// value headers, its entry in the tree's id index and its parent's child
// map, and, when it has children, a child map of its own: Go's smallest map
// group is about 640 bytes, which is why a chain is the costliest shape.
// The ref tree also keeps each node's first page rendered as text, up to 21
// bytes a unit for bigrams; BytesPerToken covers that too.
const (
	// BytesPerToken is the heap one cached unit may cost, node overhead
	// aside: 24.6 measured (key, slot, free-list entry) plus up to 21 for
	// the ref tree's first-page text, rounded up.
	BytesPerToken = 48
	// BytesPerNode is the heap one tree node may cost beyond its units and
	// namespace strings: 1,060 measured for a fast-tree chain node, plus
	// about 150 for the root's child map, which keeps the size it once
	// needed for CapacityTokens/PageSize children (Go maps never shrink),
	// plus about 120 since the fast tree keeps each page's prefix hash
	// (a slice per node) and a persistent eviction heap (up to two 32-byte
	// entries a leaf): 1,329 measured for a one-unit chain node, rounded up.
	BytesPerNode = 1408
	// MaxNamespaceBytes is the longest extra and the longest salt an insert
	// may store. Every node keeps its own copy of both strings, so without
	// a bound a few bytes of tokens could pin megabytes of namespace; 128
	// bytes holds a UUID LoRA id or a SHA-256 hex salt with room to spare.
	MaxNamespaceBytes = 128
)

// ReservedBytes is the heap the pool c describes may grow to, the figure a
// Registry reserves for it: CapacityTokens × BytesPerToken plus
// CapacityTokens/PageSize × (BytesPerNode + 2×MaxNamespaceBytes). ok is
// false when the product overflows int64 or c has a page size below 1 or a
// negative capacity (c.validate rejects those first).
func (c Config) ReservedBytes() (bytes int64, ok bool) {
	return reservedBytes(c.CapacityTokens, c.PageSize)
}

// reservedBytes is ReservedBytes for a capacity and page size, overflow-safe.
func reservedBytes(capacity, pageSize int) (int64, bool) {
	if capacity < 0 || pageSize < 1 {
		return 0, false
	}
	c, nodes := int64(capacity), int64(capacity/pageSize)
	const perNode = BytesPerNode + 2*MaxNamespaceBytes
	if spec.MulOverflows(c, BytesPerToken) || spec.MulOverflows(nodes, perNode) {
		return 0, false
	}
	units, meta := c*BytesPerToken, nodes*perNode
	if spec.AddOverflows(units, meta) {
		return 0, false
	}
	return units + meta, true
}

// maxCapacityWithin is the largest capacity in [0, maxCapacity] whose
// reservation at pageSize (>= 1) is at most left bytes. The reservation
// grows with the capacity, so a binary search finds it.
func maxCapacityWithin(left int64, pageSize, maxCapacity int) int {
	lo, hi := 0, maxCapacity
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if b, ok := reservedBytes(mid, pageSize); ok && b <= left {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// Budget is a Registry's memory budget at one instant.
type Budget struct {
	// MaxBytes is Limits.MaxBytes: what all pools together may reserve.
	MaxBytes int64
	// ReservedBytes is the sum of the live pools' reservations (Stats.ReservedBytes).
	ReservedBytes int64
}

// MemoryFraction is the share of the detected memory DefaultLimits gives
// the pools: 1/4. The budget bounds the pools' live heap; with Go's
// default GOGC=100 the heap may reach twice the live data before a
// collection, so pools at a quarter of the memory can occupy half of it at
// peak, leaving the other half for request bodies (MaxConcurrent × 64 MiB
// by default), op outputs and the rest of the machine.
const MemoryFraction = 4

// FallbackMaxBytes is DefaultMaxBytes when no memory figure is readable
// (no cgroup file, no /proc/meminfo: not Linux, or a sandbox): 1 GiB, small
// enough to be safe on any machine that runs a server at all. Set
// --prefix-max-bytes where it is too small.
const FallbackMaxBytes int64 = 1 << 30

// cgroupV1Unlimited is the ceiling above which a cgroup v1 memory limit
// means "no limit": v1 reports an unlimited group as the largest page
// multiple below 2^63 (9223372036854771712 with 4 KiB pages).
const cgroupV1Unlimited int64 = 1 << 62

// DetectMemory returns the memory available to this process, read from the
// file system fsys rooted at "/" (os.DirFS("/") in production, a fake in
// tests), and where the figure came from. It reads the cgroup v2 limit
// (memory.max, unless "max") and the cgroup v1 limit
// (memory.limit_in_bytes, unless at or above 2^62, which is v1's
// "unlimited"), each at the root of the cgroup mount (sys/fs/cgroup, or
// sys/fs/cgroup/memory for v1: what a container sees of its own group) and
// in every group from the process's own, named in proc/self/cgroup, up to
// that root (a systemd service's MemoryMax= is on its own group), and the
// physical memory (MemTotal in proc/meminfo). It returns the smallest it
// finds: a group is held to its ancestors' limits too, and a limit above
// the machine's memory is no limit at all. A file that is missing,
// unreadable or malformed is skipped; ok is false when none is readable.
func DetectMemory(fsys fs.FS) (bytes int64, source string, ok bool) {
	consider := func(v int64, src string) {
		if v > 0 && (!ok || v < bytes) {
			bytes, source, ok = v, src, true
		}
	}
	v2, v1 := ownCgroups(fsys)
	for _, dir := range groupDirs("sys/fs/cgroup", v2) {
		if s, err := readTrimmed(fsys, dir+"/memory.max"); err == nil && s != "max" {
			if v, err := strconv.ParseInt(s, 10, 64); err == nil {
				consider(v, "cgroup v2 /"+dir+"/memory.max")
			}
		}
	}
	for _, dir := range groupDirs("sys/fs/cgroup/memory", v1) {
		if s, err := readTrimmed(fsys, dir+"/memory.limit_in_bytes"); err == nil {
			if v, err := strconv.ParseInt(s, 10, 64); err == nil && v < cgroupV1Unlimited {
				consider(v, "cgroup v1 /"+dir+"/memory.limit_in_bytes")
			}
		}
	}
	if v, found := memTotal(fsys); found {
		consider(v, "/proc/meminfo MemTotal")
	}
	return bytes, source, ok
}

// ownCgroups reads the process's cgroup paths from proc/self/cgroup: the
// v2 group ("0::/path") and the v1 memory group ("N:...memory...:/path").
// A path is "" when its line is missing.
func ownCgroups(fsys fs.FS) (v2, v1 string) {
	b, err := fs.ReadFile(fsys, "proc/self/cgroup")
	if err != nil {
		return "", ""
	}
	for line := range strings.Lines(string(b)) {
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			v2 = f[2]
		case slices.Contains(strings.Split(f[1], ","), "memory"):
			v1 = f[2]
		}
	}
	return v2, v1
}

// groupDirs is root and, for an absolute group path, every directory from
// root/group up to root, deepest first. A path that fs.ValidPath rejects
// (".." and the like) adds nothing.
func groupDirs(root, group string) []string {
	dirs := []string{root}
	rel := strings.Trim(group, "/")
	if !strings.HasPrefix(group, "/") || rel == "" || !fs.ValidPath(rel) {
		return dirs
	}
	for ; rel != "."; rel = path.Dir(rel) {
		dirs = append(dirs, root+"/"+rel)
	}
	return dirs
}

// DefaultMaxBytes is the MaxBytes of DefaultLimits: 1/MemoryFraction of
// DetectMemory(fsys), at least 1, or FallbackMaxBytes when no memory figure
// is readable.
func DefaultMaxBytes(fsys fs.FS) int64 {
	b, _, ok := DetectMemory(fsys)
	if !ok {
		return FallbackMaxBytes
	}
	return max(1, b/MemoryFraction)
}

func readTrimmed(fsys fs.FS, name string) (string, error) {
	b, err := fs.ReadFile(fsys, name)
	return strings.TrimSpace(string(b)), err
}

// memTotal parses the "MemTotal: N kB" line of proc/meminfo into bytes.
func memTotal(fsys fs.FS) (int64, bool) {
	b, err := fs.ReadFile(fsys, "proc/meminfo")
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "MemTotal:" || f[2] != "kB" {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || kb <= 0 || kb > math.MaxInt64/1024 {
			return 0, false
		}
		return kb * 1024, true
	}
	return 0, false
}

// budgetBound is the bound of an ErrBudget rejection: the largest capacity
// that fits what is left, and the figures behind it.
func budgetBound(cfg Config, maxCapacity int, left, maxBytes int64) string {
	need := "more than int64 bytes"
	if b, ok := cfg.ReservedBytes(); ok {
		need = fmt.Sprintf("%d bytes", b)
	}
	return fmt.Sprintf("<= %d at page_size %d: the pool would reserve %s, and %d bytes are left of the %d-byte MaxBytes budget; delete a pool or ask for less",
		maxCapacityWithin(left, cfg.PageSize, maxCapacity), cfg.PageSize, need, left, maxBytes)
}
