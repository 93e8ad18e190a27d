"""``anchorstream inspect``: print a snapshot's topics readably."""

from __future__ import annotations

import json
from pathlib import Path

from anchorstream.snapshot import format_topics, read_snapshot


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "inspect",
        help="print the topics of a snapshot directory",
        description="Print each topic's id, anchor word, prevalence and top words.",
    )
    p.add_argument("snapshot", type=Path, metavar="DIR", help="snapshot directory")
    p.add_argument("--words", type=int, default=10, help="top words to show per topic")
    p.add_argument("--json", action="store_true", help="print the manifest and topics as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    snap = read_snapshot(args.snapshot)
    if args.json:
        print(json.dumps({"manifest": snap.manifest, "topics": snap.topics}, indent=2))
    else:
        print(format_topics(snap, n_words=args.words))
    return 0
