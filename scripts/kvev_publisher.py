#!/usr/bin/python3
"""A real KV-event publisher for tests (docs/spec/kv-events.md §1-§3).

It behaves like vLLM's ZmqEventPublisher: a PUB socket sending
[topic, seq (8 bytes BE), msgpack batch], a ROUTER replay socket answering
[identity, empty, start] with the buffered batches whose seq >= start and a
sentinel, and a buffer of the last N batches. Malformed replay requests are
ignored without a reply, exactly as vLLM does (only 3-frame requests are
answered).

With --snapshot it also serves vLLM's snapshot service as the open vLLM PR
#57789's example subscriber describes it (docs/spec/kv-events.md §3.5,
§2.10 A13): a random 16-byte publisher id per incarnation in batch field 3
of every batch it encodes, a REP socket answering the single frame
"snapshot" with [seq (8 bytes signed BE), publisher_id, chunk...] where the
chunks are ordinary batch payloads that re-create its current blocks (it
tracks the stores, removals and clears it publishes, §2.3-2.6: one store
per block and residency count, holes stored then removed) and seq is the
last seq they cover (-1: none yet); and, with --heartbeat-ms, a heartbeat
batch (no events, its own seq) whenever it has published nothing for that
long.

Commands (one JSON object each) come from --scenario FILE (a JSON list),
then from stdin, one per line, until EOF or {"op": "exit"}. The first line
on stdout is {"pub": ..., "replay": ..., "pub_port": ..., "replay_port": ...}
(and "snapshot", "snapshot_port", "publisher_id" with --snapshot);
then one JSON line per command (its ack, or {"error": ...}).

  emit   {"events": [EVENT...], "form": "array"|"map", "batch": "array"|"map",
          "rank": N|null (absent: the publisher's --rank, as vLLM fills it),
          "ts": F, "payload": HEX (raw payload instead of events),
          "repeat": {"head": HEX, "unit": HEX, "count": N, "tail": HEX} (a raw
          payload head + unit*count + tail, built here: messages too large to
          pass as hex), "quiet": true (answer payload_bytes, not the payload)}
         -> {"seq": N, "payload": HEX} or {"seq": N, "payload_bytes": N}
  lose   like emit, but the batch is buffered and not sent (a PUB HWM drop)
  drop   consume a seq; nothing is sent or buffered (vLLM's encode/send error)
  frames {"frames": [FRAME...]}: one multipart message sent verbatim on the PUB socket; no seq
         is drawn and nothing is buffered (a hostile publisher: wrong frame counts, seq widths
         or jumps). FRAME is HEX, or a list of [HEX, N] pieces (each HEX repeated N times) so a
         large frame need not cross stdin  -> {"frames": K, "bytes": B}
  seek   {"seq": N}: the next batch is numbered N (a publisher whose seq jumps)
  flood  like emit, "count" times as fast as the socket takes them (each with
         its own seq, buffered) -> {"first": N, "last": N}
  replay_mode {"mode": "normal"|"huge"|"endless", "bytes": N}: how the replay
         socket answers: normal; huge, one reply whose payload is N bytes;
         endless, the buffered batches, no sentinel, then the first of them
         again and again until the mode changes (a replier that never ends)
  down   close both sockets (state kept); emits while down are buffered only
  up     bind both sockets again on the same ports
  restart  a new publisher: seq back to 0, empty buffer, sockets rebound, a
         new publisher id and no blocks
  snapshot_mode {"mode": "normal"|"unavailable"}: how the snapshot socket
         answers: normal, or seq -2 and no chunk (the publisher has no snapshot)
  heartbeat {"ms": N}: heartbeat interval from now on (0: none)
  sleep  {"seconds": F}: serve replay requests meanwhile
  await_subscribers {"n": N, "timeout": F}: with --socket xpub only
  stats  -> counters
  exit

EVENT: {"type": "BlockStored", "block_hashes": [H...], "parent_block_hash": H|null,
"token_ids": [...], "block_size": N, "lora_id": ..., "medium": ..., ...} with
H an int (negative allowed) or {"bin": HEX}; "BlockRemoved" and
"AllBlocksCleared" likewise; an unknown type keeps its keys in the order given;
an event's own "form" overrides the command's. The array form writes the fields in declaration
order up to the last one present (missing ones as nil); the map form writes
"type" then the present fields in declaration order.

Standard library, python3-zmq and python3-msgpack only.
"""

