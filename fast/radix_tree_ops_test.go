package fast_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/google/go-cmp/cmp"
	"github.com/kvtwin/kvtwin/spec"
)

// stateEqual compares two observable states.
func stateEqual(a, b spec.TreeState) bool { return cmp.Equal(a, b) }

// smokeConfigs are the configurations the random tests cover: P5's page
// sizes, Eagle on and off, every non-default eviction policy, and an Eagle
// page larger than the child lookup's stack buffer.
func smokeConfigs() []spec.TreeConfig {
	var cfgs []spec.TreeConfig
	for _, ps := range []int{1, 2, 4, 64} {
		for _, eagle := range []bool{false, true} {
			cfgs = append(cfgs, spec.TreeConfig{PageSize: ps, Eagle: eagle})
		}
	}
	return append(cfgs,
		spec.TreeConfig{PageSize: 2, Policy: spec.PolicyLFU},
		spec.TreeConfig{PageSize: 1, Policy: spec.PolicyFILO},
		spec.TreeConfig{PageSize: 4, Policy: spec.PolicyFIFO},
		spec.TreeConfig{PageSize: 2, Policy: spec.PolicyPriority, Eagle: true},
		spec.TreeConfig{PageSize: 100, Eagle: true, Policy: spec.PolicyMRU}) // pages beyond the lookup's stack buffer
}

// treeOp is one random call on a tree.
type treeOp struct {
	kind     string // insert, match, prefixlen, lock, unlock, evict
	key      spec.RadixKey
	value    []spec.SlotIdx
	priority int
	node     spec.NodeID
	n        int
}

func (o treeOp) String() string {
	return fmt.Sprintf("%s(units=%v extra=%+v value=%v prio=%d node=%d n=%d)", o.kind, o.key.Units, o.key.Extra, o.value, o.priority, o.node, o.n)
}

// opResult is everything a call returns, errors rendered as text so two
// twins' errors compare byte for byte.
type opResult struct {
	Match spec.MatchResult
	N     int
	Evict spec.EvictResult
	Err   string
}

// apply runs the op on tr and returns its result.
func (o treeOp) apply(tr spec.RadixTree) opResult {
	var r opResult
	var err error
	switch o.kind {
	case "insert":
		r.N, err = tr.Insert(o.key, o.value, o.priority)
	case "match":
		r.Match, err = tr.MatchPrefix(o.key)
	case "prefixlen":
		r.N, err = tr.PrefixLen(o.key)
	case "lock":
		r.N, err = tr.IncLockRef(o.node)
	case "unlock":
		r.N, err = tr.DecLockRef(o.node)
	case "evict":
		r.Evict, err = tr.Evict(o.n)
	}
	if err != nil {
		r.Err = err.Error()
	}
	return r
}

// randomOp draws one op. Keys come from a 3-token alphabet so prefixes are
// shared and nodes split; lengths are mostly whole pages (plus one token for
// Eagle trees), sometimes not; node ids range one past the live ones.
func randomOp(rng *rand.Rand, ps int, nextID spec.NodeID) treeOp {
	salt, lora := "s", "lora"
	extras := []spec.ExtraKey{{}, spec.ExtraKeyOf(&lora, nil), spec.ExtraKeyOf(nil, &salt)}
	o := treeOp{key: spec.RadixKey{Extra: extras[rng.IntN(len(extras))]}}
	n := rng.IntN(5) * ps
	switch rng.IntN(4) {
	case 0:
		n += rng.IntN(ps + 1) // possibly unaligned
	case 1:
		n++ // whole pages of bigrams
	}
	o.key.Units = make([]spec.Unit, n)
	for i := range o.key.Units {
		o.key.Units[i] = spec.Unit(rng.IntN(3))
	}
	if n > 0 && rng.IntN(50) == 0 {
		o.key.Units[rng.IntN(n)] = 1 << 32 // out of token range
	}
	switch k := rng.IntN(20); {
	case k < 7:
		o.kind, o.priority = "insert", rng.IntN(3)
		if rng.IntN(3) > 0 {
			o.value = make([]spec.SlotIdx, n+rng.IntN(20)/19) // rarely one too many
			for i := range o.value {
				o.value[i] = rng.Int64N(1000)
			}
		}
	case k < 12:
		o.kind = "match"
	case k < 13:
		o.kind = "prefixlen"
	case k < 15:
		o.kind, o.node = "lock", rng.Int64N(nextID+1)
	case k < 17:
		o.kind, o.node = "unlock", rng.Int64N(nextID+1)
	default:
		o.kind, o.n = "evict", rng.IntN(3*ps+2)-1
	}
	return o
}
