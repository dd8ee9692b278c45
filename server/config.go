package server

import (
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"time"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/events/scaleout"
	"github.com/kvtwin/kvtwin/events/zmq"
	"github.com/kvtwin/kvtwin/internal/jsonscan"
	"github.com/kvtwin/kvtwin/prefix"
	"github.com/kvtwin/kvtwin/spec"
)

// ErrBadConfig is the sentinel of every configuration error New returns; the
// error itself is an *spec.InputError naming the Config field, its value and
// the bound it broke.
var ErrBadConfig = spec.NewSentinel("bad_config", "invalid server configuration")

// DefaultMaxBodyBytes is the request body limit of DefaultConfig (64 MiB).
const DefaultMaxBodyBytes int64 = 64 << 20

// DefaultMaxResponseBytesInFlight is the write budget of DefaultConfig
// (256 MiB), the size of the body budget: answers held for slow readers
// and bodies being read stay within half a GiB together.
const DefaultMaxResponseBytesInFlight int64 = 256 << 20

// DefaultMaxJSONDepth is the nesting limit of DefaultConfig: far above the
// deepest op input (about 6 levels) or chat request with nested tool
// schemas, far below what would make any recursive decoder costly.
const DefaultMaxJSONDepth = 512

// DefaultLimits are the op limits the server runs with unless configured:
// spec.DefaultLimits' 1 GiB output bound, and no output more than 64 times
// the request's bytes beyond a 16 MiB floor, so a 200 KB request cannot
// ask for 65 MB of rows (issue 15, found 6) while a 64 MiB payload still
// gets its 64 MiB answer.
func DefaultLimits() spec.Limits {
	lim := spec.DefaultLimits()
	lim.MaxOutputRatio = 64
	lim.RatioFloorBytes = 16 << 20
	return lim
}

