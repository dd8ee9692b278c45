package equiv

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/kvtwin/kvtwin/spec"
)

// Checkers of kvev.apply's observable state: the final state's structure
// (§2.1-§2.5, A4, A5) and A8's digest recomputed from it. The properties
// run them on every case, the state machine (kvev_apply_machine_test.go)
// after every step.

// kvStateInvariants checks the final state's structure (§2.1-§2.5, A4,
// A5): sorted engines and pools, no empty pool, whole pages in a valid
// pre-order with sorted siblings, residency = the sum of the bindings, a
// hash bound once per pool, no hole without a resident descendant
// (pruning), an engine's tokens = its pages × page size within the
// budget, and streams naming exactly the engines they feed.
// kvStreamNamesAfter is the configuration order after in's steps (A11):
// the build list, each successful removal taken out, each successful add
// appended; a step without its trace entry is taken to have succeeded.
func kvStreamNamesAfter(in spec.KVEvApplyInput, out spec.KVEvApplyOutput) []string {
	var names []string
	for _, s := range in.Streams {
		names = append(names, s.Name)
	}
	for i, s := range in.Steps {
		if i < len(out.Trace) && out.Trace[i].Error != nil {
			continue
		}
		switch s.Op {
		case spec.KVStepAddStream:
			names = append(names, s.Config.Name)
		case spec.KVStepRemoveStream:
			names = slices.DeleteFunc(names, func(n string) bool { return n == s.Stream })
		}
	}
	return names
}

func kvStateInvariants(_ spec.Limits, in spec.KVEvApplyInput, out spec.KVEvApplyOutput) error {
	st := out.State
	budget := in.Config.WithDefaults().MaxTokensPerEngine
	names := kvStreamNamesAfter(in, out)
	if len(st.Streams) != len(names) {
		return fmt.Errorf("%d streams in the state, %d configured (A11: the build list, less removals, then adds)", len(st.Streams), len(names))
	}
	fed := map[spec.KVEvEngineKey]string{}
	for i, s := range st.Streams {
		if s.Name != names[i] {
			return fmt.Errorf("streams[%d] is %q, configured %q", i, s.Name, names[i])
		}
		if !s.Replaying && !s.Snapshotting && s.Held != 0 {
			return fmt.Errorf("stream %s holds %d messages without a replay or snapshot request", s.Name, s.Held)
		}
		if s.Replaying && s.Snapshotting {
			return fmt.Errorf("stream %s waits for a replay and a snapshot at once (A13)", s.Name)
		}
		if s.Held > in.Config.WithDefaults().MaxHeld {
			return fmt.Errorf("stream %s holds %d messages, max_held %d", s.Name, s.Held, in.Config.WithDefaults().MaxHeld)
		}
		for j, k := range s.Engines {
			if j > 0 && kvKeyCmp(s.Engines[j-1], k) >= 0 {
				return fmt.Errorf("stream %s: engines not sorted: %v", s.Name, s.Engines)
			}
			fed[k] = s.Name
		}
	}
	if max := in.Config.WithDefaults().MaxEngines; len(st.Engines) > max {
		return fmt.Errorf("%d engines, max_engines %d", len(st.Engines), max)
	}
	share, err := in.Config.EngineShare(len(in.Streams))
	if err != nil {
		return err
	}
	for _, s := range st.Streams {
		if len(s.Engines) > share {
			return fmt.Errorf("stream %s feeds %d engines, its share is %d", s.Name, len(s.Engines), share)
		}
	}
	for i, e := range st.Engines {
		k := spec.KVEvEngineKey{Source: e.Source, DPRank: e.DPRank}
		if i > 0 && kvKeyCmp(spec.KVEvEngineKey{Source: st.Engines[i-1].Source, DPRank: st.Engines[i-1].DPRank}, k) >= 0 {
			return fmt.Errorf("engines not sorted at %d", i)
		}
		if fed[k] != e.Stream {
			return fmt.Errorf("engine %v is fed by %q, the streams say %q", k, e.Stream, fed[k])
		}
		delete(fed, k)
		var tokens int64
		for j, p := range e.Pools {
			if j > 0 && (e.Pools[j-1].Group > p.Group || e.Pools[j-1].Group == p.Group && e.Pools[j-1].Tier >= p.Tier) {
				return fmt.Errorf("engine %v: pools not sorted", k)
			}
			if p.Tier != strings.ToUpper(p.Tier) || p.Tier == "" {
				return fmt.Errorf("engine %v: tier %q", k, p.Tier)
			}
			if err := kvPoolInvariants(p); err != nil {
				return fmt.Errorf("engine %v pool (%d, %s): %w", k, p.Group, p.Tier, err)
			}
			tokens += int64(len(p.Pages)) * p.PageSize
		}
		if tokens != e.Tokens || tokens > budget {
			return fmt.Errorf("engine %v: reports %d tokens, pages hold %d, budget %d", k, e.Tokens, tokens, budget)
		}
		if !e.Stale && e.StaleSince != 0 {
			return fmt.Errorf("engine %v: stale_since %d but not stale", k, e.StaleSince)
		}
	}
	if len(fed) > 0 {
		return fmt.Errorf("streams name engines the index does not have: %v", fed)
	}
	return nil
}

