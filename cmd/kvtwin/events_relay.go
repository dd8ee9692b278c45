package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kvtwin/kvtwin/catalog"
	"github.com/kvtwin/kvtwin/events/scaleout"
)

// newEventsCmd is `kvtwin events`: tools for the KV-event stream
// (docs/spec/kv-events.md).
func newEventsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "events",
		Short: "KV-event stream tools: relay vLLM/SGLang ZMQ publishers into NATS JetStream",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newEventsRelayCmd())
	return cmd
}

// newEventsRelayCmd is `kvtwin events relay` (docs/spec/kv-events.md §4.2):
// subscribe to ZMQ publishers (with gap replay and restart detection) and
// publish every batch the relay's index applies to a JetStream stream,
// which `kvtwin serve` replicas consume.
func newEventsRelayCmd() *cobra.Command {
	o := scaleout.DefaultRelayOptions()
	var specs []string
	var eventsFile, logLevel, logFormat string
	var statusEvery time.Duration
	cmd := &cobra.Command{
		Use:   "relay",
		Short: "Relay ZMQ KV-event publishers into a NATS JetStream stream until SIGTERM or SIGINT",
		Long: `Relay subscribes to each --events publisher (vLLM or SGLang, ZeroMQ, with replay
when the source names its replay endpoint), runs the index's cursor over it (gaps,
replay, publisher restarts), and publishes every batch the cursor accepts, in order
and waiting for each PubAck, to subject kvtwin.kv.<source-token> of the stream
(--stream, created if missing): the raw payload with headers Kvtwin-Topic,
Kvtwin-Seq, Kvtwin-Epoch, Kvtwin-Gap and Nats-Msg-Id <token>.<epoch>.<seq>; a
publisher restart is published first as an empty Kvtwin-Reset message. On start
it reads its sources' history from the stream, so a restarted relay continues the
same epochs and fills what it missed from the publishers' replay buffers.
Replicas: kvtwin serve --events-from nats://… (docs/spec/kv-events.md §4.3).`,
		Example: `  kvtwin events relay --nats nats://nats:4222 \
    --events pod-a=tcp://10.0.0.7:5557,replay=tcp://10.0.0.7:5558`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := newLogger(cmd.ErrOrStderr(), logLevel, logFormat)
			if err != nil {
				return err
			}
			if o.URL == "" {
				return errors.New("--nats: required: the NATS server, nats://HOST:PORT")
			}
			if o.Sources, err = eventSources(specs, eventsFile, &o.Index); err != nil {
				return err
			}
			if len(o.Sources) == 0 {
				return errors.New("--events or --events-file: at least one publisher to relay")
			}
			if statusEvery < 0 {
				return fmt.Errorf("--status-every %v: want >= 0 (0: never)", statusEvery)
			}
			o.Logger, o.Subscriber.Logger = logger, logger
			// The relay's index is the production twin, paired by the
			// catalog like every other twin a command uses.
			if o.NewIndex, err = catalog.KVEvIndex(catalog.Fast); err != nil {
				return err
			}
			r, err := scaleout.NewRelay(o)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			done := make(chan struct{})
			var wg sync.WaitGroup
			if statusEvery > 0 {
				wg.Go(func() { logRelayStatus(ctx, done, r, logger, statusEvery) })
			}
			err = r.Run(ctx)
			close(done)
			wg.Wait()
			if err != nil {
				return &exitError{code: 1, msg: err.Error()}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&specs, "events", nil, "a vLLM or SGLang KV-event publisher to relay: NAME=tcp://HOST:PORT[,replay=tcp://HOST:PORT][,rank=N][,topic=PREFIX] (repeatable; its subject token is NAME with bytes outside [A-Za-z0-9_-] as _)")
	f.StringVar(&eventsFile, "events-file", "", "YAML or JSON file of publishers and index bounds ({sources: [{name, endpoint, replay, rank, topic}], index: {max_engines, max_engines_per_stream, max_tokens_per_engine, max_held, max_held_bytes, max_events, max_decode_ratio}}), added to --events")
	f.StringVar(&o.URL, "nats", envOr("KVTWIN_NATS", ""), "NATS server URL, nats://HOST:PORT (comma-separated for a cluster); required")
	f.StringVar(&o.Stream.Name, "stream", o.Stream.Name, "JetStream stream (subjects kvtwin.kv.>, file storage, limits retention); created if missing")
	f.DurationVar(&o.Stream.MaxAge, "max-age", o.Stream.MaxAge, "how long the stream keeps a message: at least the longest replica downtime to recover from without going stale")
	f.DurationVar(&o.Stream.DuplicateWindow, "duplicate-window", o.Stream.DuplicateWindow, "JetStream's Msg-Id duplicate window: at least --retry-for, at most --max-age")
	f.IntVar(&o.Stream.Replicas, "stream-replicas", o.Stream.Replicas, "the stream's replication factor in a JetStream cluster, 1 to 5")
	f.DurationVar(&o.PublishTimeout, "publish-timeout", o.PublishTimeout, "bound on one publish attempt, PubAck included")
	f.DurationVar(&o.RetryFor, "retry-for", o.RetryFor, "how long a failed publish is retried with the same Msg-Id before the batch is given up (the replicas then mark the source stale)")
	f.IntVar(&o.Index.MaxEngines, "events-max-engines", 0, "most engines the relay's index holds (0: 256)")
	f.Int64Var(&o.Index.MaxTokensPerEngine, "events-max-tokens-per-engine", 0, "most tokens of one engine's pages in the relay's index (0: 4 Mi)")
	f.IntVar(&o.Index.MaxEnginesPerStream, "events-max-engines-per-source", 0, "most engines one source may feed in the relay's index; sources × this must not exceed --events-max-engines (0: --events-max-engines / the number of sources)")
	f.IntVar(&o.Index.MaxHeld, "events-max-held", 0, "most live messages a source holds while its replay runs; also what the relay keeps to publish them (0: 10000)")
	addEventBoundFlags(f, &o.Index, &o.Subscriber)
	f.DurationVar(&statusEvery, "status-every", time.Minute, "log each source's counters this often (0: never)")
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&logFormat, "log-format", "text", "text or json")
	return cmd
}

// logRelayStatus logs every source's counters each period until ctx ends
// or done closes.
func logRelayStatus(ctx context.Context, done <-chan struct{}, r *scaleout.Relay, log *slog.Logger, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case <-t.C:
		}
		st := r.Status()
		for _, s := range st.Sources {
			log.Info("relay status", "phase", st.Phase, "nats_connected", st.Connected, "source", s.Name, "zmq_connected", s.Connected,
				"last_zmq_seq", s.LastSeq, "published_seq", s.PublishedSeq, "epoch", s.Epoch, "published", s.Published, "resets", s.Resets,
				"gap_flags", s.GapFlags, "retries", s.Retries, "failed", s.Failed, "replays_ok", s.ReplaysOK, "replays_failed", s.ReplaysFailed)
		}
	}
}
