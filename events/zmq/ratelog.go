package zmq

import (
	"sync"
	"time"
)

// rateLimit lets one log line through per interval and counts the lines it
// holds back, so a publisher that sends a refused message a thousand times
// a second costs one log line per interval, not a thousand (the count says
// how many were held back). One per source; safe for concurrent use (the
// stream's goroutine and its SUB reader both log through it).
type rateLimit struct {
	interval time.Duration

	mu         sync.Mutex
	last       time.Time // when the last line went through; zero: none yet
	held       uint64    // lines held back since then
	suppressed uint64    // lines held back in all (SourceStatus.LogSuppressed)
}

// allow reports whether a line may be written at now, and how many were
// held back since the last one that was.
func (r *rateLimit) allow(now time.Time) (ok bool, heldBack uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.last.IsZero() && now.Sub(r.last) < r.interval {
		r.held++
		r.suppressed++
		return false, 0
	}
	heldBack, r.held, r.last = r.held, 0, now
	return true, heldBack
}

// total is the lines held back in all.
func (r *rateLimit) total() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.suppressed
}
