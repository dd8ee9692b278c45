package zmq

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/kvtwin/kvtwin/spec"
)

// Options tune a Subscriber. Zero fields take the defaults of
// DefaultOptions; every duration is here so tests can shrink them.
type Options struct {
	// Logger receives connection and replay events (nil: discard).
	Logger *slog.Logger
	// ReconnectMin is the first wait before redialling a SUB socket that
	// failed to connect or lost its connection; each failure doubles it.
	ReconnectMin time.Duration
	// ReconnectMax caps that wait.
	ReconnectMax time.Duration
	// DialTimeout bounds one TCP connect plus the ZMTP handshake.
	DialTimeout time.Duration
	// ReplayTimeout is how long a replay may go without a reply frame
	// before it fails with "timeout" (§3.2: 5 s).
	ReplayTimeout time.Duration
	// ReplayCooldown is how long replay requests are answered with
	// "unavailable" after a failed replay (§3.2: 30 s); a successful
	// replay ends it.
	ReplayCooldown time.Duration
	// MaxMessageBytes bounds the frames of one received message together
	// (live or replay). A larger message closes the connection before its
	// body is allocated; the subscriber then reconnects.
	MaxMessageBytes int64
	// MaxFrames bounds the frames of one received message.
	MaxFrames int
	// MaxBufferedBytes is the byte budget over everything the subscriber
	// holds for all its sources together: frames go-zeromq has queued or
	// is reading (live and replay), the message being handed over, and the
	// live messages the index holds while a replay runs (budget.go). It is
	// at least MaxMessageBytes, so one message of any allowed size fits.
	MaxBufferedBytes int64
	// BufferWait is how long a frame may wait for room in the budget
	// before its connection is closed (its messages then surface as a seq
	// gap: replay, or stale engines).
	BufferWait time.Duration
	// LogInterval is the least time between two log lines of one source
	// about refused messages, refused batches and events, step errors and
	// connections cut by a bound; the lines in between are counted
	// (SourceStatus.LogSuppressed).
	LogInterval time.Duration
	// ReplayMaxDuration bounds one replay from its request to its
	// sentinel: a replay endpoint that keeps answering (each reply resets
	// ReplayTimeout) without ever sending the sentinel fails with
	// "timeout" when it has run this long.
	ReplayMaxDuration time.Duration
	// HeartbeatTimeout is how long the live socket of a source with a
	// snapshot endpoint may stay silent before the subscriber tells the
	// index (spec.KVEvBootstrapper.HeartbeatLost; §3.5: 5 s). A publisher
	// with vLLM's snapshot service sends heartbeats when idle, so silence
	// means lost messages or a lost publisher; the next live message then
	// asks for a snapshot (§2.10 A13).
	HeartbeatTimeout time.Duration
	// SnapshotTimeout is how long a snapshot request may wait for its
	// reply before it fails with "timeout" (§3.5's example: 5 s). A
	// snapshot failure starts a cooldown of ReplayCooldown, of its own,
	// during which snapshot requests are answered "unavailable".
	SnapshotTimeout time.Duration
	// SnapshotMaxBytes bounds one snapshot reply, frames together (the
	// index refuses a larger one: max_held_bytes, §2.10 A13); a larger
	// one closes the snapshot connection before its body is read, and the
	// request fails. Set it to the index's max_held_bytes.
	SnapshotMaxBytes int64
	// SnapshotMaxChunks bounds the chunks (batch payloads) of one snapshot
	// reply (the index refuses more: max_held, §2.10 A13); the reply's
	// frames are bounded by it plus 3 (delimiter, seq, publisher id). Set
	// it to the index's max_held.
	SnapshotMaxChunks int
}

// Defaults and caps of Options.
const (
	defaultMaxMessageBytes  = 64 << 20
	maxMaxMessageBytes      = 1 << 30
	defaultMaxFrames        = 16
	maxMaxFrames            = 1024
	defaultMaxBufferedBytes = 256 << 20
	maxMaxBufferedBytes     = 1 << 40
	// The snapshot reply's defaults are the index's defaults of
	// max_held_bytes and max_held (spec.DefaultKVEvConfig); its caps are
	// the index's caps of them, the byte cap lowered to maxMaxMessageBytes
	// (one message held whole in memory).
	defaultSnapshotMaxBytes  = 64 << 20
	defaultSnapshotMaxChunks = 10000
	// snapshotEnvelopeFrames are the reply's frames besides its chunks:
	// the DEALER's empty delimiter, the seq and the publisher id.
	snapshotEnvelopeFrames = 3
)

// DefaultOptions are the options zero fields take: reconnect backoff 100 ms
// doubling to 5 s, 5 s dial and replay timeouts, a 30 s replay cooldown
// and a 60 s bound on one replay, messages up to 64 MiB and 16 frames, a
// 256 MiB buffer budget (raised to MaxMessageBytes when that is larger)
// whose frames wait up to 2 s for room, one log line per source about
// refusals every 10 s, a 5 s heartbeat bound and snapshot timeout, and
// snapshot replies up to 64 MiB and 10000 chunks (the index's defaults).
func DefaultOptions() Options {
	return Options{
		ReconnectMin:      100 * time.Millisecond,
		ReconnectMax:      5 * time.Second,
		DialTimeout:       5 * time.Second,
		ReplayTimeout:     5 * time.Second,
		ReplayCooldown:    30 * time.Second,
		MaxMessageBytes:   defaultMaxMessageBytes,
		MaxFrames:         defaultMaxFrames,
		MaxBufferedBytes:  defaultMaxBufferedBytes,
		BufferWait:        2 * time.Second,
		LogInterval:       10 * time.Second,
		ReplayMaxDuration: time.Minute,
		HeartbeatTimeout:  5 * time.Second,
		SnapshotTimeout:   5 * time.Second,
		SnapshotMaxBytes:  defaultSnapshotMaxBytes,
		SnapshotMaxChunks: defaultSnapshotMaxChunks,
	}
}

