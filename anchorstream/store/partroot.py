"""A partitioned root as a whole: finding its partitions, and summarizing them.

``anchorstream store-info`` and ``anchorstream fit --store`` take either one store or the root
of the partitioned layout (:mod:`anchorstream.store.partitions`). A local root is recognised
by its ``partitions/<topic>/<partition>`` directories (:func:`find_partitions`); an object
store cannot be listed through Icechunk, so a URL root needs its partitions named
(``TOPIC:N`` for partitions ``0 .. N-1``, :func:`parse_partitions`). :func:`partitioned_info`
reports each partition's documents, offset and version and their sum, read sparse (no
``V × V`` array), with the same pins for both.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from anchorstream.errors import InputError
from anchorstream.store.location import parse_store_url
from anchorstream.store.partitions import (
    PARTITIONS_DIR,
    partition_key,
    partition_url,
    pin_partitions,
    read_partitions,
)
from anchorstream.store.repository import disk_bytes, open_repo, repo_exists, storage

__all__ = ["find_partitions", "parse_partitions", "partitioned_info", "pin_committed",
           "sparse_fingerprint"]


def parse_partitions(specs: Iterable[str]) -> list[tuple[str, int]]:
    """``["news:3", "b:1"]`` → ``[("b", 0), ("news", 0), ("news", 1), ("news", 2)]``.

    >>> parse_partitions(["news:2"])
    [('news', 0), ('news', 1)]
    """
    out = set()
    for spec in specs:
        topic, sep, n = str(spec).rpartition(":")
        if not sep or not topic or not n.isdigit() or int(n) < 1:
            raise InputError(f"--partitions {spec!r}: expected TOPIC:N (N >= 1 partitions, "
                             "numbered 0 to N-1)")
        out |= {(topic, p) for p in range(int(n))}
    return sorted(out)


def find_partitions(root, *, named: Sequence[str] = (),
                    storage_options: Mapping[str, Any] | None = None
                    ) -> list[tuple[str, int]] | None:
    """The partitions of the partitioned root ``root``, or None when ``root`` is one store.

    ``named`` (``TOPIC:N`` specs) lists them; otherwise a local root's
    ``partitions/<topic>/<p>`` directories do. A root that is neither a store nor a
    partitioned root (or an object-store URL without ``named``) is left to the caller's
    single-store read, whose error says there is no store.
    """
    if named:
        return parse_partitions(named)
    url = parse_store_url(root)
    if url.scheme != "local":
        return None
    store, _ = storage(root, storage_options)
    base = os.path.join(url.path, PARTITIONS_DIR)
    if repo_exists(store, root) or not os.path.isdir(base):
        return None
    found = []
    for topic in sorted(os.listdir(base)):
        tdir = os.path.join(base, topic)
        if os.path.isdir(tdir):
            found += [(topic, int(p)) for p in os.listdir(tdir)
                      if p.isdigit() and os.path.isdir(os.path.join(tdir, p))]
    return sorted(found) or None


def pin_committed(root, partitions: Sequence[tuple[str, int]], *,
                  storage_options: Mapping[str, Any] | None = None) -> dict[str, str | None]:
    """:func:`~anchorstream.store.partitions.pin_partitions`, refusing a root none of whose
    partitions has a commit (InputError): nothing to summarize or fit. Where ``root`` is
    itself one store, the error says so (the partitions were named for a plain store)."""
    pins = pin_partitions(root, partitions, storage_options=storage_options)
    if not any(pins.values()):
        named = [f"{t}:{p}" for t, p in partitions]
        store, _ = storage(root, storage_options)
        hint = ("; it is one store, not a partitioned root: drop --partitions"
                if repo_exists(store, root) else "")
        raise InputError(f"no partition store under {os.fspath(root)!r} has a commit yet "
                         f"(partitions {named}){hint}")
    return pins


def sparse_fingerprint(upper, words: Sequence[str]) -> float:
    """:func:`anchorstream.store.fingerprint` of the symmetric counts whose upper triangle
    (diagonal included) is ``upper``: ``2 gᵀUg − Σ_i U_ii g_i²``."""
    g = np.asarray([1.0 + (zlib.crc32(w.encode("utf-8")) % 1000) / 1000.0 for w in words])
    if not g.size:
        return 0.0
    return float(2.0 * (g @ (upper @ g)) - (upper.diagonal() * g * g).sum())


def partitioned_info(root, partitions: Iterable[tuple[str, int]], *,
                     storage_options: Mapping[str, Any] | None = None) -> dict:
    """Summary of every partition's branch head and of their sum (``store-info``).

    Returns
    -------
    dict
        As :func:`anchorstream.store.store_info` for the sum (``version`` names the set of
        pinned versions; ``vocab_size`` the union's words; ``fingerprint`` the summed counts'),
        with ``layout: "partitioned"`` and ``partitions``: ``{key: {"version", "offset",
        "n_docs_added", "n_words", "bytes_on_disk"}}``.
    """
    partitions = sorted(set(partitions))
    pins = pin_committed(root, partitions, storage_options=storage_options)
    st = read_partitions(root, partitions, versions=pins, storage_options=storage_options,
                         sparse=True)
    info = {key: dict(value) for key, value in st.partitions.items()}
    total_bytes = 0
    for topic, p in partitions:
        url = partition_url(root, topic, p)
        entry = info[partition_key(topic, p)]
        entry["bytes_on_disk"] = 0
        if entry["version"] is not None:
            repo, local = open_repo(url, storage_options)
            entry["bytes_on_disk"] = disk_bytes(local, repo)
            total_bytes += entry["bytes_on_disk"]
    c = st.cooccurrence
    return {
        "layout": "partitioned",
        "version": st.version,
        "num_docs": c.num_docs,
        "num_tokens": c.num_tokens,
        "vocab_size": len(st.words),
        "length_cap": c.length_cap,
        "offsets": st.offsets,
        "bytes_on_disk": total_bytes,
        "fingerprint": sparse_fingerprint(c.upper, st.words),
        "n_docs_added": st.n_docs_added,
        "clock": st.clock,
        "partitions": info,
    }
