"""The HTTP API: published snapshots, topic history, inference, health and metrics, as JSON.

Endpoints
---------
=======================================  =====================================================
``GET /v1/snapshots/latest``             the newest snapshot: ``version``, ``created_at``,
                                         ``num_docs``, ``settings``, ``source``, ``extra`` and
                                         ``topics`` (id, anchor, prevalence, top words, quality).
                                         ``ETag: "<version>"``; ``If-None-Match`` -> 304;
                                         ``?wait=SECONDS`` long-polls until a version other than
                                         the one in ``If-None-Match`` (or ``?after=VERSION``)
                                         exists, then 200, or 304 when the wait runs out.
                                         404 before the first snapshot (after waiting, if asked).
                                         503 with ``Retry-After`` instead of waiting when
                                         ``max_waiters`` polls wait already.
``GET /v1/snapshots``                    retained versions, oldest first, and the latest.
``GET /v1/snapshots/{version}``          one retained snapshot (immutable, cacheable).
``GET /v1/topics/{id}``                  the topic in the latest snapshot (``null`` if it died),
                                         its ``history`` and ``related`` topics (by lift).
``POST /v1/infer``                       ``{"text": "..."}`` or ``{"tokens": [...]}``, or a batch
                                         ``{"documents": [...]}`` (up to ``max_infer_documents``),
                                         optional ``"version"``, ``"top"`` and ``"min_weight"``:
                                         topic proportions of at least ``min_weight`` (default
                                         ``infer_min_weight``, 0.01) and ``omitted_weight``
                                         (daemon/http/infer.py).
``GET /v1/trends``                       rising, falling, new and gone topics over the last
                                         ``trends.window`` snapshots of the history, with scores
                                         and series; ``?limit=N`` (default 10), ``?window=N``,
                                         ``?min_score=Z`` (default ``trends.min_score``).
                                         404 before the first snapshot (daemon/http/trends.py).
``GET /healthz``                         200 while the process serves requests.
``GET /readyz``                          200 when a snapshot exists and ``ready()`` says
                                         ok, else 503 with the reason (the daemon's
                                         :class:`daemon.http.health.Readiness` names them all).
``GET /metrics``                         Prometheus exposition of the injected registry.
``GET /``                                ``daemon/static/index.html`` when present.
=======================================  =====================================================

Errors are JSON ``{"error": code, "message": text}`` with a 4xx/5xx status. With a bearer token
configured, ``/v1/*`` and ``/metrics`` require ``Authorization: Bearer <token>`` (401 otherwise);
``/healthz``, ``/readyz`` and the static page stay open for probes and browsers. What a client
cannot do (hostile bodies, slow heads and bodies, exceptions turning into tracebacks) is the
business of :mod:`daemon.http.server` underneath; request bodies are parsed by
:func:`daemon.http.strictjson.loads`.

Why the standard library's ``ThreadingHTTPServer`` and not a web framework: the API is a handful
of JSON routes over data already in memory, so a framework would add a dependency (and, for the
async ones, an event loop to bridge to the threaded publisher) without removing much code. A
thread per connection also makes long polls simple: a waiting request blocks on the publisher's
:class:`threading.Condition`. The number of concurrent long polls is capped (``max_waiters``) so
a crowd of pollers cannot exhaust threads: past the cap, a poll that would wait is answered at
once with 503 and ``Retry-After`` (one that is behind still gets the new version at once).
Measured with ``benchmarks/bench_longpoll.py``: 1,000 polls at once, every one answered within
the cap (see benchmarks/README.md). Serving waiters without a thread each (parking their sockets
in a selector) would let all of them wait, at the price of handing sockets between threads
outside what ``socketserver`` supports; a few hundred waiting threads cost little, and a client
told to retry in a few seconds misses nothing a dashboard would notice.

Usage::

    server = ApiServer(publisher, metrics=metrics, ready=loop.healthy, tokenizer=tokenizer)
    server.start()            # serves in a background thread
    server.url                # e.g. "http://127.0.0.1:8080"
    server.stop()
"""

from __future__ import annotations

import hmac
import logging
import math
import mimetypes
import re
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit


from anchorstream.errors import InputError, SnapshotError, SnapshotNotFoundError
from anchorstream.text.tokenize import Tokenizer
from daemon.http import strictjson
from daemon.http.infer import INFER_MIN_WEIGHT, MAX_INFER_DOCUMENTS, infer_request
from daemon.http.trends import MAX_LIMIT, trends_document
from daemon.http.server import HttpError as _HttpError
from daemon.http.server import JsonHandler, JsonServer, dumps

