"""kvtwin adapter kit: serve your own implementation of kvtwin ops to `kvtwin audit`.

Standard library only, Python >= 3.9. The protocol is defined in docs/adapters.md;
this module speaks both of its transports:

    exec  (default)   JSON Lines on stdin/stdout:   kvtwin audit --impl exec:'python3 my_adapter.py'
    HTTP  (--http)    GET /v1/ops, POST /v1/ops/{op}: kvtwin audit --impl http://127.0.0.1:9000

Usage:

    from kvtwin_adapter import Adapter, Reject

    adapter = Adapter()

    @adapter.op("transfer.group_contiguous")
    def group_contiguous(x):            # x: the op's `in` object, as parsed JSON
        ...
        return {"runs": [...]}          # the op's `out` object, as plain Python values
        # or: raise Reject("length_mismatch", field="dst", value=2, bound="== len(src) (3)")

    if __name__ == "__main__":
        adapter.main()

A script op implemented in part is declared with the step kinds and options it supports
(docs/adapters.md, "Partial declarations"); the audit then sends only scripts inside them:

    @adapter.op("radix.script", steps=["create", "insert", "match", "evict"],
                options={"hashed_score": False})

A registered function answers an input with its output object, or rejects it by raising
`Reject(code, ...)`; `code` is one of the sentinel codes of kvtwin's `ref` package
(`grep -h NewSentinel ref/*.go`). Any other exception is answered as the error object
`{"code": "internal", "message": "<ExceptionType>: <text>"}` (the audit reports it as a
mismatch, with the input), unless `adapter.map_exception(SomeError, "code")` maps it.
"""

import argparse
import base64
import binascii
import io
import json
import os
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

__all__ = [
    "Adapter",
    "Reject",
    "INT64_MIN",
    "INT64_MAX",
    "DEFAULT_MAX_OUTPUT_BYTES",
    "MAX_BODY_BYTES",
    "check_int64",
    "int64_field",
    "int64_list",
    "check_fields",
    "check_output",
    "decode_rows",
    "encode_rows",
    "go_value",
    "serve_in_thread",
]

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

# spec.DefaultMaxOutputBytes (ref/limits.go): the output bound of kvtwin's default limits.
DEFAULT_MAX_OUTPUT_BYTES = 1 << 30

# The largest HTTP request body serve_http reads; larger bodies are answered 413.
MAX_BODY_BYTES = 64 << 20

# The texts of the ref sentinels the kit's helpers and the example use, so that a Reject
# built without a message gets ref's message byte for byte:
# "<field> = <value>: want <bound> (<sentinel text>)". Codes not listed here still work;
# their composed message just lacks the parenthesised text (pass `message=` for exact mode).
SENTINEL_TEXT = {
    "negative": "value must not be negative",
    "overflow": "arithmetic overflow",
    "too_large": "output exceeds the configured limit",
    "length_mismatch": "parallel lists differ in length",
    "item_len_mismatch": "item lens differ",
    "bad_enum": "unknown option value",
    "bad_cp_size": "cp_size must be >= 1",
    "bad_cp_rank": "cp_rank out of range",
    "chunk_out_of_range": "chunk not inside the request's pages",
    "total_pages_required": "position_range needs total_pages",
    "invalid_page_size": "page_size must be >= 1",
    "value_length": "value length differs from key length",
    "token_range": "token id outside [0, 2^32)",
    "bad_json": "input does not decode",
    "not_implemented": "op not implemented by this adapter",
}


def go_value(v):
    """Formats v as Go's fmt %v does for the values error objects carry."""
    if v is None:
        return "<nil>"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (int, str)):
        return str(v)
    if isinstance(v, (list, tuple)):
        return "[" + " ".join(go_value(x) for x in v) + "]"
    return str(v)