import argparse
import json
import os
import sys
import time

import msgpack
import zmq

FIELDS = {
    "BlockStored": [
        "block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id",
        "medium", "lora_name", "extra_keys", "group_idx", "kv_cache_spec_kind",
        "kv_cache_spec_sliding_window",
    ],
    "BlockRemoved": ["block_hashes", "medium", "group_idx"],
    "AllBlocksCleared": [],
}
END_SEQ = (-1).to_bytes(8, "big", signed=True)


def hash_value(h):
    if isinstance(h, dict):
        return bytes.fromhex(h["bin"])
    return h


def field_value(name, v):
    if name == "block_hashes":
        return [hash_value(h) for h in v]
    if name == "parent_block_hash" and v is not None:
        return hash_value(v)
    return v


def encode_event(ev, form):
    tag = ev["type"]
    fields = FIELDS.get(tag, [k for k in ev if k not in ("type", "form")])
    present = [f for f in fields if f in ev]
    if form == "map":
        out = {"type": tag}
        for f in present:
            out[f] = field_value(f, ev[f])
        return out
    last = max((fields.index(f) for f in present), default=-1)
    return [tag] + [field_value(f, ev.get(f)) for f in fields[: last + 1]]


def frame_bytes(f):
    if isinstance(f, str):
        return bytes.fromhex(f)
    return b"".join(bytes.fromhex(h) * int(n) for h, n in f)


def encode_batch(cmd, rank, pid=None):
    if "payload" in cmd:
        return bytes.fromhex(cmd["payload"])
    if "repeat" in cmd:
        r = cmd["repeat"]
        return bytes.fromhex(r.get("head", "")) + bytes.fromhex(r["unit"]) * int(r["count"]) + bytes.fromhex(r.get("tail", ""))
    form = cmd.get("form", "array")
    events = [encode_event(ev, ev.get("form", form)) for ev in cmd.get("events", [])]
    ts = float(cmd.get("ts", 1757500000.25))
    r = cmd["rank"] if "rank" in cmd else rank
    if cmd.get("batch", "array") == "map":
        m = {"ts": ts, "events": events, "data_parallel_rank": r}
        if pid is not None:
            m["publisher_id"] = pid
        return msgpack.packb(m, use_bin_type=True)
    if pid is not None:
        # vLLM PR #57789 (revision 2c481a4b): publisher_id after data_parallel_rank.
        return msgpack.packb([ts, events, r, pid], use_bin_type=True)
    return msgpack.packb([ts, events, r], use_bin_type=True)