// WithIndexBounds returns o with SnapshotMaxBytes and SnapshotMaxChunks,
// when zero, set from the index's configuration (zero fields of c taking
// spec.DefaultKVEvConfig's): max_held_bytes and max_held, which bound a
// snapshot reply in the index (§2.10 A13), so the subscriber receives
// every reply the index would take and none it would refuse. A
// max_held_bytes past the subscriber's cap on one message (1 GiB) gives
// that cap: the reply is held whole in memory while it is read.
func (o Options) WithIndexBounds(c spec.KVEvConfig) Options {
	c = c.WithDefaults()
	if o.SnapshotMaxBytes == 0 {
		o.SnapshotMaxBytes = min(c.MaxHeldBytes, maxMaxMessageBytes)
	}
	if o.SnapshotMaxChunks == 0 {
		o.SnapshotMaxChunks = c.MaxHeld
	}
	return o
}

// withDefaults fills zero fields and validates the rest.
func (o Options) withDefaults() (Options, error) {
	d := DefaultOptions()
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	durs := []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"ReconnectMin", &o.ReconnectMin, d.ReconnectMin},
		{"ReconnectMax", &o.ReconnectMax, d.ReconnectMax},
		{"DialTimeout", &o.DialTimeout, d.DialTimeout},
		{"ReplayTimeout", &o.ReplayTimeout, d.ReplayTimeout},
		{"ReplayCooldown", &o.ReplayCooldown, d.ReplayCooldown},
		{"BufferWait", &o.BufferWait, d.BufferWait},
		{"LogInterval", &o.LogInterval, d.LogInterval},
		{"ReplayMaxDuration", &o.ReplayMaxDuration, d.ReplayMaxDuration},
		{"HeartbeatTimeout", &o.HeartbeatTimeout, d.HeartbeatTimeout},
		{"SnapshotTimeout", &o.SnapshotTimeout, d.SnapshotTimeout},
	}
	for _, f := range durs {
		if *f.v < 0 {
			return o, spec.Reject(ErrBadSource, "options."+f.name, *f.v, ">= 0 (0: the default)")
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if o.ReconnectMax < o.ReconnectMin {
		return o, spec.Reject(ErrBadSource, "options.ReconnectMax", o.ReconnectMax, fmt.Sprintf(">= ReconnectMin (%v)", o.ReconnectMin))
	}
	if o.MaxMessageBytes < 0 || o.MaxMessageBytes > maxMaxMessageBytes {
		return o, spec.Reject(ErrBadSource, "options.MaxMessageBytes", o.MaxMessageBytes, fmt.Sprintf("in [0, %d] (0: the default)", maxMaxMessageBytes))
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = d.MaxMessageBytes
	}
	if o.MaxFrames < 0 || o.MaxFrames > maxMaxFrames {
		return o, spec.Reject(ErrBadSource, "options.MaxFrames", o.MaxFrames, fmt.Sprintf("in [0, %d] (0: the default)", maxMaxFrames))
	}
	if o.MaxFrames == 0 {
		o.MaxFrames = d.MaxFrames
	}
	if o.SnapshotMaxBytes < 0 || o.SnapshotMaxBytes > maxMaxMessageBytes {
		return o, spec.Reject(ErrBadSource, "options.SnapshotMaxBytes", o.SnapshotMaxBytes, fmt.Sprintf("in [0, %d] (0: the default)", maxMaxMessageBytes))
	}
	if o.SnapshotMaxBytes == 0 {
		o.SnapshotMaxBytes = d.SnapshotMaxBytes
	}
	if o.SnapshotMaxChunks < 0 || o.SnapshotMaxChunks > spec.MaxKVEvHeld {
		return o, spec.Reject(ErrBadSource, "options.SnapshotMaxChunks", o.SnapshotMaxChunks, fmt.Sprintf("in [0, %d] (0: the default)", spec.MaxKVEvHeld))
	}
	if o.SnapshotMaxChunks == 0 {
		o.SnapshotMaxChunks = d.SnapshotMaxChunks
	}
	return o.bufferDefaults()
}

// bufferDefaults fills and checks MaxBufferedBytes once MaxMessageBytes is
// known: zero is 256 MiB or MaxMessageBytes, whichever is larger; a set
// value below MaxMessageBytes is refused (a message of the allowed size
// could never be received).
func (o Options) bufferDefaults() (Options, error) {
	if o.MaxBufferedBytes < 0 || o.MaxBufferedBytes > maxMaxBufferedBytes {
		return o, spec.Reject(ErrBadSource, "options.MaxBufferedBytes", o.MaxBufferedBytes, fmt.Sprintf("in [0, %d] (0: the default)", int64(maxMaxBufferedBytes)))
	}
	if o.MaxBufferedBytes == 0 {
		o.MaxBufferedBytes = max(defaultMaxBufferedBytes, o.MaxMessageBytes)
	}
	if o.MaxBufferedBytes < o.MaxMessageBytes {
		return o, spec.Reject(ErrBadSource, "options.MaxBufferedBytes", o.MaxBufferedBytes, fmt.Sprintf(">= MaxMessageBytes (%d), so a message of the largest allowed size fits", o.MaxMessageBytes))
	}
	return o, nil
}