class Reject(Exception):
    """An input rejected by an op: serialized as kvtwin's canonical error object.

    code     the ref sentinel code, e.g. "length_mismatch" (required)
    message  the full text; when omitted it is composed as ref composes it:
             "<field> = <value>: want <bound> (<sentinel text>)"
    field    JSON path of the offending input member, e.g. "kv[3]" (optional)
    value    the offending value (optional; None is omitted, 0 is kept)
    bound    what the value must satisfy, e.g. ">= 1" (optional)
    """

    def __init__(self, code, message=None, field=None, value=None, bound=None):
        if message is None:
            text = SENTINEL_TEXT.get(code)
            if field is not None or bound is not None:
                message = "%s = %s: want %s" % (field or "", go_value(value), bound or "")
                if text:
                    message += " (%s)" % text
            else:
                message = text or code
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field
        self.value = value
        self.bound = bound

    def to_object(self):
        """The error object: code and message always; field, value, bound when set."""
        obj = {"code": self.code}
        if self.field:
            obj["field"] = self.field
        if self.value is not None:
            obj["value"] = self.value
        if self.bound:
            obj["bound"] = self.bound
        obj["message"] = self.message
        return obj


# --- helpers for kvtwin's JSON -----------------------------------------------------------

_INT64_BOUND = "a JSON int64"


def check_int64(value, field):
    """Returns value if it is a JSON integer inside int64, else raises Reject("bad_json").

    kvtwin's Go decoder rejects non-integers (1.0, "1", true) and integers outside int64
    where an op wants an int64; this is the same check for an adapter that wants it."""
    if type(value) is not int or value < INT64_MIN or value > INT64_MAX:
        raise Reject("bad_json", field=field, value=value if type(value) in (int, float, str) else None,
                     bound=_INT64_BOUND)
    return value


def int64_field(obj, name, default=0):
    """obj[name] checked as int64; a missing member or null is `default` (Go's zero value)."""
    v = obj.get(name)
    if v is None:
        return default
    return check_int64(v, name)


def int64_list(obj, name):
    """obj[name] checked as a list of int64; a missing member or null is [] (Go's nil)."""
    v = obj.get(name)
    if v is None:
        return []
    if type(v) is not list:
        raise Reject("bad_json", field=name, bound="a JSON []int64")
    for i, x in enumerate(v):
        if type(x) is not int or x < INT64_MIN or x > INT64_MAX:
            check_int64(x, "%s[%d]" % (name, i))
    return v


def check_fields(obj, allowed):
    """Rejects a member not in `allowed` with bad_json, as kvtwin's strict decoder does."""
    for k in obj:
        if k not in allowed:
            raise Reject("bad_json", message="json: unknown field %s" % json.dumps(k), field=k,
                         bound="a known field")


def check_output(field, count, elem_bytes, max_output_bytes=DEFAULT_MAX_OUTPUT_BYTES):
    """spec.Limits.CheckOutput with kvtwin's default limits: an output of `count` elements of
    `elem_bytes` each is `overflow` past int64 and `too_large` past max_output_bytes."""
    total = count * elem_bytes
    if count < 0 or elem_bytes < 0 or total > INT64_MAX:
        raise Reject("overflow", field=field, value=count,
                     bound="count*%d bytes <= %d" % (elem_bytes, INT64_MAX))
    if total > max_output_bytes:
        raise Reject("too_large", field=field, value=count,
                     bound="count*%d bytes <= max_output_bytes (%d)" % (elem_bytes, max_output_bytes))


def decode_rows(s, field="rows"):
    """A byte-row member (standard base64 with padding, as Go encodes []byte) to bytes."""
    if s is None:
        return b""
    if not isinstance(s, str):
        raise Reject("bad_json", field=field, bound="a base64 string")
    try:
        return base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError) as e:
        raise Reject("bad_json", message="%s: illegal base64 data: %s" % (field, e), field=field,
                     bound="standard base64")


def encode_rows(b):
    """bytes (or bytearray, memoryview, anything with tobytes()) to a byte-row member."""
    if not isinstance(b, (bytes, bytearray, memoryview)) and hasattr(b, "tobytes"):
        b = b.tobytes()
    return base64.b64encode(b).decode("ascii")


def _json_default(o):
    # numpy arrays and scalars (and torch tensors) returned by an engine's function.
    if hasattr(o, "tolist"):
        return o.tolist()
    if hasattr(o, "__index__"):
        return o.__index__()
    if isinstance(o, (bytes, bytearray, memoryview)):
        raise TypeError("bytes in an output: encode byte rows with encode_rows()")
    raise TypeError("Object of type %s is not JSON serializable" % type(o).__name__)


def _dumps(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False,
                      default=_json_default)


