"""Peak memory of the daemon's refresh against the vocabulary capacity V, per rectifier.

What a deployment has to size for (deploy/README.md, "Resources"): a refresh's memory grows
with V and is largest when every pair of words has been seen together, so each store here is
built that way: ``2.5 V² / 150²`` documents of 150 distinct words drawn uniformly (every pair
stored, with high probability) plus ``2 V`` documents of 60 words from a planted model with 20
topics, so that the model has topics to find, then compacted (the daemon keeps the live
segments under ``store.compact_bytes``; a store read with large live segments holds them too),
with the daemon's delay line (``store.count_delay``, 1,000 documents held back and added to a
copy of the counts at every refresh; ``--count-delay 0`` for none). ``--partitions P`` builds
the scaled-out layout instead (``store.layout: partitioned``): P partition stores, each with
its own delay line, the documents dealt to them in turn, read by the scaled-out refresher's
reader (``daemon/scaled.py``), whose warm refresh reads only the partition that grew.
``--store`` measures an existing store instead (a real stream's, where far fewer pairs are
stored; a partitioned root with ``--partitions``).

For every store and rectifier (``model.rectify_method``: ``auto`` is the low-rank default,
``ap`` the dense one, the peer), a fresh process runs the daemon's
:class:`~daemon.refresh.Refresher` with the shipped settings (K = 20) after a warm-up refresh
on a small store (so that libraries and compiled kernels are loaded before anything is
measured), then a cold refresh, then 1% more documents and a warm refresh, sampling its
resident memory every 5 ms: the rise above the resident memory before the cold refresh, in
GB and in bytes per V², at the peak of each refresh and after the cold one (what stays held).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_refresh_memory.py [--sizes 4000,6000]
        [--methods auto,ap] [--count-delay N] [--partitions P] [--min-df DF]
        [--store PATH --store-words V]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

WORK = REPO / "benchmarks" / ".cache" / "refresh-memory"
K = 20
UNIFORM_WORDS = 150
#: The partitioned stores' topic (``--partitions``).
TOPIC = "bench"


def _words(n: int, prefix: str = "w") -> list[str]:
    return [f"{prefix}{j:05d}" for j in range(n)]


def _planted_docs(V: int, n_docs: int, seed: int, prefix: str = "w") -> list[list[str]]:
    from anchorstream.synthetic import planted_model, sample_documents

    words = _words(V, prefix)
    X, _ = sample_documents(planted_model(V, K, random_state=0), n_docs, doc_length=60,
                            random_state=seed)
    return [[words[j] for j, c in zip(X.indices[X.indptr[i]:X.indptr[i + 1]],
                                      X.data[X.indptr[i]:X.indptr[i + 1]]) for _ in range(int(c))]
            for i in range(X.shape[0])]


def build_store(V: int, path: Path, count_delay: int, partitions: int = 0) -> Path:
    """A store of capacity V in which (nearly) every pair of words is stored; reused. Its
    delay line (``store.count_delay``) holds the last ``count_delay`` documents back, within
    the daemon's bound on their word pairs. With ``partitions``, the partitioned layout
    instead (``store.layout: partitioned``): that many partition stores of topic
    :data:`TOPIC` under ``path``, each of capacity V with a delay line of its own, the
    documents dealt to them in turn (as a producer without keys spreads them)."""
    from anchorstream.store import CooccurrenceStore
    from anchorstream.store.delay import COUNT_DELAY_PAIRS
    from anchorstream.store.partitions import partition_key, partition_url

    done = path / "COMPLETE"
    if done.exists():
        return path
    if path.exists():
        import shutil

        shutil.rmtree(path)
    t0 = time.perf_counter()
    urls = ([partition_url(path, TOPIC, p) for p in range(partitions)] if partitions
            else [str(path)])
    keys = ([partition_key(TOPIC, p) for p in range(partitions)] if partitions
            else ["bench:0"])
    stores = [CooccurrenceStore.create(
        url, capacity=V, admit_threshold=1, count_delay=count_delay,
        count_delay_pairs=COUNT_DELAY_PAIRS if count_delay else None) for url in urls]
    words = np.array(_words(V))
    offsets = [0] * len(stores)

    def add(i: int, docs) -> None:
        stores[i].add(docs)
        offsets[i] += len(docs)
        stores[i].checkpoint({keys[i]: offsets[i]})

    for i in range(len(stores)):
        add(i, [list(words)])  # every word admitted at once
    rng = np.random.default_rng(0)
    n_uniform = int(2.5 * V * V / UNIFORM_WORDS ** 2)
    for n, start in enumerate(range(0, n_uniform, 2000)):
        add(n % len(stores), [list(words[rng.choice(V, UNIFORM_WORDS, replace=False)])
                              for _ in range(min(2000, n_uniform - start))])
    planted = _planted_docs(V, 2 * V, seed=1)
    for i in range(len(stores)):
        add(i, planted[i::len(stores)])
    # Folded into the base, as the daemon's compaction keeps a store: its live segments stay
    # under store.compact_bytes, whatever V is.
    for store in stores:
        store.compact()
    done.write_text(json.dumps({"V": V, "uniform_documents": n_uniform,
                                "count_delay": count_delay, "partitions": partitions}))
    print(f"  built the store for V = {V} ({n_uniform} + {2 * V} documents"
          + (f", {partitions} partitions" if partitions else "") + ") in "
          f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return path


# ------------------------------------------------------------------------------ the child


def _rss() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class _Sampler(threading.Thread):
    """The largest resident memory seen since the last :meth:`reset`."""

    def __init__(self):
        super().__init__(daemon=True)
        self.peak = 0

    def reset(self) -> None:
        self.peak = _rss()

    def run(self) -> None:
        while True:
            self.peak = max(self.peak, _rss())
            time.sleep(0.005)


def _partitioned_reader(root: Path, V: int, method: str, partitions: int):
    """The scaled-out refresher's reader (daemon/scaled.py), as the daemon configures it."""
    from daemon.scaled import partitioned_reader
    from daemon.settings import parse_config

    cfg = parse_config({"store": {"path": str(root), "layout": "partitioned"},
                        "vocab": {"capacity": V},
                        "model": {"num_topics": K, "rectify_method": method},
                        "kafka": {"topics": [TOPIC], "bootstrap_servers": "localhost:9092"}})
    parts = {(TOPIC, p) for p in range(partitions)}
    return partitioned_reader(cfg, lambda: parts)


