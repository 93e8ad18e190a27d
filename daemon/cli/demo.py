"""``anchorstream demo``: the daemon on the embedded broker, fed with the bundled sample.

One command that shows the whole pipeline on a fresh machine: it starts the bundled
Kafka-compatible broker (:class:`daemon.kafka.broker.EmbeddedBroker`), runs the same
:class:`daemon.service.Daemon` that ``anchorstream run`` runs, replays the bundled sample
(``daemon/data/sample.jsonl.gz``: State of the Union paragraphs 1790-2026, public domain, see
``daemon/data/SOURCE.md``) into its topic in time order from a thread, and prints every
published snapshot's topics as they change: topic id, prevalence and its change, anchor word, top
words, and which topics were born, died, rose and fell since the previous snapshot (the
snapshot's ``extra["churn"]`` and prevalence deltas by topic id). The topic browser is served at
the printed URL meanwhile.

Pacing: the replay sends at most ``--rate`` documents a second and waits while it is more
than ``2 x --refresh-docs`` documents ahead of the newest snapshot
(:class:`daemon.kafka.producers.Paced` ``hold``), so each refresh moves the stream on by about
``--refresh-docs`` documents whatever the machine's speed: a run shows a snapshot every few
seconds from the start (16-21 over the sample, fewer on a busy machine), and the store forgets
(``--half-life`` documents, ``store.half_life_docs``) so that eras fade as the
stream moves on. Trends are scored over 5 snapshots from a score of 2 and topics keep their ids
at a similarity of 0.3 (``--trend-window``, ``--trend-min-score``, ``--align``; see the banner).

Settings come from ``--config`` (default: ``config.yaml`` in the working directory when there is
one, else the built-in defaults) with what a demo needs forced on top: the embedded broker
(PLAINTEXT, no security settings), a fresh store and snapshot directory (a temporary directory
removed at exit, or ``--state-dir``), frequent checkpoints and refreshes (every
``--refresh-seconds`` once ``--refresh-docs`` new documents arrived) and warnings-only logging.

It stops on Ctrl-C or SIGTERM (daemon checkpointed, broker stopped, exit status 0), after
``--duration`` seconds, or, with ``--limit``, once the snapshot covering the last replayed
document is printed. Without either it replays the whole sample and then keeps serving the
browser until stopped.

Output: plain lines on stdout, readable when piped (no cursor movement, no progress bar); on a
terminal, colours (unless ``NO_COLOR`` is set) and top words cut to the terminal width.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

from anchorstream.errors import InputError
from daemon.cli import kernels_cached
from daemon.cli.options import HelpFormatter
from daemon.cli.demo_output import Seen, Style, format_snapshot, remember
from daemon.cli.demo_progress import covered, hold_ahead, messages

__all__ = ["SAMPLE", "demo_config", "format_snapshot", "register", "run"]

log = logging.getLogger("anchorstream.demo")

#: The bundled sample of real text (see ``daemon/data/SOURCE.md``).
SAMPLE = Path(__file__).parents[1] / "data" / "sample.jsonl.gz"

#: The demo's ``trends.window``, ``trends.min_score`` and ``refresh.align_min_similarity``,
#: stated in its banner: its eras pass in a few snapshots, and a century of drift re-cuts topics
#: faster than the service's 0.5 follows (measured: docs/daemon.md, "The demo").
DEMO_TREND_WINDOW, DEMO_TREND_MIN_SCORE, DEMO_ALIGN = 5, 2.0, 0.3

#: Marker file that makes a ``--state-dir`` safe to clear at the next start.
_MARKER = ".anchorstream-demo"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "demo",
        help="run the daemon on the embedded broker, replay a bundled sample, print topics",
        description=(
            "Start the embedded Kafka-compatible broker and the daemon, replay the bundled "
            "sample (State of the Union paragraphs, 1790-2026) in time order, a step per "
            "refresh, and print each refreshed snapshot's topics as they change. The topic "
            "browser is served meanwhile. Ctrl-C stops everything."
        ),
        formatter_class=HelpFormatter,
    )
    p.add_argument("--config", type=Path, default=None,
                   help="config.yaml to start from (default: ./config.yaml when present, else "
                        "built-in defaults); broker, paths and refresh timing are overridden")
    p.add_argument("--rate", type=float, default=500.0, metavar="DOCS_PER_S",
                   help="documents replayed per second")
    p.add_argument("--topics", type=int, default=None, metavar="K",
                   help="number of topics (default: model.num_topics of the configuration)")
    p.add_argument("--limit", type=int, default=None, metavar="N",
                   help="replay only the first N documents, then stop after the snapshot "
                        "covering them (default: the whole sample, then keep serving)")
    p.add_argument("--duration", type=float, default=None, metavar="S",
                   help="stop after S seconds (default: run until Ctrl-C)")
    p.add_argument("--port", type=int, default=None,
                   help="HTTP port of the API and topic browser (default: http.port of the "
                        "configuration, or any free port when that one is taken); 0 = any")
    p.add_argument("--state-dir", type=Path, default=None, metavar="DIR",
                   help="keep the store and snapshots in DIR (cleared at start when a previous "
                        "demo left it; default: a temporary directory removed at exit)")
    p.add_argument("--refresh-seconds", type=float, default=2.0, metavar="S",
                   help="refresh the model at most every S seconds ...")
    p.add_argument("--refresh-docs", type=int, default=1000, metavar="N",
                   help="... once N new documents arrived; the replay waits while it is "
                        "more than 2 N documents ahead of the newest snapshot, so that each "
                        "snapshot moves the stream on by about N documents")
    p.add_argument("--half-life", type=float, default=4000.0, metavar="DOCS",
                   dest="half_life",
                   help="forget: a document counts half as much after DOCS newer ones "
                        "(store.half_life_docs), so that old eras fade; 0 = remember all")
    p.add_argument("--trend-window", type=int, default=DEMO_TREND_WINDOW, metavar="N",
                   help="snapshots a trend looks at (trends.window; the service's default is "
                        "10): a demo's eras pass in a few snapshots")
    p.add_argument("--trend-min-score", type=float, default=DEMO_TREND_MIN_SCORE,
                   metavar="Z",
                   help="score from which a topic is rising (trends.min_score; the service's "
                        "default is 3): 2 is reached by about 1 %% of topics that do not move")
    p.add_argument("--align", type=float, default=DEMO_ALIGN, metavar="S",
                   help="a topic keeps its id when its words overlap the previous topic's by S "
                        "(1 - total variation; refresh.align_min_similarity, the service's "
                        "default is 0.5)")
    p.add_argument("--vocab", type=int, default=3000, metavar="N",
                   help="vocabulary slots (at most vocab.capacity of the configuration): "
                        "demo scale, so that a refresh takes seconds on a laptop")
    p.add_argument("--rectify-iters", "--rectify-iter", dest="rectify_iter", type=int, default=50,
                   metavar="N",
                   help="rectification iterations per refresh (at most "
                        "model.rectify_max_iter of the configuration)")
    p.add_argument("--words", type=int, default=None, metavar="N",
                   help="top words shown per topic (default: as many as fit the terminal, "
                        "8 when piped)")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="also show the daemon's INFO log on stderr")
    p.set_defaults(func=run)


# --------------------------------------------------------------------------------------------
# configuration


def demo_config(base, *, state_dir: Path, num_topics: int | None = None,
                port: int | None = None, refresh_seconds: float = 5.0,
                refresh_docs: int = 1000, vocab: int | None = None,
                rectify_iter: int | None = None, half_life_docs: float | None = None,
                trend_window: int | None = None, trend_min_score: float | None = None,
                align: float | None = None):
    """The configuration the demo runs: ``base`` with the demo's settings forced on top.

    Parameters
    ----------
    base : daemon.settings.Config
    state_dir : Path
        Directory of the store (``store/``) and the snapshots (``snapshots/``).
    num_topics : int, optional
        Overrides ``model.num_topics``.
    port : int, optional
        Overrides ``http.port``.
    refresh_seconds, refresh_docs : float, int
        ``refresh.interval_seconds`` and ``refresh.min_new_docs``.
    vocab, rectify_iter : int, optional
        Upper bounds on ``vocab.capacity`` and ``model.rectify_max_iter``. Rectification costs
        O(V² K) per iteration, so these two decide how long a refresh takes.
    half_life_docs : float, optional
        ``store.half_life_docs`` (forgetting; windows and a half-life in seconds are dropped);
        None or 0 keeps what ``base`` says.
    trend_window, trend_min_score : optional
        ``trends.window`` and ``trends.min_score`` (None keeps what ``base`` says).
    align : float, optional
        ``refresh.align_min_similarity`` (None keeps what ``base`` says).

    Returns
    -------
    daemon.settings.Config
        Validated again, so a bad override is reported like a bad config key.
    """
    # Round-trip through the validating parser rather than dataclasses.replace: config.py
    # stays the only place that checks values and cross-key rules.
    from daemon.settings import EMBEDDED, KafkaConfig, parse_config

    data = base.to_dict(redact=False)
    kafka = data["kafka"]
    # The embedded broker speaks PLAINTEXT only: drop the security settings meant for a
    # real cluster instead of failing on them.
    defaults = KafkaConfig()
    for key in ("security_protocol", "sasl_mechanism", "sasl_plain_username",
                "sasl_plain_password", "ssl_cafile", "ssl_certfile", "ssl_keyfile",
                "ssl_check_hostname", "allow_plaintext_sasl"):
        kafka[key] = getattr(defaults, key)
    kafka["bootstrap_servers"] = EMBEDDED
    # Memory-backed broker: every demo starts from an empty topic, read from its start.
    kafka["auto_offset_reset"] = "earliest"
    data["store"].update(
        path=str(state_dir / "store"),
        # Checkpoints often enough that a refresh every few seconds has new documents.
        checkpoint_every_docs=max(min(int(refresh_docs), 1000), 100),
        checkpoint_every_seconds=2.0,
    )
    if half_life_docs:
        data["store"].update(half_life_docs=float(half_life_docs), half_life_seconds=None,
                             window_docs=None, windows=None)
    data["snapshots"]["path"] = str(state_dir / "snapshots")
    data["refresh"].update(interval_seconds=float(refresh_seconds),
                           min_new_docs=int(refresh_docs))
    if align is not None:
        data["refresh"]["align_min_similarity"] = float(align)
    if trend_window is not None:
        data["trends"]["window"] = int(trend_window)
    if trend_min_score is not None:
        data["trends"]["min_score"] = float(trend_min_score)
    if num_topics is not None:
        data["model"]["num_topics"] = int(num_topics)
    if vocab is not None:
        data["vocab"]["capacity"] = min(int(data["vocab"]["capacity"]), int(vocab))
    if rectify_iter is not None:
        data["model"]["rectify_max_iter"] = min(int(data["model"]["rectify_max_iter"]),
                                                int(rectify_iter))
    if port is not None:
        data["http"]["port"] = int(port)
    return parse_config(data, env={})


def _port_free(host: str, port: int) -> bool:
    if port == 0:
        return True
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET,
                       socket.SOCK_STREAM) as s:
        # Same option as the HTTP server (a port in TIME_WAIT is usable).
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _prepare_state_dir(path: Path | None) -> tuple[Path, bool]:
    """``(directory, remove_at_exit)``; an explicit directory must be empty or a demo's."""
    if path is None:
        return Path(tempfile.mkdtemp(prefix="anchorstream-demo-")), True
    path = path.resolve()
    if path.exists():
        if not path.is_dir():
            raise InputError(f"--state-dir {str(path)!r} is not a directory")
        if any(path.iterdir()):
            if not (path / _MARKER).exists():
                raise InputError(
                    f"--state-dir {str(path)!r} is not empty and was not made by a demo; "
                    "pass an empty or new directory")
            # The broker forgot the previous demo's messages: a store that already counted
            # them would count them twice, so every demo starts from nothing.
            for name in ("store", "snapshots"):
                shutil.rmtree(path / name, ignore_errors=True)
    path.mkdir(parents=True, exist_ok=True)
    (path / _MARKER).write_text("state of `anchorstream demo`; cleared by the next demo\n")
    return path, False


