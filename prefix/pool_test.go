package prefix_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvtwin/kvtwin/prefix"
	"github.com/kvtwin/kvtwin/ref"
	"github.com/kvtwin/kvtwin/spec"
)

func TestInsertCachesWholePagesAndReportsTheTail(t *testing.T) {
	eachTree(t, func(t *testing.T, newTree spec.NewRadixTreeFunc) {
		p, tree := newPool(t, newTree, prefix.Config{PageSize: 2, CapacityTokens: 16})
		got := mustInsert(t, p, []int64{1, 2, 3, 4, 5})
		want := prefix.InsertResult{PrefixLen: 0, InsertedTokens: 4, UncachedTailTokens: 1, Slots: slots(0, 1, 2, 3), LastNode: 1}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("first insert (-want +got):\n%s", diff)
		}
		got = mustInsert(t, p, []int64{1, 2, 3, 4, 6, 7})
		want = prefix.InsertResult{PrefixLen: 4, InsertedTokens: 2, Slots: slots(0, 1, 2, 3, 4, 5), LastNode: 2}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("extending insert (-want +got):\n%s", diff)
		}
		checkConsistent(t, p, tree)
	})
}

func TestInsertOfACachedKeyTakesNoSlots(t *testing.T) {
	eachTree(t, func(t *testing.T, newTree spec.NewRadixTreeFunc) {
		p, tree := newPool(t, newTree, prefix.Config{PageSize: 1, CapacityTokens: 8})
		first := mustInsert(t, p, []int64{1, 2, 3})
		again := mustInsert(t, p, []int64{1, 2, 3})
		if again.PrefixLen != 3 || again.InsertedTokens != 0 || !cmp.Equal(again.Slots, first.Slots) || again.LastNode != first.LastNode {
			t.Fatalf("re-insert %+v, want prefix 3, nothing new, slots %v on node %d", again, first.Slots, first.LastNode)
		}
		if s := p.Stats(); s.UsedTokens != 3 || s.InsertedTokens != 3 {
			t.Fatalf("stats %+v, want 3 used and 3 inserted", s)
		}
		checkConsistent(t, p, tree)
	})
}

func TestInsertEndingInsideANodeSplitsItAndCountsTheNewNode(t *testing.T) {
	eachTree(t, func(t *testing.T, newTree spec.NewRadixTreeFunc) {
		p, tree := newPool(t, newTree, prefix.Config{PageSize: 1, CapacityTokens: 8})
		mustInsert(t, p, []int64{1, 2, 3, 4})
		r := mustInsert(t, p, []int64{1, 2, 9})
		// The match splits node 1 at 2 (new prefix node 2); the leaf [9] is node 3.
		if r.PrefixLen != 2 || r.LastNode != 3 || !cmp.Equal(r.Slots, slots(0, 1, 4)) {
			t.Fatalf("insert %+v", r)
		}
		if n := p.Stats().Nodes; n != 3 {
			t.Fatalf("%d nodes, want 3", n)
		}
		checkConsistent(t, p, tree)
	})
}

func TestInsertEvictsLRULeavesAndReusesTheirSlots(t *testing.T) {
	eachTree(t, func(t *testing.T, newTree spec.NewRadixTreeFunc) {
		p, tree := newPool(t, newTree, prefix.Config{PageSize: 1, CapacityTokens: 4})
		mustInsert(t, p, []int64{1, 2}) // slots 0, 1
		mustInsert(t, p, []int64{3, 4}) // slots 2, 3
		if _, err := p.Match([]int64{1, 2}, noExtra, false); err != nil {
			t.Fatal(err)
		}
		r := mustInsert(t, p, []int64{5, 6})
		if r.EvictedTokens != 2 || !cmp.Equal(r.Slots, slots(2, 3)) {
			t.Fatalf("insert %+v, want [3 4] evicted and its slots 2, 3 reused in order", r)
		}
		if m, _ := p.Match([]int64{1, 2}, noExtra, false); m.MatchedTokens != 2 {
			t.Fatalf("the recently matched [1 2] was evicted: %+v", m)
		}
		s := p.Stats()
		if s.EvictedTokens != 2 || s.Evictions != 1 || s.UsedTokens != 4 {
			t.Fatalf("stats %+v", s)
		}
		checkConsistent(t, p, tree)
	})
}

