package fast

import (
	"errors"

	"github.com/kvtwin/kvtwin/spec"
)

// ErrStaleView is what a SlotView answers once its tree has changed shape
// since the view was taken (a leaf added or evicted, a node split): its
// slot arrays may no longer be the tree's.
var ErrStaleView = errors.New("fast: slot view is stale: the radix tree changed since MatchPrefixView")

// SlotView is the slots of a matched prefix as views of the tree's own
// slot arrays, one segment per node on the path, in key order: a full hit
// answered without copying its slots. It is valid until the tree's next
// change of shape, which a generation counter detects; like the tree, it
// must not be used concurrently with a change.
type SlotView struct {
	t    *RadixTree
	gen  uint64
	segs [][]spec.SlotIdx
	n    int
}

// MatchPrefixView is PrefixLen's read-only walk (no tick, no stamp, no
// split; docs/spec/radix-acks.md §1.4) answering the matched slots as a
// SlotView whose segments are appended to segs[:0] (pass the previous
// view's Segments to reuse them: a match then allocates nothing). The
// slots are those MatchPrefix(k) would return; the view sees the tree's
// arrays, so it must not be written through.
func (t *RadixTree) MatchPrefixView(segs [][]spec.SlotIdx, k spec.RadixKey) (SlotView, error) {
	v := SlotView{t: t, gen: t.gen, segs: segs[:0]}
	if t.cfg.Disable {
		return v, nil
	}
	var qb keyBacking
	q, err := t.queryKey(k, &qb)
	if err != nil {
		return SlotView{}, err
	}
	q = q.slice(0, q.n/t.ps*t.ps)
	var buf [pageBuf]spec.Unit
	scratch := t.scratchFor(q, buf[:])
	for n := t.root; q.n > 0; {
		c := t.lookup(n, q, scratch)
		if c == nil {
			break
		}
		p := matchLen(c.key, q, t.ps)
		v.segs = append(v.segs, c.value[:p:p])
		v.n += p
		if p < c.key.n {
			break
		}
		n = c
		q = q.slice(p, q.n)
	}
	return v, nil
}

// Len is the number of matched slots (units).
func (v SlotView) Len() int { return v.n }

// Segments is the matched slots, node by node in key order, or
// ErrStaleView once the tree has changed shape.
func (v SlotView) Segments() ([][]spec.SlotIdx, error) {
	if v.t != nil && v.t.gen != v.gen {
		return nil, ErrStaleView
	}
	return v.segs, nil
}

// AppendTo appends the matched slots to dst (the copy MatchPrefixAppend
// makes, taken when it is wanted), or returns dst and ErrStaleView once the
// tree has changed shape.
func (v SlotView) AppendTo(dst []spec.SlotIdx) ([]spec.SlotIdx, error) {
	segs, err := v.Segments()
	if err != nil {
		return dst, err
	}
	for _, s := range segs {
		dst = append(dst, s...)
	}
	return dst, nil
}
