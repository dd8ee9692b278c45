package prefix_test

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/fast"
	"github.com/kvtwin/kvtwin/prefix"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

func newRegistry(t *testing.T, lim prefix.Limits) *prefix.Registry {
	t.Helper()
	r, err := prefix.NewRegistry(ref.NewRadixTree, lim)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var small = prefix.Config{PageSize: 1, CapacityTokens: 64}

func TestRegistryCreatesGetsListsAndDeletesByName(t *testing.T) {
	r := newRegistry(t, prefix.DefaultLimits())
	for _, name := range []string{"b", "a.1", "A_-9"} {
		if _, err := r.Create(name, small); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, n := range r.List() {
		names = append(names, n.Name)
	}
	if want := []string{"A_-9", "a.1", "b"}; !cmp.Equal(names, want) {
		t.Fatalf("list %v, want %v", names, want)
	}
	_, err := r.Create("b", small)
	wantReject(t, err, prefix.ErrPoolExists, "pool")
	if err := r.Delete("b"); err != nil {
		t.Fatal(err)
	}
	_, err = r.Get("b")
	wantReject(t, err, prefix.ErrUnknownPool, "pool")
	wantReject(t, r.Delete("b"), prefix.ErrUnknownPool, "pool")
	if _, err := r.Create("b", small); err != nil {
		t.Fatalf("re-create after delete: %v", err)
	}
}

func TestRegistryEnforcesItsLimits(t *testing.T) {
	r := newRegistry(t, prefix.Limits{MaxPools: 2, MaxPoolCapacity: 128, MaxRequestTokens: 8, MaxBytes: 1 << 30})
	for _, name := range []string{"a", "b"} {
		if _, err := r.Create(name, small); err != nil {
			t.Fatal(err)
		}
	}
	_, err := r.Create("c", small)
	wantReject(t, err, prefix.ErrTooManyPools, "pool")
	_ = r.Delete("b")
	_, err = r.Create("c", prefix.Config{PageSize: 1, CapacityTokens: 129})
	wantReject(t, err, prefix.ErrBadCapacity, "capacity_tokens")
	_, err = r.Score(seq(0, 9), noExtra, nil, false)
	wantReject(t, err, prefix.ErrRequestTooLong, "tokens")
	p, _ := r.Get("a")
	_, err = p.Insert(seq(0, 9), noExtra, 0)
	wantReject(t, err, prefix.ErrRequestTooLong, "tokens")
	for field, bad := range map[string]prefix.Limits{
		"MaxPools": {0, 1, 1, 1}, "MaxPoolCapacity": {1, 0, 1, 1}, "MaxRequestTokens": {1, 1, 0, 1}, "MaxBytes": {1, 1, 1, 0},
	} {
		_, err := prefix.NewRegistry(ref.NewRadixTree, bad)
		wantReject(t, err, prefix.ErrBadLimits, field)
	}
}

func TestPoolNamesFollowThePattern(t *testing.T) {
	r := newRegistry(t, prefix.DefaultLimits())
	for _, bad := range []string{"", ".", "..", "a/b", "a b", "ü", "x:score", strings.Repeat("a", 65)} {
		_, err := r.Create(bad, small)
		wantReject(t, err, prefix.ErrBadPoolName, "pool")
	}
	for _, good := range []string{"a", "...", "Model-7B_v1.2", strings.Repeat("z", 64)} {
		if _, err := r.Create(good, small); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
}

func TestScoreReportsEachPoolsCachedPrefix(t *testing.T) {
	for _, exact := range []bool{false, true} {
		t.Run(fmt.Sprintf("exact=%t", exact), func(t *testing.T) { scoreEachPool(t, exact) })
	}
}

// scoreEachPool is TestScoreReportsEachPoolsCachedPrefix with hashed or
// exact scoring: both must give the exact answers.
func scoreEachPool(t *testing.T, exact bool) {
	r := newRegistry(t, prefix.DefaultLimits())
	prompt := seq(100, 12)
	fill := map[string][]int64{"full": prompt, "half": prompt[:6], "none": seq(0, 4)}
	for name, tokens := range fill {
		p, err := r.Create(name, prefix.Config{PageSize: 2, CapacityTokens: 64})
		if err != nil {
			t.Fatal(err)
		}
		mustInsert(t, p, tokens)
	}
	e, _ := r.Create("eagle", prefix.Config{PageSize: 2, CapacityTokens: 64, Eagle: true})
	mustInsert(t, e, prompt)
	got, err := r.Score(prompt, noExtra, nil, exact)
	if err != nil {
		t.Fatal(err)
	}
	want := []prefix.Score{{"eagle", 10}, {"full", 12}, {"half", 6}, {"none", 0}}
	if !cmp.Equal(got, want) {
		t.Fatalf("score of every pool %v, want %v (name order)", got, want)
	}
	got, _ = r.Score(prompt, noExtra, []string{"none", "full"}, exact)
	if want := []prefix.Score{{"none", 0}, {"full", 12}}; !cmp.Equal(got, want) {
		t.Fatalf("score of named pools %v, want %v (request order)", got, want)
	}
	got, _ = r.Score(prompt, spec.ExtraKeyOf(new("lora"), nil), []string{"full"}, exact)
	if got[0].MatchedTokens != 0 {
		t.Fatalf("another namespace scored %v", got)
	}
}

func TestScoreRejectsBadPoolLists(t *testing.T) {
	r := newRegistry(t, prefix.DefaultLimits())
	_, _ = r.Create("a", small)
	_, err := r.Score([]int64{1}, noExtra, []string{"a", "nope"}, false)
	wantReject(t, err, prefix.ErrUnknownPool, "pools[1]")
	_, err = r.Score([]int64{1}, noExtra, []string{"a", "a"}, false)
	wantReject(t, err, prefix.ErrDuplicatePool, "pools[1]")
	_, err = r.Score([]int64{1}, noExtra, []string{"a/b"}, false)
	wantReject(t, err, prefix.ErrBadPoolName, "pools[0]")
	_, err = r.Score([]int64{1, -1}, noExtra, nil, false)
	wantReject(t, err, spec.ErrTokenRange, "tokens[1]")
	if got, err := r.Score([]int64{1}, noExtra, nil, false); err != nil || len(got) != 1 {
		t.Fatalf("score %v, %v", got, err)
	}
}

func TestScoreIsReadOnly(t *testing.T) {
	rec := &treeRecorder{newTree: ref.NewRadixTree}
	r, err := prefix.NewRegistry(rec.build, prefix.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	p, _ := r.Create("a", prefix.Config{PageSize: 1, CapacityTokens: 8})
	tree := rec.last
	mustInsert(t, p, []int64{1, 2, 3, 4}) // one node, LRU-stamped at tick 1
	mustInsert(t, p, []int64{5, 6})       // tick 2
	before, stats := tree.State(), p.Stats()
	// [1 2 9] ends inside node 1: a match would split it and restamp it.
	if got, _ := r.Score([]int64{1, 2, 9}, noExtra, nil, false); got[0].MatchedTokens != 2 {
		t.Fatalf("score %v, want 2", got)
	}
	if diff := cmp.Diff(before, tree.State()); diff != "" {
		t.Fatalf("score changed the tree (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(stats, p.Stats()); diff != "" {
		t.Fatalf("score changed the stats (-before +after):\n%s", diff)
	}
	// And the LRU order is the insert order still: [1 2 3 4] goes first.
	if _, err := p.Evict(1); err != nil {
		t.Fatal(err)
	}
	if n, _ := p.PrefixLen([]int64{5, 6}, noExtra); n != 2 {
		t.Fatal("score refreshed [1 2 3 4]: eviction took [5 6] instead")
	}
}

// TestScoreOfALongPromptAgreesWithEachPool covers the parallel path: a
// prompt long enough to be scored on several goroutines must get, per
// pool, what that pool's own PrefixLen says.
func TestScoreOfALongPromptAgreesWithEachPool(t *testing.T) {
	r := newRegistry(t, prefix.DefaultLimits())
	prompt := seq(7, 20<<10)
	for i, held := range []int{20 << 10, 12 << 10, 0, 5 << 10, 20 << 10} {
		p, err := r.Create(fmt.Sprintf("p%d", i), prefix.Config{PageSize: 16, CapacityTokens: 32 << 10, Eagle: i == 4})
		if err != nil {
			t.Fatal(err)
		}
		mustInsert(t, p, prompt[:held])
	}
	got, err := r.Score(prompt, noExtra, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range got {
		p, _ := r.Get(s.Pool)
		want, _ := p.PrefixLen(prompt, noExtra)
		if s.Pool != fmt.Sprintf("p%d", i) || s.MatchedTokens != want {
			t.Errorf("score %+v, want pool p%d with %d", s, i, want)
		}
	}
	if got[0].MatchedTokens != 20<<10 || got[4].MatchedTokens != 20<<10-16 {
		t.Errorf("scores %v", got)
	}
}

// TestScoreOfABinaryPromptIsTheDecodedPromptsScore: ScoreLE32, with the
// hashers fed the prompt's little-endian u32 ids in pieces (told the
// namespace or not), answers what ScoreHashed answers for the decoded
// prompt on fast-tree pools of page sizes 1, 16 and 64 holding prefixes of
// it in two namespaces, for every pool subset tried, and refuses alike a
// prompt over the token limit, an unknown and a duplicate pool. It
// declines (ok false, nothing done) an Eagle pool, a page size without a
// hasher, a pool on the reference tree and a length that is not whole ids.
func TestScoreOfABinaryPromptIsTheDecodedPromptsScore(t *testing.T) {
	lim := prefix.Limits{MaxPools: 8, MaxPoolCapacity: 1 << 14, MaxRequestTokens: 1 << 13, MaxBytes: 1 << 30}
	r, err := prefix.NewRegistry(fast.NewRadixTree, lim)
	if err != nil {
		t.Fatal(err)
	}
	salt := "x"
	spaces := []spec.ExtraKey{noExtra, spec.ExtraKeyOf(nil, &salt)}
	prompt := seq(11, 5000)
	for i, c := range []struct {
		ps, held int
		eagle    bool
	}{{1, 5000, false}, {16, 3000, false}, {64, 4990, false}, {64, 64, false}, {16, 2000, true}} {
		p, err := r.Create(fmt.Sprintf("p%d", i), prefix.Config{PageSize: c.ps, CapacityTokens: 1 << 14, Eagle: c.eagle})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Insert(prompt[:c.held], spaces[i%2], 0); err != nil {
			t.Fatal(err)
		}
	}
	le := make([]byte, 4*len(prompt))
	for i, id := range prompt {
		binary.LittleEndian.PutUint32(le[4*i:], uint32(id))
	}
	hashers := func(seeded bool, extra spec.ExtraKey, sizes ...int) []*prefix.PageHasher {
		var pre []*prefix.PageHasher
		for _, ps := range sizes {
			h, err := prefix.NewPageHasher(ps, nil)
			if err != nil {
				t.Fatal(err)
			}
			if seeded {
				h.Seed(extra)
			}
			for n := 0; n < len(le); n += 4 * 777 {
				h.HashLE32(le[:n])
			}
			pre = append(pre, h)
		}
		return pre
	}
	for _, pools := range [][]string{nil, {"p2", "p0"}, {"p1", "p3", "p2"}, {"p3"}} {
		if pools == nil {
			pools = []string{"p0", "p1", "p2", "p3"} // all but the Eagle pool
		}
		for _, extra := range spaces {
			for _, seeded := range []bool{false, true} {
				want, err := r.ScoreHashed(prompt, extra, pools, false, nil)
				if err != nil {
					t.Fatal(err)
				}
				got, ok, err := r.ScoreLE32(le, extra, pools, hashers(seeded, extra, 64, 16, 1))
				if !ok || err != nil || !cmp.Equal(got, want) {
					t.Errorf("pools %v, extra %+v, seeded %t: %v (ok %t, %v), want %v", pools, extra, seeded, got, ok, err, want)
				}
			}
		}
	}
	for name, pools := range map[string][]string{"unknown": {"p0", "nope"}, "duplicate": {"p1", "p1"}} {
		_, want := r.ScoreHashed(prompt, noExtra, pools, false, nil)
		if _, ok, err := r.ScoreLE32(le, noExtra, pools, hashers(false, noExtra, 1, 16)); !ok || err == nil || err.Error() != want.Error() {
			t.Errorf("%s pool: ok %t, %v; want %v", name, ok, err, want)
		}
	}
	long := make([]byte, 4*(lim.MaxRequestTokens+1))
	_, want := r.ScoreHashed(make([]int64, lim.MaxRequestTokens+1), noExtra, nil, false, nil)
	if _, ok, err := r.ScoreLE32(long, noExtra, nil, nil); !ok || want == nil || err == nil || err.Error() != want.Error() {
		t.Errorf("a prompt over the limit: ok %t, %v; want %v", ok, err, want)
	}
	declined := map[string]func() (bool, error){
		"an Eagle pool": func() (bool, error) {
			_, ok, err := r.ScoreLE32(le, noExtra, []string{"p0", "p4"}, hashers(false, noExtra, 1, 16))
			return ok, err
		},
		"no hasher for 16": func() (bool, error) {
			_, ok, err := r.ScoreLE32(le, noExtra, []string{"p0", "p1"}, hashers(false, noExtra, 1))
			return ok, err
		},
		"a partial id": func() (bool, error) {
			_, ok, err := r.ScoreLE32(le[:len(le)-1], noExtra, []string{"p0"}, hashers(false, noExtra, 1))
			return ok, err
		},
		"the reference tree": func() (bool, error) {
			rr := newRegistry(t, lim)
			if _, err := rr.Create("r", prefix.Config{PageSize: 1, CapacityTokens: 64}); err != nil {
				t.Fatal(err)
			}
			_, ok, err := rr.ScoreLE32(le, noExtra, nil, hashers(false, noExtra, 1))
			return ok, err
		},
	}
	for name, f := range declined {
		if ok, err := f(); ok || err != nil {
			t.Errorf("%s: ok %t, %v; want declined", name, ok, err)
		}
	}
}