func kvKeyCmp(a, b spec.KVEvEngineKey) int {
	if c := strings.Compare(a.Source, b.Source); c != 0 {
		return c
	}
	switch {
	case a.DPRank < b.DPRank:
		return -1
	case a.DPRank > b.DPRank:
		return 1
	}
	return 0
}

// kvNode is a page of a pool rebuilt from its pre-order listing.
type kvNode struct {
	page     spec.KVEvPageState
	children []*kvNode
}

// kvTree rebuilds a pool's tree from its pages (pre-order with depths).
func kvTree(p spec.KVEvPoolState) (*kvNode, error) {
	root := &kvNode{page: spec.KVEvPageState{Depth: -1}}
	path := []*kvNode{root}
	for i, pg := range p.Pages {
		if pg.Depth < 0 || pg.Depth > len(path)-1 {
			return nil, fmt.Errorf("pages[%d]: depth %d after a page of depth %d", i, pg.Depth, len(path)-2)
		}
		path = path[:pg.Depth+1]
		n := &kvNode{page: pg}
		parent := path[len(path)-1]
		parent.children = append(parent.children, n)
		path = append(path, n)
	}
	return root, nil
}

func kvPageCmp(a, b spec.KVEvPageState) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return slices.Compare(a.Tokens, b.Tokens)
}

func kvPoolInvariants(p spec.KVEvPoolState) error {
	if p.PageSize < 1 || len(p.Pages) == 0 {
		return fmt.Errorf("page size %d, %d pages (an empty pool is deleted, A5)", p.PageSize, len(p.Pages))
	}
	root, err := kvTree(p)
	if err != nil {
		return err
	}
	bound := map[spec.EvHash]bool{}
	var walk func(n *kvNode) (resident bool, err error)
	walk = func(n *kvNode) (bool, error) {
		any := false
		for j, c := range n.children {
			if j > 0 && kvPageCmp(n.children[j-1].page, c.page) >= 0 {
				return false, fmt.Errorf("children of a page not sorted by (namespace, tokens): %v then %v", n.children[j-1].page.Tokens, c.page.Tokens)
			}
			r, err := walk(c)
			if err != nil {
				return false, err
			}
			any = any || r
		}
		if n.page.Depth < 0 {
			return any, nil
		}
		pg := n.page
		if int64(len(pg.Tokens)) != p.PageSize {
			return false, fmt.Errorf("page %v of %d tokens, page size %d", pg.Tokens, len(pg.Tokens), p.PageSize)
		}
		var sum int64
		for j, b := range pg.Bindings {
			if j > 0 && pg.Bindings[j-1].Hash >= b.Hash {
				return false, fmt.Errorf("page %v: bindings not sorted by hash", pg.Tokens)
			}
			if b.Count < 0 {
				return false, fmt.Errorf("page %v: binding %016x count %d", pg.Tokens, uint64(b.Hash), b.Count)
			}
			if bound[b.Hash] {
				return false, fmt.Errorf("hash %016x bound to two pages", uint64(b.Hash))
			}
			bound[b.Hash] = true
			sum += b.Count
		}
		if sum != pg.Resident {
			return false, fmt.Errorf("page %v: resident %d, bindings sum to %d", pg.Tokens, pg.Resident, sum)
		}
		if pg.Resident == 0 && !any {
			return false, fmt.Errorf("page %v (depth %d) is a hole with no resident descendant (not pruned)", pg.Tokens, pg.Depth)
		}
		return any || pg.Resident > 0, nil
	}
	_, err = walk(root)
	return err
}

// kvDigest is A8's digest of a state, recomputed from its engines.
func kvDigest(st spec.KVEvState) string {
	h := sha256.New()
	u64 := func(v uint64) { h.Write(binary.LittleEndian.AppendUint64(nil, v)) }
	str := func(s string) { u64(uint64(len(s))); h.Write([]byte(s)) }
	u64(uint64(len(st.Engines)))
	for _, e := range st.Engines {
		str(e.Source)
		u64(uint64(e.DPRank))
		if e.Stale {
			h.Write([]byte{1})
		} else {
			h.Write([]byte{0})
		}
		u64(uint64(len(e.Pools)))
		for _, p := range e.Pools {
			u64(uint64(p.Group))
			str(p.Tier)
			u64(uint64(p.PageSize))
			u64(uint64(len(p.Pages)))
			for _, pg := range p.Pages {
				u64(uint64(pg.Depth))
				str(pg.Namespace)
				u64(uint64(len(pg.Tokens)))
				for _, tok := range pg.Tokens {
					h.Write(binary.LittleEndian.AppendUint32(nil, tok))
				}
				u64(uint64(len(pg.Bindings)))
				for _, b := range pg.Bindings {
					u64(uint64(b.Hash))
					u64(uint64(b.Count))
				}
			}
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// kvDigestIsA8: the reported digest is A8's encoding of the reported
// engines, so the digest covers exactly what the state shows.
func kvDigestIsA8(_ spec.Limits, _ spec.KVEvApplyInput, out spec.KVEvApplyOutput) error {
	if want := kvDigest(out.State); out.State.Digest != want {
		return fmt.Errorf("digest %s, A8 over the state gives %s", out.State.Digest, want)
	}
	return nil
}