# --------------------------------------------------------------------------------------------
# the moving parts


class _Replay(threading.Thread):
    """Produces the sample into the topic at a steady rate until done or stopped."""

    def __init__(self, kafka_config, bootstrap: str, topic: str, *, rate: float,
                 limit: int | None, stop: threading.Event, hold=None):
        super().__init__(name="anchorstream-demo-replay", daemon=True)
        self.kafka_config = kafka_config
        self.bootstrap = bootstrap
        self.topic = topic
        self.rate = float(rate)
        self.limit = limit
        self.stop_event = stop
        #: ``hold(n)``: whether document ``n`` must wait (see :func:`daemon.cli.demo_progress.hold_ahead`).
        self.hold = hold
        self.sent = 0
        self.failed = 0
        #: Date field of every document sent, in order (to say how far a snapshot reaches).
        self.dates: list[str | None] = []
        self.done = threading.Event()
        #: True when the sample (or --limit) was sent completely, not cut short by a stop.
        self.finished = False
        self.error: str | None = None

    def run(self) -> None:
        from daemon.ingest.files import iter_lines
        from daemon.kafka.client import KafkaProducer, client_settings, create_client
        from daemon.kafka.producers import Paced

        producer = None
        try:
            settings = {**client_settings(self.kafka_config, [self.bootstrap]), "acks": "all",
                        "linger_ms": 20}
            producer = create_client(KafkaProducer, settings)
            lines = Paced((line for _, line in iter_lines(SAMPLE)), self.rate,
                          limit=self.limit, stop=self.stop_event, hold=self.hold)
            for line in lines:
                producer.send(self.topic, value=line).add_errback(self._failed)
                self.sent += 1
                self.dates.append(_date_of(line))
            complete = not lines.stopped or (self.limit is not None and self.sent >= self.limit)
            producer.flush(timeout=30)
            self.finished = complete
        except Exception as exc:  # noqa: BLE001 - reported by the main thread, demo stops
            self.error = f"{type(exc).__name__}: {exc}"
            log.debug("replay failed", exc_info=True)
        finally:
            if producer is not None:
                with contextlib.suppress(Exception):
                    producer.close(timeout=5)
            self.done.set()

    def _failed(self, exc) -> None:
        self.failed += 1