func TestInsertNeverEvictsThePrefixItReuses(t *testing.T) {
	eachTree(t, func(t *testing.T, newTree spec.NewRadixTreeFunc) {
		// MRU evicts the most recently touched leaf first, which is the
		// path the insert has just matched: the lock must keep it.
		p, tree := newPool(t, newTree, prefix.Config{PageSize: 1, CapacityTokens: 4, Policy: spec.PolicyMRU})
		mustInsert(t, p, []int64{1, 2}) // slots 0, 1
		mustInsert(t, p, []int64{9})    // slot 2
		r := mustInsert(t, p, []int64{1, 2, 3, 4})
		if r.PrefixLen != 2 || r.EvictedTokens != 1 || !cmp.Equal(r.Slots, slots(0, 1, 2, 3)) {
			t.Fatalf("insert %+v, want [1 2] kept on 0, 1, then [9]'s freed slot 2 and the fresh 3", r)
		}
		checkConsistent(t, p, tree)
	})
}

func TestInsertThatCannotFitLeavesThePoolUnchanged(t *testing.T) {
	eachTree(t, func(t *testing.T, newTree spec.NewRadixTreeFunc) {
		p, tree := newPool(t, newTree, prefix.Config{PageSize: 1, CapacityTokens: 8})
		mustInsert(t, p, []int64{1, 2, 3, 4})
		b := mustInsert(t, p, []int64{9, 9})
		if _, err := p.Lock(b.LastNode); err != nil {
			t.Fatal(err)
		}
		// 4 new units, 2 free; the only evictable units are the 4 the
		// insert reuses, so it cannot fit. The bound-only check cannot
		// tell; the path walk must.
		wantUnchanged(t, p, tree, func() error {
			_, err := p.Insert([]int64{1, 2, 3, 4, 5, 6, 7, 8}, noExtra, 0)
			wantReject(t, err, prefix.ErrPoolFull, "tokens")
			return err
		})
		// Nothing evictable at all: rejected by the bound alone.
		if _, err := p.Lock(1); err != nil {
			t.Fatal(err)
		}
		wantUnchanged(t, p, tree, func() error {
			_, err := p.Insert([]int64{7, 7, 7}, noExtra, 0)
			wantReject(t, err, prefix.ErrPoolFull, "tokens")
			return err
		})
	})
}

