"""The ``anchorstream`` command line.

Every subcommand lives in its own ``daemon/cli/<name>.py`` module exposing
``register(subparsers)``, which adds an argparse subparser whose ``func`` default is a
``run(args) -> int`` returning the exit code.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from pathlib import Path

from anchorstream import __version__
from anchorstream.errors import AnchorstreamError

#: Subcommand modules, in the order ``--help`` lists them. A module that is not present
#: (a command still being built) is skipped rather than breaking the whole CLI.
COMMANDS = (
    "daemon.cli.fit",
    "daemon.cli.inspect",
    "daemon.cli.ingest",
    "daemon.cli.store_info",
    "daemon.cli.replay",
    "daemon.cli.run",
    "daemon.cli.demo",
)
#: The commands that run as a service, whose log lines carry a time and the logger's name;
#: the others are one-shot and log as they print (:class:`CommandFormatter`).
SERVICES = ("run", "demo")


class CommandFormatter(logging.Formatter):
    """A one-shot command's log records read as the lines it prints itself (``note: ...``,
    ``warning: ...``), not as a service's log with a time and a logger's name between them;
    a DEBUG record keeps the logger's name, for whoever asked for them."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        if record.levelno <= logging.DEBUG:
            return f"debug: {record.name}: {text}"
        return f"{'note' if record.levelno < logging.WARNING else record.levelname.lower()}: {text}"


def _named_command(argv: list[str]) -> str | None:
    """The module of the subcommand ``argv`` names, or None (help, or a name not known).

    Only that module is imported then: a command pays for its own imports only (``fit``
    on files needs neither Zarr nor Icechunk, Kafka or pydantic, ~0.5 CPU s of start-up).
    No option of the main parser takes a value that is a command's name.
    """
    names = {name.rsplit(".", 1)[1].replace("_", "-"): name for name in COMMANDS}
    for arg in argv:
        if not arg.startswith("-"):
            return names.get(arg)
    return None


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; with ``argv``, of the command it names alone (every command otherwise)."""
    parser = argparse.ArgumentParser(
        prog="anchorstream",
        description="Streaming topic mining with rectified anchor-word inference.",
    )
    parser.add_argument("--version", action="version", version=f"anchorstream {__version__}")
    parser.add_argument(
        "--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="logging verbosity (default: INFO)",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    named = None if argv is None else _named_command(argv)
    for name in COMMANDS if named is None else (named,):
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command ``argv`` names (default ``sys.argv[1:]``) and return its exit code."""
    return _run(*_parse(argv))[0]


#: Environment variables the command sets for its own process where the user has not set
#: them, before anything imports NumPy (NumPy reads them at import).
#:
#: ``NUMPY_MADVISE_HUGEPAGE=0``: NumPy asks the kernel for transparent huge pages on every
#: array of 4 MB or more (``madvise``), and where the kernel's THP ``defrag`` setting is
#: ``madvise`` (a common default) a fault in such an array may compact memory on the spot.
#: The rectification and the refinement allocate arrays of V × K or more for every product
#: and pass: on this project's machine (2 cores, THP ``madvise`` / ``madvise``) a fit of
#: V = 50,000, K = 100 from a store spent 45-47 CPU s in the kernel with huge pages and 17
#: without (142-146 → 116-122 CPU s in all), the daemon's refresh of it 142-148 → 120-121,
#: the npm summaries at K = 100 16.4-17.0 → 13.9-14.0, the same topics to the bit, the same
#: peak memory; fits whose arrays are under 4 MB do not change (benchmarks/README.md,
#: "Session 64: huge pages"). A user whose machine gains from huge pages sets
#: ``NUMPY_MADVISE_HUGEPAGE=1``.
PROCESS_ENVIRONMENT = {"NUMPY_MADVISE_HUGEPAGE": "0"}


def prepare_process() -> None:
    """Set :data:`PROCESS_ENVIRONMENT`'s variables that the environment does not set. Effective
    only before NumPy is first imported; :func:`entry` calls it first thing."""
    for name, value in PROCESS_ENVIRONMENT.items():
        os.environ.setdefault(name, value)


