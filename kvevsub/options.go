package kvevsub

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/kvtwin/kvtwin/ref"
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
}

// Defaults and caps of Options.
const (
	defaultMaxMessageBytes = 64 << 20
	maxMaxMessageBytes     = 1 << 30
	defaultMaxFrames       = 16
	maxMaxFrames           = 1024
)

// DefaultOptions are the options zero fields take: reconnect backoff 100 ms
// doubling to 5 s, 5 s dial and replay timeouts, a 30 s replay cooldown,
// messages up to 64 MiB and 16 frames.
func DefaultOptions() Options {
	return Options{
		ReconnectMin:    100 * time.Millisecond,
		ReconnectMax:    5 * time.Second,
		DialTimeout:     5 * time.Second,
		ReplayTimeout:   5 * time.Second,
		ReplayCooldown:  30 * time.Second,
		MaxMessageBytes: defaultMaxMessageBytes,
		MaxFrames:       defaultMaxFrames,
	}
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
	}
	for _, f := range durs {
		if *f.v < 0 {
			return o, ref.Reject(ErrBadSource, "options."+f.name, *f.v, ">= 0 (0: the default)")
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if o.ReconnectMax < o.ReconnectMin {
		return o, ref.Reject(ErrBadSource, "options.ReconnectMax", o.ReconnectMax, fmt.Sprintf(">= ReconnectMin (%v)", o.ReconnectMin))
	}
	if o.MaxMessageBytes < 0 || o.MaxMessageBytes > maxMaxMessageBytes {
		return o, ref.Reject(ErrBadSource, "options.MaxMessageBytes", o.MaxMessageBytes, fmt.Sprintf("in [0, %d] (0: the default)", maxMaxMessageBytes))
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = d.MaxMessageBytes
	}
	if o.MaxFrames < 0 || o.MaxFrames > maxMaxFrames {
		return o, ref.Reject(ErrBadSource, "options.MaxFrames", o.MaxFrames, fmt.Sprintf("in [0, %d] (0: the default)", maxMaxFrames))
	}
	if o.MaxFrames == 0 {
		o.MaxFrames = d.MaxFrames
	}
	return o, nil
}
