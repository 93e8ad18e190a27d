"""Nothing a client sends can stop the API (issue 15): hostile bodies, slow or broken requests,
crowds of long polls. A real server on an ephemeral port, real sockets, no mocks.

Each regression test is named after the fault-injection finding it pins down. Timing
assertions are upper bounds with a wide margin (a 2 s limit answered within 30 s), so a slow or
busy machine cannot fail them.
"""

from __future__ import annotations

import doctest
import json
import logging
import socket
import struct
import threading
import time

import pytest
from test_api import model_kwargs, request

from daemon.http import server as httpserver

from daemon.http import strictjson
from daemon.http.api import ApiServer
from daemon.settings import ConfigError, parse_config
from daemon.metrics import Metrics
from daemon.publish import Publisher

#: Generous deadline for anything that should take about a second.
PATIENCE = 30.0


@pytest.fixture
def publisher(tmp_path):
    pub = Publisher(tmp_path / "snapshots")
    pub.publish(**model_kwargs(0, [0, 1, 2, 3]))
    yield pub
    pub.close()


@pytest.fixture
def api_log(caplog):
    """The API's log records at INFO and above (records from the server's threads too)."""
    caplog.set_level(logging.INFO, logger="anchorstream.api")
    return caplog


def api_records(caplog, level=logging.INFO):
    """The API's log records at ``level`` and above, less the start-up line."""
    return [r for r in caplog.records if r.name == "anchorstream.api" and r.levelno >= level
            and r.msg != "HTTP API on %s"]


def wait_for_handlers() -> None:
    """Until every request handler thread has ended: they log after they answer, so only then
    is the count of a request's log lines final, however slowly the machine runs them.

    ``socketserver.ThreadingMixIn`` names its threads after their target,
    ``Thread-N (process_request_thread)``.
    """
    deadline = time.monotonic() + PATIENCE
    while any(t.name.endswith("(process_request_thread)") for t in threading.enumerate()):
        assert time.monotonic() < deadline, "a request handler thread is still running"
        time.sleep(0.01)


def assert_one_plain_log_line(caplog, *words):
    """Exactly one API log line at INFO+, without a traceback, mentioning ``words``."""
    wait_for_handlers()
    records = api_records(caplog)
    assert len(records) == 1, [r.getMessage() for r in records]
    rec = records[0]
    assert rec.exc_info is None and rec.exc_text is None, "a traceback went to the log"
    text = rec.getMessage()
    assert "\n" not in text and "Traceback" not in text
    for word in words:
        assert word in text, text


def parse_response(data: bytes):
    """(status, headers, JSON body or raw bytes) of one raw HTTP/1.1 response."""
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    if headers.get("content-type", "").startswith("application/json") and body:
        body = json.loads(body)
    return status, headers, body


def read_until_closed(sock: socket.socket, deadline: float) -> bytes:
    chunks = []
    while True:
        sock.settimeout(max(deadline - time.monotonic(), 0.01))
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            pytest.fail(f"no answer (or no close) within {PATIENCE} s; got {b''.join(chunks)!r}")
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def raw_exchange(port: int, data: bytes, *, shut_wr: bool = False):
    """Send ``data`` as is, read until the server closes: (status, headers, body, seconds)."""
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=PATIENCE) as sock:
        sock.sendall(data)
        if shut_wr:
            sock.shutdown(socket.SHUT_WR)
        raw = read_until_closed(sock, start + PATIENCE)
    return (*parse_response(raw), time.monotonic() - start)