class Blocks:
    """The blocks a publisher's stores, removals and clears leave, as the
    index keeps them (docs/spec/kv-events.md §2.3-2.6): per pool (rank,
    group, tier), each block's parent, tokens, namespace fields and
    residency count, a count of 0 being a hole kept for its resident
    descendants. Events the index would refuse or ignore (orphans, token
    counts that do not fit, tokenless tier updates) are not tracked. Blocks
    are kept in creation order, which puts every parent before its children
    (a child is only created under a block that exists)."""

    def __init__(self):
        self.pools = {}  # (rank, group, tier) -> {hash: record}

    def apply(self, rank, events):
        for ev in events:
            tag = ev.get("type")
            if tag == "AllBlocksCleared":
                for key in [k for k in self.pools if k[0] == rank]:
                    del self.pools[key]
            elif tag in ("BlockStored", "BlockRemoved"):
                key = (rank, ev.get("group_idx") or 0, (ev.get("medium") or "GPU").upper())
                pool = self.pools.setdefault(key, {})
                if tag == "BlockStored":
                    self.store(pool, ev)
                else:
                    for h in ev.get("block_hashes", []):
                        rec = pool.get(hash_key(hash_value(h)))
                        if rec is not None and rec["count"] > 0:
                            rec["count"] -= 1
                self.prune(pool)

    @staticmethod
    def store(pool, ev):
        hashes = [hash_value(h) for h in ev.get("block_hashes", [])]
        tokens, bs = ev.get("token_ids") or [], ev.get("block_size") or 0
        if not hashes or bs <= 0 or len(tokens) != len(hashes) * bs:
            return  # tokenless, or refused (ErrTokenCount)
        parent = ev.get("parent_block_hash")
        parent = None if parent is None else hash_value(parent)
        if parent is not None and hash_key(parent) not in pool:
            return  # an orphan: the index changes nothing
        for i, h in enumerate(hashes):
            rec = pool.get(hash_key(h))
            if rec is not None:
                rec["count"] += 1
            else:
                pool[hash_key(h)] = {
                    "hash": h, "parent": parent, "tokens": tokens[i * bs:(i + 1) * bs], "bs": bs,
                    "lora_id": ev.get("lora_id"), "lora_name": ev.get("lora_name"),
                    "medium": ev.get("medium"), "group_idx": ev.get("group_idx"), "count": 1,
                }
            parent = h

    @staticmethod
    def prune(pool):
        """Delete the holes with no resident descendant (§2.4)."""
        keep = set()
        for k, rec in reversed(list(pool.items())):
            if rec["count"] > 0 or k in keep:
                if rec["parent"] is not None:
                    keep.add(hash_key(rec["parent"]))
                keep.add(k)
        for k in [k for k in pool if k not in keep]:
            del pool[k]

    def events(self):
        """(rank, events) per pool: one single-block store per block and
        residency (a hole stored once), parents first, then one removal per
        hole, which leaves it a hole under its resident descendants."""
        out = []
        for (rank, _, _), pool in self.pools.items():
            evs, holes = [], []
            for rec in pool.values():
                ev = {"type": "BlockStored", "block_hashes": [rec["hash"]], "parent_block_hash": rec["parent"],
                      "token_ids": rec["tokens"], "block_size": rec["bs"], "lora_id": rec["lora_id"],
                      "medium": rec["medium"], "lora_name": rec["lora_name"], "extra_keys": None,
                      "group_idx": rec["group_idx"]}
                evs.extend([ev] * max(1, rec["count"]))
                if rec["count"] == 0:
                    holes.append({"type": "BlockRemoved", "block_hashes": [rec["hash"]],
                                  "medium": rec["medium"], "group_idx": rec["group_idx"]})
            out.append((rank, evs + holes))
        return out


def hash_key(h):
    """A hashable, type-tagged key of a block hash (an int and the bytes of
    the same value are different hashes on the wire)."""
    return (type(h).__name__, h)