def _stored(store: Path, partitions: int) -> tuple[float, int]:
    """The share of the V (V + 1) / 2 pairs stored (in the partitions' union) and the
    documents the delay lines hold back."""
    from anchorstream.store import open_committed_sparse
    from anchorstream.store.partitions import partition_url, read_partitions

    urls = ([partition_url(store, TOPIC, p) for p in range(partitions)] if partitions
            else [str(store)])
    waiting = 0
    for url in urls:
        last = open_committed_sparse(url)
        waiting += 0 if last.waiting is None else int(round(last.waiting.num_docs))
    if partitions:
        last = read_partitions(store, [(TOPIC, p) for p in range(partitions)], sparse=True)
    V = last.cooccurrence.n_words
    return last.cooccurrence.upper.nnz / (V * (V + 1) / 2), waiting


def child(store: Path, V: int, method: str, grow: bool, partitions: int = 0,
          min_df: float | None = None) -> dict:
    from anchorstream.store import CooccurrenceStore
    from anchorstream.store.partitions import partition_key, partition_url
    from daemon.publish import Publisher
    from daemon.refresh import Refresher
    from daemon.settings import ModelConfig, VocabConfig

    model = ModelConfig(num_topics=K, rectify_method=method).model_kwargs()
    vocab = VocabConfig()
    tmp = Path(tempfile.mkdtemp(prefix="refresh-memory-"))
    # Warm-up on a small store: imports, compiled kernels, the allocator's first arenas.
    small = CooccurrenceStore.create(tmp / "small", capacity=300, admit_threshold=1)
    docs = _planted_docs(300, 600, seed=3, prefix="s")
    small.add(docs[:500])
    small.checkpoint({"bench:0": 500})
    warm_up = Refresher(small.url, Publisher(tmp / "small-snapshots"),
                        model_kwargs={**model, "n_topics": 5}, min_df=1)
    warm_up.refresh_once()
    small.add(docs[500:])
    small.checkpoint({"bench:0": 600})
    warm_up.refresh_once()
    del warm_up, small
    gc.collect()

    sampler = _Sampler()
    sampler.start()
    reader = _partitioned_reader(store, V, method, partitions) if partitions else None
    refresher = Refresher(str(store), Publisher(tmp / "snapshots"), model_kwargs=model,
                          min_df=vocab.min_df if min_df is None else min_df,
                          max_df_ratio=vocab.max_df_ratio, reader=reader)
    before = _rss()
    sampler.reset()
    first = refresher.refresh_once()
    cold_peak, held = sampler.peak - before, _rss() - before
    out = {"V": V, "method": method, "words": first["n_words"], "sparse": refresher.sparse,
           "cold_peak": cold_peak, "held": held, "rss_before": before}
    if grow:
        # 1% more documents, then the warm refresh the daemon would run next.
        # (Into one partition: the partitioned reader reads only the partitions that moved.)
        writer = CooccurrenceStore.open(partition_url(store, TOPIC, 0) if partitions
                                        else str(store))
        writer.add(_planted_docs(V, max(first["num_docs"] // 100, 10), seed=11))
        writer.checkpoint({partition_key(TOPIC, 0) if partitions else "bench:0": 10 ** 9})
        del writer
        sampler.reset()
        second = refresher.refresh_once()
        out.update(warm_peak=sampler.peak - before, warm=second["warm"])
    del refresher, reader
    gc.collect()
    out["stored_share"], out["waiting"] = _stored(store, partitions)
    return out


# ------------------------------------------------------------------------------ the parent


def run_child(store: Path, V: int, method: str, grow: bool, partitions: int = 0,
              min_df: float | None = None) -> dict:
    if grow:
        # The warm refresh adds documents: to a copy, so every run starts from the same store.
        import shutil

        copy = Path(tempfile.mkdtemp(prefix="refresh-memory-", dir=store.parent)) / "store"
        shutil.copytree(store, copy)
        try:
            return _run_child(copy, V, method, grow, partitions, min_df)
        finally:
            shutil.rmtree(copy.parent, ignore_errors=True)
    return _run_child(store, V, method, grow, partitions, min_df)


def _run_child(store: Path, V: int, method: str, grow: bool, partitions: int,
               min_df: float | None) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    cmd = [sys.executable, __file__, "--child", str(store), "--store-words", str(V),
           "--methods", method, "--partitions", str(partitions)] + (
               [] if grow else ["--no-grow"]) + (
               [] if min_df is None else ["--min-df", str(min_df)])
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"V": V, "method": method, "status": f"exit {proc.returncode}: {' / '.join(tail)}"}
    return {**json.loads(lines[-1]), "status": "ok"}


def _cell(nbytes, V) -> str:
    return "–" if nbytes is None else f"{nbytes / 1e9:.2f} GB ({nbytes / V ** 2:.1f} V²)"


def main(argv=None) -> int:
    from anchorstream.store.delay import AUTO_DELAY
    from anchorstream.store.repository import configure_logging

    configure_logging()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="4000,6000",
                   help="comma-separated capacities V of the stores built (default 4000,6000)")
    p.add_argument("--methods", default="auto,ap", help="rectify_method values (default auto,ap)")
    p.add_argument("--store", type=Path, help="measure this existing store instead")
    p.add_argument("--store-words", type=int, help="its capacity V (with --store)")
    p.add_argument("--count-delay", type=int, default=None,
                   help="the built stores' store.count_delay (default: the daemon's, "
                        f"{AUTO_DELAY}; 0 counts every document on arrival)")
    p.add_argument("--partitions", type=int, default=0,
                   help="build the partitioned layout (store.layout: partitioned) with this "
                        "many partition stores, read by the scaled-out refresher's reader "
                        "(default 0: one store)")
    p.add_argument("--no-grow", action="store_true",
                   help="no warm refresh (which adds documents to the store)")
    p.add_argument("--min-df", type=float, default=None,
                   help="the refreshes' vocab.min_df (default: the daemon's): above it, a "
                        "subset of the words is modelled, as on a live stream, where the "
                        "words admitted last are in few documents yet")
    p.add_argument("--work", type=Path, default=WORK, help=f"where stores are built ({WORK})")
    p.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    methods = a.methods.split(",")
    if a.child is not None:
        print(json.dumps(child(a.child, a.store_words, methods[0], not a.no_grow,
                               a.partitions, a.min_df)))
        return 0
    if a.store is not None:
        if a.store_words is None:
            p.error("--store needs --store-words (its capacity)")
        plan = [(a.store, a.store_words)]
    else:
        delay = AUTO_DELAY if a.count_delay is None else a.count_delay
        plan = [(build_store(V, a.work / (f"dense-{V}" + (f"-delay{delay}" if delay else "")
                                          + (f"-p{a.partitions}" if a.partitions else "")),
                             delay, a.partitions), V)
                for V in (int(x) for x in a.sizes.split(","))]
    print("| V | rectifier | stored pairs | documents waiting | words modelled | "
          "cold refresh: peak | held after | warm refresh after 1% more: peak |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for store, V in plan:
        for method in methods:
            r = run_child(store, V, method, not a.no_grow, a.partitions, a.min_df)
            if r["status"] != "ok":
                print(f"| {V} | {method} | {r['status']} | | | | | |")
                continue
            name = "low-rank (auto)" if r["sparse"] else method
            print(f"| {V:,} | {name} | {r['stored_share']:.0%} | {r['waiting']:,} | "
                  f"{r['words']:,} | "
                  f"{_cell(r['cold_peak'], V)} | {_cell(r['held'], V)} | "
                  f"{_cell(r.get('warm_peak'), V)} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
