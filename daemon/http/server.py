"""The HTTP/1.1 server under the API: the standard library's, made safe against its clients.

:class:`JsonServer` and :class:`JsonHandler` are ``ThreadingHTTPServer`` and
``BaseHTTPRequestHandler`` with what nothing a client sends may break:

- **Deadlines, not per-read timeouts.** The socket timeout of the standard handler restarts at
  every ``recv``, so a client sending one byte every few seconds holds a thread for ever. Here
  the whole request head (request line and headers) must arrive within ``header_timeout``
  (which also closes idle keep-alive connections), and the whole body within ``body_timeout``
  after it. A head or body cut off by its deadline is answered 408; an idle connection is closed
  without an answer.
- **Every failure is a JSON answer and one log line.** The standard library answers protocol
  errors (bad request line, header too long, unknown method) with an HTML page, prints the
  traceback of any exception that escapes a handler to stderr (``handle_error``) and logs through
  ``log_message`` to stderr. Here errors are ``{"error": code, "message": text}``, a handler's
  exception becomes a 500 with one log line naming the exception and where it was raised (never
  a traceback), and what escapes the handler is one log line too.
- **A listen backlog that fits** (``listen_backlog``; the library default of 5 drops the
  connections of a crowd arriving at once, which then wait for TCP's retransmissions).
- **Lingering close.** A connection closed while the client may still be sending (a rejected or
  timed-out body) is half-closed and drained for a moment first, so the client reads the answer
  instead of a reset.

Subclasses route requests themselves (``do_GET`` ...), raise :class:`HttpError` for 4xx/5xx
answers, read bodies with :meth:`JsonHandler.read_body` and answer with
:meth:`JsonHandler.send_json`; :meth:`JsonHandler.answer_exception` turns any exception into
the answer and log line above.
"""

from __future__ import annotations

import io
import json
import logging
import math
import re
import socket
import sys
import time
import traceback
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["HttpError", "JsonHandler", "JsonServer", "describe_exception", "dumps"]

log = logging.getLogger("anchorstream.api")

#: Error answers logged (one line each): bad or slow requests and server faults. Routine
#: answers (404, 401, 503 from /readyz) are counted in the metrics, not logged.
_LOGGED = frozenset({400, 408, 411, 413, 414, 415, 431, 500, 501, 505})


class HttpError(Exception):
    """An answer other than success: status, error code, message and extra headers.

    Parameters
    ----------
    status : int
    code : str
        Machine-readable, e.g. ``"invalid_json"``.
    message : str
        For a person: what was wrong and what is accepted.
    headers : dict, optional
    log : bool, optional
        Whether to write one log line; default: for bad requests and server faults.
    """

    def __init__(self, status: int, code: str, message: str, headers: dict | None = None,
                 log: bool | None = None):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.headers = headers or {}
        self.log = status in _LOGGED if log is None else log


def dumps(obj: Any) -> bytes:
    """Compact UTF-8 JSON."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def describe_exception(exc: BaseException) -> str:
    """One line: the exception, its message and the innermost frame that raised it.

    >>> try:
    ...     {}["k"]
    ... except KeyError as e:
    ...     describe_exception(e).split(" (at ")[0]
    "KeyError: 'k'"
    """
    text = " ".join(str(exc).split()) or "(no message)"
    where = ""
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ else []
    if frames:
        f = frames[-1]
        where = f" (at {f.filename}:{f.lineno} in {f.name})"
    return f"{type(exc).__name__}: {text[:500]}{where}"


def _clean(path: str) -> str:
    """A request path fit for one log line: no control characters, at most 200 characters."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in path[:200]) or "-"


class _DeadlineReader(io.RawIOBase):
    """The connection's input, with a deadline for a whole stretch of reading.

    :meth:`arm` starts a stretch (a request head, a body); every ``recv`` gets only what is left
    of it, so a trickle of bytes cannot extend it. Between reads the socket keeps
    ``send_timeout``, which bounds writing an answer to a client that does not read.
    """

    def __init__(self, sock: socket.socket, send_timeout: float):
        super().__init__()
        self._sock = sock
        self._send_timeout = send_timeout
        self.deadline = math.inf
        self.seconds = math.inf
        self.received = 0

    def arm(self, seconds: float) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.received = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"not received within {self.seconds:g} s")
        self._sock.settimeout(left)
        try:
            n = self._sock.recv_into(buf)
        finally:
            self._sock.settimeout(self._send_timeout)
        self.received += n
        return n