def _claim_stdout():
    """The process's stdout, for replies only: file descriptor 1 is duplicated for the
    replies and then pointed at stderr, so that a stray print() in an engine (or a C
    extension writing to fd 1) lands in stderr instead of corrupting the protocol."""
    try:
        sys.stdout.flush()
        fd1, fd2 = sys.stdout.fileno(), sys.stderr.fileno()
        replies = os.dup(fd1)
        os.dup2(fd2, fd1)
        return os.fdopen(replies, "wb")
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return sys.stdout.buffer  # not a real file (an embedding, a test harness)


def _log(stream, msg):
    try:
        stream.write("kvtwin-adapter: %s\n" % msg)
        stream.flush()
    except (OSError, ValueError):
        pass


def _short(b, n=200):
    if isinstance(b, bytes):
        b = b.decode("utf-8", "replace")
    return b if len(b) <= n else b[:n] + "..."


# --- the adapter ------------------------------------------------------------------------


class Adapter(object):
    """A set of registered op functions, served over exec (JSON Lines) or HTTP."""

    def __init__(self):
        self._ops = {}  # name -> fn, in registration order
        self._decls = {}  # name -> the listing's steps and options members, if declared
        self._exc_codes = {}  # exception type -> code

    # registration

    def op(self, name, steps=None, options=None):
        """Decorator: @adapter.op("transfer.group_contiguous") registers fn(in_obj) -> out_obj.

        steps and options declare a script op in part (see register)."""
        def register(fn):
            self.register(name, fn, steps=steps, options=options)
            return fn
        return register

    def register(self, name, fn, steps=None, options=None):
        """Registers fn(in_obj: dict) -> dict as the implementation of op `name`.

        For a script op implemented in part, steps lists the step kinds fn supports and
        options maps option names to booleans (e.g. {"hashed_score": False}); kvtwin audit
        then sends only scripts inside them and reports the rest as not audited, and
        refuses a kind or option the op does not have (docs/adapters.md)."""
        if not isinstance(name, str) or not name:
            raise ValueError("op name must be a non-empty string")
        if name == "kvtwin.ops":
            raise ValueError("kvtwin.ops is the protocol's op list; it cannot be registered")
        decl = {}
        if steps is not None:
            if isinstance(steps, str) or not all(isinstance(k, str) for k in steps):
                raise ValueError("steps must be a list of step-kind strings")
            decl["steps"] = list(steps)
        if options is not None:
            if not isinstance(options, dict) or not all(
                    isinstance(k, str) and isinstance(v, bool) for k, v in options.items()):
                raise ValueError("options must be a dict of option names to booleans")
            decl["options"] = dict(options)
        self._ops[name] = fn
        self._decls[name] = decl

    def map_exception(self, exc_type, code):
        """Answers exceptions of exc_type (and subclasses) from any op with error `code`
        instead of "internal"; the most specific mapped class wins."""
        if not (isinstance(exc_type, type) and issubclass(exc_type, BaseException)):
            raise TypeError("exc_type must be an exception class")
        self._exc_codes[exc_type] = code

    def ops(self):
        """The names of the registered ops, in registration order."""
        return list(self._ops)

    # calling

    def call(self, op, in_obj):
        """Runs op on in_obj. Returns (True, out) or (False, error_object); never raises
        for an op's failure (an unknown op is not_implemented)."""
        fn = self._ops.get(op)
        if fn is None:
            return False, {"code": "not_implemented",
                           "message": "op %s is not implemented by this adapter" % json.dumps(op)}
        if in_obj is None:
            in_obj = {}
        if not isinstance(in_obj, dict):
            return False, {"code": "bad_json", "field": "$",
                           "message": "in must be a JSON object, not %s" % type(in_obj).__name__}
        try:
            return True, fn(in_obj)
        except Reject as r:
            return False, r.to_object()
        except Exception as e:  # noqa: BLE001 - an engine's failure is an answer, not a crash
            return False, self._exception_object(e)

    def _exception_object(self, e):
        code = "internal"
        if self._exc_codes:
            for cls in type(e).__mro__:
                if cls in self._exc_codes:
                    code = self._exc_codes[cls]
                    break
        return {"code": code, "message": "%s: %s" % (type(e).__name__, e)}

    def _ops_list(self):
        return [dict({"name": n}, **self._decls.get(n, {})) for n in self._ops]

    def _reply(self, rid, op, in_obj):
        """The encoded reply line (without the newline) for one request."""
        if op == "kvtwin.ops":
            ok, val = True, self._ops_list()
        else:
            ok, val = self.call(op, in_obj)
        try:
            return _dumps({"id": rid, "out": val} if ok else {"id": rid, "err": val})
        except (TypeError, ValueError) as e:
            return _dumps({"id": rid, "err": {
                "code": "internal", "message": "output of %s is not JSON: %s: %s" % (op, type(e).__name__, e)}})

    # exec transport

    def serve_exec(self, stdin=None, stdout=None, stderr=None):
        """Serves JSON Lines requests from stdin until EOF, one reply line per request.

        stdin/stdout default to sys.stdin.buffer/sys.stdout.buffer; binary or text streams
        both work. A line that is not a JSON object with a positive integer id and a string
        op cannot be answered (there is no id to answer): it is logged to stderr and
        skipped (docs/adapters.md). Lines are not bounded: kvtwin's requests are small."""
        if stdin is None:
            stdin = sys.stdin.buffer
        if stdout is None:
            stdout = _claim_stdout()
        if stderr is None:
            stderr = sys.stderr
        text_out = isinstance(stdout, io.TextIOBase)
        write, flush = stdout.write, stdout.flush
        loads, reply = json.loads, self._reply
        lineno = 0
        for line in stdin:
            lineno += 1
            if not line.strip():
                continue
            try:
                req = loads(line)
            except ValueError as e:  # JSONDecodeError and UnicodeDecodeError
                _log(stderr, "line %d: not JSON (%s), skipped: %s" % (lineno, e, _short(line)))
                continue
            if type(req) is not dict:
                _log(stderr, "line %d: not a JSON object, skipped: %s" % (lineno, _short(line)))
                continue
            rid, op = req.get("id"), req.get("op")
            if type(rid) is not int or rid < 1 or type(op) is not str:
                _log(stderr, "line %d: no positive integer id and string op, skipped: %s" % (lineno, _short(line)))
                continue
            data = reply(rid, op, req.get("in"))
            try:
                if text_out:
                    write(data + "\n")
                else:
                    write(data.encode("utf-8") + b"\n")
                flush()
            except BrokenPipeError:
                return
        try:
            flush()
        except (BrokenPipeError, ValueError):
            pass

    # HTTP transport

    def make_http_server(self, host, port, prefix="", max_body_bytes=MAX_BODY_BYTES):
        """A ThreadingHTTPServer (not yet serving) for this adapter; port 0 picks a free port
        (read it from .server_address). Registered functions may run concurrently."""
        prefix = "/" + prefix.strip("/") if prefix.strip("/") else ""
        handler = _make_handler(self, prefix, max_body_bytes)
        cls = _HTTPServer6 if ":" in host else ThreadingHTTPServer
        srv = cls((host, port), handler)
        srv.daemon_threads = True
        return srv

    def serve_http(self, host, port, prefix="", max_body_bytes=MAX_BODY_BYTES):
        """Serves GET {prefix}/v1/ops and POST {prefix}/v1/ops/{op} until interrupted."""
        srv = self.make_http_server(host, port, prefix, max_body_bytes)
        h, p = srv.server_address[:2]
        _log(sys.stderr, "serving %d ops on http://%s:%d%s" % (
            len(self._ops), "[%s]" % h if ":" in h else h, p, "/" + prefix.strip("/") if prefix.strip("/") else ""))
        try:
            srv.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            srv.server_close()

    # command line

    def main(self, argv=None):
        """CLI: no flags serves exec on stdin/stdout; --http HOST:PORT [--prefix P] serves HTTP."""
        p = argparse.ArgumentParser(description="kvtwin adapter (protocol: docs/adapters.md)")
        p.add_argument("--http", metavar="HOST:PORT",
                       help="serve HTTP on HOST:PORT instead of JSON Lines on stdin/stdout")
        p.add_argument("--prefix", default="", help="path prefix of the HTTP routes, e.g. /kvtwin")
        args = p.parse_args(argv)
        if args.http is None:
            if args.prefix:
                p.error("--prefix needs --http")
            self.serve_exec()
            return 0
        host, sep, port = args.http.rpartition(":")
        if not sep or not port.isdigit() or int(port) > 65535:
            p.error("--http wants HOST:PORT, e.g. 127.0.0.1:9000, not %r" % args.http)
        host = host.strip("[]") or "127.0.0.1"
        self.serve_http(host, int(port), args.prefix)
        return 0