// Config configures a Server. Start from DefaultConfig: New rejects zero
// limits and timeouts rather than guessing what they should have been.
type Config struct {
	// Addr is the listen address of ListenAndServe; 127.0.0.1 unless told otherwise.
	Addr string
	// Impl is the implementation op requests run on; ?impl= overrides it per request.
	// Every op must have it in this build (cuda: the device must be usable and
	// pass its self-test; ops without a CUDA twin then answer 400 per request):
	// nothing falls back to another implementation. It also picks the radix
	// tree of the prefix pools, catalog.RadixTree(Impl): ref or fast (the tree
	// has no CUDA twin, so under cuda a pool create answers 400).
	Impl catalog.Impl
	// Limits are passed to every op run.
	Limits spec.Limits
	// MaxBodyBytes bounds a request body; larger bodies get 413.
	MaxBodyBytes int64
	// MaxConcurrent bounds the op requests in flight; the next one gets 429.
	// It also bounds memory: at most MaxConcurrent bodies are held at once.
	MaxConcurrent int
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout are the
	// http.Server timeouts; ShutdownTimeout bounds the graceful drain.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout, ShutdownTimeout time.Duration
	// MaxJSONDepth bounds the nesting of every request body (arrays and
	// objects), checked by one iterative pass before anything decodes it;
	// deeper bodies get 400. At most jsonscan.MaxDepthLimit (10000).
	MaxJSONDepth int
	// OpTimeout is the deadline of one op run (both runs of ?compare=1):
	// past it the request answers 503, and the op, which polls
	// Limits.Canceled, stops and frees its slot. Below ShutdownTimeout, so
	// a drain can always wait a request out.
	OpTimeout time.Duration
	// MinTransferRate (bytes/s) and TransferGrace bound slow clients: after
	// the grace, a body must arrive and a response be read at least at this
	// average rate, or the connection is cut (408 for a body). Bodies are
	// read before a compute slot is taken and answers written after it is
	// freed, so a slow client holds a connection, never a slot.
	MinTransferRate int64
	TransferGrace   time.Duration
	// MaxBodyBytesInFlight bounds the bytes of all request bodies being read
	// or held at once; a body that does not fit gets 503. Reserved before
	// the body is allocated.
	MaxBodyBytesInFlight int64
	// MaxResponseBytesInFlight bounds the bytes of answers held until their
	// clients have read them (docs/api.md, "The write budget"). An answer
	// over SmallAnswerBytes reserves the memory it holds before its compute
	// slot is freed and returns it when its write ends, however it ends
	// (written, cut by the rate deadline, the client gone). Without room it
	// waits within OpTimeout, at most MaxConcurrent answers at once, or
	// gets 503 with Retry-After; an answer larger than the whole budget
	// waits for all of it. Smaller answers never wait. At least
	// SmallAnswerBytes.
	MaxResponseBytesInFlight int64
	// MaxConnections bounds the open client connections; further ones wait
	// in the listen backlog until one closes.
	MaxConnections int
	// Logger receives structured logs (docs/spec/admission-serving.md §S5): request
	// successes at DEBUG, failed requests and recovered panics at WARN,
	// start-up and shutdown at INFO, only a failed shutdown at ERROR. Use
	// slog.New(slog.DiscardHandler) to silence it.
	Logger *slog.Logger
	// Prefix bounds the prefix-index pools of /v1/prefix: pool count,
	// capacity per pool, tokens per request (longer lists get 413), and the
	// memory all pools may reserve (a create beyond it gets 409).
	Prefix prefix.Limits
	// Events are the KV-event publishers (vLLM, SGLang) the server
	// subscribes to, feeding the event-fed index scored by /v1/prefix:score
	// and listed by /v1/events/sources (docs/events.md); none by default.
	Events []zmq.Source
	// EventsRuntime builds the event-fed index and its ZeroMQ subscriber
	// even when Events is empty, so that sources can be added while the
	// server runs (PUT /v1/events/sources/{name}; docs/events.md "Sources
	// at run time"). The index's engine share is fixed when it is built
	// (docs/spec/kv-events.md §2.10 A11): set EventsIndex.MaxEnginesPerStream
	// so that more than one source fits. Without EventsFrom it changes
	// nothing when Events lists sources (their index takes adds anyway);
	// with EventsFrom it is ignored: a replica's sources are the relay's.
	// `kvtwin serve` sets it with --events-file or
	// --events-max-engines-per-source.
	EventsRuntime bool
	// EventsFrom, when its URL is set, feeds the event-fed index from a
	// NATS JetStream stream that `kvtwin events relay` fills instead of
	// from ZeroMQ (docs/spec/kv-events.md §4.3): any number of replicas
	// then serve the same index. Exclusive with Events.
	EventsFrom scaleout.ReplicaOptions
	// EventsIndex bounds the event-fed index: engines, engines per source
	// (each source's share), tokens per engine, live messages held during
	// a replay (zero fields: the defaults).
	EventsIndex spec.KVEvConfig
	// EventsOptions tunes the subscriber: reconnect backoff, replay timeout
	// and cooldown, message size (zero fields: the defaults).
	EventsOptions zmq.Options
	// Auth is who may call the server and over what: bearer tokens with
	// scopes, TLS, client certificates, all re-read when their files
	// change (docs/api.md "Authentication", "TLS"). Without tokens or
	// client certificates New refuses a non-loopback Addr unless
	// Auth.InsecureNoAuth.
	Auth AuthConfig
	// Entries replaces catalog.All() as the ops served. It exists for tests
	// (an op that panics or blocks); nil, the default, serves catalog.All().
	Entries []catalog.Entry
	// EventsReadyGrace is the longest /readyz waits, from Serve's start, for
	// the event sources to catch up (EventsReadiness) before it reports
	// ready without them: a source whose engine publishes nothing must not
	// keep a replica out of rotation for ever. 0 does not wait.
	EventsReadyGrace time.Duration
	// EventsReadyLag is how many messages a JetStream replica may still
	// have pending behind the stream head and count as caught up.
	EventsReadyLag uint64
	// NewRadixTree replaces catalog.RadixTree(Impl) as the prefix pools'
	// tree. It exists for tests (a tree a test corrupts, for the
	// --verify-state shadow to find); nil, the default, is Impl's tree.
	NewRadixTree spec.NewRadixTreeFunc
	// NewKVEvIndex replaces catalog.KVEvIndex(Impl) as the event-fed
	// index. It exists for tests (an index a test corrupts, for the
	// --verify-state shadow to find); nil, the default, is Impl's index.
	NewKVEvIndex spec.NewKVEvIndexFunc
	// Verify re-runs a sample of the op requests on a second
	// implementation after answering them (docs/verify.md); Rate 0, the
	// default, turns it off.
	Verify VerifyConfig
}