class JsonServer(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` with a chosen listen backlog and one-line error reports.

    Parameters
    ----------
    address : (host, port)
    handler : type of JsonHandler
    listen_backlog : int
        Passed to ``listen()`` (the kernel caps it at ``net.core.somaxconn``).
    """

    # Waiting requests (long polls) must not keep the process alive at shutdown.
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, handler, *, listen_backlog: int = 1024):
        self.request_queue_size = int(listen_backlog)  # read by server_activate()
        super().__init__(address, handler)

    def handle_error(self, request, client_address) -> None:
        """What escaped a handler: one line, no traceback (the library prints one to stderr)."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            log.debug("connection from %s ended: %s", client_address[0], describe_exception(exc))
        else:
            log.error("connection from %s failed: %s", client_address[0],
                      describe_exception(exc))


class JsonHandler(BaseHTTPRequestHandler):
    """``BaseHTTPRequestHandler`` with deadlines, JSON errors and one log line per failure.

    The class attributes below are set per server by its owner (a subclass made at start).
    """

    protocol_version = "HTTP/1.1"
    #: Seconds for the whole request head, counted from the start of waiting for it.
    header_timeout: float = 20.0
    #: Seconds for the whole body, counted from the end of the head.
    body_timeout: float = 30.0
    #: Seconds a client may take to take our answer (``sendall``'s total).
    timeout = 30.0
    #: Longest drain of unread input before closing a connection, and most bytes drained.
    linger_seconds: float = 2.0
    linger_bytes: int = 1 << 20

    # --- connection ----------------------------------------------------------------------------

    def setup(self) -> None:
        super().setup()
        self._reader = _DeadlineReader(self.connection, self.timeout)
        self.rfile = io.BufferedReader(self._reader)
        self._linger = False

    def finish(self) -> None:
        super().finish()
        if self._linger:
            self._lingering_close()

    def _lingering_close(self) -> None:
        """Half-close, then read what the client still sends for a moment: closing with unread
        input would send a reset, which can destroy our answer before the client reads it."""
        try:
            self.connection.shutdown(socket.SHUT_WR)
            deadline, drained = time.monotonic() + self.linger_seconds, 0
            while drained < self.linger_bytes:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.connection.settimeout(left)
                chunk = self.connection.recv(65536)
                if not chunk:
                    break
                drained += len(chunk)
        except OSError:
            pass

    # --- one request ---------------------------------------------------------------------------

    def begin_request(self) -> None:
        """Reset per-request state (subclasses extend it)."""
        self.command, self.request_version, self.path, self.requestline = "", "HTTP/1.1", "", ""
        self.headers = None
        self.body_read = False
        self.answered = False

    def handle_one_request(self) -> None:
        """The standard loop, with a deadline for the head and then one for the body."""
        self.begin_request()
        self._reader.arm(self.header_timeout)
        try:
            self.raw_requestline = self.rfile.readline(65537)
            if len(self.raw_requestline) > 65536:
                self.send_error(HTTPStatus.REQUEST_URI_TOO_LONG, "request line over 65536 bytes")
                return
            if not self.raw_requestline:
                self.close_connection = True
                return
            if not self.parse_request():  # answered (send_error) already
                return
        except TimeoutError:
            self._head_timed_out()
            return
        self._reader.arm(self.body_timeout)
        method = getattr(self, "do_" + self.command, None)
        if method is None:
            self.send_error(HTTPStatus.NOT_IMPLEMENTED, f"method {self.command[:20]!r} is not "
                            "supported")
            return
        method()
        self.wfile.flush()

    def _head_timed_out(self) -> None:
        self.close_connection = True
        if self._reader.received == 0:
            # Nothing of a next request arrived: an idle keep-alive connection, closed quietly.
            log.debug("idle connection from %s closed after %g s", self.client_address[0],
                      self.header_timeout)
            return
        self.request_version = "HTTP/1.1"  # the request line may be incomplete
        self.answer_error(HttpError(
            408, "request_timeout",
            f"the request head did not arrive within {self.header_timeout:g} s "
            f"({self._reader.received} bytes received)"))

    # --- bodies --------------------------------------------------------------------------------

    def read_body(self, max_bytes: int) -> bytes:
        """The request body, whole, within ``body_timeout`` of the head.

        Raises
        ------
        HttpError
            411 without a Content-Length (or chunked), 400 for a malformed one or a body cut
            short, 413 past ``max_bytes`` (not read), 408 when it does not arrive in time.
        """
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            raise HttpError(411, "length_required", "send a Content-Length, not chunked bodies")
        values = self.headers.get_all("Content-Length") or []
        if not values:
            raise HttpError(411, "length_required", "a Content-Length header is required")
        raw = values[0].strip()
        if len(values) > 1 or not re.fullmatch(r"[0-9]{1,18}", raw):
            shown = ", ".join(v[:20] for v in values)
            raise HttpError(400, "bad_request", f"bad Content-Length {shown!r}: expected one "
                            "decimal number of bytes")
        length = int(raw)
        if length > max_bytes:
            raise HttpError(413, "payload_too_large",
                            f"body of {length} bytes exceeds the limit of {max_bytes}")
        buf = bytearray()
        try:
            while len(buf) < length:
                chunk = self.rfile.read1(length - len(buf))
                if not chunk:
                    raise HttpError(400, "bad_request", f"the body ended after {len(buf)} of "
                                    f"{length} bytes (Content-Length)")
                buf += chunk
        except TimeoutError:
            raise HttpError(408, "request_timeout", f"the body did not arrive within "
                            f"{self.body_timeout:g} s: {len(buf)} of {length} bytes") from None
        self.body_read = True
        return bytes(buf)

    def _unread_body(self) -> bool:
        if self.body_read or self.headers is None:
            return False
        length = (self.headers.get("Content-Length") or "0").strip()
        return length != "0" or "chunked" in (self.headers.get("Transfer-Encoding") or "").lower()

    # --- answers -------------------------------------------------------------------------------

    def count(self, status: int) -> None:
        """Called once per answer before it is sent (subclasses count it in metrics)."""

    def send(self, status: int, body: bytes, content_type: str,
             headers: dict | None = None) -> int:
        """Send one answer; a client gone away is not an error. Returns ``status``."""
        self.count(status)
        self.answered = True
        try:
            self.send_response(status)
            if status != 304:
                # A 304 has no body; its Content-Length would have to be the 200's (RFC 9110).
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            if self._unread_body() or (self.close_connection and status >= 400):
                # An unread body would be parsed as the next request on this connection: say
                # so and close it (send_header sets close_connection too), lingering so the
                # client can still read this answer.
                self._linger = True
                self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD" and status != 304:
                self.wfile.write(body)
        except OSError as exc:  # the client went away or stopped reading (send timeout)
            self.close_connection = True
            log.debug("answer %d to %s not delivered: %s", status, self.client_address[0],
                      describe_exception(exc))
        return status

    def send_json(self, status: int, obj: Any, headers: dict | None = None) -> int:
        body = obj if isinstance(obj, bytes) else dumps(obj)
        return self.send(status, body, "application/json; charset=utf-8", headers)

    def answer_error(self, err: HttpError) -> int:
        """Answer an :class:`HttpError` as JSON, with its one log line."""
        if err.log:
            log.info("%s %s from %s: %d %s: %s", self.command or "-", _clean(self.path),
                     self.client_address[0], err.status, err.code, err.message)
        if self.answered:  # headers are out already: all we can do is end the connection
            self.close_connection = True
            return err.status
        return self.send_json(err.status, {"error": err.code, "message": err.message},
                              err.headers)

    def answer_exception(self, exc: BaseException) -> int:
        """Any exception while handling a request: its answer and one log line, no traceback.

        Returns the status answered (499 when the client went away, nothing sent).
        """
        if isinstance(exc, HttpError):
            return self.answer_error(exc)
        if isinstance(exc, ConnectionError):
            self.close_connection = True
            return 499
        if isinstance(exc, TimeoutError):  # a read past its deadline outside read_body
            return self.answer_error(HttpError(408, "request_timeout", str(exc)))
        log.error("%s %s from %s: 500 internal: %s", self.command or "-", _clean(self.path),
                  self.client_address[0], describe_exception(exc))
        return self.answer_error(HttpError(500, "internal", "internal server error", log=False))

    def send_error(self, code: int, message: str | None = None, explain: str | None = None):
        """The library's protocol errors (400, 414, 431, 501, 505, ...), as JSON."""
        status = HTTPStatus(code)
        self.close_connection = True
        if self.request_version in ("HTTP/0.9", ""):
            # An unparsable request line leaves the library's HTTP/0.9 default, which would
            # send the body alone: errors always get a status line and headers.
            self.request_version = "HTTP/1.0"
        self.answer_error(HttpError(
            status.value, status.phrase.lower().replace(" ", "_").replace("-", "_"),
            message or status.phrase))

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        # The library's access and error lines (stderr by default): debug level here; failures
        # get their own line from answer_error.
        log.debug("%s %s", self.address_string(), format % args)
