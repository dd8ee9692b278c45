"""A worked kvtwin adapter: three ops in small, plain Python.

    kvtwin audit --impl exec:'python3 adapters/python/example.py'
    kvtwin audit --impl exec:'python3 adapters/python/example.py --bug group-length-mismatch'
    python3 adapters/python/example.py --http 127.0.0.1:9000      # then --impl http://127.0.0.1:9000

The functions below are written for this example from the specs (docs/spec/transfer.md
§1 and §2, docs/spec/radix-acks.md §2.1), in the validation order of kvtwin's reference
(ref/transfer_filter_cp_rank_check.go, ref/transfer_group_contiguous.go,
ref/radix_bigram_key.go), so that they agree with it on every output and on every error
object, field, value, bound and message included.

Auditing a real engine instead
------------------------------
Replace the body of a registered function with a call into your engine and translate
its values at the edge. For SGLang's page-pair grouping, for example (described, not
imported here: this example has no dependencies):

    # from sglang.srt.disaggregation.common.utils import group_concurrent_contiguous
    # import numpy as np
    #
    # adapter.map_exception(ValueError, "length_mismatch")   # newer upstream raises ValueError
    #
    # @adapter.op("transfer.group_contiguous")
    # def group_contiguous(x):
    #     src = np.asarray(x.get("src") or [], dtype=np.int64)
    #     dst = np.asarray(x.get("dst") or [], dtype=np.int64)
    #     src_runs, dst_runs = group_concurrent_contiguous(src, dst)
    #     return {"runs": [{"src_start": int(s[0]), "dst_start": int(d[0]), "count": len(s)}
    #                      for s, d in zip(src_runs, dst_runs)]}

`filter_kv_indices_for_cp_rank` (sglang.srt.disaggregation.utils) plugs into
transfer.filter_cp_rank the same way: it returns a slice, so answer
{"owned": kv[sl], "positions": list(range(s + sl.start, s + sl.stop))}. A vLLM function
(a KV connector's block grouping, a prefix-cache key builder) is wrapped identically:
decode `in`, call it, encode `out`. numpy scalars and arrays in the result are accepted
(the kit calls .tolist()); checks your engine does not make (negative ids, say) can be
added in the wrapper with `raise Reject(...)`, or left out to see what the audit finds.

Historic bugs, for seeing the audit catch something
---------------------------------------------------
--bug NAME (repeatable) or KVTWIN_EXAMPLE_BUGS=name,name switches one on:

  group-length-mismatch   docs/spec/transfer.md §2: unequal src/dst lengths are not
                          rejected; the shorter list bounds the walk.
  chunk-page-start-zero   docs/spec/transfer.md §1.6: chunk_page_start is taken as 0.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kvtwin_adapter import INT64_MAX, Adapter, Reject, check_fields, int64_field, int64_list  # noqa: E402

KNOWN_BUGS = ("group-length-mismatch", "chunk-page-start-zero")

# The historic bugs switched on; main() fills it from --bug and KVTWIN_EXAMPLE_BUGS.
BUGS = set()

MAX_TOKEN = (1 << 32) - 1

adapter = Adapter()


# --- transfer.group_contiguous (docs/spec/transfer.md §2) -------------------------------


@adapter.op("transfer.group_contiguous")
def group_contiguous(x):
    check_fields(x, ("src", "dst"))
    src, dst = int64_list(x, "src"), int64_list(x, "dst")
    if "group-length-mismatch" not in BUGS:
        if src and dst and len(src) != len(dst):
            raise Reject("length_mismatch", field="dst", value=len(dst), bound="== len(src) (%d)" % len(src))
    check_non_negative("src", src)
    check_non_negative("dst", dst)
    n = min(len(src), len(dst))  # equal unless the bug is on: then the shorter list wins
    runs = []
    i = 0
    while i < n:
        # Extend the run while both sides step by exactly +1.
        j = i + 1
        while j < n and src[j] == src[j - 1] + 1 and dst[j] == dst[j - 1] + 1:
            j += 1
        runs.append({"src_start": src[i], "dst_start": dst[i], "count": j - i})
        i = j
    return {"runs": runs}


def check_non_negative(field, xs):
    for i, v in enumerate(xs):
        if v < 0:
            raise Reject("negative", field="%s[%d]" % (field, i), value=v, bound=">= 0")


# --- transfer.filter_cp_rank (docs/spec/transfer.md §1) ---------------------------------


def rank_page_bounds(total, rank, size):
    """Rank's half-open share [lo, hi) of `total` pages; the first total % size ranks take one more."""
    base, rem = divmod(total, size)
    lo = rank * base + min(rank, rem)
    return lo, lo + base + (1 if rank < rem else 0)


def span(kv, s, first, last):
    return {"owned": kv[first:last], "positions": list(range(s + first, s + last))}


