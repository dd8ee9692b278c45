#!/usr/bin/env python3
"""The smallest engine kvtwin can index (docs/events.md, "The wire"): a ZeroMQ PUB
that sends three batches, as vLLM does. Usage: kvev_minimal_publisher.py [tcp://*:5557]"""
import struct, sys, time

import msgpack, zmq

pub = zmq.Context().socket(zmq.PUB)
pub.bind(sys.argv[1] if len(sys.argv) > 1 else "tcp://*:5557")
time.sleep(1)  # a PUB drops what it sends before a subscriber has joined
topic, seq = b"kv@pod-a@demo", 0  # kv@<pod>@<model>: the engine is pod-a


def send(events):  # one batch: [ts, events, data_parallel_rank], seq as 8 big-endian bytes
    global seq
    pub.send_multipart([topic, struct.pack(">Q", seq), msgpack.packb([time.time(), events, 0])])
    seq += 1


# BlockStored by position: tag, block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium
send([["BlockStored", [101, 102], None, [1, 2, 3, 4, 5, 6, 7, 8], 4, None, "GPU"]])
send([["BlockStored", [103], 102, [9, 10, 11, 12], 4, None, "GPU"]])
send([{"type": "BlockRemoved", "block_hashes": [103], "medium": "GPU"}])  # the map form, as newer vLLM
time.sleep(0.5)
