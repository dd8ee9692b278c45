package equiv

import (
	"encoding/binary"
	"math"

	"github.com/kvtwin/kvtwin/spec"
)

// The cursor model (§3.1, §3.2, §2.10 A7): what the index must do with the
// seqs of one stream, independent of payloads (a batch the decoder or the
// pools refuse still counts as received, §2.7). The generator runs it to
// know when a replay is outstanding; the cursor-follows-3.1 property runs
// it over a script and compares its predictions with the trace.

// kvCursor is one stream's cursor as the model sees it.
type kvCursor struct {
	replay       bool
	maxHeld      int
	maxHeldBytes int64
	known        bool
	next         uint64
	// pastEnd: seq 2^64-1 was applied, so every seq is below next.
	pastEnd bool
	last    uint64 // lastLive
	// replaying is set while a replay is outstanding; target is the held
	// trigger's seq.
	replaying bool
	target    uint64
	held      []kvHeldMsg
	// request is the start of the replay the last step asked for.
	request *uint64
}

// kvCursorOut is what the model predicts for one step.
type kvCursorOut struct {
	applied, dups []uint64
	request       *uint64
	done          bool
	lost          []spec.KVEvGap
	restart       bool
	errCode       string
	// overflow: a held message was dropped (A7); its seq's loss is A3's.
	overflow bool
}

func newKVCursor(s spec.KVEvStream, cfg spec.KVEvConfig) *kvCursor {
	d := cfg.WithDefaults()
	return &kvCursor{replay: s.Replay, maxHeld: d.MaxHeld, maxHeldBytes: d.MaxHeldBytes}
}

// kvHeldMsg is a held message as the model sees it: its seq and its
// frames' bytes (A7).
type kvHeldMsg struct {
	seq  uint64
	size int64
}

// heldBytes is the hold queue's bytes (A7).
func (c *kvCursor) heldBytes() int64 {
	var n int64
	for _, m := range c.held {
		n += m.size
	}
	return n
}

func seqOf(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

// live is a message on the SUB socket.
func (c *kvCursor) live(frames []spec.HexBytes) kvCursorOut {
	var o kvCursorOut
	switch {
	case len(frames) != 3:
		o.errCode = spec.ErrFrameCount.Code()
		return o
	case len(frames[1]) != 8:
		o.errCode = spec.ErrSeqWidth.Code()
		return o
	}
	m := kvHeldMsg{seq: seqOf(frames[1])}
	for _, f := range frames {
		m.size += int64(len(f))
	}
	if c.replaying {
		if len(c.held) >= c.maxHeld || c.heldBytes()+m.size > c.maxHeldBytes {
			o.overflow = true
		} else {
			c.held = append(c.held, m)
		}
		return o
	}
	c.rules(m, &o)
	return o
}

// rules is §3.1's live rules for the message m.
func (c *kvCursor) rules(m kvHeldMsg, o *kvCursorOut) {
	s := m.seq
	if c.known && s <= c.last { // step 2: a new publisher incarnation
		o.restart = true
		c.known = false
	}
	if !c.known { // step 1
		c.known, c.last, c.next, c.pastEnd = true, s, 0, false
		if s == 0 {
			c.apply(0, o)
			return
		}
		c.gap(m, o)
		return
	}
	c.last = s // step 3
	c.compare(m, o)
}

// compare is §3.1 step 3's comparison of m's seq with next.
func (c *kvCursor) compare(m kvHeldMsg, o *kvCursorOut) {
	switch s := m.seq; {
	case c.pastEnd || s < c.next:
		o.dups = append(o.dups, s)
	case s == c.next:
		c.apply(s, o)
	default:
		c.gap(m, o)
	}
}

// apply applies s and moves next past it (past 2^64-1: pastEnd).
func (c *kvCursor) apply(s uint64, o *kvCursorOut) {
	o.applied = append(o.applied, s)
	if s == math.MaxUint64 {
		c.next, c.pastEnd = s, true
		return
	}
	c.next = s + 1
}

// gap is [next, m.seq): replayed (the trigger held, whatever its size) or lost.
func (c *kvCursor) gap(m kvHeldMsg, o *kvCursorOut) {
	s := m.seq
	if c.replay {
		c.replaying, c.target, c.held = true, s, []kvHeldMsg{m}
		o.request = new(c.next)
		c.request = o.request
		return
	}
	o.lost = append(o.lost, spec.KVEvGap{From: c.next, To: s})
	c.apply(s, o)
}

// reply is one message on the DEALER socket.
func (c *kvCursor) reply(frames []spec.HexBytes) kvCursorOut {
	var o kvCursorOut
	n := len(frames)
	if !c.replaying || (n != 3 && n != 4) || len(frames[0]) != 0 || len(frames[n-2]) != 8 {
		o.errCode = spec.ErrReplayProtocol.Code()
		return o
	}
	s := seqOf(frames[n-2])
	if s == math.MaxUint64 && len(frames[n-1]) == 0 {
		o.done = true
		c.end(&o)
		return o
	}
	switch {
	case c.pastEnd || s < c.next:
		o.dups = append(o.dups, s)
		return o
	case s != c.next:
		o.lost = append(o.lost, spec.KVEvGap{From: c.next, To: s})
	}
	c.apply(s, &o)
	return o
}

// failed is a replay_failed step.
func (c *kvCursor) failed() kvCursorOut {
	var o kvCursorOut
	if !c.replaying {
		o.errCode = spec.ErrReplayProtocol.Code() // A7: nothing outstanding
		return o
	}
	c.end(&o)
	return o
}

// end finishes the outstanding replay (sentinel or failure): the rest of
// [next, trigger) is lost, then the hold queue drains (A7).
func (c *kvCursor) end(o *kvCursorOut) {
	if !c.pastEnd && c.next < c.target {
		o.lost = append(o.lost, spec.KVEvGap{From: c.next, To: c.target})
		c.next = c.target
	}
	c.replaying = false
	held := c.held
	c.held = nil
	if len(held) == 0 {
		return
	}
	c.compare(held[0], o) // the trigger: step 3's comparison only
	if c.replaying {
		c.held = append(c.held, held[1:]...)
		return
	}
	for i, m := range held[1:] {
		c.rules(m, o)
		if c.replaying {
			c.held = append(c.held, held[i+2:]...)
			return
		}
	}
}

// restart is §3.4's operator signal.
func (c *kvCursor) restart() kvCursorOut {
	c.known, c.replaying, c.held = false, false, nil
	return kvCursorOut{restart: true}
}
