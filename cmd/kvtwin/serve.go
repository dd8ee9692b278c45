package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/server"
	"github.com/kvtwin/kvtwin/spec"
)

func newServeCmd() *cobra.Command {
	cfg := server.DefaultConfig()
	var impl, prefixMaxBytes, logLevel, logFormat, eventsFile string
	var eventSpecs, fromSources []string
	var eventsFilePoll time.Duration
	var dns dnsFlags
	var snap snapshotFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the catalog over HTTP (127.0.0.1:8080, fast path) until SIGTERM or SIGINT, then drain",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			i, err := catalog.ParseImpl(impl)
			if err != nil {
				return fmt.Errorf("--impl: %w", err)
			}
			cfg.Impl = i
			if cfg.Prefix.MaxBytes, err = parseByteSize("--prefix-max-bytes", prefixMaxBytes); err != nil {
				return err
			}
			logger, err := newLogger(cmd.ErrOrStderr(), logLevel, logFormat)
			if err != nil {
				return err
			}
			cfg.Logger = logger
			var fileDoc eventsFileDoc
			if cfg.Events, fileDoc, err = eventSourcesAndFile(eventSpecs, eventsFile, &cfg.EventsIndex); err != nil {
				return err
			}
			if eventsFilePoll < 0 {
				return fmt.Errorf("--events-file-poll %v: want >= 0 (0: re-read on SIGHUP only)", eventsFilePoll)
			}
			// An index that can take sources at run time: docs/decisions.md,
			// "Event sources at run time".
			cfg.EventsRuntime = cfg.EventsFrom.URL == "" && (eventsFile != "" || cfg.EventsIndex.MaxEnginesPerStream > 0 || len(dns.specs) > 0)
			dnsTargets, err := dns.targets(cfg.EventsFrom.URL != "", cfg.EventsIndex.MaxEnginesPerStream)
			if err != nil {
				return err
			}
			if err := snap.apply(&cfg.EventsFrom); err != nil {
				return err
			}
			if cfg.EventsFrom.URL != "" {
				cfg.EventsFrom.Sources = fromSources
				if cfg.EventsFrom.ID == "" {
					cfg.EventsFrom.ID = defaultReplicaID()
				}
			}
			srv, err := server.New(cfg)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			if eventsFile != "" && cfg.EventsFrom.URL == "" {
				wctx, stopWatch := context.WithCancel(ctx)
				wait := newEventsFileWatch(eventsFile, fileDoc, eventSpecs, srv, logger).start(wctx, eventsFilePoll)
				defer func() { stopWatch(); wait() }()
			}
			if len(dnsTargets) > 0 {
				dctx, stopDNS := context.WithCancel(ctx)
				wait := newDNSDiscovery(dnsTargets, newDNSResolver(dns.server), srv, logger).start(dctx, dns.interval)
				defer func() { stopDNS(); wait() }()
			}
			if err := srv.ListenAndServe(ctx); err != nil {
				return &exitError{code: 1, msg: err.Error()}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Addr, "addr", envOr("KVTWIN_ADDR", cfg.Addr), "listen address (host:port); binds loopback unless told otherwise")
	f.StringVar(&impl, "impl", envOr("KVTWIN_IMPL", string(cfg.Impl)), "implementation: ref, fast or cuda, for op and preflight requests (?impl= overrides it per request) and for the prefix pools' radix tree. cuda needs a cuda build and a device; then ops without a CUDA twin and the preflight answer 400 unless the request asks ?impl=, and prefix pool creates answer 400 (the tree has no CUDA twin)")
	f.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", cfg.MaxBodyBytes, "largest request body; larger ones get 413")
	f.Int64Var(&cfg.Limits.MaxOutputBytes, "max-output-bytes", cfg.Limits.MaxOutputBytes, "largest output an op may allocate")
	f.IntVar(&cfg.MaxConcurrent, "max-concurrent", cfg.MaxConcurrent, "op requests in flight; beyond it 429")
	f.DurationVar(&cfg.ReadHeaderTimeout, "read-header-timeout", cfg.ReadHeaderTimeout, "http.Server ReadHeaderTimeout")
	f.DurationVar(&cfg.ReadTimeout, "read-timeout", cfg.ReadTimeout, "http.Server ReadTimeout")
	f.DurationVar(&cfg.WriteTimeout, "write-timeout", cfg.WriteTimeout, "http.Server WriteTimeout")
	f.DurationVar(&cfg.IdleTimeout, "idle-timeout", cfg.IdleTimeout, "http.Server IdleTimeout")
	f.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", cfg.ShutdownTimeout, "graceful drain limit after SIGTERM")
	f.Int64Var(&cfg.Limits.MaxOutputRatio, "max-output-ratio", cfg.Limits.MaxOutputRatio, "an op's output may be at most this many times its request (beyond --output-ratio-floor); 0 turns the ratio bound off")
	f.Int64Var(&cfg.Limits.RatioFloorBytes, "output-ratio-floor", cfg.Limits.RatioFloorBytes, "output bytes every request may have whatever --max-output-ratio says")
	f.IntVar(&cfg.MaxJSONDepth, "max-json-depth", cfg.MaxJSONDepth, "deepest nesting of arrays and objects in a request body; deeper ones get 400")
	f.DurationVar(&cfg.OpTimeout, "op-timeout", cfg.OpTimeout, "deadline of one op run; past it 503 (must be below --shutdown-timeout)")
	f.Int64Var(&cfg.MinTransferRate, "min-transfer-rate", cfg.MinTransferRate, "bytes/s a request body must arrive at and a response be read at, after --transfer-grace")
	f.DurationVar(&cfg.TransferGrace, "transfer-grace", cfg.TransferGrace, "time before --min-transfer-rate applies to a body or a response")
	f.Int64Var(&cfg.MaxBodyBytesInFlight, "max-body-bytes-in-flight", cfg.MaxBodyBytesInFlight, "bytes of request bodies held at once; beyond it 503")
	f.Int64Var(&cfg.MaxResponseBytesInFlight, "max-response-bytes-in-flight", cfg.MaxResponseBytesInFlight, "bytes of answers held for clients still reading them; an answer over 64 KiB that finds no room waits up to --op-timeout, then 503 (docs/api.md)")
	f.IntVar(&cfg.MaxConnections, "max-connections", cfg.MaxConnections, "open client connections at once; further ones wait in the listen backlog")
	f.IntVar(&cfg.Prefix.MaxPools, "prefix-max-pools", cfg.Prefix.MaxPools, "most prefix-index pools at once; beyond it 409")
	f.IntVar(&cfg.Prefix.MaxPoolCapacity, "prefix-max-pool-capacity", cfg.Prefix.MaxPoolCapacity, "largest capacity_tokens of one pool")
	f.IntVar(&cfg.Prefix.MaxRequestTokens, "prefix-max-request-tokens", cfg.Prefix.MaxRequestTokens, "longest token list of one prefix request; longer ones get 413")
	f.StringVar(&prefixMaxBytes, "prefix-max-bytes", strconv.FormatInt(cfg.Prefix.MaxBytes, 10),
		"memory all prefix pools together may reserve, bytes or <n>{KB,MB,GB,KiB,MiB,GiB} (binary); a pool create beyond it gets 409. Default: 1/4 of the cgroup or physical memory")
	f.StringArrayVar(&eventSpecs, "events", nil, "subscribe to a vLLM or SGLang KV-event publisher: NAME=tcp://HOST:PORT[,replay=tcp://HOST:PORT][,rank=N][,topic=PREFIX] (repeatable; docs/events.md)")
	f.StringVar(&eventsFile, "events-file", "", "YAML or JSON file of event sources and index bounds ({sources: [{name, endpoint, replay, rank, topic}], index: {max_engines, max_engines_per_stream, max_tokens_per_engine, max_held, max_held_bytes, max_events, max_decode_ratio}}), added to --events; its sources are re-read on SIGHUP and when it changes (--events-file-poll), its index bounds only at start")
	f.DurationVar(&eventsFilePoll, "events-file-poll", 5*time.Second, "how often --events-file is re-read to notice a change, applied as a diff of its sources (0: on SIGHUP only)")
	f.StringArrayVar(&dns.specs, "events-dns", nil, "discover event sources in DNS, one per resolved address, re-resolved every --events-dns-interval: NAME=_SRV.NAME (each SRV record's target's addresses and port) or NAME=HOST:PORT (HOST's A/AAAA addresses), then [,replay-port=N][,rank=N][,topic=T]; sources are named NAME-<address>-<port> with '.' and ':' made '-' (repeatable; needs --events-max-engines-per-source; docs/events.md)")
	f.DurationVar(&dns.interval, "events-dns-interval", 10*time.Second, "how often --events-dns names are resolved and the sources made to follow them (> 0)")
	f.StringVar(&dns.server, "events-dns-server", "", "the DNS server (HOST:PORT) --events-dns asks, with Go's resolver, instead of the system's (e.g. the cluster DNS when it is not the host's)")
	f.StringVar(&cfg.EventsFrom.URL, "events-from", "", "feed the event-fed index from the NATS JetStream stream `kvtwin events relay` fills (nats://HOST:PORT) instead of --events; every replica then serves the same index (docs/events.md)")
	f.StringArrayVar(&fromSources, "events-from-source", nil, "a relay source this replica serves: TOKEN[,rank=N] (repeatable; with --events-from)")
	f.StringVar(&cfg.EventsFrom.ID, "events-from-id", "", "this replica's durable consumer name; keep it across restarts to resume (default: the host name)")
	f.StringVar(&cfg.EventsFrom.Stream, "events-from-stream", "", "the JetStream stream (default KVTWIN_KV)")
	snap.flags(f)
	f.IntVar(&cfg.EventsIndex.MaxEngines, "events-max-engines", 0, "most engines the event-fed index holds (0: 256)")
	f.Int64Var(&cfg.EventsIndex.MaxTokensPerEngine, "events-max-tokens-per-engine", 0, "most tokens of one engine's pages, holes included (0: 4 Mi)")
	authFlags(f, &cfg.Auth)
	verifyFlags(f, &cfg.Verify)
	f.DurationVar(&cfg.EventsReadyGrace, "events-ready-grace", cfg.EventsReadyGrace, "the longest /readyz answers 503 catching_up after start while an event source has not applied its backlog (ZeroMQ: connected and a live message or replay applied; JetStream: at most --events-ready-lag pending); then ready, the lagging sources listed")
	f.Uint64Var(&cfg.EventsReadyLag, "events-ready-lag", cfg.EventsReadyLag, "messages a JetStream replica may have pending behind the stream head and count as caught up")
	f.IntVar(&cfg.EventsIndex.MaxEnginesPerStream, "events-max-engines-per-source", 0, "most engines one source may feed, so that a source cycling through DP ranks cannot take another's; sources × this must not exceed --events-max-engines (0: --events-max-engines / the number of sources at start). Fixed at start: sources added at run time (PUT /v1/events/sources/NAME, --events-file) get the same share, so set it to take more than --events-max-engines / share sources; set, it also builds the event index with no source")
	f.IntVar(&cfg.EventsIndex.MaxHeld, "events-max-held", 0, "most live messages a source holds while its replay runs (0: 10000)")
	addEventBoundFlags(f, &cfg.EventsIndex, &cfg.EventsOptions)
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&logFormat, "log-format", "text", "text or json")
	return cmd
}

