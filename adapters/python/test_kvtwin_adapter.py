"""Tests of the kvtwin adapter kit and its example (stdlib unittest).

    cd adapters/python && python3 -m unittest -v
"""

import http.client
import io
import json
import os
import subprocess
import sys
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import example  # noqa: E402
import kvtwin_adapter as ka  # noqa: E402
from kvtwin_adapter import Adapter, Reject  # noqa: E402

FIXTURES = os.path.join(HERE, "..", "..", "fixtures", "testdata")
FIXTURE_OPS = ("transfer.group_contiguous", "transfer.filter_cp_rank", "radix.bigram_key")
EXAMPLE = os.path.join(HERE, "example.py")


def canon(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


def load_fixture(op):
    path = os.path.join(FIXTURES, op + ".jsonl")
    if not os.path.exists(path):
        raise unittest.SkipTest("no fixture file %s" % path)
    with open(path, "rb") as f:
        return [json.loads(line) for line in f if line.strip()]


def fixture_case(op, case):
    for c in load_fixture(op):
        if c["case"] == case:
            return c
    raise AssertionError("fixture %s has no case %s" % (op, case))


class WithBugs(object):
    """Context manager: example.BUGS is exactly `names` inside, restored after."""

    def __init__(self, *names):
        self.names = set(names)

    def __enter__(self):
        self.saved = set(example.BUGS)
        example.BUGS.clear()
        example.BUGS.update(self.names)

    def __exit__(self, *exc):
        example.BUGS.clear()
        example.BUGS.update(self.saved)


def run_example(lines, args=(), env=None, timeout=60):
    """Pipes lines into example.py; returns (replies by id, stderr text, returncode)."""
    e = dict(os.environ)
    e.pop("KVTWIN_EXAMPLE_BUGS", None)
    e.update(env or {})
    p = subprocess.run([sys.executable, EXAMPLE] + list(args), input=b"".join(lines),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e, timeout=timeout)
    replies = {}
    for line in p.stdout.splitlines():
        r = json.loads(line)
        assert r["id"] not in replies, "two replies for id %s" % r["id"]
        replies[r["id"]] = r
    return replies, p.stderr.decode("utf-8", "replace"), p.returncode


def request(rid, op, in_obj):
    return (json.dumps({"id": rid, "op": op, "in": in_obj}) + "\n").encode()


# --- golden fixtures --------------------------------------------------------------------


class GoldenFixtures(unittest.TestCase):
    """Every line of the three golden fixture files, through the example's functions."""

    def replay(self, op, exact_errors):
        cases = load_fixture(op)
        self.assertTrue(cases)
        with WithBugs():
            for c in cases:
                with self.subTest(case=c["case"]):
                    ok, val = example.adapter.call(c["op"], c["in"])
                    if c.get("err") is None:
                        self.assertTrue(ok, "rejected with %s" % val)
                        self.assertEqual(canon(val), canon(c["out"]))
                    else:
                        self.assertFalse(ok, "accepted with %s, want %s" % (val, c["err"]["code"]))
                        self.assertEqual(val["code"], c["err"]["code"])
                        if exact_errors:
                            self.assertEqual(canon(val), canon(c["err"]))

    def test_group_contiguous(self):
        self.replay("transfer.group_contiguous", exact_errors=False)

    def test_filter_cp_rank(self):
        self.replay("transfer.filter_cp_rank", exact_errors=False)

    def test_bigram_key(self):
        self.replay("radix.bigram_key", exact_errors=False)

    def test_error_objects_are_byte_equal(self):
        # Stronger than the audit's default (--errors code): field, value, bound and message too.
        for op in FIXTURE_OPS:
            self.replay(op, exact_errors=True)

    def test_ops_are_registered(self):
        self.assertEqual(sorted(example.adapter.ops()), sorted(FIXTURE_OPS))

    def test_a_partial_declaration_is_listed(self):
        a = ka.Adapter()
        a.register("transfer.group_contiguous", lambda x: {"runs": []})
        a.register("radix.script", lambda x: {}, steps=["create", "insert", "match", "evict"],
                   options={"hashed_score": False})
        a.register("hicache.load_script", lambda x: {}, steps=[])
        self.assertEqual(a._ops_list(), [
            {"name": "transfer.group_contiguous"},
            {"name": "radix.script", "steps": ["create", "insert", "match", "evict"],
             "options": {"hashed_score": False}},
            {"name": "hicache.load_script", "steps": []},
        ])
        for bad in [dict(steps="create"), dict(steps=[1]), dict(options={"hashed_score": 0}), dict(options=["x"])]:
            with self.assertRaises(ValueError):
                a.register("radix.script", lambda x: {}, **bad)


class Bugs(unittest.TestCase):
    """Each --bug makes its regression fixture case disagree, and only that bug does."""

    CASES = {
        "group-length-mismatch": ("transfer.group_contiguous", "regression/group-length-mismatch"),
        "chunk-page-start-zero": ("transfer.filter_cp_rank", "regression/chunk-page-start-zero"),
    }

    def agrees(self, c):
        ok, val = example.adapter.call(c["op"], c["in"])
        if c.get("err") is None:
            return ok and canon(val) == canon(c["out"])
        return not ok and val["code"] == c["err"]["code"]

    def test_each_bug_breaks_its_regression_case(self):
        for bug, (op, case) in self.CASES.items():
            c = fixture_case(op, case)
            with WithBugs():
                self.assertTrue(self.agrees(c), "%s without bugs" % case)
            for other in self.CASES:
                with WithBugs(other):
                    self.assertEqual(self.agrees(c), other != bug, "%s with --bug %s" % (case, other))

    def test_group_length_mismatch_truncates(self):
        with WithBugs("group-length-mismatch"):
            ok, val = example.adapter.call("transfer.group_contiguous", {"src": [1, 2, 3], "dst": [5, 6]})
        self.assertTrue(ok)
        self.assertEqual(val, {"runs": [{"src_start": 1, "dst_start": 5, "count": 2}]})

    def test_bug_flag_and_env_end_to_end(self):
        for bug, (op, case) in self.CASES.items():
            c = fixture_case(op, case)
            for args, env in (((), {}), (("--bug", bug), {}), ((), {"KVTWIN_EXAMPLE_BUGS": bug})):
                with self.subTest(bug=bug, args=args, env=env):
                    replies, stderr, rc = run_example([request(1, op, c["in"])], args, env)
                    self.assertEqual(rc, 0, stderr)
                    r = replies[1]
                    if c.get("err") is None:
                        agrees = "out" in r and canon(r["out"]) == canon(c["out"])
                    else:
                        agrees = "err" in r and r["err"]["code"] == c["err"]["code"]
                    self.assertEqual(agrees, not args and not env)

    def test_unknown_bug_is_refused(self):
        _, stderr, rc = run_example([], env={"KVTWIN_EXAMPLE_BUGS": "no-such-bug"})
        self.assertEqual(rc, 2)
        self.assertIn("no-such-bug", stderr)
        _, stderr, rc = run_example([], args=("--bug", "no-such-bug"))
        self.assertEqual(rc, 2)


# --- the kit ----------------------------------------------------------------------------


class Kit(unittest.TestCase):

    def test_reject_composes_refs_message(self):
        r = Reject("length_mismatch", field="dst", value=2, bound="== len(src) (3)")
        self.assertEqual(r.to_object(), {
            "code": "length_mismatch", "field": "dst", "value": 2, "bound": "== len(src) (3)",
            "message": "dst = 2: want == len(src) (3) (parallel lists differ in length)"})
        self.assertEqual(Reject("x", "boom").to_object(), {"code": "x", "message": "boom"})
        self.assertEqual(Reject("negative", field="kv[0]", value=0, bound=">= 0").to_object()["value"], 0)
        r = Reject("total_pages_required", field="total_pages", bound="b")
        self.assertNotIn("value", r.to_object())
        self.assertEqual(r.message, "total_pages = <nil>: want b (position_range needs total_pages)")

    def test_exceptions_become_internal_or_their_mapped_code(self):
        a = Adapter()

        class EngineError(ValueError):
            pass

        @a.op("t.value")
        def value_error(x):
            raise ValueError("lengths differ")

        @a.op("t.engine")
        def engine_error(x):
            raise EngineError("engine says no")

        @a.op("t.key")
        def key_error(x):
            return x["missing"]

        self.assertEqual(a.call("t.value", {}), (False, {"code": "internal", "message": "ValueError: lengths differ"}))
        self.assertEqual(a.call("t.key", {})[1]["code"], "internal")
        a.map_exception(ValueError, "length_mismatch")
        self.assertEqual(a.call("t.value", {}), (False, {"code": "length_mismatch", "message": "ValueError: lengths differ"}))
        self.assertEqual(a.call("t.engine", {})[1]["code"], "length_mismatch")  # subclasses too
        a.map_exception(EngineError, "negative")  # the most specific class wins
        self.assertEqual(a.call("t.engine", {})[1]["code"], "negative")
        self.assertEqual(a.call("t.value", {})[1]["code"], "length_mismatch")
        self.assertEqual(a.call("t.nope", {})[1]["code"], "not_implemented")
        self.assertEqual(a.call("t.value", [1])[1]["code"], "bad_json")

    def test_int64_helpers(self):
        self.assertEqual(ka.check_int64(ka.INT64_MAX, "f"), ka.INT64_MAX)
        self.assertEqual(ka.check_int64(ka.INT64_MIN, "f"), ka.INT64_MIN)
        for bad in (ka.INT64_MAX + 1, ka.INT64_MIN - 1, 1.0, "1", True, None):
            with self.assertRaises(Reject) as cm:
                ka.check_int64(bad, "f")
            self.assertEqual(cm.exception.code, "bad_json")
        self.assertEqual(ka.int64_list({}, "kv"), [])
        self.assertEqual(ka.int64_list({"kv": None}, "kv"), [])
        with self.assertRaises(Reject) as cm:
            ka.int64_list({"kv": [1, 2, 1 << 63]}, "kv")
        self.assertEqual(cm.exception.field, "kv[2]")
        self.assertEqual(ka.int64_field({}, "n", 7), 7)
        with self.assertRaises(Reject):
            ka.check_fields({"kv": [], "kvv": 1}, ("kv",))

    def test_check_output_bounds(self):
        ka.check_output("n", 1 << 27, 8)  # exactly 1 GiB
        with self.assertRaises(Reject) as cm:
            ka.check_output("n", (1 << 27) + 1, 8)
        self.assertEqual(cm.exception.code, "too_large")
        with self.assertRaises(Reject) as cm:
            ka.check_output("n", 1 << 62, 8)
        self.assertEqual(cm.exception.code, "overflow")

    def test_rows_round_trip(self):
        for b in (b"", b"\x00", b"\xff\x00\x01", bytes(range(256))):
            self.assertEqual(ka.decode_rows(ka.encode_rows(b)), b)
        self.assertEqual(ka.encode_rows(b"\x00\x01\x02"), "AAEC")
        self.assertEqual(ka.encode_rows(bytearray(b"ab")), "YWI=")
        with self.assertRaises(Reject):
            ka.decode_rows("not base64!")

    def test_numpy_like_outputs_are_encoded(self):
        class Scalar(object):  # stands in for numpy.int64
            def __index__(self):
                return 5

        class Array(object):  # stands in for numpy.ndarray
            def tolist(self):
                return [1, 2]

        a = Adapter()
        a.register("t.np", lambda x: {"n": Scalar(), "xs": Array()})
        a.register("t.set", lambda x: {"s": {1}})
        out = io.BytesIO()
        a.serve_exec(io.BytesIO(request(1, "t.np", {}) + request(2, "t.set", {})), out, io.StringIO())
        r1, r2 = [json.loads(l) for l in out.getvalue().splitlines()]
        self.assertEqual(r1, {"id": 1, "out": {"n": 5, "xs": [1, 2]}})
        self.assertEqual(r2["err"]["code"], "internal")


# --- exec transport ---------------------------------------------------------------------


class Exec(unittest.TestCase):

    def test_in_process_streams(self):
        stdin = io.BytesIO(b"".join([
            request(1, "kvtwin.ops", {}),
            b"this is not json\n",
            b"\n",
            request(2, "transfer.group_contiguous", {"src": [1, 2, 3], "dst": [5, 6]}),
        ]))
        out, err = io.BytesIO(), io.StringIO()
        with WithBugs():
            example.adapter.serve_exec(stdin, out, err)
        replies = [json.loads(l) for l in out.getvalue().splitlines()]
        self.assertEqual([r["id"] for r in replies], [1, 2])
        self.assertEqual(sorted(o["name"] for o in replies[0]["out"]), sorted(FIXTURE_OPS))
        self.assertEqual(replies[1]["err"]["code"], "length_mismatch")
        self.assertIn("line 2", err.getvalue())

    def test_text_streams(self):
        out = io.StringIO()
        example.adapter.serve_exec(io.StringIO(request(3, "kvtwin.ops", {}).decode()), out, io.StringIO())
        self.assertEqual(json.loads(out.getvalue())["id"], 3)

    def test_subprocess_pipelined(self):
        lines = [
            request(1, "kvtwin.ops", {}),
            request(2, "transfer.group_contiguous", {"src": [1, 2, 3, 7], "dst": [10, 11, 12, 13]}),
            request(3, "transfer.group_contiguous", {"src": [1, 2, 3], "dst": [5, 6]}),
            b"{not json at all\n",
            request(4, "no.such_op", {}),
            b'{"op":"kvtwin.ops","in":{}}\n',  # no id: cannot be answered
            b'{"id":9}\n',  # no op
            b"[1,2,3]\n",
            request(5, "radix.bigram_key", {"tokens": [5, 7, 7, 9], "value": [100, 101, 102, 103], "page_size": 2}),
            request(6, "transfer.filter_cp_rank", {"kv": [40, 41, 42, 43, 44], "chunk_page_start": 8,
                                                   "cp_rank": 1, "cp_size": 2}),
        ]
        replies, stderr, rc = run_example(lines)
        self.assertEqual(rc, 0, stderr)
        self.assertEqual(sorted(replies), [1, 2, 3, 4, 5, 6])
        self.assertEqual(sorted(o["name"] for o in replies[1]["out"]), sorted(FIXTURE_OPS))
        self.assertEqual(replies[2], {"id": 2, "out": {"runs": [
            {"src_start": 1, "dst_start": 10, "count": 3}, {"src_start": 7, "dst_start": 13, "count": 1}]}})
        self.assertEqual(replies[3]["err"]["code"], "length_mismatch")
        self.assertEqual(replies[4]["err"]["code"], "not_implemented")
        self.assertIn("message", replies[4]["err"])
        self.assertEqual(replies[5]["out"], {"pairs": [[5, 7], [7, 7], [7, 9]], "value": [100, 101, 102], "aligned_len": 2})
        self.assertEqual(replies[6]["out"], {"owned": [43, 44], "positions": [11, 12]})
        self.assertEqual(stderr.count("skipped"), 4, stderr)

    def test_stray_prints_go_to_stderr(self):
        script = ("import sys; sys.path.insert(0, %r)\n"
                  "from kvtwin_adapter import Adapter\n"
                  "a = Adapter()\n"
                  "def noisy(x):\n"
                  "    print('engine chatter')\n"
                  "    return {'ok': 1}\n"
                  "a.register('t.noisy', noisy)\n"
                  "sys.exit(a.main([]))\n") % HERE
        p = subprocess.run([sys.executable, "-c", script], input=request(1, "t.noisy", {}) * 2,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual([json.loads(l) for l in p.stdout.splitlines()], [{"id": 1, "out": {"ok": 1}}] * 2)
        self.assertIn(b"engine chatter", p.stderr)

    def test_subprocess_answers_before_stdin_closes(self):
        # Each reply is flushed at once: kvtwin may wait for it before sending more.
        p = subprocess.Popen([sys.executable, EXAMPLE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        got = []
        try:
            for rid in (1, 2):
                p.stdin.write(request(rid, "transfer.group_contiguous", {"src": [1], "dst": [2]}))
                p.stdin.flush()
                t = threading.Thread(target=lambda: got.append(json.loads(p.stdout.readline())))
                t.start()
                t.join(30)
                self.assertFalse(t.is_alive(), "no reply to id %d while stdin is open" % rid)
            self.assertEqual([r["id"] for r in got], [1, 2])
            p.stdin.close()
            self.assertEqual(p.wait(30), 0)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            p.stdout.close()
            p.stderr.close()


# --- HTTP transport ---------------------------------------------------------------------


class HTTP(unittest.TestCase):
    PREFIX = ""

    @classmethod
    def setUpClass(cls):
        cls.srv, _ = ka.serve_in_thread(example.adapter, "127.0.0.1", 0, cls.PREFIX)
        cls.port = cls.srv.server_address[1]

    @classmethod
    def tearDownClass(cls):
        cls.srv.shutdown()
        cls.srv.server_close()

    def do(self, method, path, body=None, headers=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            c.request(method, self.PREFIX + path, body=body, headers=headers or {})
            r = c.getresponse()
            data = r.read()
            return r.status, (json.loads(data) if data.strip() else None)
        finally:
            c.close()

    def test_list(self):
        status, body = self.do("GET", "/v1/ops")
        self.assertEqual(status, 200)
        self.assertEqual(sorted(o["name"] for o in body), sorted(FIXTURE_OPS))

    def test_ok(self):
        status, body = self.do("POST", "/v1/ops/transfer.group_contiguous",
                               json.dumps({"src": [1, 2, 3, 7], "dst": [10, 11, 12, 13]}))
        self.assertEqual(status, 200)
        self.assertEqual(len(body["runs"]), 2)

    def test_rejected(self):
        c = fixture_case("transfer.group_contiguous", "regression/group-length-mismatch")
        with WithBugs():
            status, body = self.do("POST", "/v1/ops/transfer.group_contiguous", json.dumps(c["in"]))
        self.assertEqual(status, 400)
        self.assertEqual(canon(body["detail"]), canon(c["err"]))

    def test_unknown_op(self):
        status, _ = self.do("POST", "/v1/ops/no.such_op", "{}")
        self.assertEqual(status, 404)

    def test_unknown_route(self):
        self.assertEqual(self.do("GET", "/v1/nothing")[0], 404)

    def test_bad_json(self):
        status, body = self.do("POST", "/v1/ops/radix.bigram_key", "{nope")
        self.assertEqual(status, 400)
        self.assertEqual(body["detail"]["code"], "bad_json")

    def test_too_large(self):
        # Announce a body over 64 MiB; the server answers 413 without reading it.
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            c.putrequest("POST", self.PREFIX + "/v1/ops/radix.bigram_key")
            c.putheader("Content-Length", str(ka.MAX_BODY_BYTES + 1))
            c.endheaders()  # and no body: the server must answer without reading it
            r = c.getresponse()
            r.read()
            self.assertEqual(r.status, 413)
        finally:
            c.close()

    def test_chunked_body(self):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            body = [b'{"tokens":[1,2,', b'3],"page_size":1}']
            c.request("POST", self.PREFIX + "/v1/ops/radix.bigram_key", body=iter(body),
                      encode_chunked=True, headers={"Transfer-Encoding": "chunked"})
            r = c.getresponse()
            self.assertEqual(r.status, 200)
            self.assertEqual(json.loads(r.read())["aligned_len"], 2)
        finally:
            c.close()

    def test_every_fixture_case(self):
        with WithBugs():
            for op in FIXTURE_OPS:
                for c in load_fixture(op):
                    status, body = self.do("POST", "/v1/ops/" + op, json.dumps(c["in"]))
                    if c.get("err") is None:
                        self.assertEqual((status, canon(body)), (200, canon(c["out"])), c["case"])
                    else:
                        self.assertEqual((status, body["detail"]["code"]), (400, c["err"]["code"]), c["case"])


class HTTPWithPrefix(HTTP):
    PREFIX = "/kvtwin"

    def test_unprefixed_route_is_not_found(self):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            c.request("GET", "/v1/ops")
            r = c.getresponse()
            r.read()
            self.assertEqual(r.status, 404)
        finally:
            c.close()


if __name__ == "__main__":
    unittest.main()
