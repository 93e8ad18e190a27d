"""Refit stability of the shipped pipeline: two cold fits on random halves of one period.

Issue 16 (item 5) asks how far apart two cold fits on random halves of the same period of
short text land. ``bench_streaming.py --parts refit`` splits that difference into its causes
on one rectification per corpus (the anchor search and the recovery rerun per row, no pair
refinement); this script runs what a user runs, ``AnchorModel(K).fit`` with every default
(the low-rank rectifier on the documents, as ``fit --input`` does; the refinement where
documents are short), so its rows are the fit as shipped. Topics are matched one to one by
the Hungarian assignment on ``1 − TV``; "unmatched" is a matched pair with TV ≥ 0.5.

``--pinned`` adds B fitted with A's anchors pinned (what is left comes from the counts through
recovery and refinement). ``--planted`` adds two halves redrawn from A's fitted model
(:func:`planted_half`: the real documents' lengths and topic mixtures, every word drawn anew),
their fits (the defaults and each ``--settings``) against each other and against that truth,
and the oracle: the topics as the words each topic drew, the sampling noise alone.
``--planted-truth JSON`` draws them from A fitted with those settings instead: with
``'{"refine": "none"}'`` the anchor model as recovered, whose anchor words are exclusive (a
separable truth), where the shipped fit's refinement leaves few words exclusive to a topic.

    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 \\
        .venv/bin/python benchmarks/bench_refit.py [--data FILE] [--topics 100] [--vocab 8000]
        [--settings '{"refine": "none"}' ...] [--tomotopy] [--pinned] [--planted]
        [--planted-truth JSON]

Default corpus: the quality benchmark's ``short`` training split (112,319 npm summaries;
``benchmarks/bench_quality.py`` builds it), K = 100, V = 8000 as there.
With ``--data`` on a JSON-lines file of your own (field ``text``) and a few values of
``--topics``, its first row says how many topics a corpus of that size supports: those a cold
fit of one half finds and a cold fit of the other does not (README.md, "How many topics").
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.bench_streaming import QUALITY, read_docs, refit_row  # noqa: E402
from anchorstream.model.infer import infer_topics  # noqa: E402
from anchorstream.model.lowrank import DocumentCooccurrence  # noqa: E402
from anchorstream.model.pipeline import AnchorModel  # noqa: E402
from anchorstream.stats.cooccurrence import LENGTH_CAP  # noqa: E402
from anchorstream.text.tokenize import count_matrix, select_vocabulary  # noqa: E402
from daemon.cli.options import MAX_DF, MIN_DF  # noqa: E402


def fit(docs, words, K: int, seed: int, **settings) -> SimpleNamespace:
    """``fit --input``'s model on ``docs`` over ``words``: topics as ``refit_row`` reads them."""
    t = time.process_time()
    cooc = DocumentCooccurrence(count_matrix(docs, words), length_cap=LENGTH_CAP)
    model = AnchorModel(K, random_state=seed, **settings).fit(cooc)
    return SimpleNamespace(topic_word=model.topic_word_, words=list(words),
                           prevalence=model.prevalence_,
                           anchors=[words[a] for a in model.anchors_],
                           refine=model.refine_, cpu=time.process_time() - t,
                           doc_freq=cooc.doc_freq, anchor_min_df=model.anchor_min_df_)


def pinned(docs, words, K: int, seed: int, ref, free, **settings) -> SimpleNamespace:
    """``fit`` with ``ref``'s anchors pinned: those among ``words`` in at least as many
    documents as ``free`` (the same fit unpinned) asked of an anchor. What is left between
    ``ref`` and the result comes from the counts through recovery and refinement."""
    position = {w: i for i, w in enumerate(words)}
    pin = tuple(position[w] for w in ref.anchors if w in position
                and free.doc_freq[position[w]] >= free.anchor_min_df)
    out = fit(docs, words, K, seed, pinned_anchors=pin, **settings)
    out.pinned = len(pin)
    return out