// parseByteSize reads a size flag: plain bytes or a number with a binary
// unit, as spec.ByteSize ("2GiB", "1.5MB"), at least 1.
func parseByteSize(flag, s string) (int64, error) {
	n, err := spec.ByteSize(s).Bytes(flag)
	if err != nil {
		return 0, fmt.Errorf("%s %q: want bytes or <n>{KB,MB,GB,KiB,MiB,GiB} (binary), >= 1", flag, s)
	}
	return n, nil
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// verifyFlags are serve's --verify flags (docs/verify.md).
func verifyFlags(f *pflag.FlagSet, v *server.VerifyConfig) {
	f.Float64Var(&v.Rate, "verify", v.Rate, "share of op requests (0 to 1) re-run on --verify-against after they are answered, compared byte for byte; the same X-Request-Id is always sampled alike (docs/verify.md). 0 turns it off")
	f.IntVar(&v.Workers, "verify-workers", v.Workers, "goroutines re-running samples: the most CPUs verification takes from serving")
	f.Float64Var(&v.CPUShare, "verify-cpu", v.CPUShare, "share of one CPU each verify worker may use, in (0, 1]: a worker rests after each re-run so that verification takes at most --verify-workers × this from serving; samples it cannot reach are dropped")
	f.IntVar(&v.Queue, "verify-queue", v.Queue, "samples waiting for a worker; a sample that finds the queue full is dropped and counted, never waited for")
	f.Int64Var(&v.QueueBytes, "verify-queue-bytes", v.QueueBytes, "bytes the waiting samples may hold together (copies of their inputs and answers); beyond it a sample is dropped")
	f.DurationVar(&v.Timeout, "verify-timeout", v.Timeout, "deadline of one re-run; past it the sample counts as an error")
	f.IntVar(&v.Keep, "verify-keep", v.Keep, "divergences kept in memory for GET /v1/verify/divergences (the newest)")
	f.Int64Var(&v.KeepBytes, "verify-keep-bytes", v.KeepBytes, "bytes of fixture lines the kept divergences may hold together")
	f.StringVar(&v.Dir, "verify-dir", v.Dir, "directory receiving every divergence as a fixture line (verify-NNNNNN.jsonl, rotated at --verify-file-bytes); `kvtwin fixtures check` replays them")
	f.Int64Var(&v.FileBytes, "verify-file-bytes", v.FileBytes, "size at which a --verify-dir file is rotated")
	f.IntVar(&v.Files, "verify-files", v.Files, "--verify-dir files kept, the oldest removed")
	f.BoolVar(&v.State, "verify-state", v.State, "give every prefix pool a reference shadow fed the same operations off the request path: each answer, --verify of the scores, and the state digests every --verify-digest-interval are compared; a diverged pool is flagged in its status, metrics and /readyz and keeps serving. Doubles the pools' memory reservation")
	f.IntVar(&v.StateQueue, "verify-state-queue", v.StateQueue, "pool operations waiting for the shadows; a mutation that finds the queue full loses its pool's shadow (reported, not waited for)")
	f.Int64Var(&v.StateQueueBytes, "verify-state-queue-bytes", v.StateQueueBytes, "bytes the pool operations and event messages waiting for the shadows may hold together (copies of their tokens and frames); past it the shadow is lost, as with a full queue")
	f.DurationVar(&v.DigestInterval, "verify-digest-interval", v.DigestInterval, "how often, at the most, a pool's state digest is compared with its shadow's")
	f.Var((*implValue)(&v.Against), "verify-against", "implementation samples are re-run on: ref, or fast (a cheaper check of --impl cuda)")
}

// implValue is a catalog.Impl flag.
type implValue catalog.Impl

func (i *implValue) String() string { return string(*i) }
func (i *implValue) Type() string   { return "impl" }
func (i *implValue) Set(s string) error {
	impl, err := catalog.ParseImpl(s)
	if err != nil {
		return err
	}
	*i = implValue(impl)
	return nil
}