def _date_of(line: bytes) -> str | None:
    try:
        value = json.loads(line).get("date")
    except (ValueError, AttributeError):
        return None
    return str(value) if value else None


def _reach(replay: _Replay, count: int) -> str | None:
    """Date of the last of the first ``count`` replayed documents: what a snapshot covering
    ``count`` messages reaches (:func:`~daemon.cli.demo_progress.covered`)."""
    dates = replay.dates
    if count < 1 or not dates:
        return None
    return dates[min(count, len(dates)) - 1]


class _Interrupted(Exception):
    """A signal came during start-up, before the daemon ran (see ``StartupSignals``)."""


def _say(text: str = "") -> None:
    print(text, flush=True)


def _check_args(args) -> None:
    """Refuse bad options before anything starts."""
    if args.rate <= 0:
        raise InputError(f"--rate must be > 0, got {args.rate}")
    if args.limit is not None and args.limit < 1:
        raise InputError(f"--limit must be >= 1, got {args.limit}")
    if args.duration is not None and args.duration <= 0:
        raise InputError(f"--duration must be > 0, got {args.duration}")
    for name in ("vocab", "rectify_iter", "topics", "refresh_docs"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise InputError(f"--{name.replace('_', '-')} must be >= 1, got {value}")
    if args.trend_window is not None and args.trend_window < 2:
        raise InputError(f"--trend-window must be >= 2 snapshots, got {args.trend_window}")
    if args.trend_min_score is not None and not args.trend_min_score > 0:
        raise InputError(f"--trend-min-score must be > 0, got {args.trend_min_score}")
    if not 0 <= args.align <= 1:
        raise InputError(f"--align must be in [0, 1], got {args.align}")
    if args.half_life < 0:
        raise InputError(f"--half-life must be >= 0 (0 = remember everything), got "
                         f"{args.half_life}")
    if args.refresh_seconds <= 0:
        raise InputError(f"--refresh-seconds must be > 0, got {args.refresh_seconds}")
    if args.words is not None and args.words < 1:
        raise InputError(f"--words must be >= 1, got {args.words}")
    if not SAMPLE.is_file():
        raise InputError(f"the bundled sample {str(SAMPLE)!r} is missing; reinstall anchorstream")


def _announce(args, cfg, style: Style, *, config_path, state_dir: Path, remove_state: bool,
              broker, topic: str, url: str, cold: bool) -> None:
    """The banner: what runs where, and how the demo ends; ``cold``: numba's cache was empty
    when the demo started (the first snapshot waits for the kernels' compilation)."""
    total = args.limit if args.limit is not None else "all"
    _say(style.bold("anchorstream demo"))
    _say(f"  config:   {config_path or 'built-in defaults'} (demo settings on top)")
    _say(f"  state:    {state_dir}"
         + (" (temporary, removed at exit)" if remove_state else ""))
    _say(f"  broker:   embedded Kafka at {broker.bootstrap_servers} (pid {broker.pid}), "
         f"topic {topic!r}")
    _say(f"  sample:   State of the Union paragraphs 1790-2026 in time order ({total} "
         f"documents at {args.rate:g}/s at most, {2 * cfg.refresh.min_new_docs:,} ahead of the "
         "newest snapshot at most)")
    _say(f"  model:    {cfg.model.num_topics} topics over at most {cfg.vocab.capacity:,} "
         f"words, refreshed every {cfg.refresh.interval_seconds:g} s once "
         f"{cfg.refresh.min_new_docs} new documents arrived "
         f"({cfg.model.rectify_max_iter} rectification iterations)"
         + (f"; half-life {cfg.store.half_life_docs:,.0f} documents"
            if cfg.store.half_life_docs else ""))
    _say(f"  trends:   rising at a score of {cfg.trends.min_score:g} or more over the last "
         f"{cfg.trends.window} snapshots (demo; the service's defaults: 3 over 10)")
    _say(f"  ids:      a topic keeps its id at a similarity of "
         f"{cfg.refresh.align_min_similarity:g} to its predecessor (demo; the service's: 0.5)")
    _say(f"  browser:  {style.bold(url)}")
    ends = []
    if args.duration is not None:
        ends.append(f"after {args.duration:g} s")
    if args.limit is not None:
        ends.append(f"after the snapshot of document {args.limit}")
    _say("  stop:     Ctrl-C" + (f" (or ends by itself {' or '.join(ends)})"
                                  if ends else ""))
    if cold:
        _say("  first run: numba compiles the numerical kernels once (half a minute on a small "
             "machine)\n             before the first snapshot; later runs reuse its cache")


def run(args) -> int:
    from daemon.cli.run import StartupSignals
    from daemon.settings import load_config

    _check_args(args)
    # Before anything starts: the daemon's start compiles (and caches) its first kernels, so a
    # later look found a cache on a new machine and the banner never said why the first
    # snapshot takes half a minute (session 87).
    cold = not kernels_cached()

    config_path = args.config
    if config_path is None and Path("config.yaml").is_file():
        config_path = Path("config.yaml")
    base = load_config(config_path)
    port = args.port
    if port is None and not _port_free(base.http.host, base.http.port):
        port = 0  # the configured port is taken (a daemon already running?): any free one
    state_dir, remove_state = _prepare_state_dir(args.state_dir)
    broker = daemon = None
    stop_replay = threading.Event()
    replay = printer = None
    style = Style(sys.stdout)
    status = 0
    try:
        # A Ctrl-C or SIGTERM before the daemon runs is recorded: start-up stops at its next
        # step or the daemon as soon as it runs, through the finally below (broker stopped,
        # state removed) instead of the signal killing the process.
        signals = StartupSignals().install()
        cfg = demo_config(base, state_dir=state_dir, num_topics=args.topics, port=port,
                          refresh_seconds=args.refresh_seconds, refresh_docs=args.refresh_docs,
                          vocab=args.vocab, rectify_iter=args.rectify_iter,
                          half_life_docs=args.half_life, trend_window=args.trend_window,
                          trend_min_score=args.trend_min_score, align=args.align)
        # The daemon's INFO lines would drown the topics; --verbose brings them back.
        level = logging.INFO if args.verbose else logging.WARNING
        logging.getLogger().setLevel(level)
        logging.getLogger("kafka").setLevel(logging.WARNING if args.verbose else logging.ERROR)

        from daemon.kafka.broker import EmbeddedBroker
        from daemon.service import Daemon

        t0 = time.monotonic()
        broker = EmbeddedBroker()  # assigned before start(): the finally sees it
        broker.start()
        topic = cfg.kafka.topics[0]
        topics = {t: 1 for t in cfg.kafka.topics}
        for extra in (cfg.kafka.dead_letter_topic, cfg.kafka.model_updates_topic):
            if extra:
                topics[extra] = 1
        broker.create_topics(topics)
        if signals.received_any():
            raise _Interrupted

        # A refresh cannot be interrupted; at Ctrl-C wait for it only briefly (publication is
        # atomic, so abandoning it loses nothing but its work).
        daemon = Daemon(cfg, bootstrap_servers=broker.bootstrap_servers,
                        refresh_join_seconds=3.0, freeze_gc=True)
        daemon.broker = broker  # a second Ctrl-C stops it before exiting at once
        daemon.start()
        url = daemon.api.url + "/"

        _announce(args, cfg, style, config_path=config_path, state_dir=state_dir,
                  remove_state=remove_state, broker=broker, topic=topic, url=url, cold=cold)

        # The replay stops with the daemon (signal, --duration, end of --limit).
        stop_replay = daemon.stop_event
        replay = _Replay(cfg.kafka, broker.bootstrap_servers, topic, rate=args.rate,
                         limit=args.limit, stop=stop_replay,
                         hold=hold_ahead(daemon.publisher, 2 * cfg.refresh.min_new_docs))
        replay.start()
        printer = threading.Thread(
            target=_watch, name="anchorstream-demo-printer", daemon=True,
            args=(daemon, replay, style, args, t0, cold))
        printer.start()
        status = daemon.run(stop_requested=signals.received_any)
        if signals.received_any():
            _say(style.dim("interrupted while starting"))
    except _Interrupted:
        _say(style.dim("interrupted while starting"))
    finally:
        stop_replay.set()
        if daemon is not None:
            daemon.stop()
        if replay is not None:
            replay.join(10)
        if printer is not None:
            printer.join(10)
        if broker is not None:
            broker.close()
        if remove_state:
            shutil.rmtree(state_dir, ignore_errors=True)
    sent = replay.sent if replay is not None else 0
    _say(f"demo stopped: {sent:,} documents replayed; broker stopped"
         + ("; state removed" if remove_state else f"; state kept in {state_dir}"))
    if replay is not None and replay.error:
        print(f"anchorstream demo: replay failed: {replay.error}", file=sys.stderr)
        return 1
    return status


def _watch(daemon, replay: _Replay, style: Style, args, t0: float, cold: bool = False) -> None:
    """Print every new snapshot; stop the daemon when the demo is over. ``cold``: numba's cache
    was empty at the start (the first snapshot's time includes compiling the kernels)."""
    publisher = daemon.publisher
    stop = daemon.stop_event
    deadline = t0 + args.duration if args.duration is not None else None
    last = None
    seen: Seen | None = None
    final_wait: float | None = None
    announced = False
    try:
        while not stop.is_set():
            if deadline is not None and time.monotonic() >= deadline:
                _say(style.dim(f"--duration {args.duration:g} s reached"))
                break
            if replay.error:
                break
            newest = publisher.wait_for_newer(last, timeout=0.25)
            if newest is not None:
                for version in range(last + 1 if last is not None else newest, newest + 1):
                    try:
                        snap = publisher.get(version)
                    except Exception:  # noqa: BLE001 - pruned meanwhile: skip it
                        continue
                    if seen is None:
                        _say(style.dim(f"first snapshot after {time.monotonic() - t0:.1f} s"
                                       + (", numba compiling its kernels included (cached "
                                          "now: later runs skip it)" if cold else "")))
                    _say(format_snapshot(version, snap, seen, style, n_words=args.words,
                                         stream_at=_reach(replay, covered(snap)),
                                         replayed=covered(snap),
                                         trends=publisher.trends()))
                    seen = remember(snap)
                last = newest
            if replay.done.is_set() and replay.finished and not announced:
                announced = True
                _say(style.dim(f"replay finished: {replay.sent:,} documents sent"
                               + (f", {replay.failed:,} not acknowledged" if replay.failed
                                  else "")))
                if args.limit is None and deadline is None:
                    _say(style.dim("still serving the topic browser; Ctrl-C to stop"))
            if replay.done.is_set() and replay.finished and args.limit is not None:
                # --limit: wait until the last documents are checkpointed, ask for a refresh
                # even if fewer than min_new_docs are new, and end after its snapshot.
                latest = publisher.latest()
                if latest is not None and covered(latest[1]) >= replay.sent and \
                        (last is not None and last >= latest[0]):
                    break
                committed = messages(daemon.loop.store.offsets)
                if committed >= replay.sent and final_wait is None:
                    daemon.refresher.request()
                    # A refresh that is skipped (too few words) never publishes: give up
                    # after a while rather than waiting forever.
                    final_wait = time.monotonic() + max(60.0, 3 * args.refresh_seconds)
                if final_wait is not None and daemon.refresher.busy:
                    # Still fitting (a slow machine): that refresh may be the last one.
                    final_wait = max(final_wait, time.monotonic() + 30.0)
                if final_wait is not None and time.monotonic() > final_wait:
                    _say(style.dim("no snapshot of the last documents; stopping"))
                    break
        _say(style.dim("stopping: checkpointing, then stopping the broker ..."))
    except BrokenPipeError:
        # Output closed (`anchorstream demo | head`): nobody is watching, so stop.
        pass
    except Exception:  # noqa: BLE001 - a demo that cannot show snapshots should not go on
        log.exception("printing snapshots failed; stopping the demo")
    finally:
        daemon.stop()
