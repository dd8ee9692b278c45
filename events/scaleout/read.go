package scaleout

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// readRange reads the stream's messages on the filter subjects whose stream
// sequence is in [from, to], in stream order, with an ordered consumer (an
// ephemeral consumer that acks nothing and that nats.go recreates on any
// sequence mismatch), and calls fn for each. It stops after to, at the end
// of the stream, or when no message arrives within idle (messages that
// expired while it read). It returns the messages read.
func readRange(ctx context.Context, js jetstream.JetStream, stream string, filter []string, from, to uint64, idle time.Duration, fn func(seq uint64, m jetstream.Msg)) (uint64, error) {
	if from == 0 {
		from = 1
	}
	if to < from {
		return 0, nil
	}
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", stream, err)
	}
	if st := s.CachedInfo().State; st.Msgs == 0 || st.LastSeq < from || st.FirstSeq > to {
		return 0, nil
	}
	oc, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{
		FilterSubjects:    filter,
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       from,
		InactiveThreshold: time.Minute,
	})
	if err != nil {
		return 0, fmt.Errorf("ordered consumer on %s from %d: %w", stream, from, err)
	}
	it, err := oc.Messages(jetstream.PullMaxMessages(readBatch))
	if err != nil {
		return 0, fmt.Errorf("ordered consumer on %s from %d: %w", stream, from, err)
	}
	defer it.Stop()
	var n uint64
	for {
		nctx, cancel := context.WithTimeout(ctx, idle)
		m, err := it.Next(jetstream.NextContext(nctx))
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return n, ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, jetstream.ErrNoHeartbeat) {
				return n, nil
			}
			return n, fmt.Errorf("read %s [%d, %d]: %w", stream, from, to, err)
		}
		md, err := m.Metadata()
		if err != nil {
			return n, fmt.Errorf("read %s [%d, %d]: %w", stream, from, to, err)
		}
		seq := md.Sequence.Stream
		if seq > to {
			return n, nil
		}
		fn(seq, m)
		n++
		if seq == to || md.NumPending == 0 {
			return n, nil
		}
	}
}

// readBatch is how many messages an ordered consumer buffers.
const readBatch = 1024