def fit_tomotopy(docs, words, K: int, seed: int) -> SimpleNamespace:
    """The quality benchmark's tomotopy Gibbs LDA (its settings and iteration budget) on the
    same documents and vocabulary: the peer's own refit stability, for scale."""
    from benchmarks.quality.peers import TOMOTOPY_MAX_ITERATIONS, _fit_tomotopy

    t = time.process_time()
    X = count_matrix(docs, words)
    B, counts, _ = _fit_tomotopy(docs, list(words), X, K, seed,
                                 SimpleNamespace(tomotopy_max_iterations=TOMOTOPY_MAX_ITERATIONS))
    return SimpleNamespace(topic_word=np.asarray(B).T, words=list(words),
                           prevalence=counts / max(counts.sum(), 1.0), anchors=[],
                           cpu=time.process_time() - t)


def planted_half(truth, docs, seed: int):
    """``docs`` redrawn from ``truth``'s model: each document keeps its length in ``truth``'s
    vocabulary and its topic proportions inferred under ``truth``'s topics (maximum likelihood),
    and every word is drawn anew (topic from the proportions, word from the topic). Two halves
    drawn so differ as two samples of one known model do, with the real mixtures.

    Returns the documents and the oracle: the topics as the words each topic drew, which no
    estimator sees (the topic of every token known), as ``refit_row`` reads a fit."""
    rng = np.random.default_rng(seed)
    B = truth.topic_word  # (V, K)
    X = count_matrix(docs, truth.words)
    lengths = np.asarray(X.sum(axis=1)).ravel().astype(np.int64)
    theta = infer_topics(B, X)
    z = np.concatenate([rng.choice(B.shape[1], size=n, p=t / t.sum())
                        for n, t in zip(lengths, theta)])
    drawn = np.empty(z.size, dtype=np.int64)
    for k in np.unique(z):
        at = np.flatnonzero(z == k)
        drawn[at] = rng.choice(B.shape[0], size=at.size, p=B[:, k] / B[:, k].sum())
    words = np.asarray(truth.words, dtype=object)
    cut = np.cumsum(lengths)[:-1]
    drew = np.zeros(B.shape)
    np.add.at(drew, (drawn, z), 1.0)
    oracle = SimpleNamespace(topic_word=drew / np.maximum(drew.sum(axis=0), 1.0),
                             words=truth.words, prevalence=drew.sum(axis=0) / z.size,
                             anchors=truth.anchors)
    return [list(words[part]) for part in np.split(drawn, cut)], oracle