__all__ = ["ApiServer", "STATIC_DIR"]

log = logging.getLogger("anchorstream.api")

STATIC_DIR = Path(__file__).parents[1] / "static"
_STATIC_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,100}")


def _etag(version: int) -> str:
    return f'"{version}"'


def _parse_if_none_match(header: str | None) -> tuple[set[str], bool]:
    """The entity tags of an ``If-None-Match`` header and whether it was ``*``."""
    if not header:
        return set(), False
    tags, star = set(), False
    for part in header.split(","):
        part = part.strip()
        if part == "*":
            star = True
        elif part:
            tags.add(part[2:] if part.startswith("W/") else part)
    return tags, star


def _version_from_tags(tags: set[str]) -> int | None:
    versions = [int(t.strip('"')) for t in tags if re.fullmatch(r'"\d{1,20}"', t)]
    return max(versions) if versions else None


class ApiServer:
    """The JSON API over a :class:`daemon.publish.Publisher`.

    Parameters
    ----------
    publisher : Publisher
    host : str, default "127.0.0.1"
    port : int, default 0
        0 picks a free port (see :attr:`port` after :meth:`start`).
    bearer_token : str or Secret, optional
        Required on ``/v1/*`` and ``/metrics`` when set.
    metrics : daemon.metrics.Metrics, optional
        Served on ``/metrics`` and counts requests; without it ``/metrics`` is 404.
    ready : callable, optional
        Returns ``True``/``False`` or ``(bool, reason)``: whether the ingest loop is healthy.
        Readiness also needs a published snapshot.
    tokenizer : callable, optional
        ``str | list[str] -> list[str]``; must be the one ingestion uses. Default
        :class:`anchorstream.text.tokenize.Tokenizer` with its defaults.
    max_body_bytes : int, default 1 MiB
    max_wait_seconds : float, default 60
        Cap on ``?wait=``.
    max_waiters : int, default 256
        Concurrent long polls (a thread each); past it, a poll that would wait gets 503 with
        ``Retry-After``.
    header_timeout_seconds : float, default 20
        The whole request head must arrive within this (408 otherwise); also how long an idle
        keep-alive connection stays open.
    body_timeout_seconds : float, default 30
        The whole body must arrive within this after the head (408 otherwise).
    listen_backlog : int, default 1024
        Connections the kernel queues before they are accepted.
    static_dir : path-like, default ``daemon/static``
    max_infer_documents : int, default 256
        Documents one ``POST /v1/infer`` batch may hold.
    infer_min_weight : float, default 0.01
        ``POST /v1/infer``'s ``min_weight`` when a request gives none.
    """

    def __init__(self, publisher, *, host: str = "127.0.0.1", port: int = 0,
                 bearer_token=None, metrics=None,
                 ready: Callable[[], bool | tuple[bool, str]] | None = None,
                 tokenizer: Callable[[str | Sequence[str]], list[str]] | None = None,
                 max_body_bytes: int = 1 << 20, max_wait_seconds: float = 60.0,
                 max_waiters: int = 256, header_timeout_seconds: float = 20.0,
                 body_timeout_seconds: float = 30.0, listen_backlog: int = 1024,
                 static_dir: str | Path | None = None,
                 max_infer_documents: int = MAX_INFER_DOCUMENTS,
                 infer_min_weight: float = INFER_MIN_WEIGHT):
        self.publisher = publisher
        self.host = host
        self._requested_port = int(port)
        token = bearer_token.reveal() if hasattr(bearer_token, "reveal") else bearer_token
        self._token = None if token is None else str(token).encode("utf-8")
        self.metrics = metrics
        self.ready = ready
        self.tokenizer = tokenizer if tokenizer is not None else Tokenizer()
        self.max_body_bytes = int(max_body_bytes)
        self.max_infer_documents = max(int(max_infer_documents), 1)
        self.infer_min_weight = float(infer_min_weight)
        self.max_wait_seconds = float(max_wait_seconds)
        self.max_waiters = max(int(max_waiters), 1)
        self._waiting = 0
        self._waiting_lock = threading.Lock()
        self._full_logged_at = -math.inf
        self.header_timeout_seconds = float(header_timeout_seconds)
        self.body_timeout_seconds = float(body_timeout_seconds)
        self.listen_backlog = int(listen_backlog)
        self.static_dir = Path(static_dir) if static_dir is not None else STATIC_DIR
        self._json_cache: dict[int, bytes] = {}
        self._json_lock = threading.Lock()
        self._server: JsonServer | None = None
        self._thread: threading.Thread | None = None

    # ----------------------------------------------------------------------------------------
    # lifecycle

    def start(self) -> ApiServer:
        """Bind and serve in a daemon thread. Returns ``self``."""
        handler = type("Handler", (_Handler,), {
            "app": self, "header_timeout": self.header_timeout_seconds,
            "body_timeout": self.body_timeout_seconds})
        self._server = JsonServer((self.host, self._requested_port), handler,
                                  listen_backlog=self.listen_backlog)
        # poll_interval bounds how long stop() waits for the serving loop to notice.
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        name="anchorstream-http", daemon=True)
        self._thread.start()
        log.info("HTTP API on %s", self.url)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting requests; in-flight long polls are released by ``publisher.close()``."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout)
        self._server = None

    def __enter__(self) -> ApiServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the server is not started")
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        host = self.host if ":" not in self.host else f"[{self.host}]"
        return f"http://{host}:{self.port}"

    @property
    def waiting(self) -> int:
        """Long polls waiting now."""
        return self._waiting

    # ----------------------------------------------------------------------------------------
    # helpers used by the handler

    def enter_waiting(self) -> bool:
        """Take a waiter's place; False when all ``max_waiters`` are taken."""
        with self._waiting_lock:
            if self._waiting < self.max_waiters:
                self._waiting += 1
                return True
            now = time.monotonic()
            log_it = now - self._full_logged_at >= 60.0
            if log_it:
                self._full_logged_at = now
        if log_it:  # one line a minute at most: a crowd must not flood the log
            log.warning("%d long polls are waiting (http.max_waiters); further ones are "
                        "answered 503 with Retry-After", self.max_waiters)
        return False

    def leave_waiting(self) -> None:
        with self._waiting_lock:
            self._waiting -= 1

    def authorized(self, header: str | None) -> bool:
        if self._token is None:
            return True
        if not header or not header.startswith("Bearer "):
            return False
        return hmac.compare_digest(header[7:].strip().encode("utf-8"), self._token)

    def snapshot_json(self, version: int) -> bytes:
        """The JSON body for a snapshot version (cached: snapshots are immutable)."""
        with self._json_lock:
            body = self._json_cache.get(version)
        if body is not None:
            if not self.publisher.has(version):  # pruned since it was cached
                raise _HttpError(404, "not_found", f"snapshot {version} is not retained")
            return body
        try:
            snap = self.publisher.get(version)
        except SnapshotNotFoundError:
            raise _HttpError(404, "not_found", f"snapshot {version} is not retained") from None
        except SnapshotError as exc:
            raise _HttpError(500, "corrupt_snapshot", str(exc)) from None
        doc = {k: v for k, v in snap.manifest.items() if k != "files"}
        doc = {"version": version, **doc, "topics": snap.topics}
        body = dumps(doc)
        with self._json_lock:
            if len(self._json_cache) >= 8:
                self._json_cache.pop(next(iter(self._json_cache)))
            self._json_cache[version] = body
        return body


