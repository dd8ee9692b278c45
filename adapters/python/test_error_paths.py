"""Every error path of the Python kit over both transports (issue 30, item 7).

    cd adapters/python && python3 -m unittest -v test_error_paths

Each way a call can go wrong (an op not registered, an `in` that is not an object, a Reject,
an exception, a mapped exception, an output that is not JSON) is answered as
docs/adapters.md and the kit's README promise, over exec and over HTTP, and so is each way a
line or a request can fail to be a call (not JSON, no positive integer id, invalid UTF-8; a
body not JSON, over the bound, without a length; a route outside the protocol). The bug
zoo's component mutants of the kit (EXEC_MUTANTS, HTTP_MUTANTS; listed in docs/bugzoo.md,
which a Go test keeps equal to these dicts) must each fail the check of their transport.
"""

import http.client
import io
import json
import os
import sys
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import kvtwin_adapter as ka  # noqa: E402
from kvtwin_adapter import Adapter, Reject  # noqa: E402

# The HTTP body bound of these tests: a body one byte over it is refused (413).
TEST_BODY_BOUND = 4096


class EngineError(Exception):
    """An engine's own exception, mapped to a kvtwin code."""


def error_path_kit(cls=Adapter):
    """An adapter (of class cls: the kit or a mutant of it) with one op per error path."""
    a = cls()
    a.register("echo", lambda x: {"n": x.get("n")})

    def rejects(x):
        raise Reject("bad_cp_rank", field="cp_rank", value=9, bound="< 4")

    def fails(x):
        raise KeyError("kv")

    def engine(x):
        raise EngineError("dst is shorter than src")

    a.register("rejects", rejects)
    a.register("fails", fails)
    a.register("engine", engine)
    a.register("unencodable", lambda x: {"s": {1, 2}})
    a.register("nan", lambda x: {"f": float("nan")})
    a.register("bytes", lambda x: {"b": b"\x00"})
    a.map_exception(EngineError, "length_mismatch")
    return a


# Every call and the answer promised: ("out", value) or ("err", members of the error
# object; a value ending in "..." is a prefix). An op not registered is 404 over HTTP.
CALLS = [
    ("an output", "echo", {"n": 3}, ("out", {"n": 3})),
    ("a Reject with every member", "rejects", {}, ("err", {
        "code": "bad_cp_rank", "field": "cp_rank", "value": 9, "bound": "< 4",
        "message": "cp_rank = 9: want < 4 (cp_rank out of range)"})),
    ("an exception", "fails", {}, ("err", {"code": "internal", "message": "KeyError: 'kv'"})),
    ("a mapped exception", "engine", {}, ("err", {
        "code": "length_mismatch", "message": "EngineError: dst is shorter than src"})),
    ("an output that is not JSON (a set)", "unencodable", {}, ("err", {
        "code": "internal", "message": "output of unencodable is not JSON: TypeError..."})),
    ("an output with NaN", "nan", {}, ("err", {"code": "internal", "message": "output of nan is not JSON: ValueError..."})),
    ("an output with bytes", "bytes", {}, ("err", {"code": "internal", "message": "output of bytes is not JSON: TypeError: bytes..."})),
    ("an in that is not an object", "echo", [1, 2], ("err", {"code": "bad_json", "field": "$"})),
    ("an op not registered", "no.such_op", {}, ("err", {
        "code": "not_implemented", "message": 'op "no.such_op" is not implemented by this adapter'})),
]


def check_error_object(name, got, want):
    if not isinstance(got, dict):
        raise AssertionError("%s: error object %r is not an object" % (name, got))
    for k, w in want.items():
        g = got.get(k)
        if isinstance(w, str) and w.endswith("...") and isinstance(g, str) and g.startswith(w[:-3]):
            continue
        if g != w:
            raise AssertionError("%s: error object %r: %s = %r, want %r" % (name, got, k, g, w))


def _not_json(name):
    raise AssertionError("a reply holds %s, which JSON (and kvtwin) does not accept" % name)


