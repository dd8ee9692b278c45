package scaleout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvtwin/kvtwin/spec"
)

// StreamOptions configure the JetStream stream the relay publishes to
// (docs/spec/kv-events.md §4.2): file storage, limits retention, subjects
// kvtwin.kv.>. Zero fields take the defaults of DefaultStreamOptions.
type StreamOptions struct {
	// Name is the stream's name (flag --stream).
	Name string
	// MaxAge is how long a message is kept (--max-age): at least the longest
	// replica downtime to recover from without going stale (§4.3).
	MaxAge time.Duration
	// DuplicateWindow is JetStream's Msg-Id window (--duplicate-window): at
	// least the relay's publish retry horizon, so a retried publish whose
	// first attempt was stored is dropped.
	DuplicateWindow time.Duration
	// Replicas is the stream's replication factor (--stream-replicas), 1..5.
	Replicas int
}

// DefaultStreamOptions: KVTWIN_KV, one hour of history (Dynamo's default),
// a two-minute duplicate window (JetStream's default), one replica.
func DefaultStreamOptions() StreamOptions {
	return StreamOptions{Name: DefaultStream, MaxAge: time.Hour, DuplicateWindow: 2 * time.Minute, Replicas: 1}
}

// withDefaults fills zero fields and validates the rest, naming the flag.
func (o StreamOptions) withDefaults() (StreamOptions, error) {
	d := DefaultStreamOptions()
	if o.Name == "" {
		o.Name = d.Name
	}
	if !validToken(o.Name) {
		return o, spec.Reject(ErrBadOption, "--stream", o.Name, fmt.Sprintf("1 to %d characters of [A-Za-z0-9_-]", maxTokenLen))
	}
	if o.MaxAge < 0 {
		return o, spec.Reject(ErrBadOption, "--max-age", o.MaxAge, "> 0 (0: the default, 1h)")
	}
	if o.MaxAge == 0 {
		o.MaxAge = d.MaxAge
	}
	if o.DuplicateWindow < 0 {
		return o, spec.Reject(ErrBadOption, "--duplicate-window", o.DuplicateWindow, "> 0 (0: the default, 2m)")
	}
	if o.DuplicateWindow == 0 {
		o.DuplicateWindow = min(d.DuplicateWindow, o.MaxAge)
	}
	if o.DuplicateWindow > o.MaxAge {
		return o, spec.Reject(ErrBadOption, "--duplicate-window", o.DuplicateWindow, fmt.Sprintf("<= --max-age (%v): JetStream keeps Msg-Ids no longer than messages", o.MaxAge))
	}
	if o.Replicas < 0 || o.Replicas > 5 {
		return o, spec.Reject(ErrBadOption, "--stream-replicas", o.Replicas, "in [1, 5] (0: the default, 1)")
	}
	if o.Replicas == 0 {
		o.Replicas = d.Replicas
	}
	return o, nil
}

func (o StreamOptions) config() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        o.Name,
		Description: "kvtwin KV-cache events relayed from vLLM/SGLang ZeroMQ publishers (docs/spec/kv-events.md §4)",
		Subjects:    []string{SubjectFilter},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		MaxAge:      o.MaxAge,
		Duplicates:  o.DuplicateWindow,
		Replicas:    o.Replicas,
		Discard:     jetstream.DiscardOld,
		MaxMsgs:     -1,
		MaxBytes:    -1,
	}
}

// ensureStream creates the stream, or checks an existing one and updates
// its age, duplicate window and replicas to o's. A stream that exists with
// other subjects, storage or retention is an error: those cannot change in
// place and would break §4.2's guarantees.
func ensureStream(ctx context.Context, js jetstream.JetStream, o StreamOptions, log *slog.Logger) (jetstream.Stream, error) {
	want := o.config()
	for range 3 {
		s, err := js.Stream(ctx, o.Name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			s, err = js.CreateStream(ctx, want)
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				continue // another relay created it meanwhile
			}
			if err != nil {
				return nil, fmt.Errorf("create stream %s (--stream): %w", o.Name, err)
			}
			log.Info("stream created", "stream", o.Name, "max_age", o.MaxAge, "duplicate_window", o.DuplicateWindow, "replicas", o.Replicas)
			return s, nil
		}
		if err != nil {
			return nil, fmt.Errorf("look up stream %s (--stream): %w", o.Name, err)
		}
		have := s.CachedInfo().Config
		if !slices.Equal(have.Subjects, want.Subjects) || have.Storage != want.Storage || have.Retention != want.Retention {
			return nil, fmt.Errorf("stream %s (--stream) exists with subjects %v, %v storage, %v retention: want exactly [%s], file storage, limits retention; delete it or name another stream",
				o.Name, have.Subjects, have.Storage, have.Retention, SubjectFilter)
		}
		if have.MaxAge == want.MaxAge && have.Duplicates == want.Duplicates && have.Replicas == want.Replicas {
			return s, nil
		}
		upd := have
		upd.MaxAge, upd.Duplicates, upd.Replicas = want.MaxAge, want.Duplicates, want.Replicas
		if s, err = js.UpdateStream(ctx, upd); err != nil {
			return nil, fmt.Errorf("update stream %s (--stream) to max age %v, duplicate window %v, %d replicas: %w", o.Name, o.MaxAge, o.DuplicateWindow, o.Replicas, err)
		}
		log.Info("stream updated", "stream", o.Name, "max_age", o.MaxAge, "duplicate_window", o.DuplicateWindow, "replicas", o.Replicas,
			"was_max_age", have.MaxAge, "was_duplicate_window", have.Duplicates, "was_replicas", have.Replicas)
		return s, nil
	}
	return nil, fmt.Errorf("stream %s (--stream): created and deleted concurrently; giving up", o.Name)
}
