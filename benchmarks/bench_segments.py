#!/usr/bin/env python
"""A cold read of a store holding many delta segments: read in batches against one at a time.

A daemon's store holds up to ``store.max_segments`` (64) delta segments between folds, and a
cold refresh reads every one of them (:func:`anchorstream.store.open_committed_sparse`, or
:func:`~anchorstream.store.open_committed` for the dense rectifier). The reads take the
segments in batches of :data:`anchorstream.store.segments.READ_BATCH_BYTES` of entries, each
batch one trip to Zarr's event loop, and the sparse read sums a batch's segments in pairs
(:func:`anchorstream.stats.sparse.csr_add_all`). The peer, measured in the same run, is the
same code with a budget of one byte: one segment a trip, added one at a time to the running
sum, as every read did before (which took seven trips a segment besides).

The script ingests a corpus into a store over ``--checkpoints`` checkpoints (compaction off,
so every checkpoint stays a segment), then times both reads of it, best of ``--repeat``, wall
and CPU seconds, and the largest difference between the two ways' counts. ``--s3`` puts a
copy of the store on moto's S3 server on an ephemeral port (a Python server on this machine:
no network latency, so it shows the requests' cost here, not a cloud's) and times the sparse
read there too.

Run from the repository root::

    NUMPY_MADVISE_HUGEPAGE=0 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 PYTHONPATH=$PWD \\
        .venv/bin/python benchmarks/bench_segments.py --corpus medium [--s3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

import anchorstream.store.segments as segments  # noqa: E402
from anchorstream.store import (CooccurrenceStore, open_committed,  # noqa: E402
                                open_committed_sparse)
from benchmarks.bench_sparse_read import documents  # noqa: E402


def _best(fn, repeat: int):
    """``(result, best wall s, best CPU s)`` of ``repeat`` calls."""
    walls, cpus, out = [], [], None
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return out, min(walls), min(cpus)


def _both(label: str, read, repeat: int) -> None:
    """Time ``read`` one segment a trip (the peer) and in batches; print one row."""
    budget = segments.READ_BATCH_BYTES
    try:
        segments.READ_BATCH_BYTES = 1
        one, w1, c1 = _best(read, repeat)
    finally:
        segments.READ_BATCH_BYTES = budget
    batched, wb, cb = _best(read, repeat)
    a, b = (s.cooccurrence for s in (one, batched))
    if hasattr(a, "upper"):
        diff = abs(a.upper - b.upper).max()
        scale = abs(a.upper).max()
    else:
        diff, scale = np.abs(a.counts - b.counts).max(), np.abs(a.counts).max()
    print(f"{label:<14} {w1:9.3f} {c1:9.3f} {wb:9.3f} {cb:9.3f} {wb / w1:6.2f} "
          f"{diff / scale:11.1e}", flush=True)


def _moto_copy(path: Path):
    """A copy of the store at ``path`` on a moto S3 server: ``(url, options, server)``."""
    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    keys = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", **keys)
    client.create_bucket(Bucket="bench")
    for f in path.rglob("*"):
        if f.is_file():
            client.upload_file(str(f), "bench", f"store/{f.relative_to(path)}")
    options = {"endpoint_url": endpoint, "allow_http": True, "region": "us-east-1",
               "force_path_style": True, "access_key_id": "testing",
               "secret_access_key": "testing"}
    return "s3://bench/store", options, server


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", default="medium")
    p.add_argument("--capacity", type=int, default=5000)
    p.add_argument("--checkpoints", type=int, default=64)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--s3", action="store_true", help="also read a copy on moto's S3 server")
    a = p.parse_args(argv)
    docs = documents(a.corpus)
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "store"
        store = CooccurrenceStore.create(str(path), capacity=a.capacity, length_cap=25,
                                         max_segments=10**6, compact_bytes=1 << 50)
        per = -(-len(docs) // a.checkpoints)
        for k in range(a.checkpoints):
            store.add(docs[k * per:(k + 1) * per])
            store.checkpoint({"k": k})
        read = open_committed_sparse(store.url)
        print(f"# {a.corpus}: {len(docs):,} documents over {a.checkpoints} checkpoints, "
              f"{len(read.words):,} words, {read.cooccurrence.upper.nnz:,} stored pairs; "
              f"READ_BATCH_BYTES {segments.READ_BATCH_BYTES >> 20} MiB")
        print(f"{'read':<14} {'one wall':>9} {'one CPU':>9} {'batch wall':>9} "
              f"{'batch CPU':>9} {'ratio':>6} {'max rel diff':>11}")
        _both("sparse", lambda: open_committed_sparse(store.url), a.repeat)
        _both("dense", lambda: open_committed(store.url), a.repeat)
        if a.s3:
            url, options, server = _moto_copy(path)
            try:
                _both("sparse, S3", lambda: open_committed_sparse(url, storage_options=options),
                      a.repeat)
            finally:
                server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