class Publisher:
    def __init__(self, args):
        self.args = args
        self.ctx = zmq.Context()
        self.topic = args.topic.encode()
        self.pub = self.router = self.rep = None
        self.pub_port, self.replay_port = args.pub_port, args.replay_port
        self.snapshot_port = args.snapshot_port
        self.subscribers = 0
        self.stats = {"sent": 0, "lost": 0, "dropped": 0, "replay_answered": 0,
                      "replay_ignored": 0, "replayed_batches": 0, "restarts": 0, "frames": 0,
                      "endless_replies": 0, "heartbeats": 0, "snapshots_answered": 0,
                      "snapshot_chunks": 0, "snapshot_bad_requests": 0}
        self.replay_mode, self.replay_bytes = "normal", 0
        self.snapshot_mode = "normal"
        self.heartbeat = args.heartbeat_ms / 1000.0
        self.last_publish = time.monotonic()
        self.endless = None  # (ident, frames) of the reply an endless replier repeats
        self.new_incarnation()
        self.bind()

    def new_incarnation(self):
        self.seq = 0
        self.buffer = []  # (seq, payload), the last --buffer batches
        self.blocks = Blocks()
        # A publisher lifetime id (vLLM PR #57789: a UUID), only with the service.
        self.pid = os.urandom(16) if self.args.snapshot else None

    def bind(self):
        host = self.args.host
        self.pub = self.ctx.socket(zmq.XPUB if self.args.socket == "xpub" else zmq.PUB)
        self.pub.setsockopt(zmq.LINGER, 0)
        self.pub.set_hwm(self.args.hwm)
        self.pub_port = self.bind_port(self.pub, host, self.pub_port)
        if not self.args.no_replay:
            self.router = self.ctx.socket(zmq.ROUTER)
            self.router.setsockopt(zmq.LINGER, 0)
            self.replay_port = self.bind_port(self.router, host, self.replay_port)
        if self.args.snapshot:
            self.rep = self.ctx.socket(zmq.REP)
            self.rep.setsockopt(zmq.LINGER, 0)
            self.snapshot_port = self.bind_port(self.rep, host, self.snapshot_port)

    @staticmethod
    def bind_port(sock, host, port):
        if port:
            # libzmq unbinds a closed socket's port asynchronously: retry a while.
            deadline = time.monotonic() + 5
            while True:
                try:
                    sock.bind("tcp://%s:%d" % (host, port))
                    return port
                except zmq.ZMQError as e:
                    if e.errno != zmq.EADDRINUSE or time.monotonic() > deadline:
                        raise
                    time.sleep(0.01)
        return sock.bind_to_random_port("tcp://" + host)

    def close(self):
        for s in (self.pub, self.router, self.rep):
            if s is not None:
                s.close(linger=0)
        self.pub = self.router = self.rep = None
        self.subscribers = 0

    def endpoints(self):
        out = {"pub": "tcp://%s:%d" % (self.args.host, self.pub_port), "pub_port": self.pub_port}
        if not self.args.no_replay:
            out.update(replay="tcp://%s:%d" % (self.args.host, self.replay_port), replay_port=self.replay_port)
        if self.args.snapshot:
            out.update(snapshot="tcp://%s:%d" % (self.args.host, self.snapshot_port),
                       snapshot_port=self.snapshot_port, publisher_id=self.pid.hex())
        return out

    def publish(self, cmd, send):
        seq = self.seq
        self.seq += 1  # drawn before encoding, as vLLM does
        payload = encode_batch(cmd, self.args.rank, self.pid)
        self.last_publish = time.monotonic()
        if "payload" not in cmd and "repeat" not in cmd:
            r = cmd["rank"] if "rank" in cmd else self.args.rank
            self.blocks.apply(self.args.rank if r is None else r, cmd.get("events", []))
        if send and self.pub is not None:
            self.pub.send_multipart((self.topic, seq.to_bytes(8, "big"), payload))
            self.stats["sent"] += 1
        else:
            self.stats["lost"] += 1
        self.buffer.append((seq, payload))
        del self.buffer[: max(0, len(self.buffer) - self.args.buffer)]
        if cmd.get("quiet"):
            return {"seq": seq, "payload_bytes": len(payload)}
        return {"seq": seq, "payload": payload.hex()}

    def send_frames(self, spec):
        frames = [frame_bytes(f) for f in spec]
        if self.pub is None:
            raise ValueError("frames while down")
        self.pub.send_multipart(frames)
        self.stats["frames"] += 1
        return {"frames": len(frames), "bytes": sum(len(f) for f in frames)}

    def beat(self):
        """Publish a heartbeat batch when idle for the heartbeat interval;
        return the seconds until the next one is due (None: no heartbeats)."""
        if self.heartbeat <= 0 or self.pub is None:
            return None
        left = self.last_publish + self.heartbeat - time.monotonic()
        if left <= 0:
            self.publish({"events": [], "quiet": True}, True)
            self.stats["heartbeats"] += 1
            left = self.heartbeat
        return left

    def snapshot_reply(self):
        """[seq, publisher_id, chunk...]: the blocks now, as batches of at
        most --snapshot-chunk-events events, covering every seq drawn."""
        if self.snapshot_mode == "unavailable":
            return [(-2).to_bytes(8, "big", signed=True), self.pid]
        chunks, n = [], self.args.snapshot_chunk_events
        for rank, evs in self.blocks.events():
            for i in range(0, len(evs), n):
                chunks.append(encode_batch({"events": evs[i:i + n]}, rank, self.pid))
        self.stats["snapshot_chunks"] += len(chunks)
        return [(self.seq - 1).to_bytes(8, "big", signed=True), self.pid] + chunks

    def service_snapshot(self):
        frames = self.rep.recv_multipart()
        if frames != [b"snapshot"]:
            # REP must answer before it can receive again: unavailable.
            self.stats["snapshot_bad_requests"] += 1
            self.rep.send_multipart([(-2).to_bytes(8, "big", signed=True), self.pid])
            return
        self.rep.send_multipart(self.snapshot_reply())
        self.stats["snapshots_answered"] += 1

    def sockets(self):
        """The sockets to poll for requests (replay, snapshot, XPUB)."""
        return [s for s in (self.router, self.rep, self.pub if self.args.socket == "xpub" else None) if s is not None]

    def ready(self, sock):
        if sock is self.router:
            self.service_replay()
        elif sock is self.rep:
            self.service_snapshot()
        elif sock is self.pub:
            msg = self.pub.recv()
            if msg[:1] == b"\x01":
                self.subscribers += 1

    def serve(self, seconds):
        """Serve replay requests (and XPUB subscriptions) for `seconds`."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            self.poll(max(0.0, left))
            if left <= 0:
                return

    def drip(self):
        """An endless replier's next replies: its first reply again."""
        if self.endless is None or self.router is None:
            return
        for _ in range(50):
            self.router.send_multipart(self.endless)
            self.stats["endless_replies"] += 1

    def poll(self, timeout):
        if self.endless is not None:
            timeout = min(timeout, 0.005)
            self.drip()
        due = self.beat()
        if due is not None:
            timeout = min(timeout, due)
        poller = zmq.Poller()
        for s in self.sockets():
            poller.register(s, zmq.POLLIN)
        if not poller.sockets:
            time.sleep(timeout)
            return
        for sock, _ in poller.poll(int(timeout * 1000)):
            self.ready(sock)

    def service_replay(self):
        frames = self.router.recv_multipart()
        if len(frames) != 3:  # vLLM: "Invalid replay request", no reply
            self.stats["replay_ignored"] += 1
            return
        ident, _, start = frames
        start = int.from_bytes(start, "big")
        if self.replay_mode == "huge":
            self.router.send_multipart(self.reply(ident, start.to_bytes(8, "big"), b"\x00" * self.replay_bytes, self.topic))
            self.stats["replay_answered"] += 1
            return
        first = None
        for seq, payload in list(self.buffer):
            if seq >= start:
                reply = self.reply(ident, seq.to_bytes(8, "big"), payload, self.topic)
                first = first or reply
                self.router.send_multipart(reply)
                self.stats["replayed_batches"] += 1
        if self.replay_mode == "endless":
            self.endless = first
            self.stats["replay_answered"] += 1
            return
        if self.args.sentinel != "none":
            topic = self.topic if self.args.sentinel == "topic" else b""
            self.router.send_multipart(self.reply(ident, END_SEQ, b"", topic))
        self.stats["replay_answered"] += 1

    def reply(self, ident, seq, payload, topic):
        if self.args.layout == 3:
            return (ident, b"", topic, seq, payload)
        return (ident, b"", seq, payload)

    def run(self, cmd):
        op = cmd.get("op")
        if op in ("emit", "lose"):
            return self.publish(cmd, op == "emit")
        if op == "frames":
            return self.send_frames(cmd["frames"])
        if op == "drop":
            self.seq += 1
            self.stats["dropped"] += 1
            return {"seq": self.seq - 1}
        if op == "seek":
            self.seq = int(cmd["seq"])
            return {"seq": self.seq}
        if op == "flood":
            first = self.seq
            for _ in range(int(cmd["count"])):
                self.publish(dict(cmd, quiet=True), True)
            return {"first": first, "last": self.seq - 1}
        if op == "replay_mode":
            self.replay_mode, self.replay_bytes = cmd["mode"], int(cmd.get("bytes", 0))
            if self.replay_mode not in ("normal", "huge", "endless"):
                raise ValueError("unknown replay mode %r" % (self.replay_mode,))
            if self.replay_mode != "endless":
                self.endless = None
            return {}
        if op == "snapshot_mode":
            if cmd["mode"] not in ("normal", "unavailable"):
                raise ValueError("unknown snapshot mode %r" % (cmd["mode"],))
            self.snapshot_mode = cmd["mode"]
            return {}
        if op == "heartbeat":
            self.heartbeat = float(cmd.get("ms", 0)) / 1000.0
            self.last_publish = time.monotonic()
            return {}
        if op == "down":
            self.close()
            return {}
        if op == "up":
            if self.pub is None:
                self.bind()
            return self.endpoints()
        if op == "restart":
            self.close()
            self.new_incarnation()
            self.stats["restarts"] += 1
            self.bind()
            return self.endpoints()
        if op == "sleep":
            self.serve(float(cmd.get("seconds", 0)))
            return {}
        if op == "await_subscribers":
            if self.args.socket != "xpub":
                raise ValueError("await_subscribers needs --socket xpub")
            deadline = time.monotonic() + float(cmd.get("timeout", 10))
            while self.subscribers < int(cmd.get("n", 1)):
                if time.monotonic() > deadline:
                    raise TimeoutError("%d subscribers after the timeout" % self.subscribers)
                self.poll(0.05)
            return {"subscribers": self.subscribers}
        if op == "stats":
            return dict(self.stats, seq=self.seq, buffered=len(self.buffer))
        raise ValueError("unknown op %r" % (op,))


