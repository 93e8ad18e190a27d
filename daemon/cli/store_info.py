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
    p.add_argument("store", metavar="DIR", help="store path or URL, or the root of a "
                   "partitioned store (store.layout: partitioned): each partition and the sum")
    p.add_argument("--partitions", action="append", default=[], metavar="TOPIC:N",
                   help="DIR is a partitioned root with partitions 0..N-1 of TOPIC (repeatable; "
                        "needed on an object store, which cannot be listed)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--version", dest="store_version", default=None,
                   help="a committed version (snapshot id) instead of the latest")
    p.set_defaults(func=run)


def run(args) -> int:
    # icechunk and zarr: only for this command
    from anchorstream.errors import InputError
    from anchorstream.store import find_partitions, partitioned_info, store_info

    parts = find_partitions(args.store, named=args.partitions)
    if parts is None:
        info = store_info(args.store, version=args.store_version)
    elif args.store_version is not None:
        raise InputError("--version names one store's commit; a partitioned root has one per "
                         "partition (store-info reads every partition's head)")
    else:
        info = partitioned_info(args.store, parts)
    if args.json:
        print(json.dumps(info, indent=2, sort_keys=True))
        return 0
    width = max(len(k) for k in info)
    for key in sorted(info):
        value = info[key]
        if key == "partitions":
            continue
        if isinstance(value, dict):
            value = json.dumps(value, sort_keys=True)
        print(f"{key:<{width}}  {value}")
    for part, entry in sorted(info.get("partitions", {}).items()):
        print(f"{part}  " + "  ".join(f"{k} {entry[k]}" for k in sorted(entry)))
    return 0
