package zmq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
)

// One byte budget over everything the subscriber holds (docs/events.md,
// "Memory"; the decision is in docs/decisions.md): the frames go-zeromq
// has queued or is reading, the message a reader goroutine is handing
// over, the DEALER's replies, and the live messages the index holds while
// a replay runs.
//
// Accounting. The guarded transport (guard.go) sees every frame header
// before go-zeromq allocates the frame, and reserves the frame's size
// there, in the ledger of the socket the connection belongs to (handed to
// the transport in the socket's context). When the subscriber receives a
// message from go-zeromq it takes the message's bytes out of the ledger:
// from then on the stream owns them and releases them when the index has
// applied or dropped the message, or keeps them while the index holds it
// (the stream mirrors the index's hold queue from KVEvStepResult.Held).
// Closing a socket closes its ledger, which releases whatever go-zeromq
// still had queued or half read.
//
// Past the budget. A reservation that does not fit waits up to
// Options.BufferWait for room, then fails: the guard fails the read and
// the connection is closed, like a frame past MaxMessageBytes. The
// messages lost with it show up at the next message as a seq gap, which
// the index turns into a replay or stale engines (§3.2, §3.3). Nothing
// waits on the budget while holding what would free it: only go-zeromq's
// connection readers wait, every wait is bounded, and the stream
// goroutines, which release bytes, never wait.

// errBudget is the guard's error for a frame the budget had no room for
// within the wait; the connection is closed.
type budgetError struct{ msg string }

func (e *budgetError) Error() string   { return e.msg }
func (e *budgetError) Timeout() bool   { return false }
func (e *budgetError) Temporary() bool { return false }

// isBudget reports whether err is a budget refusal.
func isBudget(err error) bool {
	var be *budgetError
	return errors.As(err, &be)
}

// errLedgerClosed refuses a reservation on a closed socket's ledger.
var errLedgerClosed = errors.New("kvevsub: socket closed")

// byteBudget is the subscriber's budget: reserved <= capacity, always. It
// is x/sync's weighted semaphore, which serves waiting reservations in
// arrival order: a source whose reader keeps asking cannot starve another
// source's waiting frame, which gets the next bytes released.
type byteBudget struct {
	capacity int64
	wait     time.Duration
	sem      *semaphore.Weighted

	mu   sync.Mutex
	used int64 // what the semaphore holds, for inUse and for releases' clamp
}

func newByteBudget(capacity int64, wait time.Duration) *byteBudget {
	return &byteBudget{capacity: capacity, wait: wait, sem: semaphore.NewWeighted(capacity)}
}

// reserve takes n bytes, waiting up to b.wait for room; it gives up early
// (errLedgerClosed) when ctx ends. It never takes more than the capacity.
func (b *byteBudget) reserve(ctx context.Context, n int64) error {
	if n == 0 {
		return nil // an empty frame (a delimiter) takes nothing, so waits for nothing
	}
	if n > b.capacity {
		return &budgetError{fmt.Sprintf("kvevsub: a frame of %d bytes exceeds the buffer budget (%d bytes); connection closed", n, b.capacity)}
	}
	if !b.sem.TryAcquire(n) {
		wctx, cancel := context.WithTimeout(ctx, b.wait)
		err := b.sem.Acquire(wctx, n)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return errLedgerClosed
			}
			return &budgetError{fmt.Sprintf("kvevsub: no room for a frame of %d bytes in the buffer budget (%d bytes) within %v; connection closed", n, b.capacity, b.wait)}
		}
	}
	b.mu.Lock()
	b.used += n
	b.mu.Unlock()
	return nil
}

// release returns n bytes, serving the waiting reservations in order. A
// release of more than is reserved (never expected: every release follows
// its reservation) returns only what is.
func (b *byteBudget) release(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	n = min(n, b.used)
	b.used -= n
	b.mu.Unlock()
	if n > 0 {
		b.sem.Release(n)
	}
}

// inUse is the bytes reserved now.
func (b *byteBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// account is one stream's share of the budget: what it has reserved and
// not released (SourceStatus.BufferedBytes), and the connections the budget
// made it close.
type account struct {
	b         *byteBudget
	buffered  atomic.Int64
	overflows atomic.Uint64
}

func (a *account) reserve(ctx context.Context, n int64) error {
	err := a.b.reserve(ctx, n)
	if err == nil {
		a.buffered.Add(n)
	} else if isBudget(err) {
		a.overflows.Add(1)
	}
	return err
}

func (a *account) release(n int64) {
	if n > 0 {
		a.buffered.Add(-n)
		a.b.release(n)
	}
}

// ledger is one socket's bytes that go-zeromq holds: reserved by the
// guard, not yet taken by the subscriber.
type ledger struct {
	acct *account

	mu     sync.Mutex
	queued int64
	closed bool
}

func newLedger(a *account) *ledger { return &ledger{acct: a} }

// reserve is the guard's reservation of a frame of n bytes; ctx is the
// socket's, which ends (and ends the wait) when the socket closes.
func (l *ledger) reserve(ctx context.Context, n int64) error {
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return errLedgerClosed
	}
	if err := l.acct.reserve(ctx, n); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		l.acct.release(n)
		return errLedgerClosed
	}
	l.queued += n
	return nil
}

// take moves a received message's n bytes from the ledger to its receiver.
func (l *ledger) take(n int64) {
	l.mu.Lock()
	l.queued -= n
	if l.queued < 0 {
		l.queued = 0 // never expected: every frame received was reserved
	}
	l.mu.Unlock()
}

// close releases what go-zeromq still held and refuses later reservations.
func (l *ledger) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	l.acct.release(l.queued)
	l.queued = 0
}

// ledgerKey carries a socket's ledger in the socket's context, which
// go-zeromq passes to the transport's Dial.
type ledgerKey struct{}

func withLedger(ctx context.Context, l *ledger) context.Context {
	return context.WithValue(ctx, ledgerKey{}, l)
}

func ledgerOf(ctx context.Context) *ledger {
	l, _ := ctx.Value(ledgerKey{}).(*ledger)
	return l
}

// msgBytes is the bytes of a received message: its frames together.
func msgBytes(frames [][]byte) int64 {
	var n int64
	for _, f := range frames {
		n += int64(len(f))
	}
	return n
}
