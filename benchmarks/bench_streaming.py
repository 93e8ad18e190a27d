#!/usr/bin/env python
"""Streaming equals batch, and refits are stable (issue 16, item 5).

Four parts, each printed as a table, one command::

    nice -n 10 .venv/bin/python benchmarks/bench_streaming.py            # store, causes, refit
    nice -n 10 .venv/bin/python benchmarks/bench_streaming.py --parts store,causes
    nice -n 10 .venv/bin/python benchmarks/bench_streaming.py --parts store,admission \
        --count-delay 0
    nice -n 10 .venv/bin/python benchmarks/bench_streaming.py --parts refit --refit-topics 100

**store** (the commands a user runs, each a subprocess): ``anchorstream fit --input`` on a
corpus (the reference), and ``anchorstream ingest`` into a store of capacity ``V`` followed by
``anchorstream fit --store``, once with each vocabulary rule of ``ingest`` (``--vocabulary
first-pass``, the default, and ``stream``, the daemon's rule). For each: seconds (wall and
CPU), the seconds before fitting (reading and counting, or reading the store), the fit's
stages from its manifest, the store's size on disk, and the distance of its topics from the
reference's: the mean ℓ1 over topics matched one to one (Hungarian, on ``1 - total variation``
over the shared words), how many matched pairs are under 0.5, and the words shared. With
``--refine-window N`` every command gets it: ``fit --input`` counts the refinement's pairs in
windows, ``ingest`` keeps the windows' pairs in the store, ``fit --store`` refines on them.

**causes** (in the benchmark's process, :class:`AnchorModel` with the shipped settings): the
reference fit against fits that differ by one thing each, so each cause is measured alone:
the random seed; the counts rounded to float32; 1 % of the documents left out, over
``--causes-draws`` draws (how much the fit moves for a small change of the data: one draw
lands on either side of the last anchors' near ties); the streaming store's vocabulary with exact counts
(the vocabulary alone); the streaming store's own counts (what admitting words as they
arrive costs), and the same with the batch fit's anchors pinned (what of that is the anchor
choice); the first-pass store's counts. Also the settings ``ingest`` and ``fit`` could
disagree on (``length_cap``, ``max_df``, forgetting), read from the stores.

**admission** (in process, after **store**): the ``stream`` store's counts with the admission
correction of ``fit --store --admission-min-share`` (:mod:`anchorstream.stats.admission`) at
each of ``--admission-shares`` against the batch fit, free and with the batch fit's anchors
pinned (the anchor choice is discrete; pinned, what is left is the recovery from the counts),
with the corrected counts' distance from the exact ones; then the store's counts made exact
for the words that lost half or more of their documents, for the others, and for all.

**refit** (short text, in process): two fits on random halves of one period of documents
(npm summaries, ``K`` = 100 by default), each with its own vocabulary as ``fit --input``
would choose it, and how many of ``K`` topics stay unmatched (total variation ≥ 0.5 to their
match, Hungarian assignment on ``1 - TV``) and what share of the first half's prevalence they
hold; then one cause at a time: both halves on the whole period's vocabulary (the vocabulary),
the second half with the first half's anchor words pinned, and both halves with the whole
period's anchors pinned (what is left when the anchors agree is the counts' noise through the
recovery; the rest is the anchor choice). Each corpus is rectified once (cached under
``benchmarks/.cache/refit-cache``): rectification does not depend on the anchor or recovery
settings, so every row and every ``--refit-settings`` variant reuses it (delete that folder
after changing the rectification or the counts).

Corpora: the quality benchmark's ``tech`` (train split) for store and causes and ``short``
(train split) for refit, under ``benchmarks/.cache/quality`` (``benchmarks/bench_quality.py``
builds them); ``--data`` and ``--refit-data`` take any JSON-lines file.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
from scipy.optimize import linear_sum_assignment  # noqa: E402

from anchorstream.model.align import topic_similarity  # noqa: E402
from anchorstream.model.pipeline import AnchorModel, ModelSettings, StageTimer  # noqa: E402
from anchorstream.model.stages import Rectified as StageRectified  # noqa: E402
from anchorstream.model.stages import (active_part, anchor_stage, correlation_stage,  # noqa: E402
                                       recover_stage, rectify_stage)
from anchorstream.model.stages import anchor_min_df as stage_min_df  # noqa: E402
from anchorstream.stats.cooccurrence import LENGTH_CAP, cooccurrence  # noqa: E402
from anchorstream.text.tokenize import count_matrix, select_vocabulary  # noqa: E402
from daemon.cli.fit_counts import read_documents  # noqa: E402
from daemon.cli.options import MAX_DF, MIN_DF, stopwords_tokenizer  # noqa: E402

CACHE = REPO / "benchmarks" / ".cache"
QUALITY = CACHE / "quality"
WORK = CACHE / "streaming"
VENV_PY = REPO / ".venv" / "bin" / "python"
PYTHON = str(VENV_PY) if VENV_PY.exists() else sys.executable


# ------------------------------------------------------------------------------------------
# comparing two fits


def compare(tw_a, words_a, tw_b, words_b) -> dict:
    """Matched distance of two topic models (topic_word as (V, K), columns are topics)."""
    S = topic_similarity(tw_a, words_a, tw_b, words_b)
    rows, cols = linear_sum_assignment(S, maximize=True)
    l1 = 2.0 * (1.0 - S[rows, cols])
    return {"l1": float(l1.mean()), "below_half": int((l1 < 0.5).sum()),
            "unmatched": int((S[rows, cols] <= 0.5).sum()), "k": int(l1.size),
            "shared": len(set(words_a) & set(words_b))}


def describe(c: dict) -> str:
    return (f"{c['l1']:.3f} | {c['below_half']} of {c['k']} | {c['unmatched']} | "
            f"{c['shared']}")


# ------------------------------------------------------------------------------------------
# part store: the commands


def run_command(args: list[str]) -> tuple[float, float, str]:
    """Run ``python -m daemon ARGS``; returns (wall s, CPU s of the child, stderr)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run([PYTHON, "-m", "daemon", *args], cwd=REPO, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(args)}\n{proc.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stderr


def before_fitting(stderr: str) -> float:
    """Seconds from the start to the counts being ready (``fit`` prints them)."""
    m = re.search(r"fitting \d+ topics \(([\d.]+) s\)", stderr)
    return float(m.group(1)) if m else float("nan")


def snapshot(path: Path):
    from anchorstream.snapshot import read_snapshot

    snap = read_snapshot(path)
    return snap.topic_word.T, list(snap.vocabulary), snap.manifest


def disk_mib(path: Path) -> float:
    """MiB of the files under ``path``."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def part_store(args, work: Path) -> dict:
    K, V = args.topics, args.vocab
    # --refine-window: fit --input counts the windows, ingest keeps them, fit --store reads them.
    window = [] if args.refine_window is None else ["--refine-window", str(args.refine_window)]
    ref_out = work / "fit-input"
    wall, cpu, err = run_command(["fit", "--input", str(args.data), "-k", str(K),
                                  "--vocab-size", str(V), "--seed", "0", "--out", str(ref_out),
                                  "-q", *window])
    rows = [("`fit --input`", wall, cpu, before_fitting(err), None, None, ref_out, None)]
    for rule in ("first-pass", "stream"):
        store, out = work / f"store-{rule}", work / f"fit-store-{rule}"
        iwall, icpu, _ = run_command(["ingest", str(args.data), "--store", str(store),
                                      "--capacity", str(V), "--vocabulary", rule,
                                      "--count-delay", args.count_delay,
                                      "--checkpoint-every", "10000", "-q", *window])
        wall, cpu, err = run_command(["fit", "--store", str(store), "-k", str(K),
                                      "--seed", "0", "--out", str(out), "-q", *window])
        rows.append((f"`ingest --vocabulary {rule}` + `fit --store`", wall, cpu,
                     before_fitting(err), iwall, icpu, out, disk_mib(store)))
    ref = snapshot(ref_out)
    print(f"\n### store: `fit --store` against `fit --input`, {args.data.name}, K = {K}, "
          f"V = {V}" + (f", `--refine-window {args.refine_window}`" if window else "") + "\n")
    print("| fit | seconds | CPU s | before fitting s | rectify s | anchors s | recover s | "
          "iterations | ingest s (CPU) | store MiB | matched ℓ1 to `fit --input` | ℓ1 < 0.5 | "
          "TV ≥ 0.5 | shared words |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, wall, cpu, ready, iwall, icpu, out, mib in rows:
        tw, words, manifest = snapshot(out)
        t = manifest["extra"]["timings_seconds"]
        iters = manifest["extra"].get("fit", {}).get("rectify_iterations", "")
        c = compare(tw, words, ref[0], ref[1])
        ingest = "" if iwall is None else f"{iwall:.1f} ({icpu:.1f})"
        size = "" if mib is None else f"{mib:.1f}"
        print(f"| {name} | {wall:.1f} | {cpu:.1f} | {ready:.1f} | {t.get('rectify', 0):.1f} | "
              f"{t.get('anchors', 0):.1f} | {t.get('recover', 0):.1f} | {iters} | {ingest} | "
              f"{size} | {describe(c)} |")
    return {"stores": {rule: work / f"store-{rule}" for rule in ("first-pass", "stream")}}


# ------------------------------------------------------------------------------------------
# part causes: one difference at a time


def fit_model(cooc, K: int, seed: int = 0, **settings) -> AnchorModel:
    """A cold fit of a copy of ``cooc``; ``model.cpu_`` holds each stage's CPU seconds (the
    machine may be shared: wall seconds would measure the neighbours)."""
    cpu: dict[str, float] = {}
    start = [0.0]

    def on_stage(name, seconds):
        if seconds is None:
            start[0] = time.process_time()
        else:
            cpu[name] = time.process_time() - start[0]

    model = AnchorModel(n_topics=K, random_state=seed, **settings).fit(
        copy.deepcopy(cooc), warm_state=False, on_stage=on_stage)
    model.cpu_ = cpu
    return model


def pinnable(cooc, K: int, anchors) -> tuple[int, ...]:
    """The words of ``anchors`` that are anchor candidates in ``cooc`` (in enough documents):
    the ones a fit of ``cooc`` can pin. The anchor choice is discrete (a small change of the
    counts can swap anchors and move the topics far); with another fit's anchors pinned, what
    is left is the recovery from the counts."""
    active = np.flatnonzero(cooc.counts.sum(axis=1) > 0)
    min_df = stage_min_df(cooc, K, active, ModelSettings(n_topics=K))
    return tuple(a for a in anchors if cooc.doc_freq[a] >= min_df)


def positions(words, among) -> list[int]:
    """The positions in ``words`` of those of ``among`` it holds, in ``among``'s order: another
    vocabulary's anchors as this one's indices."""
    position = {w: i for i, w in enumerate(words)}
    return [position[w] for w in among if w in position]


def read_docs(path: Path) -> list[list[str]]:
    docs, _ = read_documents([path], format="json", text_field="text",
                             tokenizer=stopwords_tokenizer("english"), progress=False)
    return list(docs)


def part_causes(args, work: Path) -> None:
    from anchorstream.store import open_committed

    K, V = args.topics, args.vocab
    docs = read_docs(args.data)
    words = select_vocabulary(docs, min_df=MIN_DF, max_df=MAX_DF, max_size=V)
    batch = cooccurrence(count_matrix(docs, words), length_cap=LENGTH_CAP)
    t = time.process_time()
    ref = fit_model(batch, K)
    seconds = time.process_time() - t
    rows = [("another seed (1)", fit_model(batch, K, seed=1), words)]
    settings: list[str] = []
    rounded = copy.deepcopy(batch)
    rounded.counts = rounded.counts.astype(np.float32).astype(np.float64)
    rows.append(("counts rounded to float32", fit_model(rounded, K), words))
    # One draw of left-out documents lands on either side of the last anchors' near ties
    # (session 17: 0.024 for one draw, 0.025-0.248 over twenty): every draw is a row, and
    # the spread is summarized after the table.
    drawn = []
    for draw in range(args.causes_draws):
        keep = np.random.default_rng(draw).random(len(docs)) >= 0.01
        fewer = cooccurrence(count_matrix([d for d, k in zip(docs, keep) if k], words),
                             length_cap=LENGTH_CAP)
        model = fit_model(fewer, K)
        drawn.append((compare(model.topic_word_, words, ref.topic_word_, words)["l1"],
                      len(set(ref.anchors_.tolist()) - set(model.anchors_.tolist()))))
        rows.append((f"1 % of the documents left out (draw {draw}: {int((~keep).sum())}; "
                     f"{drawn[-1][1]} anchors differ)", model, words))
    if drawn:
        l1 = np.asarray([d[0] for d in drawn])
        settings.append(f"1 % left out over {l1.size} draws: matched ℓ1 mean {l1.mean():.3f}, "
                        f"median {np.median(l1):.3f}, range {l1.min():.3f}-{l1.max():.3f}, "
                        f"{int((l1 <= 0.05).sum())} of {l1.size} at most 0.05; anchors "
                        f"differing median {np.median([d[1] for d in drawn]):g}")
    for rule in ("stream", "first-pass"):
        store = work / f"store-{rule}"
        if not store.exists():
            print(f"(no {store}: run the store part first)")
            continue
        st = open_committed(str(store))
        sw = list(st.words)
        if rule == "stream":
            exact = cooccurrence(count_matrix(docs, sw), length_cap=LENGTH_CAP)
            rows.append(("the stream store's vocabulary, exact counts",
                         fit_model(exact, K), sw))
            change = (np.linalg.norm(st.cooccurrence.counts - exact.counts)
                      / np.linalg.norm(exact.counts))
            lost = 1.0 - st.cooccurrence.doc_freq / np.maximum(exact.doc_freq, 1.0)
            # The anchor candidates (words in >= anchor_min_df documents) read doc_freq:
            # the store's counts with the exact frequencies separate that from the matrix.
            mixed = copy.deepcopy(st.cooccurrence)
            mixed.doc_freq = exact.doc_freq.copy()
            rows.append(("the stream store's counts, exact document frequencies",
                         fit_model(mixed, K), sw))
            ok = pinnable(st.cooccurrence, K, positions(sw, [words[a] for a in ref.anchors_]))
            rows.append((f"the stream store's counts, the batch fit's anchors pinned ({len(ok)} "
                         f"of {K} are candidates there)",
                         fit_model(st.cooccurrence, K, pinned_anchors=ok), sw))
            settings.append(f"stream store: counts differ from the exact ones by {change:.3f} "
                            f"(relative Frobenius); document frequency lost by the median "
                            f"word {np.median(lost):.1%}, by the 90th percentile "
                            f"{np.quantile(lost, 0.9):.1%}")
        model = fit_model(st.cooccurrence, K)
        differ = len({words[a] for a in ref.anchors_} - {sw[a] for a in model.anchors_})
        rows.append((f"the {rule} store's counts ({differ} anchors differ)", model, sw))
        from anchorstream.store import store_info

        info = store_info(str(store))
        settings.append(f"{rule} store: length_cap {info.get('length_cap')}, "
                        f"forgetting {info.get('forgetting', 'none')}")
    print(f"\n### causes: each against the batch fit ({args.data.name}, K = {K}, V = {V}; "
          f"the batch fit took {seconds:.1f} CPU s)\n")
    print("| differs from the batch fit by | matched ℓ1 | ℓ1 < 0.5 | TV ≥ 0.5 | shared words | "
          "rectify CPU s (iterations) | recover CPU s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, model, w in [("nothing (the batch fit itself)", ref, words), *rows]:
        print(f"| {name} | {describe(compare(model.topic_word_, w, ref.topic_word_, words))} | "
              f"{model.cpu_.get('rectify', 0):.1f} ({model.n_iter_.get('rectify', 0)}) | "
              f"{model.cpu_.get('recover', 0):.1f} |")
    for line in settings:
        print(f"\n{line}")


# ------------------------------------------------------------------------------------------
# part admission: the streaming store's counts corrected for what words missed before admission


def part_admission(args, work: Path) -> None:
    """The batch fit against the ``stream`` store's counts read as ``fit --store`` reads them,
    with the admission correction (``--admission-min-share``) at each share of
    ``--admission-shares`` (1 = none): the matched distance, the same with the batch fit's
    anchors pinned, and how far the corrected counts are from the exact ones over the same
    words; then the store's counts made exact for one group of words at a time."""
    from anchorstream.stats.admission import correct_admission
    from anchorstream.store import open_committed

    K, V = args.topics, args.vocab
    store = work / "store-stream"
    if not store.exists():
        sys.exit(f"no {store}: run the store part first (or ingest --vocabulary stream there)")
    docs = read_docs(args.data)
    words = select_vocabulary(docs, min_df=MIN_DF, max_df=MAX_DF, max_size=V)
    ref = fit_model(cooccurrence(count_matrix(docs, words), length_cap=LENGTH_CAP), K)
    st = open_committed(str(store))
    if st.admission is None:
        sys.exit(f"{store} reports no admissions (a delay line counted the documents that "
                 "waited): run the store part with --count-delay 0 first")
    sw = list(st.words)
    exact = cooccurrence(count_matrix(docs, sw), length_cap=LENGTH_CAP)
    # With the batch fit's anchors pinned (those that are candidates in these counts: in
    # enough documents), what is left is the recovery from the counts.
    pinned = positions(sw, [words[a] for a in ref.anchors_])

    def row(cooc) -> str:
        ok = pinnable(cooc, K, pinned)
        free, fixed = (fit_model(cooc, K, **kw) for kw in ({}, {"pinned_anchors": ok}))
        return (f"{describe(compare(free.topic_word_, sw, ref.topic_word_, words))} | "
                f"{compare(fixed.topic_word_, sw, ref.topic_word_, words)['l1']:.3f} "
                f"({len(ok)}) | {len(set(free.anchors_) & set(pinned))}")

    print(f"\n### admission: the stream store's counts corrected ({args.data.name}, K = {K}, "
          f"V = {V}; {len(sw)} words, {int(np.count_nonzero(st.admission.missed))} admitted "
          f"after missing documents; {len(pinned)} of the batch fit's {K} anchors shared)\n")
    print("| `--admission-min-share` | matched ℓ1 to the batch fit | ℓ1 < 0.5 | TV ≥ 0.5 | "
          "shared words | ℓ1, the batch fit's anchors pinned (how many are candidates) | "
          "batch anchors found | counts rel. Frobenius to exact | row sums rel. error | "
          "doc. freq. rel. error |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for share in args.admission_shares:
        cooc = correct_admission(copy.deepcopy(st.cooccurrence), st.admission,
                                 min_share=share)
        err = [float(np.linalg.norm(a - b) / np.linalg.norm(b)) for a, b in (
            (cooc.counts, exact.counts), (cooc.counts.sum(axis=1), exact.counts.sum(axis=1)),
            (cooc.doc_freq, exact.doc_freq))]
        print(f"| {share:g}{' (none)' if share >= 1 else ''} | {row(cooc)} | "
              f"{err[0]:.4f} | {err[1]:.4f} | {err[2]:.4f} |", flush=True)
    # What a perfect correction of some words would give: the exact counts of the pairs of
    # the words that lost half or more of their documents (mostly evicted, then admitted
    # again), or of every other pair, the store's counts elsewhere.
    heavy = st.admission.word_share(st.cooccurrence.doc_freq, 0.0) < 0.5
    print("\n| the stream store's counts, exact for | matched ℓ1 to the batch fit | ℓ1 < 0.5 | "
          "TV ≥ 0.5 | shared words | ℓ1, the batch fit's anchors pinned (how many are "
          "candidates) | batch anchors found |\n|---|---:|---:|---:|---:|---:|---:|")
    for name, pairs, chosen in (
            (f"the pairs of the {int(heavy.sum())} words that lost ≥ half their documents",
             heavy[:, None] | heavy[None, :], heavy),
            (f"the pairs of the other {int((~heavy).sum())} words", ~heavy[:, None] & ~heavy,
             ~heavy),
            ("every pair (the store's numbers of documents and tokens)",
             np.ones((len(sw), len(sw)), bool), np.ones(len(sw), bool))):
        mixed = copy.deepcopy(st.cooccurrence)
        mixed.counts[pairs] = exact.counts[pairs]
        mixed.unigram[chosen], mixed.doc_freq[chosen] = (exact.unigram[chosen],
                                                         exact.doc_freq[chosen])
        print(f"| {name} | {row(mixed)} |", flush=True)
    print(f"| every pair and the numbers of documents and tokens ({exact.num_docs:g} and "
          f"{exact.num_tokens:g}, the store's {st.cooccurrence.num_docs:g} and "
          f"{st.cooccurrence.num_tokens:g}): the exact counts | {row(exact)} |", flush=True)
    # The anchor candidates read the document frequencies alone: exact ones, or the store's
    # plus what each word missed before its admission (what the correction does to them).
    for name, df in (("no pair: only the document frequencies", exact.doc_freq),
                     ("no pair: the document frequencies plus what each word missed",
                      st.cooccurrence.doc_freq + st.admission.missed)):
        mixed = copy.deepcopy(st.cooccurrence)
        mixed.doc_freq = np.array(df, dtype=np.float64)
        print(f"| {name} | {row(mixed)} |", flush=True)


# ------------------------------------------------------------------------------------------
# part refit: two halves of one period


class Rectified:
    """One cold rectification of a corpus's counts, cached on disk, and topics from it.

    Rectification is the fit's cost and does not depend on the anchor or recovery settings,
    so every variant of those (pinned anchors, other candidates) reuses it: ``topics(**s)``
    runs the anchor search, the recovery and the correlations of ``AnchorModel.fit``.
    """

    def __init__(self, cooc, words, K: int, cache: Path, seed: int = 0, **settings):
        self.cooc, self.words, self.K, self.seed = cooc, list(words), K, seed
        self.index = {w: i for i, w in enumerate(self.words)}
        s = ModelSettings(n_topics=K, random_state=seed, **settings)
        C, self.active = active_part(cooc, False)
        V = cooc.n_words
        self.position = np.full(V, -1)
        self.position[self.active] = np.arange(self.active.size)
        self.cpu = 0.0
        if cache.exists():
            z = np.load(cache)
            self.rect = StageRectified(z["C"], z["row_sums"], z["row_sqnorms"],
                                       n_iter={"rectify": int(z["n_iter"])})
            self.cpu = float(z["cpu"])
            return
        t = time.process_time()
        self.rect = rectify_stage(C, V, K, self.active, self.position, None, s,
                                  StageTimer({}), False, None, None)
        self.cpu = time.process_time() - t
        cache.parent.mkdir(parents=True, exist_ok=True)
        np.savez(cache, C=self.rect.C, row_sums=self.rect.row_sums,
                 row_sqnorms=self.rect.row_sqnorms, n_iter=self.rect.n_iter["rectify"],
                 cpu=self.cpu)

    def topics(self, pinned_words=(), **settings) -> SimpleNamespace:
        """topic_word (V, K), anchor words and prevalence; ``pinned_words`` (strings) that
        are candidates here are pinned."""
        K, cooc = self.K, self.cooc
        if any(k.startswith("rectify") for k in settings):
            raise SystemExit(f"refit variants reuse the halves' rectification: {settings} "
                             "changes it")
        s = ModelSettings(n_topics=K, random_state=self.seed, **settings)
        min_df = stage_min_df(cooc, K, self.active, s)
        ok = [self.index[w] for w in pinned_words
              if w in self.index and cooc.doc_freq[self.index[w]] >= min_df]
        if ok:
            s = ModelSettings(n_topics=K, random_state=self.seed, pinned_anchors=tuple(ok),
                              **settings)
        timer = StageTimer({})
        anchors, products = anchor_stage(cooc, self.rect, K, min_df, self.active,
                                         self.position, None, s, timer)
        rec = recover_stage(self.rect, anchors, products, K, self.active, None, s, timer)
        A, _ = correlation_stage(self.rect.C, rec.topic_word, anchors, s, timer)
        tw = np.zeros((cooc.n_words, K))
        tw[self.active] = rec.topic_word
        return SimpleNamespace(topic_word=tw, words=self.words, prevalence=A.sum(axis=1),
                               anchors=[self.words[i] for i in self.active[anchors]],
                               pinned=len(ok))


def refit_row(name: str, a, b) -> str:
    """A markdown row: ``b`` against ``a`` (topic sets from :meth:`Rectified.topics`)."""
    S = topic_similarity(a.topic_word, a.words, b.topic_word, b.words)
    rows, cols = linear_sum_assignment(S, maximize=True)
    tv = 1.0 - S[rows, cols]
    bad = tv >= 0.5
    prev = a.prevalence[rows]
    shared = len(set(a.anchors) & set(b.anchors))
    return (f"| {name} | {2 * tv.mean():.3f} | {int(bad.sum())} of {tv.size} | "
            f"{prev[bad].sum() / prev.sum():.3f} | {shared} | "
            f"{len(set(a.words) & set(b.words))} |")


def part_refit(args) -> None:
    K, V = args.refit_topics, args.refit_vocab
    docs = read_docs(args.refit_data)
    order = np.random.default_rng(args.seed).permutation(len(docs))
    half = len(docs) // 2
    parts = {"A": [docs[i] for i in order[:half]], "B": [docs[i] for i in order[half:2 * half]],
             "full": [docs[i] for i in order[:2 * half]]}
    cache = args.work.parent / "refit-cache"
    tag = f"{args.refit_data.parent.name}-s{args.seed}-k{K}-v{V}"

    def vocabulary(part):
        return select_vocabulary(part, min_df=MIN_DF, max_df=MAX_DF, max_size=V)

    def rectified(name, part, words):
        cooc = cooccurrence(count_matrix(part, words), length_cap=LENGTH_CAP)
        r = Rectified(cooc, words, K, cache / f"{tag}-{name}.npz")
        print(f"(rectified {name}: {r.cpu:.0f} CPU s, {r.rect.n_iter['rectify']} iterations)",
              flush=True)
        return r

    print(f"\n### refit: random halves of {args.refit_data.name} ({half} documents each, "
          f"K = {K}, V = {V})\n")
    header = ("| the first half's fit (A) against | matched ℓ1 | TV ≥ 0.5 (unmatched) | "
              "A's prevalence in them | anchors shared | words shared |\n"
              "|---|---:|---:|---:|---:|---:|")
    wf = vocabulary(parts["full"])
    own = {h: rectified(h, parts[h], vocabulary(parts[h])) for h in ("A", "B")}
    a, b = own["A"].topics(), own["B"].topics()
    print(header)
    print(refit_row("B, each half its own vocabulary (`fit --input` on each)", a, b),
          flush=True)
    print(refit_row("B fitted with A's anchors pinned (own vocabularies)", a,
                    own["B"].topics(pinned_words=a.anchors)), flush=True)
    keep = np.random.default_rng(1).random(half) >= 0.01
    fewer = [d for d, k in zip(parts["A"], keep) if k]
    print(refit_row(f"A itself with 1 % of its documents left out ({half - len(fewer)}; A's "
                    "vocabulary)", a, rectified("A-1pct", fewer, own["A"].words).topics()),
          flush=True)
    same = {h: rectified(f"{h}-fullvocab", parts[h], wf) for h in ("A", "B")}
    fa, fb = same["A"].topics(), same["B"].topics()
    print(refit_row("B, both on the whole period's vocabulary", fa, fb), flush=True)
    full = rectified("full", parts["full"], wf).topics()
    pa = same["A"].topics(pinned_words=full.anchors)
    pb = same["B"].topics(pinned_words=full.anchors)
    print(refit_row(f"B, whole-period vocabulary, the whole period's anchors pinned "
                    f"({pa.pinned} and {pb.pinned} of {K})", pa, pb), flush=True)
    print(refit_row("the whole period's fit (A: whole-period vocabulary)", fa, full),
          flush=True)
    for text in args.refit_settings:  # the vocabulary changes nothing (above): own ones
        settings = json.loads(text)
        print(refit_row(f"B, both with `{text}`", own["A"].topics(**settings),
                        own["B"].topics(**settings)), flush=True)


def _window(text: str) -> int | str:
    return text if text == "none" else int(text)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--parts", default="store,causes,refit",
                   help="comma-separated: store, causes, admission, refit")
    p.add_argument("--data", type=Path, default=QUALITY / "tech" / "train.jsonl",
                   help="JSON-lines corpus of the store and causes parts")
    p.add_argument("--topics", "-k", type=int, default=50)
    p.add_argument("--refine-window", type=_window, default=None, metavar="TOKENS|none",
                   help="store part: the refinement's pairs in windows (fit --input, ingest "
                        "and fit --store all get --refine-window TOKENS; none: whole "
                        "documents; default: their own default, auto)")
    p.add_argument("--vocab", type=int, default=5000, help="V: fit's --vocab-size and the "
                                                          "store's --capacity")
    p.add_argument("--refit-data", type=Path, default=QUALITY / "short" / "train.jsonl")
    p.add_argument("--refit-topics", type=int, default=100)
    p.add_argument("--refit-vocab", type=int, default=8000)
    p.add_argument("--refit-settings", action="append", default=[], metavar="JSON",
                   help="also fit both halves with these AnchorModel settings, e.g. "
                        "'{\"anchor_min_df\": 300}' (repeatable)")
    p.add_argument("--count-delay", default="auto", metavar="N|auto",
                   help="store: ingest's --count-delay (auto: 1000 for the stream rule, 0 for "
                        "the first pass; the admission part needs 0, counting on arrival)")
    p.add_argument("--admission-shares", type=lambda t: [float(x) for x in t.split(",")],
                   default=[1.0, 0.9, 0.75, 0.5, 0.25, 0.1],
                   help="admission part: the shares of --admission-min-share to compare")
    p.add_argument("--shuffle", type=int, default=None, metavar="SEED",
                   help="store, causes, admission: stream --data's lines in an order shuffled "
                        "with SEED (a copy in --work; the batch counts do not depend on it)")
    p.add_argument("--causes-draws", type=int, default=10, metavar="N",
                   help="causes part: draws of the 1 %% of documents left out")
    p.add_argument("--seed", type=int, default=0, help="the random halves")
    p.add_argument("--work", type=Path, default=WORK, help="stores and snapshots (replaced)")
    args = p.parse_args(argv)
    parts = {x.strip() for x in args.parts.split(",") if x.strip()}
    unknown = parts - {"store", "causes", "admission", "refit"}
    if unknown:
        p.error(f"unknown parts {sorted(unknown)}; choose from store, causes, admission, "
                "refit")
    for path in ([args.data] if parts & {"store", "causes", "admission"} else []) + (
            [args.refit_data] if "refit" in parts else []):
        if not path.is_file():
            sys.exit(f"{path} is missing: build the quality corpora first "
                     "(benchmarks/bench_quality.py) or pass --data / --refit-data")
    print(f"bench_streaming.py {' '.join(sys.argv[1:])}  "
          f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
          f"{os.getloadavg()[0]:.1f})")
    if "store" in parts:
        shutil.rmtree(args.work, ignore_errors=True)
        args.work.mkdir(parents=True)
    if args.shuffle is not None:  # a stationary stream: the same documents in random order
        lines = args.data.read_text(encoding="utf-8").splitlines(keepends=True)
        np.random.default_rng(args.shuffle).shuffle(lines)
        args.work.mkdir(parents=True, exist_ok=True)
        args.data = args.work / f"shuffled-{args.shuffle}-{args.data.name}"
        args.data.write_text("".join(lines), encoding="utf-8")
    if "store" in parts:
        part_store(args, args.work)
    if "causes" in parts:
        part_causes(args, args.work)
    if "admission" in parts:
        part_admission(args, args.work)
    if "refit" in parts:
        part_refit(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
