// Package scaleout scales the KV-event index out over NATS JetStream
// (docs/spec/kv-events.md §4): one relay, any number of replicas. A Relay
// forwards the raw batches of vLLM and SGLang ZeroMQ publishers into a
// JetStream stream, and any number of Replicas consume that stream so that
// every `kvtwin serve` replica serves the same event-fed index. (Before
// issue 28 the package was kvevjs.)
//
// # Relay (§4.2)
//
// The relay runs events/zmq's subscriber over an index of its own (built by
// RelayOptions.NewIndex; `kvtwin events relay` passes the fast twin through
// catalog.KVEvIndex), which decides the cursor: gaps, replay, publisher
// restarts. Every batch that index applies is published synchronously, in
// seq order, to kvtwin.kv.<token> (token: the source name with bytes outside
// [A-Za-z0-9_-] as '_'), body = the raw payload, headers Kvtwin-Topic (or
// Kvtwin-Topic-Hex for a topic a header line cannot carry), Kvtwin-Seq,
// Kvtwin-Epoch, Kvtwin-Gap "1" on the first batch after a loss,
// Kvtwin-Rank (the source's configured rank) and Nats-Msg-Id
// <token>.<epoch>.<seq>. A publisher restart bumps the epoch and is
// published first as an empty message with Kvtwin-Reset: 1 and Msg-Id
// <token>.<epoch>.reset. A failed publish is retried with the same Msg-Id
// (JetStream's duplicate window drops a copy whose first attempt was
// stored) for --retry-for, then given up: the next batch carries
// Kvtwin-Gap and the replicas see a seq gap. Stream KVTWIN_KV, subjects
// kvtwin.kv.>, file storage, limits retention, --max-age and
// --duplicate-window.
//
// A starting relay reads its sources' history from the stream into its
// index (the replicas' rule below), so its cursor and epochs continue: a
// restarted relay publishes no reset, and fills what it missed while down
// from the publishers' replay buffers.
//
// # Replicas (§4.3)
//
// A replica owns a durable pull consumer named after its id (explicit acks,
// deliver-all when created, filter kvtwin.kv.>) and applies each message in
// stream order to its index, then acks it: the index's streams are the
// source tokens it serves, with no replay endpoint; a batch is
// Live(token, [topic, 8-byte seq, body]); a reset is Restart(token). Per
// source, a batch of another epoch than the last one applied is preceded
// by a Restart (its reset was lost), a reset or batch already applied (same
// epoch, seq not above the last) is dropped; every other seq jump reaches
// the index as a gap and marks the source's engines stale (§3.3, A3).
// Messages for sources the replica does not serve are acked and counted.
//
// Resume after a restart (§4.3 option (b); option (a), the snapshot, is
// below): the index lives in memory, so when the durable consumer
// already exists the replica first rebuilds the index by reading the
// stream, from its first retained message up to the last message the
// consumer delivered, with an ordered consumer and no acks; then it
// consumes the durable consumer, acking and dropping redeliveries of what
// it already applied, and reading from the stream any message the consumer
// delivered to the previous run after the rebuild started (it arrives as a
// hole in the stream sequences). When messages have expired or been purged
// (the stream's first retained sequence is past 1), Status says so
// (HistoryTruncated, FirstSeq) and each source is exactly as complete as
// its retained history: a source whose first retained message is its
// epoch's reset or seq 0 is complete; any other is stale (the index sees
// its first batch at a seq past 0, §3.1 step 1, without replay); a source
// with no retained message has no engines.
//
// # Warm replicas (§4.3 option (a), §4.5)
//
// With ReplicaOptions.Snapshots.Bucket set, a replica stores its index's
// A12 snapshot in a JetStream object store every Every messages or
// Interval (snapstore.go), taken under the apply lock between two
// messages and uploaded on its own goroutine, in an envelope that carries
// the apply rule's per-source state and a SHA-256 trailer (snapshot.go);
// the newest Keep are kept. A starting replica restores the newest usable
// snapshot of its stream and sources (refusing, with a WARN line, a
// corrupt, cut, foreign or unrestorable one and trying the previous),
// serves the restored index through Index, and resumes at covers+1; with
// none usable it resumes as above.
//
// The package is named for spec §4's job, not for JetStream: nats.go's own
// client package is jetstream, and most files here import it. Its errors
// still begin "kvevjs:", the name they had before the event packages moved
// under events/, so that no error text an operator matches in logs changed
// with the move.
package scaleout