class _HTTPServer6(ThreadingHTTPServer):
    address_family = socket.AF_INET6


def _make_handler(adapter, prefix, max_body_bytes):
    ops_path = prefix + "/v1/ops"
    op_prefix = ops_path + "/"

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two writes; without TCP_NODELAY, Nagle's
        # algorithm holds the body until the client's delayed ACK (~40 ms a call).
        disable_nagle_algorithm = True
        server_version = "kvtwin-adapter"

        def log_message(self, format, *args):  # noqa: A002 - BaseHTTPRequestHandler's name
            pass

        def _send(self, status, obj):
            body = _dumps(obj).encode("utf-8") + b"\n"
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)

        def _error(self, status, code, message):
            self._send(status, {"detail": {"code": code, "message": message}})

        def do_GET(self):
            path = urlsplit(self.path).path
            if path == ops_path:
                self._send(200, adapter._ops_list())
            else:
                self.close_connection = True
                self._error(404, "not_found", "no route GET %s; GET %s lists the ops" % (path, ops_path))

        def do_POST(self):
            path = urlsplit(self.path).path
            if not path.startswith(op_prefix):
                self.close_connection = True  # the body is not read
                self._error(404, "not_found", "no route POST %s" % path)
                return
            op = unquote(path[len(op_prefix):])
            if op not in adapter._ops:
                self.close_connection = True
                self._error(404, "not_implemented", "op %s is not implemented by this adapter" % json.dumps(op))
                return
            body = self._read_body()
            if body is None:
                return
            try:
                in_obj = json.loads(body)
            except ValueError as e:
                self._send(400, {"detail": {"code": "bad_json", "field": "$", "message": "body is not JSON: %s" % e}})
                return
            ok, val = adapter.call(op, in_obj)
            try:
                data = _dumps(val if ok else {"detail": val}).encode("utf-8") + b"\n"
            except (TypeError, ValueError) as e:
                ok = False
                data = _dumps({"detail": {"code": "internal", "message": "output of %s is not JSON: %s: %s" % (
                    op, type(e).__name__, e)}}).encode("utf-8") + b"\n"
            self.send_response(200 if ok else 400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _read_body(self):
            """The request body, or None after answering 411/413/400."""
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                return self._read_chunked()
            length = self.headers.get("Content-Length")
            if length is None:
                self.close_connection = True
                self._error(411, "length_required", "a POST needs Content-Length or chunked encoding")
                return None
            try:
                n = int(length)
                if n < 0:
                    raise ValueError(length)
            except ValueError:
                self.close_connection = True
                self._error(400, "bad_request", "bad Content-Length %r" % length)
                return None
            if n > max_body_bytes:
                self.close_connection = True
                self._error(413, "too_large", "body of %d bytes exceeds %d" % (n, max_body_bytes))
                return None
            return self.rfile.read(n)

        def _read_chunked(self):
            parts, total = [], 0
            while True:
                line = self.rfile.readline(1024)
                try:
                    size = int(line.split(b";", 1)[0].strip(), 16)
                except ValueError:
                    self.close_connection = True
                    self._error(400, "bad_request", "bad chunk size line")
                    return None
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(parts)
                total += size
                if total > max_body_bytes:
                    self.close_connection = True
                    self._error(413, "too_large", "body exceeds %d bytes" % max_body_bytes)
                    return None
                parts.append(self.rfile.read(size))
                self.rfile.readline(1024)  # the CRLF after the chunk

    return Handler


def serve_in_thread(adapter, host="127.0.0.1", port=0, prefix=""):
    """Starts adapter's HTTP server on a daemon thread; returns (server, base_url).
    Stop it with server.shutdown(); server.server_close()."""
    srv = adapter.make_http_server(host, port, prefix)
    t = threading.Thread(target=srv.serve_forever, name="kvtwin-adapter-http", daemon=True)
    t.start()
    h, p = srv.server_address[:2]
    p_norm = "/" + prefix.strip("/") if prefix.strip("/") else ""
    return srv, "http://%s:%d%s" % ("[%s]" % h if ":" in h else h, p, p_norm)
