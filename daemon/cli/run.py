"""``anchorstream run --config config.yaml``: the daemon.

Consumes documents from Kafka into the co-occurrence store, refreshes the topic model in the
background, publishes snapshots and serves the HTTP API and ``/metrics`` until SIGTERM/SIGINT,
then checkpoints and exits 0 (see :mod:`daemon.service`).

With ``kafka.bootstrap_servers: embedded`` the bundled Kafka-compatible broker
(:class:`daemon.kafka.broker.EmbeddedBroker`, memory only) is started first on a free loopback port,
the consumed topics (and the dead-letter and model-updates topics, when configured) are created
in it, and it is stopped when the daemon exits. Its address is logged and written to
``--ready-file``, so ``anchorstream replay --bootstrap-servers`` can feed it.

The broker never outlives the daemon: a clean stop closes it here; a second signal (the forced
exit) stops it in the daemon's handler; SIGKILL or the OOM killer end it through the
parent-death signal it is started with (Linux, see :mod:`daemon.kafka.broker`); and a SIGTERM/SIGINT
during start-up is recorded (:class:`StartupSignals`): start-up stops at its next step, or the
daemon stops as soon as it runs, and the broker is closed (exit 0) instead of the process being
killed by the signal's default action.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from pathlib import Path

from daemon.cli import FIRST_RUN, kernels_cached
from daemon.cli.options import HelpFormatter, positive_int_arg
from daemon.settings import load_config
from daemon.stackdump import install_stack_dumps

log = logging.getLogger("anchorstream.run")

__all__ = ["StartupSignals", "register", "run"]


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "run",
        help="run the daemon: Kafka in, topic-model snapshots out",
        description=(
            "Run the long-running service configured by --config (environment overrides "
            "ANCHORSTREAM_<SECTION>__<KEY> apply). SIGTERM or SIGINT checkpoint and exit 0."
        ),
        formatter_class=HelpFormatter,
    )
    p.add_argument("--config", type=Path, default=None,
                   help="config.yaml (default: built-in defaults plus the environment)")
    p.add_argument("--ready-file", type=Path, default=None, metavar="PATH",
                   help="write a JSON file with the pid, HTTP URL and ports once serving "
                        "(useful with http.port: 0)")
    p.add_argument("--embedded-partitions", type=positive_int_arg, default=1, metavar="N",
                   help="partitions of each consumed topic created in the embedded broker")
    p.add_argument("--role", choices=("all", "ingest", "refresh"), default="all",
                   help="all: one process does everything; with store.layout partitioned, "
                        "ingest consumes and checkpoints the partitions its consumer group "
                        "assigns, refresh sums every partition store, publishes and serves "
                        "the API (docs/daemon.md, Scaling out)")
    p.set_defaults(func=run)


class StartupSignals:
    """Record SIGTERM/SIGINT until :meth:`daemon.service.Daemon.run` installs its handlers.

    The caller checks :attr:`received` between its start-up steps and passes
    :meth:`received_any` to ``Daemon.run``, which stops at once when a signal came. A flag, not
    an exception raised from the handler: an exception thrown into whatever code the main
    thread is running (imports, a library's start-up) can be swallowed on the way, and a
    signal was once lost that way. A second signal acts at once with the default action (the
    broker then dies with the process, through its parent-death signal).
    """

    def __init__(self) -> None:
        self.received: str | None = None

    def install(self) -> StartupSignals:
        """Install the handlers (a no-op off the main thread, where signals cannot be handled)."""
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._handler)
            signal.signal(signal.SIGINT, self._handler)
        return self

    def received_any(self) -> bool:
        return self.received is not None

    def _handler(self, signum, _frame) -> None:
        if self.received is not None:
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)
            return
        self.received = signal.Signals(signum).name
        log.info("signal %s during start-up: stopping once started", self.received)


def run(args) -> int:
    cfg = load_config(args.config)
    logging.getLogger().setLevel(cfg.logging.level)
    if cfg.logging.level != "DEBUG":
        # kafka-python logs every connection and group step at INFO; keep its warnings.
        logging.getLogger("kafka").setLevel(logging.WARNING)
    log.info("configuration: %s", cfg.to_dict())  # secrets are redacted by to_dict()
    if not kernels_cached():
        log.info(FIRST_RUN)
    from daemon.service import check_role

    check_role(getattr(args, "role", "all"), cfg)  # before a broker is started for nothing
    install_stack_dumps()  # `kill -USR1 <pid>`: every thread's stack on stderr
    broker = None
    bootstrap = None
    signals = StartupSignals().install()
    try:
        if cfg.kafka.embedded:
            from daemon.kafka.broker import EmbeddedBroker

            broker = EmbeddedBroker()  # assigned before start(): the finally sees it
            broker.start()
            if signals.received_any():
                return 0
            bootstrap = broker.bootstrap_servers
            topics = {t: args.embedded_partitions for t in cfg.kafka.topics}
            for extra in (cfg.kafka.dead_letter_topic, cfg.kafka.model_updates_topic):
                if extra:
                    topics[extra] = 1
            broker.create_topics(topics)
            log.info("embedded broker at %s with topics %s", bootstrap, sorted(topics))
            print(f"embedded Kafka broker: {bootstrap} (pid {broker.pid})", file=sys.stderr,
                  flush=True)

        from daemon.service import Daemon

        if signals.received_any():
            return 0
        daemon = Daemon(cfg, bootstrap_servers=bootstrap, ready_file=args.ready_file,
                        role=getattr(args, "role", "all"), freeze_gc=True)
        daemon.broker = broker  # a forced exit (second signal) stops it first
        return daemon.run(stop_requested=signals.received_any)
    finally:
        if broker is not None:
            broker.close()