class _Handler(JsonHandler):
    app: ApiServer
    server_version = "anchorstream"

    # Routes: (method, pattern, handler name, route label for metrics, needs auth).
    ROUTES = (
        ("GET", re.compile(r"/v1/snapshots/latest"), "get_latest", "/v1/snapshots/latest", True),
        ("GET", re.compile(r"/v1/snapshots"), "get_snapshots", "/v1/snapshots", True),
        ("GET", re.compile(r"/v1/snapshots/(\d{1,20})"), "get_snapshot",
         "/v1/snapshots/{version}", True),
        ("GET", re.compile(r"/v1/topics/(-?\d{1,20})"), "get_topic", "/v1/topics/{id}", True),
        ("POST", re.compile(r"/v1/infer"), "post_infer", "/v1/infer", True),
        ("GET", re.compile(r"/v1/trends"), "get_trends", "/v1/trends", True),
        ("GET", re.compile(r"/healthz"), "get_healthz", "/healthz", False),
        ("GET", re.compile(r"/readyz"), "get_readyz", "/readyz", False),
        ("GET", re.compile(r"/metrics"), "get_metrics", "/metrics", True),
        ("GET", re.compile(r"/"), "get_index", "/", False),
        ("GET", re.compile(r"/static/([^/]+)"), "get_static", "/static", False),
    )

    # --- plumbing ------------------------------------------------------------------------------

    def begin_request(self) -> None:
        super().begin_request()
        self._route_label = "unmatched"
        self._counted = False

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        status = 500
        try:
            try:
                url = urlsplit(self.path)
            except ValueError as exc:  # e.g. "//[x": an unterminated IPv6 host
                raise _HttpError(400, "bad_request", f"bad request target: {exc}") from None
            path = url.path.rstrip("/") or "/"
            self.query = parse_qs(url.query, keep_blank_values=True)
            allowed = []
            for m, rx, name, label, auth in self.ROUTES:
                match = rx.fullmatch(path)
                if match is None:
                    continue
                allowed.append(m)
                if m != method:
                    continue
                self._route_label = label
                if auth and not self.app.authorized(self.headers.get("Authorization")):
                    raise _HttpError(401, "unauthorized", "a valid bearer token is required",
                                     {"WWW-Authenticate": 'Bearer realm="anchorstream"'})
                status = getattr(self, name)(*match.groups())
                break
            else:
                if allowed:
                    raise _HttpError(405, "method_not_allowed",
                                     f"{method} is not allowed on {path}",
                                     {"Allow": ", ".join(sorted(set(allowed)))})
                raise _HttpError(404, "not_found", f"no such endpoint: {path}")
        except Exception as exc:  # noqa: BLE001 - one bad request must not kill the thread
            status = self.answer_exception(exc)
        finally:
            self.count(status)  # a request that ended without an answer (499) or raised late

    def count(self, status: int) -> None:
        """Count this request once, before its answer goes out: a client that has read its
        response must find it in the next /metrics scrape."""
        if self._counted or self.app.metrics is None:
            return
        self._counted = True
        self.app.metrics.http_requests.labels(self._route_label, str(status)).inc()

    # The names the routes use.
    def _send(self, status: int, body: bytes, content_type: str,
              headers: dict | None = None) -> int:
        return self.send(status, body, content_type, headers)

    def _send_json(self, status: int, obj: Any, headers: dict | None = None) -> int:
        return self.send_json(status, obj, headers)

    def _param(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[-1] if values else None

    def _float_param(self, name: str, default: float) -> float:
        raw = self._param(name)
        if raw is None:
            return default
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0:
            raise _HttpError(400, "bad_request",
                             f"query parameter {name!r} must be a number >= 0, got {raw!r}")
        return value

    def _int_param(self, name: str) -> int | None:
        raw = self._param(name)
        if raw is None:
            return None
        if not re.fullmatch(r"\d{1,20}", raw):
            raise _HttpError(400, "bad_request",
                             f"query parameter {name!r} must be an integer >= 0, got {raw!r}")
        return int(raw)

    # --- snapshots -----------------------------------------------------------------------------

    def get_latest(self) -> int:
        tags, star = _parse_if_none_match(self.headers.get("If-None-Match"))
        known = self._int_param("after")
        if known is None:
            known = _version_from_tags(tags)
        wait = min(self._float_param("wait", 0.0), self.app.max_wait_seconds)
        current = self.app.publisher.latest_version
        if wait > 0 and (current is None or (known is not None and current == known)
                         or (star and current is not None)):
            # Long poll: only while the client already has the current version (or there is
            # none). Past the cap on concurrent waiters, 503 at once: come back in a few
            # seconds (no later than the wait asked for, so an update is not missed for long).
            if not self.app.enter_waiting():
                retry = max(1, min(5, math.ceil(wait)))
                raise _HttpError(503, "too_many_waiters",
                                 f"{self.app.max_waiters} long polls are waiting already "
                                 f"(http.max_waiters); retry in {retry} s",
                                 {"Retry-After": str(retry)})
            try:
                self.app.publisher.wait_for_newer(current if current is not None else None,
                                                  wait)
            finally:
                self.app.leave_waiting()
            current = self.app.publisher.latest_version
        if current is None:
            raise _HttpError(404, "no_snapshot", "no snapshot has been published yet")
        etag = _etag(current)
        headers = {"ETag": etag, "Cache-Control": "no-cache"}
        if star or etag in tags or (known is not None and known == current):
            return self._send_json(304, b"", headers)
        return self._send_json(200, self.app.snapshot_json(current), headers)

    def get_snapshots(self) -> int:
        infos = self.app.publisher.list()
        return self._send_json(200, {
            "latest": self.app.publisher.latest_version,
            "snapshots": [i.to_dict() for i in infos],
        })

    def get_snapshot(self, version: str) -> int:
        v = int(version)
        etag = _etag(v)
        tags, star = _parse_if_none_match(self.headers.get("If-None-Match"))
        body = self.app.snapshot_json(v)  # 404 when not retained
        # A version's content never changes, so clients and proxies may cache it for good.
        headers = {"ETag": etag, "Cache-Control": "public, max-age=31536000, immutable"}
        if star or etag in tags:
            return self._send_json(304, b"", headers)
        return self._send_json(200, body, headers)

    def get_topic(self, topic_id: str) -> int:
        tid = int(topic_id)
        pub = self.app.publisher
        latest = pub.latest()
        topic = None
        if latest is not None:
            topic = next((t for t in latest[1].topics if t["id"] == tid), None)
        history = pub.topic_history(tid)
        if topic is None and not history:
            raise _HttpError(404, "not_found",
                             f"topic {tid} is in no retained snapshot")
        return self._send_json(200, {
            "id": tid,
            "version": None if latest is None else latest[0],
            "alive": topic is not None,
            "topic": topic,
            "history": history,
            "related": pub.related_topics(tid),
        })

    # --- inference -----------------------------------------------------------------------------

    def _read_json_body(self) -> Any:
        ctype = self.headers.get("Content-Type", "application/json")
        if ctype.split(";")[0].strip().lower() not in ("application/json", ""):
            raise _HttpError(415, "unsupported_media_type",
                             f"send application/json, got Content-Type {ctype!r}")
        # 411/413/400/408 for a missing, oversized, malformed or slow body; an oversized one is
        # not read (the connection is closed after the answer).
        data = self.read_body(self.app.max_body_bytes)
        try:
            return strictjson.loads(data)
        except InputError as exc:
            raise _HttpError(400, "invalid_json", f"the body is not accepted: {exc}") from None

    def post_infer(self) -> int:
        status, body = infer_request(self._read_json_body(), self.app.publisher,
                                     self.app.tokenizer,
                                     max_documents=self.app.max_infer_documents,
                                     min_weight=self.app.infer_min_weight)
        return self._send_json(status, body)

    def get_trends(self) -> int:
        limit = self._int_param("limit")
        window = self._int_param("window")
        min_score = None
        if self._param("min_score") is not None:
            min_score = self._float_param("min_score", 0.0)
            if min_score <= 0:
                raise _HttpError(400, "bad_request",
                                 "query parameter 'min_score' must be a number > 0")
        if limit is not None and not 1 <= limit <= MAX_LIMIT:
            raise _HttpError(400, "bad_request",
                             f"query parameter 'limit' must be in [1, {MAX_LIMIT}], got {limit}")
        if window is not None and window < 2:
            raise _HttpError(400, "bad_request",
                             f"query parameter 'window' must be >= 2 snapshots, got {window}")
        doc = trends_document(self.app.publisher, limit=10 if limit is None else limit,
                              window=window, min_score=min_score)
        if doc is None:
            raise _HttpError(404, "not_found", "no snapshot has been published yet")
        return self._send_json(200, doc, {"Cache-Control": "no-cache"})

    # --- health, metrics, static ---------------------------------------------------------------

    def get_healthz(self) -> int:
        return self._send_json(200, {"status": "ok"})

    def get_readyz(self) -> int:
        version = self.app.publisher.latest_version
        healthy, reason = True, None
        if self.app.ready is not None:
            try:
                result = self.app.ready()
            except Exception as exc:  # noqa: BLE001 - a failing check means "not ready"
                result = (False, f"readiness check failed: {exc}")
            healthy, reason = result if isinstance(result, tuple) else (bool(result), None)
        if version is None and healthy:  # unless ready() already said why it is not ready
            healthy, reason = False, "no snapshot has been published yet"
        body = {"ready": bool(healthy), "version": version}
        if reason:
            body["reason"] = reason
        return self._send_json(200 if healthy else 503, body)

    def get_metrics(self) -> int:
        if self.app.metrics is None:
            raise _HttpError(404, "not_found", "metrics are not enabled")
        body, ctype = self.app.metrics.exposition(self.headers.get("Accept"))
        return self._send(200, body, ctype)

    def get_index(self) -> int:
        return self.get_static("index.html")

    def get_static(self, name: str) -> int:
        # A plain file name only (no separators, no leading dot): nothing outside static/.
        file = self.app.static_dir / name
        if not _STATIC_NAME.fullmatch(name) or not file.is_file():
            raise _HttpError(404, "not_found", f"no static file {name!r}")
        ctype = mimetypes.guess_type(name)[0] or "application/octet-stream"
        if ctype.startswith("text/") or ctype in ("application/javascript", "application/json"):
            ctype += "; charset=utf-8"
        return self._send(200, file.read_bytes(), ctype, {"Cache-Control": "no-cache"})


# http.server answers HEAD by calling do_HEAD; map it to GET semantics without a body.
def _do_head(self: _Handler) -> None:
    self._dispatch("GET")


_Handler.do_HEAD = _do_head  # type: ignore[attr-defined]
