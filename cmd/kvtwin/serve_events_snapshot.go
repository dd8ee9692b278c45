package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvtwin/kvtwin/events/scaleout"
)

// snapshotFlags are `kvtwin serve`'s warm-replica flags (docs/events.md
// "Warm replicas"; docs/spec/kv-events.md §4.3 option (a)): a replica fed
// by --events-from stores snapshots of its index in a JetStream object
// store and starts from the newest usable one.
type snapshotFlags struct {
	bucket   string
	every    int64
	interval time.Duration
	keep     int
	maxBytes string
}

func (s *snapshotFlags) flags(f *pflag.FlagSet) {
	f.StringVar(&s.bucket, "events-snapshot-bucket", "", "JetStream object store where this replica stores snapshots of its index and, when it starts, restores the newest usable one and resumes after it (with --events-from; replicas of the same stream and sources may share it; docs/events.md)")
	f.Int64Var(&s.every, "events-snapshot-every", 0, "store a snapshot after this many applied messages (0: 1000000; negative: never by count)")
	f.DurationVar(&s.interval, "events-snapshot-interval", 0, "store a snapshot this long after the last one, when messages were applied since (0: 5m; negative: never by time)")
	f.IntVar(&s.keep, "events-snapshot-keep", 0, "snapshots of this replica's stream and sources the bucket keeps; older ones are deleted after each upload (0: 3)")
	f.StringVar(&s.maxBytes, "events-snapshot-max-bytes", "1GiB", "largest snapshot object a starting replica reads, bytes or <n>{KB,MB,GB,KiB,MiB,GiB}; a larger one is refused before it is read")
}

// apply sets o's snapshot options; they need --events-from.
func (s *snapshotFlags) apply(o *scaleout.ReplicaOptions) error {
	if s.bucket == "" {
		if s.every != 0 || s.interval != 0 || s.keep != 0 {
			return fmt.Errorf("--events-snapshot-every, -interval and -keep need --events-snapshot-bucket")
		}
		return nil
	}
	if o.URL == "" {
		return fmt.Errorf("--events-snapshot-bucket %s: needs --events-from (snapshots are a JetStream replica's)", s.bucket)
	}
	n, err := parseByteSize("--events-snapshot-max-bytes", s.maxBytes)
	if err != nil {
		return err
	}
	o.Snapshots = scaleout.SnapshotOptions{Bucket: s.bucket, Every: s.every, Interval: s.interval, Keep: s.keep, MaxBytes: n}
	return nil
}
