package zmq

import (
	"context"
	"log/slog"
	"sync"

	"github.com/go-zeromq/zmq4"
)

// go-zeromq socket handling shared by the SUB and DEALER sides.
//
// Queueing: a go-zeromq SUB or DEALER socket runs one goroutine per
// connection that reads whole messages and pushes them into a channel of 10
// messages; Recv takes from that channel. When the subscriber does not call
// Recv, the connection goroutine blocks on the full channel, stops reading
// the TCP socket, and the kernel's buffers then the publisher's high-water
// mark take the backlog (libzmq's PUB drops past it; §1.1). So at most
// 10 + 1 messages per connection wait inside go-zeromq, each bounded by
// Options.MaxMessageBytes through the guarded transport, plus the one the
// subscriber's reader goroutine holds while it hands it over on an
// unbuffered channel.
//
// Closing: go-zeromq's connection goroutine sends into that channel without
// watching the socket's context, so a socket closed while its channel is
// full would leave the goroutine blocked forever. closeSocket therefore
// closes the socket, then takes messages off the channel until it has made
// room (Recv on a closed socket never blocks), after which the connection
// goroutine finds its connection closed and ends.

// drainAfterClose is how many Recv calls closeSocket makes on a closed
// socket. Recv picks at random between the closed context and a waiting
// message, so 64 calls leave a full channel full with probability 2^-64
// per message needed; one free slot is all the blocked sender needs.
const drainAfterClose = 64

// closeSocket closes sck and frees any go-zeromq goroutine blocked on its
// receive queue. Only the caller may be using sck.
func closeSocket(sck zmq4.Socket) {
	_ = sck.Close()
	for range drainAfterClose {
		_, _ = sck.Recv()
	}
}

// received is one Recv result: the message and its bytes, which the
// receiver now owns in the budget (budget.go), or the error.
type received struct {
	msg zmq4.Msg
	n   int64
	err error
}

// dealerConn is a DEALER socket connected to a replay endpoint, with the
// goroutine that receives its replies and the socket's ledger.
type dealerConn struct {
	sck  zmq4.Socket
	led  *ledger
	msgs chan received // unbuffered; the last value carries the error
	done chan struct{} // closed by close
	wg   sync.WaitGroup
}

// newSocketOptions are the go-zeromq options of every socket: no dial retry
// of go-zeromq's own (the subscriber backs off itself), bounded dial and
// send, go-zeromq's own log lines at debug level.
func newSocketOptions(o Options, log *slog.Logger) []zmq4.Option {
	return []zmq4.Option{
		zmq4.WithDialerMaxRetries(0),
		zmq4.WithDialerTimeout(o.DialTimeout),
		zmq4.WithTimeout(o.DialTimeout),
		zmq4.WithLogger(slog.NewLogLogger(log.Handler(), slog.LevelDebug)),
	}
}

// dialDealer connects a DEALER to ep (already in the guarded scheme),
// whose frames are reserved in acct, and starts its receiver.
func dialDealer(ctx context.Context, ep string, o Options, log *slog.Logger, acct *account) (*dealerConn, error) {
	led := newLedger(acct)
	sck := zmq4.NewDealer(withLedger(ctx, led), newSocketOptions(o, log)...)
	if err := sck.Dial(ep); err != nil {
		closeSocket(sck)
		led.close()
		return nil, err
	}
	d := &dealerConn{sck: sck, led: led, msgs: make(chan received), done: make(chan struct{})}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		for {
			m, err := sck.Recv()
			r := received{msg: m, err: err}
			if err == nil {
				r.n = msgBytes(m.Frames)
				led.take(r.n)
			}
			select {
			case d.msgs <- r:
			case <-d.done:
				acct.release(r.n)
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return d, nil
}

// send sends one request.
func (d *dealerConn) send(frames [][]byte) error {
	return d.sck.Send(zmq4.NewMsgFrom(frames...))
}

// close closes the socket, waits for the receiver and frees go-zeromq's
// goroutines. Replies in flight are discarded and their bytes released.
func (d *dealerConn) close() {
	_ = d.sck.Close()
	close(d.done)
	d.wg.Wait()
	closeSocket(d.sck)
	d.led.close()
}
