#!/usr/bin/env python
"""What a stream's late admissions cost its topics, and how much counting each document a few
documents late would win back (issue 16, item 5: "a word admitted late loses its earlier
co-occurrences").

A store fed by a stream has no first pass: a word gets a slot once its sketched document
frequency reaches ``vocab.admit_threshold`` (5), and each document is counted at once with the
slots of that moment, so a word's pairs in its first documents are never counted. This script
replays each quality-benchmark corpus in its file's order through the store's own
:class:`~anchorstream.text.vocabulary.StreamingVocabulary` (its settings as ``anchorstream
ingest --vocabulary stream --capacity C`` creates it) and counts each document ``B`` documents
after it arrived, with the vocabulary of that later moment (a *delay line*: the vocabulary
still sees every document on arrival). ``B = 0`` is what the store counts today; ``B = inf``
counts every document with the final vocabulary, which is the batch count on the stream's
words. Each variant's counted documents (their tokens in the vocabulary at counting time) are
written as pre-tokenized JSON lines and fitted by ``anchorstream fit --input --min-df 1
--duplicate-memory 0`` (every word of the stream's vocabulary kept, nothing else; documents the
stream kept apart may be equal once filtered) at the corpus's K; held-out NPMI@10
as in ``bench_quality.py``. Over ``--draws`` draws, each the file in its order with 1 % of the
documents left out at random (seeded), so the fit's own path noise shows; the table gives each
delay's mean, and its difference from ``B = inf`` paired by draw. A second table gives the
tokens each delay counts (the share of the batch count's that ``B = 0`` leaves out, and how much
of it each delay counts back); ``--counts-only`` prints it alone, without fitting.

Where the fit refines in windows (``--refine-window auto`` on long documents: mail, long,
kernel, chapters) the windows are cut over the counted tokens, not where the tokens stood in
the document as the store cuts them, so such a corpus's figures are not the store's level.

The store's delay line (``count_delay``, session 66) counts what :func:`delayed` counts
(``tests/test_bench_admission_delay.py``); ``--store`` runs the whole files through real
stores instead (``ingest --vocabulary stream --count-delay B`` and ``fit --store``). On the
whole files at C = 20,000, ``B = 0`` gives the held-out NPMI of ``anchorstream ingest --vocabulary stream`` + ``fit
--store`` (changes −0.0924 both, tech +0.2205 and +0.2204, medium +0.127 as in
benchmarks/README.md, "The stream's admission threshold") and ``B = inf`` the batch fit's
(``fit --input``: changes −0.0581 both, medium +0.159 both);
``tests/test_bench_admission_delay.py`` checks the counts themselves against a store's.

Run from the repository root, in the benchmark environment::

    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=$PWD \\
        benchmarks/.cache/venv/bin/python benchmarks/bench_admission_delay.py \\
        --corpora tech,changes,medium,verses,short --delays 0,300,1000,3000,inf --draws 5
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import tempfile
import time
from collections import deque
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from anchorstream.text.vocabulary import StreamingVocabulary  # noqa: E402
from benchmarks.quality.corpora import cache_root, load  # noqa: E402
from benchmarks.quality.run import anchorstream_command, run  # noqa: E402
from daemon.cli.fit_counts import read_documents  # noqa: E402
from daemon.cli.options import MAX_DF, stopwords_tokenizer  # noqa: E402

#: The store's admission threshold (``vocab.admit_threshold``'s default).
ADMIT_THRESHOLD = 5.0


def delayed(docs: list[list[str]], capacity: int, delay: float,
            admit_threshold: float = ADMIT_THRESHOLD) -> tuple[list[list[str]], int]:
    """Each document's tokens in the vocabulary ``delay`` documents after its arrival (the
    rest of the stream's documents counted with the final vocabulary), and the words admitted.

    The vocabulary observes every document as it arrives, as the store's does; ``delay`` 0 is
    the store's count: the vocabulary just after the document's own admissions. A word evicted
    (at capacity, or past ``max_df``) leaves the final vocabulary, and with it every count of
    it, as in the store; raises where one was admitted again, whose earlier counts the store
    forgets and these token lists would keep (a larger ``capacity`` avoids it)."""
    vocabulary = StreamingVocabulary(capacity, admit_threshold=admit_threshold, max_df=MAX_DF)
    pending: deque[list[str]] = deque()
    counted: list[list[str]] = []
    owner: dict[int, str] = {}  # slot -> word, to name the words evicted
    evicted_words: set[str] = set()

    def count(doc: list[str]) -> list[str]:
        return [t for t in doc if t in vocabulary]

    for doc in docs:
        slots, evicted = vocabulary.observe(doc)
        evicted_words.update(owner.pop(s) for s in evicted)
        owner.update(zip(slots, count(doc)))  # a document's admissions are among its words
        pending.append(doc)
        while len(pending) > delay:
            counted.append(count(pending.popleft()))
    counted.extend(count(doc) for doc in pending)
    again = sorted(w for w in evicted_words if w in vocabulary)
    if again:
        raise ValueError(f"{len(again)} words evicted at capacity {capacity} were admitted "
                         f"again ({', '.join(again[:5])}): the counted documents would not be "
                         "the store's")
    return counted, len(vocabulary)


def fit_counted(corpus: str, counted: list[list[str]], stopwords: str, capacity: int,
                work: Path) -> dict:
    """``anchorstream fit --input`` on the counted documents, scored on the corpus's
    held-out documents (:func:`benchmarks.quality.run.run`)."""
    path = work / "counted.jsonl"
    with path.open("w") as f:
        for doc in counted:
            f.write(json.dumps({"text": doc}) + "\n")
    try:
        # No repeat filter: documents the stream kept apart can be equal once filtered.
        return run(corpus, ["--stopwords", stopwords, "--min-df", "1", "--duplicate-memory",
                            "0"], vocab_size=capacity, train=path)
    finally:
        path.unlink()


def corpus_rows(corpus: str, delays: list[float], draws: int, capacity: int,
                fit: bool = True) -> tuple[str, str]:
    """The corpus's row of held-out NPMI by delay (empty without ``fit``), and its row of the
    tokens counted."""
    c = load(corpus, verbose=False)
    docs, _ = read_documents([c.train_path], format="json", text_field="text",
                             tokenizer=stopwords_tokenizer(c.stopwords), progress=False)
    docs = [list(d) for d in docs]
    scores = {B: [] for B in delays}
    tokens = {B: [] for B in delays}
    words = 0
    with tempfile.TemporaryDirectory(dir=cache_root()) as tmp:
        for draw in range(draws):
            keep = np.random.default_rng(draw).random(len(docs)) >= (0.01 if draws > 1 else 0)
            stream = [d for d, k in zip(docs, keep) if k]
            for B in delays:
                counted, words = delayed(stream, capacity, B)
                tokens[B].append(sum(map(len, counted)))
                if not fit:
                    continue
                row = fit_counted(corpus, counted, c.stopwords, capacity, Path(tmp))
                if row["status"] != "ok":
                    raise RuntimeError(f"{corpus}, delay {B}, draw {draw}: {row['status']}")
                scores[B].append(row["npmi"])
                print(f"  {corpus} draw {draw} delay {_name(B)}: NPMI {row['npmi']:+.4f} "
                      f"(unique@10 {row['unique']:.2f}, {row['dead']} dead)", file=sys.stderr,
                      flush=True)
    last = np.asarray(scores[delays[-1]])
    cells = []
    for B in delays if fit else ():
        a = np.asarray(scores[B])
        d = a - last
        cells.append(f"{a.mean():+.4f} ± {_sd(a):.4f}" + (
            "" if B == delays[-1] else f" ({d.mean():+.4f} ± {_sd(d):.4f}, "
                                       f"{int((d < 0).sum())} of {d.size} below)"))
    # The tokens each delay counts, as a share of those the first delay leaves out and the
    # last counts: noise-free, where the NPMI moves with the fit's path.
    t = {B: np.mean(tokens[B]) for B in delays}
    lost = t[delays[-1]] - t[delays[0]]
    shares = [f"{(t[B] - t[delays[0]]) / lost:.0%}" if lost > 0 else "–" for B in delays]
    name = f"{corpus} ({len(docs):,}, K = {c.n_topics}, {words:,} words)"
    return (f"| {name} | " + " | ".join(cells) + " |",
            f"| {corpus} | {lost / t[delays[-1]]:.1%} | " + " | ".join(shares) + " |")


def store_row(corpus: str, delays: list[float], capacity: int) -> str:
    """The corpus's whole file through real stores: ``anchorstream ingest --vocabulary stream
    --count-delay B`` (its delay line) and ``fit --store``, for each finite delay; ``fit
    --input`` at ``--vocab-size`` the capacity for ``inf``. Held-out NPMI@10 as in the
    simulation's ``--draws 1``, which it must match (the store counts what
    :func:`delayed` counts, ``tests/test_bench_admission_delay.py``)."""
    c = load(corpus, verbose=False)
    base, env = anchorstream_command()
    cells = []
    with tempfile.TemporaryDirectory(dir=cache_root()) as tmp:
        for B in delays:
            t0 = time.perf_counter()
            if math.isinf(B):
                row = run(corpus, ["--stopwords", c.stopwords], vocab_size=capacity)
            else:
                store = Path(tmp) / f"store-{int(B)}"
                subprocess.run([*base, "ingest", "--store", str(store), "--quiet",
                                "--vocabulary", "stream", "--capacity", str(capacity),
                                "--count-delay", str(int(B)), "--stopwords", c.stopwords,
                                str(c.train_path)], env=env, cwd=REPO, check=True,
                               capture_output=True)
                row = run(corpus, [], store=store)
                shutil.rmtree(store)
            if row["status"] != "ok":
                raise RuntimeError(f"{corpus}, store with delay {B}: {row['status']}")
            print(f"  {corpus} store delay {_name(B)}: NPMI {row['npmi']:+.4f} (unique@10 "
                  f"{row['unique']:.2f}, {row['dead']} dead; {time.perf_counter() - t0:.0f} s "
                  "ingest and fit)", file=sys.stderr, flush=True)
            cells.append(f"{row['npmi']:+.4f}")
    return f"| {corpus} | " + " | ".join(cells) + " |"


def _sd(a: np.ndarray) -> float:
    return float(a.std(ddof=1)) if a.size > 1 else 0.0


def _name(B: float) -> str:
    return "inf" if math.isinf(B) else str(int(B))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpora", default="tech,changes,medium,verses,short",
                   help="quality-benchmark corpora, comma-separated, each read in its file's "
                        "order (default: %(default)s)")
    p.add_argument("--delays", default="0,300,1000,3000,inf",
                   help="documents each one waits before it is counted; the last is the "
                        "reference the differences are paired with (default: %(default)s)")
    p.add_argument("--draws", type=int, default=5,
                   help="draws of 99 %% of each file (1 = the whole file; default 5)")
    p.add_argument("--capacity", type=int, default=20_000,
                   help="the store's capacity C (default 20,000, the daemon's)")
    p.add_argument("--counts-only", action="store_true",
                   help="no fits: only the table of the tokens each delay counts (seconds)")
    p.add_argument("--store", action="store_true",
                   help="instead of the simulation, each whole file through real stores "
                        "(ingest --vocabulary stream --count-delay B, then fit --store)")
    args = p.parse_args(argv)
    delays = [math.inf if s.strip() == "inf" else float(int(s)) for s in args.delays.split(",")]
    started = time.time()
    if args.store:
        rows = [store_row(corpus.strip(), delays, args.capacity)
                for corpus in args.corpora.split(",")]
        print(f"\n{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}, capacity "
              f"{args.capacity:,}: held-out NPMI@10 of real stores, the whole files\n")
        print("| corpus | " + " | ".join(f"delay {_name(B)}" for B in delays) + " |")
        print("|---|" + "---:|" * len(delays))
        print("\n".join(rows))
        return 0
    rows = [corpus_rows(corpus.strip(), delays, max(args.draws, 1), args.capacity,
                        fit=not args.counts_only) for corpus in args.corpora.split(",")]
    print(f"\n{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}, capacity "
          f"{args.capacity:,}, admit threshold {ADMIT_THRESHOLD:g}, {args.draws} draw(s)")
    if not args.counts_only:
        print("\nHeld-out NPMI@10, mean ± sd over draws (the difference from the last delay, "
              "paired by draw, and in how many draws it was below)\n")
        print("| corpus (documents, K, words admitted in the last draw) | "
              + " | ".join(f"delay {_name(B)}" for B in delays) + " |")
        print("|---|" + "---:|" * len(delays))
        print("\n".join(npmi for npmi, _ in rows))
    print(f"\nTokens counted, mean over draws: the share of the last delay's tokens that delay "
          f"{_name(delays[0])} leaves out, and the share of those each delay counts\n")
    print(f"| corpus | left out at delay {_name(delays[0])} | "
          + " | ".join(f"delay {_name(B)}" for B in delays) + " |")
    print("|---|---:|" + "---:|" * len(delays))
    print("\n".join(counted for _, counted in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
