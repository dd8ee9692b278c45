#!/usr/bin/env python3
"""Prints the prefix-hash vectors of docs/spec/radix-acks.md §1.14 (version 2)
with the C libxxhash, independently of kvtwin's Go code:
apt-get install python3-xxhash, then /usr/bin/python3 scripts/prefix_hash_vectors.py."""
import struct

import xxhash

DOMAIN = b"kvtwin.prefix-hash.v2"


def seed(extra=None, salt=None, bigram=False):
    flags = (1 if extra is not None else 0) | (2 if salt is not None else 0) | (4 if bigram else 0)
    e, s = (extra or "").encode(), (salt or "").encode()
    b = DOMAIN + bytes([flags]) + struct.pack("<Q", len(e)) + e + struct.pack("<Q", len(s)) + s
    return xxhash.xxh3_64_intdigest(b)


def page(units):
    return xxhash.xxh3_64_intdigest(b"".join(struct.pack("<Q", u) for u in units))


def chain(units, ps, **namespace):
    h, out = seed(**namespace), []
    for i in range(0, len(units) - ps + 1, ps):
        h = xxhash.xxh3_64_intdigest(struct.pack("<QQ", h, page(units[i:i + ps])))
        out.append(h)
    return out


def show(name, hashes):
    print(f"{name}: " + ", ".join(f"{h:016x}" for h in hashes))


show("h-1, no namespace, tokens", [seed()])
show('h-1, extra "lora-a"', [seed(extra="lora-a")])
show('h-1, salt "s"', [seed(salt="s")])
show("h-1, bigram units", [seed(bigram=True)])
show("page hash of units [1,2]", [page([1, 2])])
show("tokens [1,2,3,4,5], ps = 2", chain([1, 2, 3, 4, 5], 2))
show('tokens [1,2], extra "lora-a", ps = 2', chain([1, 2], 2, extra="lora-a"))
show("bigrams of tokens [1,2,3], ps = 2", chain([(1 << 32) | 2, (2 << 32) | 3], 2, bigram=True))
show("tokens 0..63, ps = 64", chain(list(range(64)), 64))