// wantUnchanged runs a failing call and requires the tree state and the
// pool stats to be exactly as before.
func wantUnchanged(t *testing.T, p *prefix.Pool, tree spec.RadixTree, call func() error) {
	t.Helper()
	st, stats := tree.State(), p.Stats()
	if call() == nil {
		t.Fatal("the call succeeded")
	}
	if diff := cmp.Diff(st, tree.State()); diff != "" {
		t.Fatalf("a failed call changed the tree (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(stats, p.Stats()); diff != "" {
		t.Fatalf("a failed call changed the stats (-before +after):\n%s", diff)
	}
}

func TestInsertEvictsOffPathLeavesWhenThePathIsLocked(t *testing.T) {
	eachTree(t, func(t *testing.T, newTree spec.NewRadixTreeFunc) {
		p, tree := newPool(t, newTree, prefix.Config{PageSize: 1, CapacityTokens: 8})
		a := mustInsert(t, p, []int64{1, 2, 3, 4})
		mustInsert(t, p, []int64{9, 9})
		if _, err := p.Lock(a.LastNode); err != nil {
			t.Fatal(err)
		}
		// Shortfall 2 equals everything evictable, and the reused path
		// holds none of it: [9 9] goes.
		r := mustInsert(t, p, []int64{1, 2, 3, 4, 5, 6, 7, 8})
		if r.EvictedTokens != 2 || r.PrefixLen != 4 || r.InsertedTokens != 4 {
			t.Fatalf("insert %+v", r)
		}
		checkConsistent(t, p, tree)
	})
}

func TestInsertRejectsWhatCanNeverFit(t *testing.T) {
	eachTree(t, func(t *testing.T, newTree spec.NewRadixTreeFunc) {
		p, tree := newPool(t, newTree, prefix.Config{PageSize: 2, CapacityTokens: 4})
		wantUnchanged(t, p, tree, func() error {
			_, err := p.Insert(seq(0, 7), noExtra, 0) // 6 whole-page units > 4 slots
			wantReject(t, err, prefix.ErrExceedsCapacity, "tokens")
			return err
		})
		wantUnchanged(t, p, tree, func() error {
			_, err := p.Insert([]int64{1, 2, -3}, noExtra, 0)
			wantReject(t, err, spec.ErrTokenRange, "tokens[2]")
			return err
		})
		wantUnchanged(t, p, tree, func() error {
			_, err := p.Insert([]int64{1, 2, 1 << 32}, noExtra, 0)
			wantReject(t, err, spec.ErrTokenRange, "tokens[2]")
			return err
		})
		r := mustInsert(t, p, seq(0, 5)) // 4 units fit exactly, the fifth token is the tail
		if r.InsertedTokens != 4 || r.UncachedTailTokens != 1 {
			t.Fatalf("insert %+v", r)
		}
	})
}

func TestRequestsOverTheTokenLimitAreRejectedBeforeAnyWork(t *testing.T) {
	eachTree(t, func(t *testing.T, newTree spec.NewRadixTreeFunc) {
		p, err := prefix.NewPool(newTree, prefix.Config{PageSize: 1, CapacityTokens: 64}, 64, 4)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Insert(seq(0, 5), noExtra, 0)
		wantReject(t, err, prefix.ErrRequestTooLong, "tokens")
		_, err = p.Match(seq(0, 5), noExtra, false)
		wantReject(t, err, prefix.ErrRequestTooLong, "tokens")
		_, err = p.PrefixLen(seq(0, 5), noExtra)
		wantReject(t, err, prefix.ErrRequestTooLong, "tokens")
		if _, err := p.Insert(seq(0, 4), noExtra, 0); err != nil {
			t.Fatalf("a request at the limit: %v", err)
		}
	})
}

func TestAnEmptyOrSubPageInsertCachesNothing(t *testing.T) {
	eachTree(t, func(t *testing.T, newTree spec.NewRadixTreeFunc) {
		p, tree := newPool(t, newTree, prefix.Config{PageSize: 4, CapacityTokens: 8})
		for _, tokens := range [][]int64{{}, {1, 2, 3}} {
			r := mustInsert(t, p, tokens)
			want := prefix.InsertResult{UncachedTailTokens: len(tokens), Slots: []spec.SlotIdx{}}
			if diff := cmp.Diff(want, r); diff != "" {
				t.Fatalf("insert %v (-want +got):\n%s", tokens, diff)
			}
		}
		checkConsistent(t, p, tree)
	})
}

func TestMatchReturnsSlotsCountsHitsAndCanLock(t *testing.T) {
	eachTree(t, func(t *testing.T, newTree spec.NewRadixTreeFunc) {
		p, tree := newPool(t, newTree, prefix.Config{PageSize: 2, CapacityTokens: 16})
		mustInsert(t, p, []int64{1, 2, 3, 4})
		m, err := p.Match([]int64{1, 2, 3, 5, 6}, noExtra, true)
		if err != nil {
			t.Fatal(err)
		}
		// docs/spec/radix-acks.md §1.4 (ps = 2): node 1 splits; new node 2 holds [1 2].
		want := prefix.MatchResult{MatchedTokens: 2, Slots: slots(0, 1), LastNode: 2, Locked: true}
		if diff := cmp.Diff(want, m); diff != "" {
			t.Fatalf("match (-want +got):\n%s", diff)
		}
		s := p.Stats()
		if s.QueryTokens != 5 || s.HitTokens != 2 || s.ProtectedTokens != 2 || s.EvictableTokens != 2 || s.Nodes != 2 {
			t.Fatalf("stats %+v", s)
		}
		if m, _ := p.Match([]int64{1, 2}, spec.ExtraKeyOf(new(""), nil), false); m.MatchedTokens != 0 {
			t.Fatalf("extra \"\" matched the unset namespace: %+v", m)
		}
		checkConsistent(t, p, tree)
	})
}

func TestLockProtectsAndUnlockRefusesUnderflow(t *testing.T) {
	eachTree(t, func(t *testing.T, newTree spec.NewRadixTreeFunc) {
		p, tree := newPool(t, newTree, prefix.Config{PageSize: 1, CapacityTokens: 8})
		r := mustInsert(t, p, []int64{1, 2, 3})
		if n, err := p.Lock(r.LastNode); err != nil || n != 3 {
			t.Fatalf("lock: %d, %v; want 3 newly protected", n, err)
		}
		if ev, err := p.Evict(10); err != nil || ev.EvictedTokens != 0 {
			t.Fatalf("evict of a locked pool: %+v, %v", ev, err)
		}
		if n, err := p.Unlock(r.LastNode); err != nil || n != 3 {
			t.Fatalf("unlock: %d, %v; want 3 newly evictable", n, err)
		}
		wantUnchanged(t, p, tree, func() error {
			_, err := p.Unlock(r.LastNode)
			wantReject(t, err, spec.ErrLockUnderflow, "node")
			return err
		})
		wantUnchanged(t, p, tree, func() error {
			_, err := p.Lock(99)
			wantReject(t, err, spec.ErrForeignNode, "node")
			return err
		})
	})
}

func TestEvictReturnsSlotsToTheFreeList(t *testing.T) {
	eachTree(t, func(t *testing.T, newTree spec.NewRadixTreeFunc) {
		p, tree := newPool(t, newTree, prefix.Config{PageSize: 1, CapacityTokens: 8})
		mustInsert(t, p, []int64{1, 2, 3}) // 0, 1, 2
		mustInsert(t, p, []int64{4, 5})    // 3, 4
		ev, err := p.Evict(1)
		if err != nil || ev != (prefix.EvictResult{EvictedTokens: 3, EvictedNodes: 1}) {
			t.Fatalf("evict: %+v, %v; want the LRU leaf [1 2 3] whole", ev, err)
		}
		r := mustInsert(t, p, []int64{6, 7, 8, 9})
		if !cmp.Equal(r.Slots, slots(0, 1, 2, 5)) {
			t.Fatalf("slots %v, want the freed 0, 1, 2 first, then the never-used 5", r.Slots)
		}
		wantUnchanged(t, p, tree, func() error {
			_, err := p.Evict(-1)
			wantReject(t, err, spec.ErrNegativeCount, "num_tokens")
			return err
		})
		checkConsistent(t, p, tree)
	})
}

func TestEaglePoolsCacheBigramsAndNeverTheLastToken(t *testing.T) {
	eachTree(t, func(t *testing.T, newTree spec.NewRadixTreeFunc) {
		p, tree := newPool(t, newTree, prefix.Config{PageSize: 2, CapacityTokens: 8, Eagle: true})
		// 5 tokens are 4 bigrams, two whole pages; no slot covers token 5.
		r := mustInsert(t, p, []int64{5, 7, 7, 9, 11})
		if r.InsertedTokens != 4 || r.UncachedTailTokens != 1 || len(r.Slots) != 4 {
			t.Fatalf("insert %+v", r)
		}
		if n, _ := p.PrefixLen([]int64{5, 7, 7, 9, 11, 13}, noExtra); n != 4 {
			t.Fatalf("prefix len %d, want 4", n)
		}
		if n, _ := p.PrefixLen([]int64{5, 7, 7, 8}, noExtra); n != 2 {
			t.Fatalf("prefix len of a key diverging in the second page: %d, want 2", n)
		}
		checkConsistent(t, p, tree)
	})
}

func TestPrefixLenIsReadOnly(t *testing.T) {
	eachTree(t, func(t *testing.T, newTree spec.NewRadixTreeFunc) {
		p, tree := newPool(t, newTree, prefix.Config{PageSize: 1, CapacityTokens: 8})
		mustInsert(t, p, []int64{1, 2, 3, 4})
		before, stats := tree.State(), p.Stats()
		if n, err := p.PrefixLen([]int64{1, 2, 9}, noExtra); err != nil || n != 2 {
			t.Fatalf("prefix len %d, %v; want 2", n, err)
		}
		if diff := cmp.Diff(before, tree.State()); diff != "" {
			t.Fatalf("PrefixLen changed the tree (split or stamp):\n%s", diff)
		}
		if diff := cmp.Diff(stats, p.Stats()); diff != "" {
			t.Fatalf("PrefixLen changed the stats:\n%s", diff)
		}
	})
}

func TestNewPoolRejectsBadConfigurations(t *testing.T) {
	for _, c := range []struct {
		cfg   prefix.Config
		err   *spec.Sentinel
		field string
	}{
		{prefix.Config{PageSize: 0, CapacityTokens: 8}, spec.ErrInvalidPageSize, "page_size"},
		{prefix.Config{PageSize: 1, CapacityTokens: 8, Policy: "random"}, spec.ErrBadEnum, "policy"},
		{prefix.Config{PageSize: 16, CapacityTokens: 8}, prefix.ErrBadCapacity, "capacity_tokens"},
		{prefix.Config{PageSize: 1, CapacityTokens: 65}, prefix.ErrBadCapacity, "capacity_tokens"},
	} {
		_, err := prefix.NewPool(ref.NewRadixTree, c.cfg, 64, 64)
		wantReject(t, err, c.err, c.field)
	}
	_, err := prefix.NewPool(ref.NewRadixTree, prefix.Config{PageSize: 1, CapacityTokens: 8}, 64, 0)
	wantReject(t, err, prefix.ErrBadLimits, "MaxRequestTokens")
}

func TestUnlockOfAnAncestorOfALockedNodeIsRefused(t *testing.T) {
	eachTree(t, func(t *testing.T, newTree spec.NewRadixTreeFunc) {
		p, tree := newPool(t, newTree, prefix.Config{PageSize: 1, CapacityTokens: 8})
		mustInsert(t, p, []int64{1, 2, 3, 4})
		m, err := p.Match([]int64{1, 2}, noExtra, true) // splits: node 2 = [1 2], locked
		if err != nil {
			t.Fatal(err)
		}
		leaf := spec.NodeID(1) // [3 4], below the locked node
		if _, err := p.Lock(leaf); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Unlock(m.LastNode); err != nil {
			t.Fatalf("unlock of the match's own lock: %v", err)
		}
		// Node 2's lock_ref is still 1, from the leaf's lock: the tree would
		// let it go to 0 under a locked child.
		wantUnchanged(t, p, tree, func() error {
			_, err := p.Unlock(m.LastNode)
			wantReject(t, err, spec.ErrLockUnderflow, "node")
			return err
		})
		if n, err := p.Unlock(leaf); err != nil || n != 4 {
			t.Fatalf("unlock of the leaf: %d, %v; want all 4 units evictable again", n, err)
		}
		checkConsistent(t, p, tree)
	})
}
