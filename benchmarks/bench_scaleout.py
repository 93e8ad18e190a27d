"""Scale-out benchmark: commit contention by layout, ingest with 1-3 instances, summing reads.

Parts (``--part contention|ingest|read|steady``, default all), each printing a table:

* **contention** — W writer processes each commit ``--commits`` small checkpoints (a 64 KB
  array and attributes) to an S3-compatible server (moto's, in this process), either all into
  *one* Icechunk repository, each writer in its own group (a commit whose branch moved is
  rebased with Icechunk's ``ConflictDetector`` and retried), or each into *its own*
  repository. Commits per second over all writers, and conflicts per commit.
* **ingest** — ``anchorstream run`` processes on the bundled broker, a 6-partition topic holding
  ``--docs`` documents produced beforehand, a local store: the single layout (``--role all``,
  one process, the peer) and the partitioned layout with 1, 2 and 3 ``--role ingest``
  instances in one group. Documents per second from the first committed document to the last
  (group joins excluded), and CPU seconds per document of all the instances together.
* **read** — the refresher's read-and-sum (``read_partitions``, dense and ``sparse=True``, the
  low-rank refresh's) of the same documents spread over P = 1, 2, 4, 8, 16 partition stores,
  with each read's peak traced allocation, beside ``open_committed`` and
  ``open_committed_sparse`` of one store holding them all (the peers); then the refresher's
  kept reader (``PartitionReader``, which reads only the partitions that moved, from their new
  segments) against the full read in the same run, after m of the P partitions committed
  200 documents (with new words; and, ``--part steady``, with words every partition holds,
  a full vocabulary's steady state), and the memory the reader keeps.

Run: ``nice -n 10 prlimit --as=12000000000 .venv/bin/python benchmarks/bench_scaleout.py``.
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

KEYS = {"access_key_id": "testing", "secret_access_key": "testing"}


# ------------------------------------------------------------------------------ contention
def _writer(endpoint: str, prefix: str, group: str, commits: int, out):
    import icechunk
    import zarr

    storage = icechunk.s3_storage(bucket="bench", prefix=prefix, endpoint_url=endpoint,
                                  allow_http=True, region="us-east-1", force_path_style=True,
                                  **KEYS)
    repo = icechunk.Repository.open(storage)
    conflicts = 0
    data = np.random.default_rng(0).random(8192)
    t0 = time.perf_counter()
    for i in range(commits):
        session = repo.writable_session("main")
        root = zarr.open_group(session.store, mode="r+")
        g = root.require_group(group)
        g.create_array(f"seg{i}", shape=data.shape, dtype="f8", chunks=data.shape)[:] = data
        g.attrs["offset"] = i
        while True:
            try:
                session.commit(f"{group} {i}")
                break
            except icechunk.ConflictError:
                conflicts += 1
                session.rebase(icechunk.ConflictDetector())
    out.put((conflicts, time.perf_counter() - t0))


def contention(commits: int) -> None:
    import boto3
    import icechunk
    import zarr
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                 aws_access_key_id="testing", aws_secret_access_key="testing"
                 ).create_bucket(Bucket="bench")

    def create(prefix):
        storage = icechunk.s3_storage(bucket="bench", prefix=prefix, endpoint_url=endpoint,
                                      allow_http=True, region="us-east-1",
                                      force_path_style=True, **KEYS)
        repo = icechunk.Repository.create(storage)
        s = repo.writable_session("main")
        zarr.open_group(s.store, mode="w")
        s.commit("init")

    print(f"\n## Commit contention (moto S3 server, {commits} commits per writer)\n")
    print("| writers | layout | commits/s (all writers) | conflicts per commit |")
    print("| ---: | --- | ---: | ---: |")
    ctx = mp.get_context("spawn")
    for writers in (1, 2, 3, 6):
        for shared in (True, False):
            base = uuid.uuid4().hex
            prefixes = [base] if shared else [f"{base}/p{w}" for w in range(writers)]
            for p in prefixes:
                create(p)
            q = ctx.Queue()
            procs = [ctx.Process(target=_writer, args=(
                endpoint, prefixes[0] if shared else prefixes[w], f"p{w}", commits, q))
                for w in range(writers)]
            for p in procs:
                p.start()
            results = [q.get() for _ in procs]
            for p in procs:
                p.join()
            conflicts = sum(r[0] for r in results)
            rate = writers * commits / max(r[1] for r in results)
            layout = "one repository, a group per writer" if shared else "a repository per writer"
            print(f"| {writers} | {layout} | {rate:.1f} | {conflicts / (writers * commits):.2f} |",
                  flush=True)
    server.stop()


# ------------------------------------------------------------------------------ ingest
def _config(tmp: Path, boot: str, topic: str, layout: str) -> Path:
    import yaml

    cfg = {
        "kafka": {"bootstrap_servers": boot, "topics": [topic], "group_id": uuid.uuid4().hex,
                  "session_timeout_ms": 6000, "heartbeat_interval_ms": 1000,
                  "max_poll_interval_ms": 60000},
        "store": {"path": str(tmp / f"store-{layout}-{uuid.uuid4().hex[:6]}"),
                  "layout": layout, "checkpoint_every_docs": 20000,
                  "checkpoint_every_seconds": 5},
        "vocab": {"capacity": 5000},
        "model": {"num_topics": 10},
        "refresh": {"interval_seconds": 10 ** 6, "min_new_docs": 10 ** 9},
        "snapshots": {"path": str(tmp / "snaps")},
        "http": {"port": 0},
    }
    path = tmp / f"config-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _committed(cfg_path: Path, topic: str, partitions: int) -> int:
    from anchorstream.store import committed_docs, store_info
    from daemon.settings import load_config

    cfg = load_config(cfg_path)
    if cfg.store.layout == "single":
        try:
            return int(store_info(cfg.store.path)["n_docs_added"])
        except Exception:  # noqa: BLE001 - not created yet
            return 0
    return committed_docs(cfg.store.path, [(topic, p) for p in range(partitions)])


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ingest(n_docs: int) -> None:
    from kafka_broker import produce, running_broker

    partitions = 6
    print(f"\n## Ingest: {n_docs} documents of 100 Zipf tokens over 20,000 words, "
          "6 partitions, bundled broker, local store, vocab.capacity 5000\n")
    print("| layout | instances | documents/s | CPU s per 1000 documents |")
    print("| --- | ---: | ---: | ---: |")
    rng = np.random.default_rng(3)
    values = [json.dumps({"text": " ".join(f"w{r}" for r in row)}).encode()
              for row in np.minimum(rng.zipf(1.1, size=(n_docs, 100)), 20000)]
    with running_broker() as broker, tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for layout, instances in (("single", 1), ("partitioned", 1), ("partitioned", 2),
                                  ("partitioned", 3)):
            topic = f"bench-{uuid.uuid4().hex[:8]}"
            broker.create_topics({topic: partitions})
            for p in range(partitions):
                produce(broker.bootstrap_servers, topic, values[p::partitions], partition=p)
            cfg = _config(tmp, broker.bootstrap_servers, topic, layout)
            role = "all" if layout == "single" else "ingest"
            env = {**os.environ, "PYTHONPATH": str(REPO)}
            procs = [subprocess.Popen(
                [sys.executable, "-m", "daemon", "run", "--config", str(cfg), "--role", role],
                cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                for _ in range(instances)]
            first = cpu0 = None
            while True:
                n = _committed(cfg, topic, partitions)
                if n > 0 and first is None:
                    first, n_first = time.perf_counter(), n
                    cpu0 = sum(_cpu_seconds(p.pid) for p in procs)
                if n >= n_docs:
                    break
                time.sleep(0.2)
            wall = time.perf_counter() - first
            cpu = sum(_cpu_seconds(p.pid) for p in procs) - cpu0
            for p in procs:
                p.send_signal(signal.SIGTERM)
            for p in procs:
                p.wait(60)
            rate = (n_docs - n_first) / wall
            print(f"| {layout} | {instances} | {rate:,.0f} | "
                  f"{1000 * cpu / (n_docs - n_first):.2f} |", flush=True)


# ------------------------------------------------------------------------------ read
def read(n_docs: int) -> None:
    import tracemalloc

    from anchorstream.store import CooccurrenceStore, open_committed, partition_url
    from anchorstream.store import open_committed_sparse, read_partitions

    def peak_mb(fn):
        tracemalloc.start()
        try:
            fn()
            return tracemalloc.get_traced_memory()[1] / 2**20
        finally:
            tracemalloc.stop()

    # Zipf-distributed words over a 5000-word vocabulary, 30 tokens a document.
    rng = np.random.default_rng(4)
    ranks = np.minimum(rng.zipf(1.1, size=(n_docs, 30)), 5000)
    docs = [[f"w{r}" for r in row] for row in ranks]
    print(f"\n## Refresher read: {n_docs} Zipf documents (vocabulary capacity 5000) over P "
          "partition stores (local disk; median of 3)\n")
    print("| P | read_partitions s | sparse=True s | words | peak MB dense | peak MB sparse "
          "| open_committed of one store s (peer) | open_committed_sparse s (peer) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        one = CooccurrenceStore.create(root / "one", capacity=5000, admit_threshold=1)
        one.add(docs)
        one.checkpoint()
        t_one, t_one_sparse = [], []
        for _ in range(3):
            t0 = time.perf_counter()
            open_committed(root / "one")
            t_one.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            open_committed_sparse(root / "one")
            t_one_sparse.append(time.perf_counter() - t0)
        t_one, t_one_sparse = float(np.median(t_one)), float(np.median(t_one_sparse))
        for P in (1, 2, 4, 8, 16):
            base = root / f"p{P}"
            for p in range(P):
                s = CooccurrenceStore.create(partition_url(base, "t", p), capacity=5000,
                                             admit_threshold=1)
                s.add(docs[p::P])
                s.checkpoint()
            parts = [("t", p) for p in range(P)]
            times, sparse_times = [], []
            for _ in range(3):
                t0 = time.perf_counter()
                state = read_partitions(base, parts)
                times.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                read_partitions(base, parts, sparse=True)
                sparse_times.append(time.perf_counter() - t0)
            # Peak traced allocations (numpy's and scipy's arrays), one more read each.
            dense_mb = peak_mb(lambda: read_partitions(base, parts))
            sparse_mb = peak_mb(lambda: read_partitions(base, parts, sparse=True))
            print(f"| {P} | {np.median(times):.3f} | {np.median(sparse_times):.3f} | "
                  f"{len(state.words)} | {dense_mb:.0f} | {sparse_mb:.0f} | {t_one:.3f} | "
                  f"{t_one_sparse:.3f} |", flush=True)
        incremental(root, rng, max_rank=5000)


def incremental(root: Path, rng, max_rank: int, counts=(1, 2, 4, 8, 16)) -> None:
    """The refresher's kept reader (``PartitionReader``) against the full read, after ``m`` of
    the ``P`` partitions committed 200 more documents each (the stores of :func:`read`), whose
    words are Zipf ranks up to ``max_rank`` (5000: new words too, whose admission changes a
    partition's active slots and forces a full read of it; 500: words every partition holds
    already, a full vocabulary's steady state, where only the new segments are read)."""
    import tracemalloc

    from anchorstream.store import CooccurrenceStore, partition_url, read_partitions
    from anchorstream.store.partread import PartitionReader

    def warm(reader, parts) -> float:
        """Read every partition once; the MB the reader still holds after it (traced numpy
        and scipy allocations: the kept reads and the sum)."""
        tracemalloc.start()
        try:
            reader.read(parts)
            return tracemalloc.get_traced_memory()[0] / 2**20
        finally:
            tracemalloc.stop()

    kept: list[tuple[int, float, float]] = []
    print(f"\n## Refresher read, incremental: m of P partitions committed 200 more documents "
          f"(Zipf ranks <= {max_rank}) each since the last read (the stores above; median of "
          "3 rounds)\n")
    print("| P | moved m | read_partitions s (full, peer) | PartitionReader s | "
          "read_partitions sparse s (peer) | PartitionReader sparse s | sum updated in place |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | :---: |")
    for P in counts:
        base = root / f"p{P}"
        parts = [("t", p) for p in range(P)]
        stores = [CooccurrenceStore.open(partition_url(base, "t", p)) for p in range(P)]
        readers = {sparse: PartitionReader(base, sparse=sparse) for sparse in (False, True)}
        kept.append((P, warm(readers[False], parts), warm(readers[True], parts)))
        for m in sorted({0, 1, P // 2, P}):
            times: dict[str, list[float]] = {"full": [], "inc": [], "full_sp": [], "inc_sp": []}
            in_place = set()
            for _ in range(3):
                for s in stores[:m]:
                    ranks = rng.zipf(1.1, size=(200, 30))
                    ranks = np.where(ranks > max_rank, rng.integers(1, max_rank + 1,
                                                                    size=ranks.shape), ranks)
                    s.add([[f"w{r}" for r in row] for row in ranks])
                    s.checkpoint()
                for name, fn in (("full", lambda: read_partitions(base, parts)),
                                 ("inc", lambda r=readers[False]: r.read(parts)),
                                 ("full_sp", lambda: read_partitions(base, parts, sparse=True)),
                                 ("inc_sp", lambda r=readers[True]: r.read(parts))):
                    t0 = time.perf_counter()
                    fn()
                    times[name].append(time.perf_counter() - t0)
                in_place |= {readers[False].last["in_place"], readers[True].last["in_place"]}
            med = {k: float(np.median(v)) for k, v in times.items()}
            print(f"| {P} | {m} | {med['full']:.3f} | {med['inc']:.3f} | {med['full_sp']:.3f} "
                  f"| {med['inc_sp']:.3f} | {'/'.join(sorted(map(str, in_place)))} |",
                  flush=True)
        del readers, stores
    print("\nMemory the reader keeps after its first read (every partition's read and the sum; "
          "the full read keeps nothing):\n")
    print("| P | PartitionReader MB | PartitionReader sparse MB |")
    print("| ---: | ---: | ---: |")
    for P, dense_mb, sparse_mb in kept:
        print(f"| {P} | {dense_mb:.0f} | {sparse_mb:.0f} |", flush=True)


def steady(n_docs: int) -> None:
    """:func:`incremental` alone (P = 4 and 16), on stores built as :func:`read` builds them."""
    from anchorstream.store import CooccurrenceStore, partition_url

    rng = np.random.default_rng(4)
    ranks = np.minimum(rng.zipf(1.1, size=(n_docs, 30)), 5000)
    docs = [[f"w{r}" for r in row] for row in ranks]
    with tempfile.TemporaryDirectory() as d:
        for P in (4, 16):
            for p in range(P):
                s = CooccurrenceStore.create(partition_url(Path(d) / f"p{P}", "t", p),
                                             capacity=5000, admit_threshold=1)
                s.add(docs[p::P])
                s.checkpoint()
        incremental(Path(d), rng, max_rank=500, counts=(4, 16))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("contention", "ingest", "read", "steady", "all"),
                    default="all")
    ap.add_argument("--commits", type=int, default=20)
    ap.add_argument("--docs", type=int, default=30000)
    args = ap.parse_args()
    from anchorstream.store import configure_logging

    configure_logging()  # Icechunk's local-disk warning, once per open otherwise
    if args.part in ("contention", "all"):
        contention(args.commits)
    if args.part in ("read", "all"):
        read(args.docs)
    if args.part in ("steady", "all"):
        steady(args.docs)
    if args.part in ("ingest", "all"):
        ingest(args.docs)


if __name__ == "__main__":
    main()