// DefaultConfig returns the configuration `kvtwin serve` starts from: the
// fast implementation on 127.0.0.1:8080, 64 MiB bodies, one op request in
// flight per CPU (ops are CPU-bound; more would only queue), default op
// limits, timeouts sized for the largest body and output, and prefix pools
// on the fast tree (Impl's) under prefix.DefaultLimits, whose memory budget
// is a quarter of this machine's (or container's) memory.
func DefaultConfig() Config {
	return Config{
		Addr:              "127.0.0.1:8080",
		Impl:              catalog.Fast,
		Limits:            DefaultLimits(),
		MaxBodyBytes:      DefaultMaxBodyBytes,
		MaxConcurrent:     runtime.GOMAXPROCS(0),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		ShutdownTimeout:   30 * time.Second,
		MaxJSONDepth:      DefaultMaxJSONDepth,
		OpTimeout:         10 * time.Second,
		MinTransferRate:   64 << 10,
		TransferGrace:     5 * time.Second,
		// Four bodies of the largest size: the compute slots' worth on a
		// small machine, and room to read the next ones meanwhile.
		MaxBodyBytesInFlight: 4 * DefaultMaxBodyBytes,
		MaxConnections:       1024,
		Logger:               slog.Default(),
		Prefix:               prefix.DefaultLimits(),
		Auth:                 DefaultAuthConfig(),
		Verify:               DefaultVerifyConfig(),
		EventsReadyGrace:     2 * time.Minute,
		EventsReadyLag:       256,

		MaxResponseBytesInFlight: DefaultMaxResponseBytesInFlight,
	}
}

// validate returns the first field of cfg that is out of bounds, in field
// order, as an *spec.InputError wrapping ErrBadConfig.
func (cfg Config) validate() error {
	if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
		return spec.Reject(ErrBadConfig, "Addr", cfg.Addr, "host:port ("+err.Error()+")")
	}
	if _, err := catalog.ParseImpl(string(cfg.Impl)); err != nil {
		return spec.Reject(ErrBadConfig, "Impl", string(cfg.Impl), "ref, fast or cuda")
	}
	if cfg.Limits.MaxOutputBytes < 1 {
		return spec.Reject(ErrBadConfig, "Limits.MaxOutputBytes", cfg.Limits.MaxOutputBytes, ">= 1")
	}
	if cfg.MaxBodyBytes < 1 {
		return spec.Reject(ErrBadConfig, "MaxBodyBytes", cfg.MaxBodyBytes, ">= 1")
	}
	if cfg.MaxConcurrent < 1 {
		return spec.Reject(ErrBadConfig, "MaxConcurrent", cfg.MaxConcurrent, ">= 1")
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{
		{"ReadHeaderTimeout", cfg.ReadHeaderTimeout}, {"ReadTimeout", cfg.ReadTimeout},
		{"WriteTimeout", cfg.WriteTimeout}, {"IdleTimeout", cfg.IdleTimeout},
		{"ShutdownTimeout", cfg.ShutdownTimeout},
	} {
		if d.v <= 0 {
			return spec.Reject(ErrBadConfig, d.field, d.v.String(), "> 0")
		}
	}
	if err := cfg.validateHostileBounds(); err != nil {
		return err
	}
	if err := cfg.validateResponseBudget(); err != nil {
		return err
	}
	if cfg.Logger == nil {
		return spec.Reject(ErrBadConfig, "Logger", "nil", "a *slog.Logger (slog.New(slog.DiscardHandler) to silence)")
	}
	if err := cfg.validatePrefix(); err != nil {
		return err
	}
	if err := cfg.Auth.validate(cfg.Addr); err != nil {
		return err
	}
	if cfg.EventsReadyGrace < 0 {
		return spec.Reject(ErrBadConfig, "EventsReadyGrace", cfg.EventsReadyGrace.String(), ">= 0")
	}
	if err := cfg.Verify.validate(cfg.Impl); err != nil {
		return err
	}
	if cfg.Entries != nil {
		return validateEntries(cfg.Entries)
	}
	return nil
}