def check_exec(adapter):
    """Pipelines every call of CALLS (ids 1..n) among lines that are not requests; every
    call must be answered once, as promised, and nothing else answered."""
    not_requests = [
        b"this is not a request", b"[1,2,3]", b'"a string"', b'{"id":"x","op":"echo","in":{}}',
        b'{"id":0,"op":"echo","in":{}}', b'{"id":-1,"op":"echo","in":{}}', b'{"id":2.5,"op":"echo","in":{}}',
        b'{"id":true,"op":"echo","in":{}}', b'{"op":"echo","in":{}}', b'{"id":90}', b'{"id":91,"op":7}',
        b"", b"   ", b'{"id":92,"op":"echo","in":{"n":"\xff"}}', b'{"id":93,"op":"echo","in":{"n":1}',
    ]
    lines = []
    for i, (_, op, in_obj, _) in enumerate(CALLS):
        lines.append(json.dumps({"id": i + 1, "op": op, "in": in_obj}).encode())
        lines.extend(not_requests[i::len(CALLS)])
    after = len(CALLS) + 1
    lines.append(json.dumps({"id": after, "op": "echo", "in": {"n": 7}}).encode())
    out, err = io.BytesIO(), io.StringIO()
    try:
        adapter.serve_exec(io.BytesIO(b"\n".join(lines) + b"\n"), out, err)
    except Exception as e:  # noqa: BLE001 - a kit that raises has failed the check
        raise AssertionError("serve_exec raised %s: %s (replies so far: %r)" % (type(e).__name__, e, out.getvalue()))
    replies = {}
    for line in out.getvalue().splitlines():
        r = json.loads(line, parse_constant=_not_json)
        rid = r.get("id")
        if type(rid) is not int or rid < 1 or rid > after or rid in replies or ("out" in r) == ("err" in r):
            raise AssertionError("reply %r answers no call, or a call twice, or is not {id, out} or {id, err}" % line)
        replies[rid] = r
    for i, (name, _, _, (kind, want)) in enumerate(CALLS + [("the call after every bad line", "", None, ("out", {"n": 7}))]):
        r = replies.get(i + 1)
        if r is None:
            raise AssertionError("%s: no reply to id %d" % (name, i + 1))
        if kind not in r:
            raise AssertionError("%s: reply %r, want %s" % (name, r, kind))
        if kind == "out" and r["out"] != want:
            raise AssertionError("%s: out %r, want %r" % (name, r["out"], want))
        if kind == "err":
            check_error_object(name, r["err"], want)
    if err.getvalue().count("skipped") != len(not_requests) - 2:  # blank lines are skipped silently
        raise AssertionError("stderr logs %d skipped lines, want %d:\n%s" % (
            err.getvalue().count("skipped"), len(not_requests) - 2, err.getvalue()))


def check_http(adapter):
    """Posts every call of CALLS, and the requests that are no call, to adapter's HTTP
    server (prefix /kv, body bound TEST_BODY_BOUND)."""
    srv = adapter.make_http_server("127.0.0.1", 0, "/kv", max_body_bytes=TEST_BODY_BOUND)
    # a handler that raises drops its connection, which do() reports; the server's own
    # traceback of it would only clutter the test's output
    srv.handle_error = lambda request, client_address: None
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    t.start()
    port = srv.server_address[1]

    def do(method, path, body=None, headers=None, chunks=None):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            if chunks is not None:
                c.request(method, path, body=iter(chunks), encode_chunked=True, headers={"Transfer-Encoding": "chunked"})
            elif headers is not None:
                c.putrequest(method, path)
                for k, v in headers.items():
                    c.putheader(k, v)
                c.endheaders()
                if body:
                    c.send(body)
            else:
                c.request(method, path, body=body)
            r = c.getresponse()
            data = r.read()
            return r.status, (json.loads(data, parse_constant=_not_json) if data.strip() else None)
        except (OSError, http.client.HTTPException) as e:
            raise AssertionError("%s %s: %s: %s" % (method, path, type(e).__name__, e))
        finally:
            c.close()

    try:
        for name, op, in_obj, (kind, want) in CALLS:
            status, body = do("POST", "/kv/v1/ops/" + op, json.dumps(in_obj))
            want_status = 200 if kind == "out" else 404 if want["code"] == "not_implemented" else 400
            if status != want_status:
                raise AssertionError("%s: status %d (%r), want %d" % (name, status, body, want_status))
            if kind == "out":
                if body != want:
                    raise AssertionError("%s: body %r, want %r" % (name, body, want))
                continue
            if not isinstance(body, dict) or "detail" not in body:
                raise AssertionError("%s: body %r is not {\"detail\": error object}" % (name, body))
            check_error_object(name, body["detail"], want)
        over = b'{"n":' + b"1" * TEST_BODY_BOUND + b"}"
        for name, args, want_status, want_code in [
            ("the op list", ("GET", "/kv/v1/ops"), 200, None),
            ("a body that is not JSON", ("POST", "/kv/v1/ops/echo", "{nope"), 400, "bad_json"),
            ("a body over the bound", ("POST", "/kv/v1/ops/echo", over), 413, "too_large"),
            ("a chunked body over the bound", ("POST", "/kv/v1/ops/echo", None, None, [over[:100], over[100:]]), 413, "too_large"),
            ("a bad chunk size", ("POST", "/kv/v1/ops/echo", b"zz\r\n{}\r\n0\r\n\r\n",
                                  {"Transfer-Encoding": "chunked"}), 400, "bad_request"),
            ("no Content-Length", ("POST", "/kv/v1/ops/echo", None, {}), 411, "length_required"),
            ("a bad Content-Length", ("POST", "/kv/v1/ops/echo", None, {"Content-Length": "-5"}), 400, "bad_request"),
            ("a route outside the protocol", ("GET", "/kv/v1/other"), 404, "not_found"),
            ("a route without the prefix", ("POST", "/v1/ops/echo", "{}"), 404, "not_found"),
        ]:
            status, body = do(*args)
            if status != want_status:
                raise AssertionError("%s: status %d (%r), want %d" % (name, status, body, want_status))
            if want_code is None:
                if sorted(o["name"] for o in body) != sorted(adapter.ops()):
                    raise AssertionError("%s: %r" % (name, body))
            elif not isinstance(body, dict) or body.get("detail", {}).get("code") != want_code:
                raise AssertionError("%s: body %r, want detail.code %s" % (name, body, want_code))
    finally:
        srv.shutdown()
        srv.server_close()