def say(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def stdin_lines(pub):
    """Lines of stdin, serving replay requests while waiting for them."""
    fd, buf = sys.stdin.fileno(), b""
    while True:
        while b"\n" not in buf:
            poller = zmq.Poller()
            poller.register(fd, zmq.POLLIN)
            socks = pub.sockets()
            for s in socks:
                poller.register(s, zmq.POLLIN)
            pub.drip()
            timeout = 5 if pub.endless is not None else None
            due = pub.beat()
            if due is not None:
                timeout = max(1, int(due * 1000)) if timeout is None else min(timeout, max(1, int(due * 1000)))
            ready = dict(poller.poll(timeout))
            for s in socks:
                if s in ready:
                    pub.ready(s)
            if fd in ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    if buf.strip():
                        yield buf.decode()
                    return
                buf += chunk
        line, buf = buf.split(b"\n", 1)
        if line.strip():
            yield line.decode()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--pub-port", type=int, default=0, help="0: a random free port")
    ap.add_argument("--replay-port", type=int, default=0, help="0: a random free port")
    ap.add_argument("--no-replay", action="store_true", help="no ROUTER replay socket")
    ap.add_argument("--topic", default="")
    ap.add_argument("--rank", type=int, default=0, help="data_parallel_rank of batches that set none")
    ap.add_argument("--buffer", type=int, default=10000, help="batches kept for replay (buffer_steps)")
    ap.add_argument("--hwm", type=int, default=100000)
    ap.add_argument("--layout", type=int, choices=(2, 3), default=2,
                    help="replay reply frames after the empty one: 2 [seq, payload] or 3 [topic, seq, payload]")
    ap.add_argument("--sentinel", choices=("empty", "topic", "none"), default="empty",
                    help="3-frame sentinel's topic frame: empty or the topic; none: send no sentinel")
    ap.add_argument("--socket", choices=("pub", "xpub"), default="pub",
                    help="xpub: same wire behaviour, and await_subscribers works")
    ap.add_argument("--snapshot", action="store_true",
                    help="serve vLLM's snapshot service: publisher id in every batch, a REP snapshot socket")
    ap.add_argument("--snapshot-port", type=int, default=0, help="0: a random free port")
    ap.add_argument("--snapshot-chunk-events", type=int, default=64, help="most events of one snapshot chunk")
    ap.add_argument("--heartbeat-ms", type=float, default=0,
                    help="publish an empty batch after this long without one (0: no heartbeats)")
    ap.add_argument("--scenario", help="JSON file: a list of commands, run before stdin's")
    args = ap.parse_args()

    pub = Publisher(args)
    say(pub.endpoints())
    scripted = []
    if args.scenario:
        with open(args.scenario) as f:
            scripted = json.load(f)
    try:
        for source, cmds in (("scenario", scripted), ("stdin", stdin_lines(pub))):
            for cmd in cmds:
                try:
                    if isinstance(cmd, str):
                        cmd = json.loads(cmd)
                    if cmd.get("op") == "exit":
                        say({"op": "exit"})
                        return 0
                    ack = pub.run(cmd)
                    ack["op"] = cmd["op"]
                    say(ack)
                except Exception as e:  # report and go on (a scenario file stops)
                    say({"op": cmd.get("op") if isinstance(cmd, dict) else None, "error": "%s: %s" % (type(e).__name__, e)})
                    if source == "scenario":
                        return 2
        return 0
    finally:
        pub.close()
        pub.ctx.term()


if __name__ == "__main__":
    sys.exit(main())