// validateHostileBounds checks the limits that keep hostile clients from
// crashing, pinning or starving the server (docs/reliability.md).
func (cfg Config) validateHostileBounds() error {
	switch {
	case cfg.Limits.MaxOutputRatio < 0:
		return spec.Reject(ErrBadConfig, "Limits.MaxOutputRatio", cfg.Limits.MaxOutputRatio, ">= 0 (0: no ratio bound)")
	case cfg.Limits.RatioFloorBytes < 0:
		return spec.Reject(ErrBadConfig, "Limits.RatioFloorBytes", cfg.Limits.RatioFloorBytes, ">= 0")
	case cfg.MaxJSONDepth < 1 || cfg.MaxJSONDepth > jsonscan.MaxDepthLimit:
		return spec.Reject(ErrBadConfig, "MaxJSONDepth", cfg.MaxJSONDepth, fmt.Sprintf("in [1, %d]", jsonscan.MaxDepthLimit))
	case cfg.OpTimeout <= 0 || cfg.OpTimeout >= cfg.ShutdownTimeout:
		return spec.Reject(ErrBadConfig, "OpTimeout", cfg.OpTimeout.String(), fmt.Sprintf("> 0 and < ShutdownTimeout (%s), so a drain can wait out any op", cfg.ShutdownTimeout))
	case cfg.MinTransferRate < 1:
		return spec.Reject(ErrBadConfig, "MinTransferRate", cfg.MinTransferRate, ">= 1 byte/s")
	case cfg.TransferGrace <= 0:
		return spec.Reject(ErrBadConfig, "TransferGrace", cfg.TransferGrace.String(), "> 0")
	case cfg.MaxBodyBytesInFlight < cfg.MaxBodyBytes+1:
		return spec.Reject(ErrBadConfig, "MaxBodyBytesInFlight", cfg.MaxBodyBytesInFlight, fmt.Sprintf(">= MaxBodyBytes+1 (%d), so one largest body fits", cfg.MaxBodyBytes+1))
	case cfg.MaxConnections < 1:
		return spec.Reject(ErrBadConfig, "MaxConnections", cfg.MaxConnections, ">= 1")
	}
	return nil
}

// validateResponseBudget rejects a write budget that could hold no
// reserved answer: answers up to SmallAnswerBytes are never reserved.
func (cfg Config) validateResponseBudget() error {
	if cfg.MaxResponseBytesInFlight < SmallAnswerBytes {
		return spec.Reject(ErrBadConfig, "MaxResponseBytesInFlight", cfg.MaxResponseBytesInFlight,
			fmt.Sprintf(">= SmallAnswerBytes (%d), the largest answer written without a reservation", SmallAnswerBytes))
	}
	return nil
}

// validatePrefix rejects a prefix limit below 1.
func (cfg Config) validatePrefix() error {
	if err := cfg.Prefix.Validate(); err != nil {
		ie, _ := spec.AsInputError(err)
		return spec.Reject(ErrBadConfig, "Prefix."+ie.Field, ie.Value, ie.Bound)
	}
	return nil
}

func validateEntries(entries []catalog.Entry) error {
	if len(entries) == 0 {
		return spec.Reject(ErrBadConfig, "Entries", "[]", "at least one entry, or nil for catalog.All()")
	}
	seen := make(map[string]bool, len(entries))
	for i, e := range entries {
		if e == nil {
			return spec.Reject(ErrBadConfig, spec.Idx("Entries", i), "nil", "a catalog.Entry")
		}
		if seen[e.Name()] {
			return spec.Reject(ErrBadConfig, spec.Idx("Entries", i), e.Name(), "a name not already served")
		}
		seen[e.Name()] = true
	}
	return nil
}

// checkImplEverywhere rejects an Impl that some served op lacks, with the
// catalog's own reason (e.g. built without -tags cuda): serving it would
// mean failing or falling back on those ops, and kvtwin does neither. The
// one exception is cuda on a usable device (catalog.CUDAStatus is nil):
// only some ops have CUDA twins, and a request for one that has none is
// answered 400 naming that, per request — still never a fallback.
func checkImplEverywhere(impl catalog.Impl, ops []*opInfo) error {
	for _, o := range ops {
		if reason := o.unavailable[impl]; reason != nil {
			if impl == catalog.CUDA && catalog.CUDAStatus() == nil {
				continue
			}
			return fmt.Errorf("%w; %w", spec.Reject(ErrBadConfig, "Impl", string(impl),
				"an implementation every op has in this build; kvtwin never falls back"), reason)
		}
	}
	return nil
}