def post_raw(port: int, body: bytes, content_length: str | None = None) -> bytes:
    length = str(len(body)) if content_length is None else content_length
    return (f"POST /v1/infer HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            f"Content-Length: {length}\r\nConnection: close\r\n\r\n").encode("latin-1") + body


# --------------------------------------------------------------------------------------------
# row 1: a 5,000-digit integer in POST /v1/infer was a 500 with a traceback


def test_huge_integer_in_infer_body_is_400_not_500(publisher, api_log, capfd):
    with ApiServer(publisher) as srv:
        body = b'{"text": "word01", "top": ' + b"9" * 5000 + b"}"
        status, _, data = request(srv, "POST", "/v1/infer", body,
                                  {"Content-Type": "application/json"})
        assert status == 400 and data["error"] == "invalid_json"
        assert "5000 digits" in data["message"]
        assert_one_plain_log_line(api_log, "400")
        assert request(srv, "GET", "/healthz")[0] == 200
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize("body, words", [
    (b'{"text": "a", "top": -' + b"1" * 5000 + b"}", "digits"),
    (b"[" * 100_000 + b"]" * 100_000, "nested"),
    (b'{"text": "word01", "top": NaN}', "NaN"),
    (b'{"text": "word01", "top": Infinity}', "Infinity"),
    (b'{"text": "word01", "top": -Infinity}', "Infinity"),
    (b'{"text": "word01", "top": 1e999}', "1e999"),
    (b'{"text": "word01 \\ud800"}', "surrogate"),
    (b'{"tokens": ["\\udfff"]}', "surrogate"),
    (b'{"text": "word01", "text": "word02"}', "duplicate"),
    (b'{"text": "word01 \xff"}', "UTF-8"),
    (b'\xef\xbb\xbf{"text": "word01"}', "byte order mark"),
    (b'{"text": "word01"} {}', "Extra data"),
])
def test_hostile_json_is_400_with_a_clear_message(publisher, api_log, body, words):
    with ApiServer(publisher) as srv:
        status, _, data = request(srv, "POST", "/v1/infer", body,
                                  {"Content-Type": "application/json"})
    assert status == 400 and data["error"] == "invalid_json", data
    assert words in data["message"] and len(data["message"]) < 300, data["message"]
    assert_one_plain_log_line(api_log, "400")


@pytest.mark.parametrize("length", ["9" * 5000, "\u00b2", "-1", "1 2", "0x10"])
def test_bad_content_length_is_400(publisher, api_log, length):
    with ApiServer(publisher) as srv:
        status, headers, data, _ = raw_exchange(srv.port, post_raw(srv.port, b"{}", length))
    assert status == 400 and data["error"] == "bad_request"
    assert "Content-Length" in data["message"]
    assert headers["connection"] == "close"


def test_sane_json_still_works(publisher):
    with ApiServer(publisher) as srv:
        body = '{"tokens": ["word01", "wörd", "😀"], "top": 2, "version": 1, "min_weight": 0}'.encode()
        status, _, data = request(srv, "POST", "/v1/infer", body,
                                  {"Content-Type": "application/json"})
    assert status == 200 and len(data["topics"]) == 2 and data["num_known_tokens"] == 1


# --------------------------------------------------------------------------------------------
# row 2: a Content-Length larger than the body sent was a 500 after 30 s and a traceback


def test_content_length_longer_than_the_body_is_408(publisher, api_log, capfd):
    with ApiServer(publisher, body_timeout_seconds=1) as srv:
        status, headers, data, seconds = raw_exchange(
            srv.port, post_raw(srv.port, b'{"text": "wo', content_length="100"))
        assert status == 408 and data["error"] == "request_timeout"
        assert "12 of 100 bytes" in data["message"]
        assert headers["connection"] == "close"
        assert seconds < PATIENCE
        assert_one_plain_log_line(api_log, "408")
        assert request(srv, "GET", "/healthz")[0] == 200
    assert "Traceback" not in capfd.readouterr().err


def test_body_cut_short_by_the_client_is_400(publisher, api_log):
    with ApiServer(publisher) as srv:
        status, _, data, _ = raw_exchange(
            srv.port, post_raw(srv.port, b'{"text": "wo', content_length="100"), shut_wr=True)
    assert status == 400 and data["error"] == "bad_request"
    assert "12 of 100 bytes" in data["message"]
    assert_one_plain_log_line(api_log, "400")


def test_trickled_body_is_cut_off_by_a_deadline(publisher):
    """A body that keeps arriving, a byte at a time, still has to be complete in time."""
    with ApiServer(publisher, body_timeout_seconds=1.5) as srv:
        start = time.monotonic()
        with socket.create_connection(("127.0.0.1", srv.port), timeout=PATIENCE) as sock:
            sock.sendall(post_raw(srv.port, b"", content_length="1000"))
            answer = trickle(sock, b"{" * 1000, start + PATIENCE)
        status, _, data = parse_response(answer)
    assert status == 408 and data["error"] == "request_timeout"


def trickle(sock: socket.socket, data: bytes, deadline: float, every: float = 0.2) -> bytes:
    """Send ``data`` a byte every ``every`` s until the server answers and closes."""
    for byte in data:
        if time.monotonic() > deadline:
            pytest.fail("the server let a trickling client go on past the deadline")
        try:
            sock.sendall(bytes([byte]))
        except (BrokenPipeError, ConnectionResetError):
            break
        sock.settimeout(every)
        try:
            sock.recv(1, socket.MSG_PEEK)  # an answer, or the server's close
        except TimeoutError:
            continue
        break
    return read_until_closed(sock, deadline)


# --------------------------------------------------------------------------------------------
# row 4: clients sending one header byte every 10 s stayed connected; backlog was 5


def test_slow_header_trickle_is_cut_off(publisher, api_log, capfd):
    """20 clients trickling their request head: each gets 408 and a close, the server goes on."""
    head = b"GET /v1/snapshots HTTP/1.1\r\nHost: t\r\nX-Padding: " + b"a" * 500 + b"\r\n\r\n"
    results: list = [None] * 20

    def client(i):
        start = time.monotonic()
        with socket.create_connection(("127.0.0.1", srv.port), timeout=PATIENCE) as sock:
            results[i] = (trickle(sock, head, start + PATIENCE), time.monotonic() - start)

    with ApiServer(publisher, header_timeout_seconds=1.5) as srv:
        threads = [threading.Thread(target=client, args=(i,)) for i in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(2 * PATIENCE)
        for answer, seconds in results:
            status, headers, data = parse_response(answer)
            assert status == 408 and data["error"] == "request_timeout"
            assert headers["connection"] == "close" and seconds < PATIENCE
        assert request(srv, "GET", "/healthz")[0] == 200
    wait_for_handlers()
    assert len(api_records(api_log)) == 20  # one line each
    assert all(r.exc_info is None for r in api_records(api_log))
    assert "Traceback" not in capfd.readouterr().err


def test_idle_keep_alive_connection_is_closed_without_an_answer(publisher, api_log):
    with ApiServer(publisher, header_timeout_seconds=1) as srv:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=PATIENCE) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
            first = b""
            while b'{"status":"ok"}' not in first:
                first += sock.recv(65536)
            # Nothing more is sent: the connection is idle, not slow; it is closed quietly.
            assert read_until_closed(sock, time.monotonic() + PATIENCE) == b""
    assert api_records(api_log, logging.WARNING) == []


def test_listen_backlog_is_configurable(publisher):
    with ApiServer(publisher) as srv:
        assert srv._server.request_queue_size >= 128
    with ApiServer(publisher, listen_backlog=7) as srv:
        assert srv._server.request_queue_size == 7


# --------------------------------------------------------------------------------------------
# row 3: 1,000 concurrent long polls: 34 never answered, one waited 92 s with a 60 s cap


def test_long_poll_crowd_is_answered_within_the_cap(publisher):
    """200 long polls at once, cap 2 s, 16 waiters: everyone answered, none much past the cap;
    the waiters get 304, the rest 503 with Retry-After at once."""
    n, cap = 200, 2.0
    results: list = [None] * n
    barrier = threading.Barrier(n)
    req = (b"GET /v1/snapshots/latest?wait=30 HTTP/1.1\r\nHost: t\r\n"
           b'If-None-Match: "1"\r\nConnection: close\r\n\r\n')

    def client(i):
        barrier.wait(PATIENCE)
        start = time.monotonic()
        try:
            with socket.create_connection(("127.0.0.1", srv.port), timeout=2 * PATIENCE) as s:
                s.sendall(req)
                raw = read_until_closed(s, start + 2 * PATIENCE)
            results[i] = (*parse_response(raw), time.monotonic() - start)
        except BaseException as exc:  # noqa: BLE001 - reported below, per client
            results[i] = exc

    metrics = Metrics()
    with ApiServer(publisher, metrics=metrics, max_wait_seconds=cap, max_waiters=16) as srv:
        threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(3 * PATIENCE)
    failed = [r for r in results if not isinstance(r, tuple)]
    assert not failed, f"{len(failed)} clients got no answer, e.g. {failed[0]!r}"
    statuses = sorted({r[0] for r in results})
    assert statuses == [304, 503], statuses
    for status, headers, body, seconds in results:
        if status == 503:
            assert body["error"] == "too_many_waiters" and int(headers["retry-after"]) >= 1
        assert seconds < cap + PATIENCE
    waited = [r[3] for r in results if r[0] == 304]
    assert min(waited) >= cap * 0.9  # they did wait: the cap, not less


def test_a_full_waiting_room_does_not_refuse_fresh_news(publisher):
    """Past the waiter cap, a client that is behind still gets the new version at once."""
    with ApiServer(publisher, max_waiters=1, max_wait_seconds=60) as srv:
        held = {}
        hold = threading.Thread(target=lambda: held.update(r=request(
            srv, "GET", "/v1/snapshots/latest?wait=60", None, {"If-None-Match": '"1"'})))
        hold.start()
        deadline = time.monotonic() + PATIENCE
        while srv.waiting < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        status, headers, body = request(srv, "GET", "/v1/snapshots/latest?wait=2",
                                        headers={"If-None-Match": '"1"'})
        assert status == 503 and body["error"] == "too_many_waiters"
        assert headers["Retry-After"] == "2"  # no later than the wait it asked for
        status, _, body = request(srv, "GET", "/v1/snapshots/latest?wait=2",
                                  headers={"If-None-Match": '"0"'})
        assert status == 200 and body["version"] == 1
        publisher.publish(**model_kwargs(1, [0, 1, 2, 3]))  # releases the waiter
        hold.join(PATIENCE)
        assert held["r"][0] == 200 and held["r"][2]["version"] == 2 and srv.waiting == 0


# --------------------------------------------------------------------------------------------
# any exception while handling one request: a JSON answer and one log line, never a traceback


def test_unexpected_error_is_a_json_500_and_one_log_line(publisher, api_log, capfd):
    def broken_tokenizer(_doc):
        raise RuntimeError("tokenizer exploded")

    with ApiServer(publisher, tokenizer=broken_tokenizer) as srv:
        status, _, data = request(srv, "POST", "/v1/infer", {"text": "word01"})
        assert status == 500 and data == {"error": "internal",
                                          "message": "internal server error"}
        assert_one_plain_log_line(api_log, "RuntimeError", "tokenizer exploded")
        assert request(srv, "GET", "/healthz")[0] == 200
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize("data, status", [
    (b"GARBAGE\r\n\r\n", 400),
    (b"GET / HTTP/9.9\r\n\r\n", 505),
    (b"PATCH /v1/infer HTTP/1.1\r\nHost: t\r\n\r\n", 501),
    (b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n", 414),
    (b"GET / HTTP/1.1\r\nX: " + b"a" * 70_000 + b"\r\n\r\n", 431),
    (b"GET http://[oops/ HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", 400),
])
def test_malformed_requests_get_json_errors(publisher, api_log, data, status):
    with ApiServer(publisher) as srv:
        got, headers, body, _ = raw_exchange(srv.port, data)
    assert got == status and headers["content-type"].startswith("application/json")
    assert isinstance(body["error"], str) and body["message"]
    assert all(r.exc_info is None for r in api_records(api_log))


def test_connection_reset_mid_request_leaves_no_traceback(publisher, caplog, capfd):
    caplog.set_level(logging.DEBUG, logger="anchorstream.api")
    with ApiServer(publisher) as srv:
        sock = socket.create_connection(("127.0.0.1", srv.port), timeout=PATIENCE)
        sock.sendall(b"GET /v1/snapshots HTTP/1.1\r\nHost: t\r\n")  # head not finished
        # The server has taken the connection (its handler thread runs) before the reset.
        deadline = time.monotonic() + PATIENCE
        while not any(t.name.endswith("(process_request_thread)")
                      for t in threading.enumerate()):
            assert time.monotonic() < deadline, "the server did not take the connection"
            time.sleep(0.01)
        # SO_LINGER 0: close() sends RST, so the server's read fails with ECONNRESET.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
        wait_for_handlers()  # the handler has met the reset and reported it
        assert request(srv, "GET", "/healthz")[0] == 200
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception occurred" not in err


# --------------------------------------------------------------------------------------------
# configuration and the JSON parser's own examples


def test_http_limits_are_validated_configuration_keys():
    cfg = parse_config({"http": {"max_waiters": 8, "header_timeout_seconds": 5,
                                 "body_timeout_seconds": 7}},
                       {"ANCHORSTREAM_HTTP__LISTEN_BACKLOG": "64"})
    assert (cfg.http.max_waiters, cfg.http.header_timeout_seconds, cfg.http.body_timeout_seconds,
            cfg.http.listen_backlog) == (8, 5.0, 7.0, 64)
    for key, bad in (("max_waiters", 0), ("header_timeout_seconds", 0),
                     ("body_timeout_seconds", -1), ("listen_backlog", 0)):
        with pytest.raises(ConfigError) as info:
            parse_config({"http": {key: bad}}, {})
        assert f"http.{key}" in str(info.value) and str(bad) in str(info.value)


def test_module_doctests():
    assert doctest.testmod(strictjson).failed == 0
    assert doctest.testmod(httpserver).failed == 0