def planted_rows(truth, A, B, K: int, seed: int, vocabulary, settings, name: str) -> None:
    """The ``--planted`` rows: halves A′ and B′ redrawn from ``truth`` (a fit of A) as
    :func:`planted_half` draws them, fitted with each of ``settings`` (JSON), against each other
    and against the truth, then the oracle's rows and the truth's spread."""
    (pa, oa), (pb, ob) = planted_half(truth, A, seed + 10), planted_half(truth, B, seed + 20)
    wa, wb = vocabulary(pa), vocabulary(pb)
    for text in settings:
        s = json.loads(text)
        ga, gb = fit(pa, wa, K, seed, **s), fit(pb, wb, K, seed, **s)
        fitted = "" if not s else f", both fitted with `{text}`"
        print(refit_row(f"planted ({name} truth{fitted}): B′ against A′", ga, gb))
        print(refit_row(f"planted ({name} truth{fitted}): the truth against A′", truth, ga))
        print(refit_row(f"planted ({name} truth{fitted}): the truth against B′", truth, gb),
              flush=True)
    print(refit_row(f"planted ({name} truth): B′ against A′, each topic the words it drew "
                    "(oracle)", oa, ob))
    print(refit_row(f"planted ({name} truth): the truth against the words A′ drew (oracle)",
                    truth, oa))
    T = truth.topic_word
    spread = np.exp(-(T * np.log(np.where(T > 0, T, 1.0))).sum(axis=0))
    tokens = oa.prevalence * sum(map(len, pa))
    print(f"\n(the truth: a topic's perplexity, exp of its entropy, median "
          f"{np.median(spread):.0f} words, 10 %-90 % {np.percentile(spread, 10):.0f}-"
          f"{np.percentile(spread, 90):.0f}; tokens a topic drew in A′, median "
          f"{np.median(tokens):.0f}, 10 %-90 % {np.percentile(tokens, 10):.0f}-"
          f"{np.percentile(tokens, 90):.0f})\n", flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=QUALITY / "short" / "train.jsonl")
    p.add_argument("--topics", "-k", type=int, default=100)
    p.add_argument("--vocab", type=int, default=8000)
    p.add_argument("--seed", type=int, default=0, help="the random halves")
    p.add_argument("--settings", action="append", default=[], metavar="JSON",
                   help="also fit both halves with these AnchorModel settings (repeatable)")
    p.add_argument("--tomotopy", action="store_true",
                   help="also the peer tomotopy (Gibbs LDA) on the same halves and vocabularies")
    p.add_argument("--pinned", action="store_true",
                   help="also B fitted with A's anchors pinned, for the default and each "
                        "--settings (what the anchor choice contributes)")
    p.add_argument("--planted", action="store_true",
                   help="also two halves redrawn from A's fitted model, fitted with the "
                        "defaults and each --settings")
    p.add_argument("--planted-truth", default=None, metavar="JSON",
                   help="--planted with the truth fitted to A with these settings instead "
                        """(e.g. '{"refine": "none"}': a separable truth)""")
    a = p.parse_args(argv)
    if not a.data.is_file():
        sys.exit(f"{a.data} is missing: build the quality corpora first "
                 "(benchmarks/bench_quality.py) or pass --data")
    docs = read_docs(a.data)
    order = np.random.default_rng(a.seed).permutation(len(docs))
    half = len(docs) // 2
    A = [docs[i] for i in order[:half]]
    B = [docs[i] for i in order[half:2 * half]]
    K = a.topics

    def vocabulary(part):
        return select_vocabulary(part, min_df=MIN_DF, max_df=MAX_DF, max_size=a.vocab)

    wa, wb = vocabulary(A), vocabulary(B)
    print(f"### refit of the shipped pipeline: random halves of {a.data.name} ({half} "
          f"documents each, K = {K}, V = {a.vocab}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})\n")
    print("| the first half's fit (A) against | matched ℓ1 | TV ≥ 0.5 (unmatched) | "
          "A's prevalence in them | anchors shared | words shared |\n"
          "|---|---:|---:|---:|---:|---:|")
    fa, fb = fit(A, wa, K, a.seed), fit(B, wb, K, a.seed)
    print(refit_row(f"B, each half its own vocabulary (refinement: {fa.refine}; "
                    f"{fa.cpu:.0f} and {fb.cpu:.0f} CPU s)", fa, fb), flush=True)
    if a.pinned:
        fp = pinned(B, wb, K, a.seed, fa, fb)
        print(refit_row(f"B with A's anchors pinned ({fp.pinned})", fa, fp), flush=True)
    keep = np.random.default_rng(1).random(half) >= 0.01
    fewer = [d for d, k in zip(A, keep) if k]
    print(refit_row(f"A itself with 1 % of its documents left out ({half - len(fewer)}; "
                    "A's vocabulary)", fa, fit(fewer, wa, K, a.seed)), flush=True)
    print(refit_row("B, both halves fitted with another seed (1)", fit(A, wa, K, 1),
                    fit(B, wb, K, 1)), flush=True)
    for text in a.settings:
        s = json.loads(text)
        sa, sb = fit(A, wa, K, a.seed, **s), fit(B, wb, K, a.seed, **s)
        print(refit_row(f"B, both with `{text}`", sa, sb), flush=True)
        if a.pinned:
            fp = pinned(B, wb, K, a.seed, sa, sb, **s)
            print(refit_row(f"B with A's anchors pinned ({fp.pinned}), both with `{text}`",
                            sa, fp), flush=True)
    if a.planted or a.planted_truth is not None:
        truth = fa
        if a.planted_truth is not None:
            truth = fit(A, wa, K, a.seed, **json.loads(a.planted_truth))
        planted_rows(truth, A, B, K, a.seed, vocabulary,
                     ["{}"] + a.settings, a.planted_truth or "shipped")
    if a.tomotopy:  # no anchors: that column is 0 by construction
        ta, tb = fit_tomotopy(A, wa, K, a.seed), fit_tomotopy(B, wb, K, a.seed)
        print(refit_row(f"tomotopy: B, each half its own vocabulary ({ta.cpu:.0f} and "
                        f"{tb.cpu:.0f} CPU s)", ta, tb), flush=True)
        print(refit_row("tomotopy: A again with another seed (1)", ta,
                        fit_tomotopy(A, wa, K, 1)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