def kernels_cached() -> bool:
    """Whether numba's on-disk cache of the library's kernels holds any (they compile on first
    use: half a minute of a first run on two cores). Where numba keeps them: ``NUMBA_CACHE_DIR``
    if set, else beside the kernels' sources (a read-only install, where numba falls back to a
    directory of the user's, reads as not cached). Checked before anything runs: the demo's
    banner, ``fit``'s and the daemon's first lines say why a first run waits."""
    import anchorstream

    cache = os.environ.get("NUMBA_CACHE_DIR")
    kernels = Path(anchorstream.__file__).parent / "_kernels"
    where = Path(cache) if cache else kernels / "__pycache__"
    return any(where.rglob("*.nbi")) if where.is_dir() else False


#: What ``fit`` and the daemon say where :func:`kernels_cached` is False.
FIRST_RUN = ("numba's cache of the kernels is empty: this first run compiles them once "
             "(half a minute on a small machine); later runs reuse the cache")


def entry() -> None:
    """The ``anchorstream`` command (and ``python -m daemon``): :func:`main`, then the end of
    the process.

    The process's environment comes first (:func:`prepare_process`). A command that sets
    ``quick_exit`` (``fit``: one fit, its snapshot written and synced) ends the process
    without tearing the interpreter down (:func:`_quick_exit`): freeing every object and
    module, the numba kernels' compiled code among them, took 0.25-0.35 CPU s of a 3-second
    fit of the State of the Union paragraphs, about a tenth of it.
    """
    prepare_process()
    parser, args = _parse(None)
    if getattr(args, "quick_exit", False):
        # A batch in a process of its own (``fit``), its modules imported: what they made is
        # frozen and young objects are collected every 20,000 allocations, not 700 (the
        # collector's CPU in a fit of the State of the Union paragraphs 0.37 -> 0.08 s of 3.4;
        # daemon/collector.py). main(), which tests call in their own process, leaves it be.
        from daemon.collector import for_batch

        for_batch()
    code, quick = _run(parser, args)
    if quick:
        _quick_exit(code)
    sys.exit(code)


def _parse(argv: list[str] | None) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """The parser of ``argv`` (default ``sys.argv[1:]``) and what it parsed; without a command
    the parser holds every command, which its help lists."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
    return parser, parser.parse_args(argv)


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[int, bool]:
    """``(exit code, whether the process may end without teardown)`` of the parsed command."""
    if not getattr(args, "func", None):
        parser.print_help()
        return 2, False
    handler = logging.StreamHandler()
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
        if args.command in SERVICES else CommandFormatter("%(message)s"))
    logging.basicConfig(level=args.log_level, handlers=[handler])
    if getattr(args, "uses_store", lambda _: True)(args):
        from anchorstream.store import configure_logging as configure_store_logging

        configure_store_logging()
    quick = bool(getattr(args, "quick_exit", False))
    try:
        return int(args.func(args) or 0), quick
    except AnchorstreamError as exc:
        # Expected failures (bad input, missing files, corrupt snapshots) get one clear line,
        # not a traceback.
        print(f"anchorstream {args.command}: error: {exc}", file=sys.stderr)
        return 1, quick
    except BrokenPipeError:
        # Output piped into `head` and the reader went away: not an error worth a traceback.
        sys.stderr.close()
        return 0, False
    except KeyboardInterrupt:
        print(f"anchorstream {args.command}: interrupted", file=sys.stderr)
        return 130, False


def _quick_exit(code: int) -> None:
    """End the process with ``code`` once its output is flushed and its exit handlers have run
    (logging's, temporary directories', thread pools'), skipping only the interpreter's
    teardown, as mypy does for the same reason. Where a thread other than the main one still
    runs (one that is not a daemon thread), the process exits normally instead, so that
    nothing is cut short."""
    import atexit
    import os
    import threading

    if any(t.is_alive() and not t.daemon and t is not threading.main_thread()
           for t in threading.enumerate()):
        sys.exit(code)
    # CPython's own exit runs these handlers at this point of its teardown; the function is
    # the atexit module's, not public API, hence the fallback.
    run_handlers = getattr(atexit, "_run_exitfuncs", None)
    if run_handlers is None:
        sys.exit(code)
    run_handlers()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed, or a reader that went away
            pass
    os._exit(code)


if __name__ == "__main__":
    entry()
