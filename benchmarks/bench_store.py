#!/usr/bin/env python
"""Store benchmark: ingest throughput, checkpoint cost, disk, reopen, crash trials.

What it measures (issue 3 targets in brackets), on one core (the process pins itself to one
CPU; every store kernel is serial):

1. **Throughput** through tokenize → vocabulary → accumulate for short (≈10 tokens) and
   news-length (≈300 tokens) documents [≥ 50,000 and ≥ 2,000 docs/s]. Reported per stage and
   end to end, including the accumulator's final fold into a sparse delta, and through
   ``CooccurrenceStore.add`` (which adds the decay/window bookkeeping).
2. **Checkpoint** after 10,000 short documents at V = 20,000 (a seeded, full vocabulary, so the
   matrix really is 20,000 × 20,000) [< 2 s]: seconds and bytes written per checkpoint, and the
   cost of a compaction (folding the segments into the dense sharded matrix).
3. **Disk** after ``--n-docs`` (default 1,000,000) short documents, checkpointing every 10,000,
   with the default compaction and garbage-collection schedule.
4. **Reopen**: ``CooccurrenceStore.open`` (what a restarted daemon pays) and
   ``read_committed`` (the dense read that inference pays).
5. **Crash trials** (``--crash-trials``, default 200): the SIGKILL harness of
   ``tests/test_crash.py``, more trials than the test suite runs.

Documents are synthetic text: pseudo-words drawn from a Zipf(1.07) law over ``--universe``
distinct words, so the tokenizer does real work and the vocabulary sees a realistic tail.

Run from the repository root::

    python benchmarks/bench_store.py            # everything (several minutes)
    python benchmarks/bench_store.py --quick    # smaller sizes, for a smoke test
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from anchorstream.stats.accumulator import Accumulator  # noqa: E402
from anchorstream.store import CooccurrenceStore, configure_logging, read_committed  # noqa: E402
from anchorstream.text.tokenize import Tokenizer  # noqa: E402
from anchorstream.text.vocabulary import StreamingVocabulary  # noqa: E402


def pseudo_words(n: int, rng: np.random.Generator) -> list[str]:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    out: dict[str, None] = {}
    while len(out) < n:
        k = int(rng.integers(3, 11))
        out["".join(rng.choice(letters, size=k))] = None
    return list(out)


class Corpus:
    """Zipf-distributed pseudo-word documents, generated lazily in blocks."""

    def __init__(self, universe: int, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.words = pseudo_words(universe, self.rng)
        p = 1.0 / np.arange(1, universe + 1) ** 1.07
        self.cdf = np.cumsum(p / p.sum())

    def docs(self, n: int, length: int) -> list[str]:
        idx = np.searchsorted(self.cdf, self.rng.random((n, length)))
        idx = np.minimum(idx, len(self.words) - 1)
        w = self.words
        return [" ".join([w[i] for i in row]) for row in idx]


def timed(fn, *a, **k):
    t = time.perf_counter()
    out = fn(*a, **k)
    return out, time.perf_counter() - t


def timed_cpu(fn, *a, **k):
    """(result, wall seconds, CPU seconds of this process): on a shared machine the CPU time
    is what one dedicated core would need; both are reported."""
    t, c = time.perf_counter(), time.process_time()
    out = fn(*a, **k)
    return out, time.perf_counter() - t, time.process_time() - c


def dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def throughput(corpus: Corpus, n_docs: int, length: int, capacity: int, tmp: Path) -> dict:
    tok = Tokenizer()
    texts = corpus.docs(n_docs, length)
    # warm-up: compiled kernels loaded, regex built
    v = StreamingVocabulary(16, admit_threshold=1)
    a = Accumulator(16)
    ip, sl, _ = v.observe_batch([tok(t) for t in texts[:50]])
    a.add(ip, np.minimum(sl, 15))
    a.delta()

    tokens, t_tok, c_tok = timed_cpu(lambda: [tok(t) for t in texts])
    vocab = StreamingVocabulary(capacity, admit_threshold=5)
    acc = Accumulator(capacity)
    batch = 1000

    def vocab_acc():
        for s in range(0, n_docs, batch):
            ip, sl, ev = vocab.observe_batch(tokens[s : s + batch])
            acc.add(ip, sl, 1.0, ev)
        acc._fold()  # every pair computed; turning it into COO is the checkpoint's work
        return acc

    def end_to_end():
        v2 = StreamingVocabulary(capacity, admit_threshold=5)
        a2 = Accumulator(capacity)
        for s in range(0, n_docs, batch):
            ip, sl, ev = v2.observe_batch([tok(t) for t in texts[s : s + batch]])
            a2.add(ip, sl, 1.0, ev)
        a2._fold()
        return a2

    acc, t_va, c_va = timed_cpu(vocab_acc)
    delta, t_extract = timed(acc.delta)

    _, t_e2e, c_e2e = timed_cpu(end_to_end)
    store = CooccurrenceStore.create(str(tmp / f"tp-{length}"), capacity=capacity,
                                     admit_threshold=5)

    def via_store():
        for s in range(0, n_docs, batch):
            store.add([tok(t) for t in texts[s : s + batch]])
        for a in store._accs.values():
            a._fold()  # every pair computed, as in the paths above

    _, t_store, c_store = timed_cpu(via_store)
    return {
        "docs": n_docs,
        "tokens_per_doc": length,
        "tokenize_docs_per_s": n_docs / t_tok,
        "tokenize_docs_per_cpu_s": n_docs / c_tok,
        "vocab_accumulate_docs_per_s": n_docs / t_va,
        "vocab_accumulate_docs_per_cpu_s": n_docs / c_va,
        "end_to_end_docs_per_s": n_docs / t_e2e,
        "end_to_end_docs_per_cpu_s": n_docs / c_e2e,
        "through_store_add_docs_per_s": n_docs / t_store,
        "through_store_add_docs_per_cpu_s": n_docs / c_store,
        "delta_nnz": int(delta.nnz),
        "delta_to_coo_seconds": t_extract,
        "vocabulary_size": len(vocab),
    }


def checkpoint_cost(corpus: Corpus, V: int, n_checkpoints: int, tmp: Path) -> dict:
    tok = Tokenizer()
    seed = [w for w in corpus.words[: V + 200] if tok([w])][:V]
    path = tmp / "ckpt"
    store = CooccurrenceStore.create(str(path), capacity=V, seed=seed, admit_threshold=1e9,
                                     max_segments=10**6, compact_bytes=2**62, gc_every=0)
    times, written, nnz = [], [], []
    for _ in range(n_checkpoints):
        store.add([tok(t) for t in corpus.docs(10_000, 10)])
        before = dir_bytes(path)
        _, t = timed(store.checkpoint, {"bench": 1})
        times.append(t)
        written.append(dir_bytes(path) - before)
        nnz.append(store._state.segments[-1].nnz)
    _, t_compact = timed(store.compact)
    _, t_open = timed(CooccurrenceStore.open, str(path))
    return {
        "V": V,
        "docs_per_checkpoint": 10_000,
        "checkpoint_seconds": times,
        "checkpoint_seconds_median": float(np.median(times)),
        "bytes_written_per_checkpoint_median": int(np.median(written)),
        "segment_nnz_median": int(np.median(nnz)),
        "compaction_seconds": t_compact,
        "compacted_checkpoints": n_checkpoints,
        "open_seconds": t_open,
        "disk_bytes_after_compaction": dir_bytes(path),
    }


def disk_after(corpus: Corpus, n_docs: int, V: int, tmp: Path, read_dense: bool) -> dict:
    tok = Tokenizer()
    path = tmp / "long"
    # Default schedule (compaction in steps, GC every 20 checkpoints) except gc_min_age: the
    # run is too short for 60 s-old versions to exist.
    store = CooccurrenceStore.create(str(path), capacity=V, admit_threshold=5, gc_min_age=0)
    t0 = time.perf_counter()
    compactions = 0
    ckpt_times = []
    for s in range(0, n_docs, 10_000):
        store.add([tok(t) for t in corpus.docs(min(10_000, n_docs - s), 10)])
        n_seg = len(store._state.segments)
        _, t = timed(store.checkpoint, {"docs": s + 10_000})
        ckpt_times.append(t)
        if len(store._state.segments) < n_seg:
            compactions += 1
    total = time.perf_counter() - t0
    disk_scheduled = dir_bytes(path)  # as the default schedule left it
    store.collect_garbage()
    steps = sum(1 for info in store._repo.ancestry(branch="main")
                if info.message.startswith("compact"))
    out = {
        "docs": n_docs,
        "V": V,
        "seconds_total": total,
        "checkpoints": len(ckpt_times),
        # Each includes the compaction step or garbage collection that ran after it.
        "checkpoint_seconds_median": float(np.median(ckpt_times)),
        "checkpoint_seconds_p95": float(np.percentile(ckpt_times, 95)),
        "checkpoint_seconds_max": float(np.max(ckpt_times)),
        "compactions_completed": compactions,
        "compaction_commits_kept": steps,
        "disk_bytes_default_schedule": disk_scheduled,
        "disk_bytes": dir_bytes(path),
        "vocabulary_size": len(store.vocabulary),
    }
    _, out["open_seconds"] = timed(CooccurrenceStore.open, str(path))
    if read_dense:
        (cooc, words, _, _), out["read_committed_seconds"] = timed(read_committed, str(path))
        out["read_committed_shape"] = list(cooc.counts.shape)
    return out


def crash_trials(n: int, tmp: Path) -> dict:
    from tests.test_crash import CrashHarness

    tmp.mkdir(parents=True, exist_ok=True)
    h = CrashHarness(tmp)
    try:
        shortest = h.run(str(tmp / "calibration"), None)["elapsed"]
        rng = np.random.default_rng(7)
        killed = 0
        t0 = time.perf_counter()
        for k in range(n):
            r = h.trial(str(tmp / f"c{k}"), rng.uniform(0, 0.9 * shortest))
            killed += r["killed"]
            if not r["killed"]:
                shortest = min(shortest, r["elapsed"])
            shutil.rmtree(tmp / f"c{k}", ignore_errors=True)
        return {"trials": n, "killed_mid_run": killed, "all_equal_batch": True,
                "seconds": time.perf_counter() - t0}
    finally:
        h.close()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    p.add_argument("--n-docs", type=int, default=1_000_000, help="documents for the disk test")
    p.add_argument("--universe", type=int, default=60_000, help="distinct words in the corpus")
    p.add_argument("--crash-trials", type=int, default=200)
    p.add_argument("--no-dense-read", action="store_true",
                   help="skip read_committed of the V=20,000 store (needs ~7 GB of memory)")
    p.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    args = p.parse_args(argv)
    configure_logging()  # as the anchorstream command does: no Icechunk warning per open
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    quick = args.quick
    corpus = Corpus(args.universe)
    tmp = Path(tempfile.mkdtemp(prefix="bench_store_"))
    results: dict = {
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpus_used": 1},
    }
    try:
        print("throughput, short documents ...", flush=True)
        results["short"] = throughput(corpus, 20_000 if quick else 200_000, 10, 20_000, tmp)
        print(json.dumps(results["short"], indent=2), flush=True)
        print("throughput, news-length documents ...", flush=True)
        results["news"] = throughput(corpus, 1_000 if quick else 10_000, 300, 20_000, tmp)
        print(json.dumps(results["news"], indent=2), flush=True)
        print("checkpoint at V = 20,000 ...", flush=True)
        results["checkpoint"] = checkpoint_cost(corpus, 20_000, 2 if quick else 5, tmp)
        print(json.dumps(results["checkpoint"], indent=2), flush=True)
        n = 50_000 if quick else args.n_docs
        print(f"disk after {n} short documents ...", flush=True)
        results["disk"] = disk_after(corpus, n, 20_000, tmp, not (quick or args.no_dense_read))
        print(json.dumps(results["disk"], indent=2), flush=True)
        if args.crash_trials:
            k = 10 if quick else args.crash_trials
            print(f"{k} crash trials ...", flush=True)
            results["crash"] = crash_trials(k, tmp / "crash")
            print(json.dumps(results["crash"], indent=2), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
