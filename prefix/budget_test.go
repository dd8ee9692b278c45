package prefix_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/kvtwin/kvtwin/prefix"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

// heapGrowth is the live heap, after collection, that build leaves behind:
// runtime.MemStats.HeapAlloc after minus before, with what build returns
// kept alive across the second reading.
func heapGrowth(t *testing.T, build func() any) int64 {
	t.Helper()
	before := liveHeap()
	x := build()
	after := liveHeap()
	runtime.KeepAlive(x)
	return int64(after) - int64(before)
}

func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC() // the second cycle frees what the first one's finalisers released
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// filledPool builds a pool and runs fill on it; a failed call fails the test.
func filledPool(t *testing.T, newTree spec.NewRadixTreeFunc, cfg prefix.Config, fill func(p *prefix.Pool) error) func() any {
	return func() any {
		p, err := prefix.NewPool(newTree, cfg, 1<<24, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if err := fill(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
}

// distinct returns n token ids no other call returns, counting down from
// the largest id so their text (ref's child keys) is as long as it gets.
func distinct(next *int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = *next
		*next--
	}
	return out
}

// longRuns fills the pool with runs of 4096 distinct tokens, evicts
// everything and fills it again, so the free list has grown to the
// capacity as well: the most a pool of few nodes costs per unit.
func longRuns(p *prefix.Pool) error {
	next := int64(spec.MaxToken)
	for round := range 2 {
		for p.Stats().FreeTokens >= 4097 {
			if _, err := p.Insert(distinct(&next, 4097), noExtra, 0); err != nil {
				return err
			}
		}
		if round == 0 {
			if _, err := p.Evict(p.Config().CapacityTokens); err != nil {
				return err
			}
		}
	}
	return nil
}

// chains fills the pool with chains of length pages of one page each: every
// node but the last of a chain has exactly one child, so each owns a
// one-entry child map, the costliest shape per node. (One endless chain
// costs slightly more per node, but the ref tree copies the rest of the key
// at every level, so its inserts cost depth².) ns gives each insert's
// namespace; a fresh string per insert is what a decoded request carries.
func chains(length int, ns func() spec.ExtraKey) func(p *prefix.Pool) error {
	return func(p *prefix.Pool) error {
		ps, next := p.Config().PageSize, int64(spec.MaxToken)
		extra := 0
		if p.Config().Eagle {
			extra = 1
		}
		for p.Stats().FreeTokens >= length*ps {
			path := distinct(&next, length*ps+extra)
			for i := 1; i <= length; i++ {
				if _, err := p.Insert(path[:i*ps+extra], ns(), 0); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

// star fills the pool with one-page leaves under the root, then evicts
// them all: the root's child map keeps the size it needed.
func star(p *prefix.Pool) error {
	next := int64(spec.MaxToken)
	ps := p.Config().PageSize
	for p.Stats().FreeTokens >= ps {
		if _, err := p.Insert(distinct(&next, ps), noExtra, 0); err != nil {
			return err
		}
	}
	_, err := p.Evict(p.Config().CapacityTokens)
	return err
}

func then(fs ...func(*prefix.Pool) error) func(*prefix.Pool) error {
	return func(p *prefix.Pool) error {
		for _, f := range fs {
			if err := f(p); err != nil {
				return err
			}
		}
		return nil
	}
}

func fullNamespace() spec.ExtraKey {
	return spec.ExtraKey{Extra: strings.Repeat("e", prefix.MaxNamespaceBytes), HasExtra: true,
		Salt: strings.Repeat("s", prefix.MaxNamespaceBytes), HasSalt: true}
}

func noNamespace() spec.ExtraKey { return noExtra }

// TestBytesPerTokenAndNodeBoundTheMeasuredHeap is where the accounting
// constants come from. On both trees it fills pools to capacity in the
// costliest shapes and measures the live heap they hold
// (runtime.MemStats.HeapAlloc after runtime.GC): every pool's growth must
// be at most its Config.ReservedBytes, so the budget is an upper bound, and
// each constant must be at least the largest per-unit or per-node figure it
// stands for, and at most 3× it, so the bound is not a guess either.
func TestBytesPerTokenAndNodeBoundTheMeasuredHeap(t *testing.T) {
	if raceEnabled {
		t.Skip("measures the heap: make test-full runs it without -race")
	}
	var perUnit, perNode [2]float64 // fast, ref
	for i, name := range []string{"fast", "ref"} {
		newTree := trees()[name]
		for _, s := range []struct {
			shape string
			cfg   prefix.Config
			fill  func(*prefix.Pool) error
		}{
			{"long runs, refilled", prefix.Config{PageSize: 1, CapacityTokens: 1 << 16}, longRuns},
			{"EAGLE long runs, refilled", prefix.Config{PageSize: 1, CapacityTokens: 1 << 16, Eagle: true}, longRuns},
			{"one-token chains", prefix.Config{PageSize: 1, CapacityTokens: 1 << 12}, chains(64, noNamespace)},
			{"one-token chains, full namespaces", prefix.Config{PageSize: 1, CapacityTokens: 1 << 12}, chains(64, fullNamespace)},
			{"one-token chains after a full root", prefix.Config{PageSize: 1, CapacityTokens: 1 << 12}, then(star, chains(64, noNamespace))},
			{"one-token leaves under the root", prefix.Config{PageSize: 1, CapacityTokens: 1 << 14}, chains(1, noNamespace)},
			{"EAGLE 64-unit page chains", prefix.Config{PageSize: 64, CapacityTokens: 1 << 14, Eagle: true}, chains(16, noNamespace)},
			{"16-unit page chains", prefix.Config{PageSize: 16, CapacityTokens: 1 << 14}, chains(16, noNamespace)},
		} {
			var st prefix.Stats
			build := filledPool(t, newTree, s.cfg, s.fill)
			grew := heapGrowth(t, func() any { p := build().(*prefix.Pool); st = p.Stats(); return p })
			reserved, _ := s.cfg.ReservedBytes()
			t.Logf("%s, %s: %d units in %d nodes hold %d bytes (%.1f a unit, %.1f a node); reserved %d",
				name, s.shape, st.UsedTokens, st.Nodes, grew, float64(grew)/float64(st.UsedTokens), float64(grew)/float64(st.Nodes), reserved)
			if st.FreeTokens*8 > st.CapacityTokens {
				t.Errorf("%s, %s: only %d of %d slots filled", name, s.shape, st.UsedTokens, st.CapacityTokens)
			}
			if grew > reserved {
				t.Errorf("%s, %s: the pool holds %d bytes, more than the %d it reserves", name, s.shape, grew, reserved)
			}
			switch s.shape {
			case "long runs, refilled", "EAGLE long runs, refilled":
				perUnit[i] = max(perUnit[i], float64(grew)/float64(st.UsedTokens))
			case "one-token chains", "one-token chains after a full root":
				// one unit per node: BytesPerToken + BytesPerNode
				perNode[i] = max(perNode[i], float64(grew)/float64(st.Nodes))
			}
		}
	}
	unit, node := max(perUnit[0], perUnit[1]), max(perNode[0], perNode[1])
	t.Logf("per unit: fast %.1f, ref %.1f; per one-unit chain node: fast %.1f, ref %.1f", perUnit[0], perUnit[1], perNode[0], perNode[1])
	if c := float64(prefix.BytesPerToken); c < unit || c > 3*unit {
		t.Errorf("BytesPerToken = %v, want in [%.1f, %.1f]: the measured bytes per unit, at most 3×", c, unit, 3*unit)
	}
	if c := float64(prefix.BytesPerToken + prefix.BytesPerNode); c < node || c > 3*node {
		t.Errorf("BytesPerToken + BytesPerNode = %v, want in [%.1f, %.1f]: the measured bytes per one-unit node, at most 3×", c, node, 3*node)
	}
}

// knownRetention lists the churn patterns under which a tree still keeps
// memory its reservation does not cover, and why. Each entry must still
// reproduce (the test says when it no longer does, so the entry goes and
// the bound is enforced from then on).
var knownRetention = map[string]string{
	"fast/fan-out then evict": "Go maps never shrink: a node's child map keeps the size of the most children it " +
		"ever had at once, ~160 bytes a child; rebuilding a map when it falls to a quarter of its peak would bound it (fast/radix_tree.go)",
	"ref/fan-out then evict": "as fast: RefRadixTree's child maps never shrink (ref/radix_tree.go)",
}

// TestChurnNeverHoldsMoreThanTheReservation drives pools through insert,
// split and evict cycles that leave few units cached but may leave memory
// behind, and requires the live heap to stay within the reservation.
// The split pattern pins about capacity² bytes, so it needs a pool large
// enough for that to exceed the linear reservation; the fan-out pattern
// pins a constant multiple at any size.
func TestChurnNeverHoldsMoreThanTheReservation(t *testing.T) {
	if raceEnabled {
		t.Skip("measures the heap: make test-full runs it without -race")
	}
	for _, name := range []string{"fast", "ref"} {
		for _, c := range []struct {
			pattern  string
			capacity int
			fill     func(*prefix.Pool) error
		}{
			{"split then evict", 1 << 12, splitThenEvict},
			{"fan-out then evict", 1 << 10, fanOutThenEvict},
		} {
			cfg := prefix.Config{PageSize: 1, CapacityTokens: c.capacity}
			reserved, _ := cfg.ReservedBytes()
			t.Run(name+"/"+c.pattern, func(t *testing.T) {
				grew := heapGrowth(t, filledPool(t, trees()[name], cfg, c.fill))
				why, known := knownRetention[name+"/"+c.pattern]
				switch {
				case known && grew > reserved:
					t.Skipf("KNOWN: holds %d bytes, %.1f× the %d reserved: %s", grew, float64(grew)/float64(reserved), reserved, why)
				case known:
					t.Errorf("holds %d of the %d bytes reserved: the known retention is fixed, delete its knownRetention entry", grew, reserved)
				case grew > reserved:
					t.Errorf("holds %d bytes, more than the %d reserved", grew, reserved)
				}
			})
		}
	}
}

// splitThenEvict repeatedly inserts a long prompt under a fresh first
// token, splits it after that token with a locking match, and evicts the
// rest: each round leaves one cached unit that may pin the whole insert.
func splitThenEvict(p *prefix.Pool) error {
	next, capacity := int64(spec.MaxToken), p.Config().CapacityTokens
	for round := 0; round < capacity/2; round++ {
		prompt := distinct(&next, capacity-round)
		if _, err := p.Insert(prompt, noExtra, 0); err != nil {
			return err
		}
		if _, err := p.Match([]int64{prompt[0], 0}, noExtra, true); err != nil {
			return err
		}
		if _, err := p.Evict(len(prompt) - 1); err != nil {
			return err
		}
	}
	return nil
}

// fanOutThenEvict gives each of many locked one-token nodes 64 children at
// once, then evicts the children: each round leaves one cached unit whose
// child map may keep the size it needed for 64.
func fanOutThenEvict(p *prefix.Pool) error {
	const fanOut = 64
	next := int64(spec.MaxToken)
	for p.Stats().FreeTokens > fanOut {
		parent := distinct(&next, 1)[0]
		r, err := p.Insert([]int64{parent}, noExtra, 0)
		if err != nil {
			return err
		}
		if _, err := p.Lock(r.LastNode); err != nil {
			return err
		}
		for j := range fanOut {
			if _, err := p.Insert([]int64{parent, int64(j)}, noExtra, 0); err != nil {
				return err
			}
		}
		if _, err := p.Evict(fanOut); err != nil {
			return err
		}
	}
	return nil
}

// budgetFor is a MaxBytes that holds exactly the given pools.
func budgetFor(t *testing.T, cfgs ...prefix.Config) int64 {
	t.Helper()
	var total int64
	for _, c := range cfgs {
		b, ok := c.ReservedBytes()
		if !ok {
			t.Fatalf("%+v: reservation overflows", c)
		}
		total += b
	}
	return total
}

func budgetRegistry(t *testing.T, maxBytes int64) *prefix.Registry {
	t.Helper()
	return newRegistry(t, prefix.Limits{MaxPools: 64, MaxPoolCapacity: 1 << 20, MaxRequestTokens: 1 << 10, MaxBytes: maxBytes})
}

func TestReservedBytesIsCapacityTimesBytesPerTokenPlusPagesTimesNodeCost(t *testing.T) {
	for _, c := range []struct {
		cfg  prefix.Config
		want int64
	}{
		{prefix.Config{PageSize: 1, CapacityTokens: 1}, prefix.BytesPerToken + prefix.BytesPerNode + 2*prefix.MaxNamespaceBytes},
		{prefix.Config{PageSize: 16, CapacityTokens: 1000}, 1000*prefix.BytesPerToken + 62*(prefix.BytesPerNode+2*prefix.MaxNamespaceBytes)},
		{prefix.Config{PageSize: 4, CapacityTokens: 0}, 0},
	} {
		if got, ok := c.cfg.ReservedBytes(); !ok || got != c.want {
			t.Errorf("%+v: reserved %d (ok %v), want %d", c.cfg, got, ok, c.want)
		}
	}
	for _, bad := range []prefix.Config{
		{PageSize: 1, CapacityTokens: math.MaxInt}, {PageSize: math.MaxInt, CapacityTokens: math.MaxInt},
		{PageSize: 0, CapacityTokens: 8}, {PageSize: 1, CapacityTokens: -1},
	} {
		if got, ok := bad.ReservedBytes(); ok {
			t.Errorf("%+v: reserved %d, want overflow or rejection", bad, got)
		}
	}
}

func TestPoolCreationBeyondTheBudgetIsRefusedAndChangesNothing(t *testing.T) {
	a, b := prefix.Config{PageSize: 1, CapacityTokens: 600}, prefix.Config{PageSize: 1, CapacityTokens: 600}
	maxBytes := budgetFor(t, a, prefix.Config{PageSize: 1, CapacityTokens: 400})
	r := budgetRegistry(t, maxBytes)
	pa, err := r.Create("a", a)
	if err != nil {
		t.Fatal(err)
	}
	before := r.Budget()
	_, err = r.Create("b", b)
	wantReject(t, err, prefix.ErrBudget, "capacity_tokens")
	ie, _ := spec.AsInputError(err)
	left := maxBytes - budgetFor(t, a)
	for _, frag := range []string{"<= 400 at page_size 1", fmt.Sprintf("%d bytes are left", left), fmt.Sprintf("%d-byte MaxBytes", maxBytes)} {
		if !strings.Contains(ie.Bound, frag) {
			t.Errorf("bound %q does not say %q", ie.Bound, frag)
		}
	}
	if ie.Value != 600 {
		t.Errorf("value %v, want the capacity 600", ie.Value)
	}
	if got := r.Budget(); got != before || got.ReservedBytes != pa.Stats().ReservedBytes {
		t.Errorf("budget %+v after the refusal, want %+v", got, before)
	}
	if _, err := r.Get("b"); err == nil || len(r.List()) != 1 {
		t.Errorf("the refused pool exists: %v, %d pools", err, len(r.List()))
	}
	// The bound's capacity fits exactly; one more does not.
	_, err = r.Create("b", prefix.Config{PageSize: 1, CapacityTokens: 401})
	wantReject(t, err, prefix.ErrBudget, "capacity_tokens")
	if _, err := r.Create("b", prefix.Config{PageSize: 1, CapacityTokens: 400}); err != nil {
		t.Fatalf("the capacity the bound named: %v", err)
	}
	if got := r.Budget(); got.ReservedBytes != maxBytes {
		t.Errorf("budget %+v, want all %d reserved", got, maxBytes)
	}
}

func TestDeletingAPoolReturnsItsReservation(t *testing.T) {
	cfg := prefix.Config{PageSize: 4, CapacityTokens: 1024}
	r := budgetRegistry(t, budgetFor(t, cfg))
	if _, err := r.Create("a", cfg); err != nil {
		t.Fatal(err)
	}
	_, err := r.Create("b", cfg)
	wantReject(t, err, prefix.ErrBudget, "capacity_tokens")
	if err := r.Delete("a"); err != nil {
		t.Fatal(err)
	}
	if got := r.Budget().ReservedBytes; got != 0 {
		t.Fatalf("%d bytes reserved after the only pool went", got)
	}
	if _, err := r.Create("b", cfg); err != nil {
		t.Fatalf("create after delete: %v", err)
	}
}

func TestPoolStatsReportTheReservation(t *testing.T) {
	cfg := prefix.Config{PageSize: 2, CapacityTokens: 64}
	p, _ := newPool(t, ref.NewRadixTree, cfg)
	want, _ := cfg.ReservedBytes()
	if got := p.Stats().ReservedBytes; got != want || want == 0 {
		t.Fatalf("stats reserve %d, want %d", got, want)
	}
	mustInsert(t, p, seq(0, 64))
	if got := p.Stats().ReservedBytes; got != want {
		t.Fatalf("a full pool reports %d reserved, want the fixed %d", got, want)
	}
}

// TestAReservationThatOverflowsIsRefusedNotWrapped: with MaxPoolCapacity at
// the largest int, capacity × BytesPerToken overflows int64; the create is
// refused with ErrBudget (NewPool with ErrBudget too) and nothing panics.
func TestAReservationThatOverflowsIsRefusedNotWrapped(t *testing.T) {
	r := newRegistry(t, prefix.Limits{MaxPools: 4, MaxPoolCapacity: math.MaxInt, MaxRequestTokens: 8, MaxBytes: math.MaxInt64})
	_, err := r.Create("huge", prefix.Config{PageSize: 1, CapacityTokens: math.MaxInt})
	wantReject(t, err, prefix.ErrBudget, "capacity_tokens")
	if ie, _ := spec.AsInputError(err); !strings.Contains(ie.Bound, "more than int64 bytes") {
		t.Errorf("bound %q", ie.Bound)
	}
	_, err = prefix.NewPool(ref.NewRadixTree, prefix.Config{PageSize: 1, CapacityTokens: math.MaxInt}, math.MaxInt, 8)
	wantReject(t, err, prefix.ErrBudget, "capacity_tokens")
	if got := r.Budget().ReservedBytes; got != 0 {
		t.Errorf("%d bytes reserved", got)
	}
}

// TestConcurrentCreatesAndDeletesNeverExceedTheBudget races many goroutines
// creating and deleting pools of random sizes in a budget too small for
// all of them (run under -race): the reservation never exceeds MaxBytes,
// and at the end it is exactly the sum of the live pools'.
func TestConcurrentCreatesAndDeletesNeverExceedTheBudget(t *testing.T) {
	unit := prefix.Config{PageSize: 1, CapacityTokens: 256}
	maxBytes := budgetFor(t, unit, unit, unit)
	r := budgetRegistry(t, maxBytes)
	names := []string{"a", "b", "c", "d", "e", "f"}
	const workers, steps = 12, 400
	var wg sync.WaitGroup
	var mu sync.Mutex
	refused := 0
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 15))
			for range steps {
				name := names[rng.IntN(len(names))]
				var err error
				if rng.IntN(3) == 0 {
					err = r.Delete(name)
				} else {
					_, err = r.Create(name, prefix.Config{PageSize: 1 + rng.IntN(4), CapacityTokens: 64 + rng.IntN(512)})
				}
				if _, ok := spec.AsInputError(err); err != nil && !ok {
					t.Error(err)
				}
				if b := r.Budget(); b.ReservedBytes > b.MaxBytes || b.ReservedBytes < 0 {
					t.Errorf("reserved %d of %d", b.ReservedBytes, b.MaxBytes)
				}
				if errors.Is(err, prefix.ErrBudget) {
					mu.Lock()
					refused++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	var sum int64
	for _, n := range r.List() {
		sum += n.Pool.Stats().ReservedBytes
	}
	if got := r.Budget().ReservedBytes; got != sum {
		t.Errorf("registry reserves %d, its pools %d", got, sum)
	}
	if refused == 0 {
		t.Error("no create was refused: the budget was never tested")
	}
}

func TestInsertRefusesANamespaceLongerThanTheLimit(t *testing.T) {
	eachTree(t, func(t *testing.T, newTree spec.NewRadixTreeFunc) {
		p, tree := newPool(t, newTree, prefix.Config{PageSize: 1, CapacityTokens: 16})
		long := strings.Repeat("x", prefix.MaxNamespaceBytes+1)
		for field, ns := range map[string]spec.ExtraKey{
			"extra": {Extra: long, HasExtra: true}, "salt": {Salt: long, HasSalt: true},
		} {
			_, err := p.Insert(seq(1, 4), ns, 0)
			wantReject(t, err, prefix.ErrNamespaceTooLong, field)
			if ie, _ := spec.AsInputError(err); ie.Value != fmt.Sprintf("%d bytes", len(long)) {
				t.Errorf("value %v, want the length, not the string", ie.Value)
			}
		}
		if s := p.Stats(); s.UsedTokens != 0 || s.Nodes != 0 {
			t.Fatalf("a refused insert changed the pool: %+v", s)
		}
		if _, err := p.Insert(seq(1, 4), fullNamespace(), 0); err != nil {
			t.Fatalf("a namespace of exactly the limit: %v", err)
		}
		checkConsistent(t, p, tree)
	})
}

// memFS is a fake root with the given files.
func memFS(files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(data)}
	}
	return fsys
}

const meminfo16G = "MemTotal:       16777216 kB\nMemFree:         1048576 kB\n"

func TestDetectMemoryReadsCgroupsThenPhysicalMemory(t *testing.T) {
	const v2, v1, info, self = "sys/fs/cgroup/memory.max", "sys/fs/cgroup/memory/memory.limit_in_bytes", "proc/meminfo", "proc/self/cgroup"
	for _, c := range []struct {
		name   string
		files  map[string]string
		want   int64
		source string
	}{
		{"cgroup v2 limit", map[string]string{v2: "4294967296\n", info: meminfo16G}, 4 << 30, "cgroup v2 /sys/fs/cgroup/memory.max"},
		{"cgroup v2 max falls through to meminfo", map[string]string{v2: "max\n", info: meminfo16G}, 16 << 30, "/proc/meminfo MemTotal"},
		{"cgroup v1 limit", map[string]string{v1: "2147483648\n", info: meminfo16G}, 2 << 30, "cgroup v1 /sys/fs/cgroup/memory/memory.limit_in_bytes"},
		{"the process's own v2 group and its ancestors", map[string]string{
			self: "0::/system.slice/kvtwin.service\n", v2: "max",
			"sys/fs/cgroup/system.slice/kvtwin.service/memory.max": "max",
			"sys/fs/cgroup/system.slice/memory.max":                "3221225472", info: meminfo16G,
		}, 3 << 30, "cgroup v2 /sys/fs/cgroup/system.slice/memory.max"},
		{"the process's own v1 memory group", map[string]string{
			self: "12:cpu,cpuacct:/x\n5:memory:/docker/abc\n",
			"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "1073741824", info: meminfo16G,
		}, 1 << 30, "cgroup v1 /sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes"},
		{"a group path climbing out of the mount is ignored", map[string]string{
			self: "0::/../../proc\n", "sys/fs/cgroup/../../proc/memory.max": "1", info: meminfo16G,
		}, 16 << 30, "/proc/meminfo MemTotal"},
		{"cgroup v1 unlimited falls through", map[string]string{v1: "9223372036854771712\n", info: meminfo16G}, 16 << 30, "/proc/meminfo MemTotal"},
		{"a cgroup limit above the machine is the machine", map[string]string{v2: "68719476736", info: meminfo16G}, 16 << 30, "/proc/meminfo MemTotal"},
		{"meminfo only", map[string]string{info: meminfo16G}, 16 << 30, "/proc/meminfo MemTotal"},
		{"malformed files are skipped", map[string]string{v2: "lots", v1: "-1", info: "MemTotal: 12 MB\n"}, 0, ""},
		{"nothing readable", map[string]string{}, 0, ""},
	} {
		got, source, ok := prefix.DetectMemory(memFS(c.files))
		if got != c.want || source != c.source || ok != (c.want > 0) {
			t.Errorf("%s: %d from %q (ok %v), want %d from %q", c.name, got, source, ok, c.want, c.source)
		}
		wantDefault := c.want / prefix.MemoryFraction
		if c.want == 0 {
			wantDefault = prefix.FallbackMaxBytes
		}
		if got := prefix.DefaultMaxBytes(memFS(c.files)); got != wantDefault {
			t.Errorf("%s: DefaultMaxBytes %d, want %d", c.name, got, wantDefault)
		}
	}
}

func TestDefaultLimitsBudgetAQuarterOfThisMachinesMemory(t *testing.T) {
	b, source, ok := prefix.DetectMemory(os.DirFS("/"))
	got := prefix.DefaultLimits().MaxBytes
	t.Logf("detected %d bytes (%s, ok %v); default MaxBytes %d (%.2f GiB)", b, source, ok, got, float64(got)/(1<<30))
	if err := prefix.DefaultLimits().Validate(); err != nil {
		t.Fatal(err)
	}
	if want := prefix.DefaultMaxBytes(os.DirFS("/")); got != want {
		t.Fatalf("DefaultLimits().MaxBytes = %d, DefaultMaxBytes = %d", got, want)
	}
	if runtime.GOOS == "linux" && !ok {
		t.Fatal("no memory figure readable on linux")
	}
}