# --- the bug zoo's component mutants of the kit -------------------------------------------


class AnswersNonRequests(Adapter):
    """A line that is not a request is answered with id 0: a reply kvtwin did not ask for."""

    def serve_exec(self, stdin=None, stdout=None, stderr=None):
        data = stdin.read()
        for line in data.splitlines():
            if line.strip() and not line.startswith(b'{"id":'):
                stdout.write(b'{"id":0,"err":{"code":"bad_json","message":"not a request"}}\n')
        return Adapter.serve_exec(self, io.BytesIO(data), stdout, stderr)


class AnswersIDZero(Adapter):
    """Any integer id is a request (the kit before issue 30): ids 0 and -1 are answered."""

    def serve_exec(self, stdin=None, stdout=None, stderr=None):
        data = stdin.read()
        for line in data.splitlines():
            try:
                req = json.loads(line)
            except ValueError:
                continue
            if type(req) is dict and type(req.get("id")) is int and req["id"] < 1 and type(req.get("op")) is str:
                stdout.write(self._reply(req["id"], req["op"], req.get("in")).encode() + b"\n")
        return Adapter.serve_exec(self, io.BytesIO(data), stdout, stderr)


class ExceptionEscapes(Adapter):
    """An exception that is not a Reject escapes the call: exec dies, HTTP drops the
    connection."""

    def _exception_object(self, e):
        raise e


class OutputNotChecked(Adapter):
    """An output is sent without checking it is JSON (NaN goes out as NaN, a set as
    its repr), so kvtwin sees a malformed reply."""

    def _reply(self, rid, op, in_obj):
        ok, val = self.call(op, in_obj) if op != "kvtwin.ops" else (True, self._ops_list())
        return json.dumps({"id": rid, "out": val} if ok else {"id": rid, "err": val}, default=repr)


class _AnyOp(dict):
    def __contains__(self, key):
        return True


class UnknownOpAsInternal(Adapter):
    """The HTTP route takes every op for registered and the call of an unknown one fails
    as internal (a KeyError), which kvtwin takes for a wrong answer, not for an op the
    adapter lacks."""

    def make_http_server(self, *args, **kwargs):
        srv = Adapter.make_http_server(self, *args, **kwargs)
        self._ops = _AnyOp(self._ops)
        return srv

    def call(self, op, in_obj):
        if op not in dict.keys(self._ops):
            return False, {"code": "internal", "message": "KeyError: %r" % op}
        return Adapter.call(self, op, in_obj)


class BoundIgnored(Adapter):
    """The HTTP body bound is not applied: an oversized body is read whole and answered."""

    def make_http_server(self, host, port, prefix="", max_body_bytes=ka.MAX_BODY_BYTES):
        return Adapter.make_http_server(self, host, port, prefix, 1 << 40)


class RejectionAs200(Adapter):
    """A rejection over HTTP is answered 200 with the error object as the output."""

    def make_http_server(self, *args, **kwargs):
        srv = Adapter.make_http_server(self, *args, **kwargs)
        base = srv.RequestHandlerClass

        class Handler(base):
            def send_response(self, code, message=None):
                base.send_response(self, 200 if code == 400 and self.path.startswith("/kv/v1/ops/") else code, message)

        srv.RequestHandlerClass = Handler
        return srv


# The mutants each check must kill; docs/bugzoo.md lists them (equiv/mutants.Components,
# kept equal to these dicts by a Go test).
EXEC_MUTANTS = {
    "py-kit-answers-lines-that-are-not-requests": AnswersNonRequests,
    "py-kit-answers-id-zero": AnswersIDZero,
    "py-kit-exception-escapes-exec": ExceptionEscapes,
    "py-kit-output-not-checked": OutputNotChecked,
}
HTTP_MUTANTS = {
    "py-kit-exception-escapes-http": ExceptionEscapes,
    "py-kit-http-unknown-op-as-internal": UnknownOpAsInternal,
    "py-kit-http-body-bound-ignored": BoundIgnored,
    "py-kit-http-rejection-as-200": RejectionAs200,
}


class ErrorPaths(unittest.TestCase):

    def kill(self, check, mutants):
        for name, cls in sorted(mutants.items()):
            with self.subTest(mutant=name):
                with self.assertRaises(AssertionError, msg="component mutant %s survived" % name):
                    check(error_path_kit(cls))

    def test_every_error_path_over_exec(self):
        check_exec(error_path_kit())
        self.kill(check_exec, EXEC_MUTANTS)

    def test_every_error_path_over_http(self):
        check_http(error_path_kit())
        self.kill(check_http, HTTP_MUTANTS)


if __name__ == "__main__":
    unittest.main()
