"""``anchorstream store-info``: what a co-occurrence store holds, at its last commit."""

from __future__ import annotations

import json


__all__ = ["register", "run"]


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "store-info",
        help="summarize a co-occurrence store",
        description=(
            "Print the store version, document and token counts, vocabulary size, offsets, bytes "
            "on disk and a slot-independent fingerprint of the matrix "
            "(Σ_ij Q_ij g(w_i) g(w_j), g(w) = 1 + (crc32(w) mod 1000)/1000)."
        ),
    )
    p.add_argument("store", metavar="DIR", help="store path or URL")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--version", dest="store_version", default=None,
                   help="a committed version (snapshot id) instead of the latest")
    p.set_defaults(func=run)


def run(args) -> int:
    from anchorstream.store import store_info  # icechunk and zarr: only for this command

    info = store_info(args.store, version=args.store_version)
    if args.json:
        print(json.dumps(info, indent=2, sort_keys=True))
        return 0
    width = max(len(k) for k in info)
    for key in sorted(info):
        value = info[key]
        if isinstance(value, dict):
            value = json.dumps(value, sort_keys=True)
        print(f"{key:<{width}}  {value}")
    return 0
