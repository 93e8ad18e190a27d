"""The ``anchorstream`` command line.

Every subcommand lives in its own ``daemon/cmd_<name>.py`` module exposing
``register(subparsers)``, which adds an argparse subparser whose ``func`` default is a
``run(args) -> int`` returning the exit code.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

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
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    logging.basicConfig(
        level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if getattr(args, "uses_store", lambda _: True)(args):
        from anchorstream.store import configure_logging as configure_store_logging

        configure_store_logging()
    try:
        return int(args.func(args) or 0)
    except AnchorstreamError as exc:
        # Expected failures (bad input, missing files, corrupt snapshots) get one clear line,
        # not a traceback.
        print(f"anchorstream {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # Output piped into `head` and the reader went away: not an error worth a traceback.
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print(f"anchorstream {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