@adapter.op("transfer.filter_cp_rank")
def filter_cp_rank(x):
    check_fields(x, ("kv", "chunk_page_start", "total_pages", "cp_rank", "cp_size", "policy"))
    kv = int64_list(x, "kv")
    s = int64_field(x, "chunk_page_start")
    total = None if x.get("total_pages") is None else int64_field(x, "total_pages")
    rank, size = int64_field(x, "cp_rank"), int64_field(x, "cp_size")
    policy = x.get("policy") or ""
    if "chunk-page-start-zero" in BUGS:
        s = 0  # the seed's per-layer registration passed 0 for every chunk

    # Validation, in the reference's order (spec §1.5 and its amendment).
    if size < 1:
        raise Reject("bad_cp_size", field="cp_size", value=size, bound=">= 1")
    if rank < 0 or rank >= size:
        raise Reject("bad_cp_rank", field="cp_rank", value=rank, bound="in [0, cp_size=%d)" % size)
    if s < 0:
        raise Reject("negative", field="chunk_page_start", value=s, bound=">= 0")
    if total is not None and total < 0:
        raise Reject("negative", field="total_pages", value=total, bound=">= 0")
    n = len(kv)
    if s > INT64_MAX - n:
        raise Reject("overflow", field="chunk_page_start", value=s, bound="<= %d - len(kv) (%d)" % (INT64_MAX, n))
    if policy not in ("", "value_range", "position_range"):
        raise Reject("bad_enum", field="policy", value=policy, bound='"value_range" or "position_range"')
    if policy == "position_range":
        if total is None:
            raise Reject("total_pages_required", field="total_pages",
                         bound="the request's page count under position_range")
        if s + n > total:
            raise Reject("chunk_out_of_range", field="chunk_page_start", value=s,
                         bound="chunk [%d, %d) inside [0, total_pages=%d)" % (s, s + n, total))
    check_non_negative("kv", kv)

    if policy == "position_range":
        # The rank's share of the whole request, intersected with this chunk [s, s+n).
        lo, hi = rank_page_bounds(total, rank, size)
        first, last = max(lo, s) - s, min(hi, s + n) - s
        return span(kv, s, first, last) if first < last else span(kv, s, 0, 0)

    # value_range (the default): the rank's share of T pages, shifted by min(kv) into
    # page-id space; the answer is the span from the first to the last id inside it.
    if size == 1:
        return span(kv, s, 0, n)
    if n == 0:
        return span(kv, s, 0, 0)
    lo, hi = rank_page_bounds(n if total is None else total, rank, size)
    m = min(kv)
    inside = [i for i, v in enumerate(kv) if lo <= v - m < hi]
    if not inside:
        return span(kv, s, 0, 0)
    return span(kv, s, inside[0], inside[-1] + 1)


# --- radix.bigram_key (docs/spec/radix-acks.md §2.1) -------------------------------------


@adapter.op("radix.bigram_key")
def bigram_key(x):
    check_fields(x, ("tokens", "value", "page_size"))
    tokens = int64_list(x, "tokens")
    page_size = int64_field(x, "page_size")
    value = None if x.get("value") is None else int64_list(x, "value")
    for i, t in enumerate(tokens):
        if t < 0 or t > MAX_TOKEN:
            raise Reject("token_range", field="tokens[%d]" % i, value=t, bound="in [0, %d]" % MAX_TOKEN)
    if page_size < 1:
        raise Reject("invalid_page_size", field="page_size", value=page_size, bound=">= 1")
    if value is not None and len(value) != len(tokens):
        raise Reject("value_length", field="value", value=len(value), bound="== len(tokens) (%d)" % len(tokens))
    # Token i and token i+1 form bigram i; token i's KV slot serves bigram i, so the
    # last token's slot is dropped. Page alignment counts bigrams.
    # Members in the reference's order, so that even a byte comparison (`kvtwin fixtures
    # check --impl http://...`) agrees; the audit itself does not care about order.
    pairs = [[tokens[i], tokens[i + 1]] for i in range(len(tokens) - 1)]
    out = {"pairs": pairs}
    if value is not None:
        out["value"] = value[:len(pairs)]
    out["aligned_len"] = len(pairs) // page_size * page_size
    return out


# --- command line -------------------------------------------------------------------------


def parse_bug_names(text):
    """The names in a comma-separated list, each checked against KNOWN_BUGS."""
    names = [b.strip() for b in text.split(",") if b.strip()]
    for b in names:
        if b not in KNOWN_BUGS:
            raise ValueError("unknown bug %r: want one of %s" % (b, ", ".join(KNOWN_BUGS)))
    return names


def main(argv=None):
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--bug", action="append", default=[], choices=KNOWN_BUGS,
                   help="switch on a historic bug (repeatable); also KVTWIN_EXAMPLE_BUGS=name,name")
    args, rest = p.parse_known_args(argv)
    if "-h" in rest or "--help" in rest:
        p.print_help(sys.stderr)
    try:
        BUGS.update(parse_bug_names(os.environ.get("KVTWIN_EXAMPLE_BUGS", "")))
    except ValueError as e:
        p.error("KVTWIN_EXAMPLE_BUGS: %s" % e)
    BUGS.update(args.bug)
    if BUGS:
        sys.stderr.write("kvtwin example: bugs on: %s\n" % ", ".join(sorted(BUGS)))
    return adapter.main(rest)


if __name__ == "__main__":
    sys.exit(main())
