"""The peers of the quality benchmark, each fitted in a fresh Python process.

- ``anchortopics``: ``OTFR`` with the package defaults (ENN rectification, LAW anchors).
- ``gensim``: online ``LdaModel`` with the settings of ``bench_fit.py`` (2 passes, chunks of
  2000, ``alpha="auto"``, η = 1/K, 50 iterations per document).
- ``tomotopy``: collapsed Gibbs ``LDAModel`` (``tw=ONE``, α = 0.1 re-estimated every 10
  iterations, η = 0.01: the package defaults), 2 worker threads (so results vary slightly
  between runs despite the fixed seed), up to 1000 iterations (fewer on large corpora: see
  :func:`tomotopy_iterations`).

Each reads the corpus's training file and builds its bag of words with anchorstream's
``Tokenizer`` and ``select_vocabulary`` under the defaults of ``anchorstream fit`` (so every
method sees the same vocabulary), then fits. Timing is end to end, as for ``anchorstream
fit``: interpreter start, imports, reading, tokenizing, the fit and writing the topics.

Topic weights (for "dead topics"): anchortopics, the row sums of its topic-topic matrix (as
anchorstream); gensim, each topic's share of the expected word counts of its variational
sufficient statistics (λ − η); tomotopy, each topic's share of the training tokens.

Child mode (used by :func:`fit_peer`)::

    python -m benchmarks.quality.peers --peer gensim --train T --out DIR --topics K \\
        --vocab-size V --seed 0
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

PEERS = ("anchortopics", "gensim", "tomotopy")
# The vocabulary settings of `anchorstream fit`'s defaults, used for the peers' bag of words.
MIN_DF, MAX_DF = 5, 0.5
GENSIM_PASSES = 2
TOMOTOPY_MAX_ITERATIONS = 1000
#: Token-iterations one tomotopy fit may spend: ~1 minute on 2 cores of the benchmark machine.
TOMOTOPY_BUDGET = 3e8
TOMOTOPY_MIN_ITERATIONS = 100


def tomotopy_iterations(n_tokens: int, cap: int = TOMOTOPY_MAX_ITERATIONS) -> int:
    """Gibbs sweeps for a corpus of ``n_tokens`` in-vocabulary tokens: ``cap`` (1000) up to
    300,000 tokens, then as many as :data:`TOMOTOPY_BUDGET` allows, at least 100."""
    return int(min(cap, max(TOMOTOPY_MIN_ITERATIONS, TOMOTOPY_BUDGET // max(n_tokens, 1))))


def settings(peer: str, iterations: int | None = None) -> str:
    return {
        "anchortopics": "OTFR defaults (ENN rectify, LAW)",
        "gensim": f"online LdaModel, passes={GENSIM_PASSES}, chunksize=2000, alpha=auto, "
                  "iterations=50",
        "tomotopy": f"Gibbs LDAModel tw=ONE, alpha=0.1 (re-estimated), eta=0.01, "
                    f"{iterations} iterations, workers=2",
    }[peer]


def installed(peer: str) -> bool:
    return importlib.util.find_spec(peer) is not None


def bag_of_words(train: Path, vocab_size: int, stopwords: str = "english"):
    """``(token lists, vocabulary, X)`` of a JSON-lines file, as ``anchorstream fit`` builds
    them with the shipped stopword list ``stopwords`` (documents without tokens dropped before
    the vocabulary is chosen), the vocabulary and counts by the same code (``TokenIdDocuments``)."""
    from anchorstream.text.bags import TokenIdDocuments
    from anchorstream.text.tokenize import Tokenizer

    tok = Tokenizer(stopwords=stopwords)
    held = TokenIdDocuments()
    with open(train, encoding="utf-8") as fh:
        docs = [d for d in (tok(json.loads(line)["text"]) for line in fh) if d]
    for d in docs:
        held.append(d)
    vocabulary = held.select_vocabulary(min_df=MIN_DF, max_df=MAX_DF, max_size=vocab_size)
    return docs, vocabulary, held.count_matrix(vocabulary)


def _fit_anchortopics(docs, vocabulary, X, K, seed, opts):
    from anchortopics import OTFR

    model = OTFR(n_topics=K, random_state=seed).fit(X)
    A = np.asarray(model.topic_correlation_)
    return np.asarray(model.components_), A.sum(axis=1), {
        "rectify_iterations": model.rectification_info_.get("n_iter")}


def _fit_gensim(docs, vocabulary, X, K, seed, opts):
    from gensim.matutils import Sparse2Corpus
    from gensim.models import LdaModel

    lda = LdaModel(
        corpus=Sparse2Corpus(X, documents_columns=False),
        id2word=dict(enumerate(vocabulary)),
        num_topics=K, passes=opts.gensim_passes, chunksize=2000,
        update_every=1,  # online variational Bayes (Hoffman et al. 2010)
        alpha="auto", eta=None, iterations=50, eval_every=None, random_state=seed,
    )
    sstats = lda.state.get_lambda() - lda.eta  # expected word counts per topic
    return lda.get_topics(), sstats.sum(axis=1), {}


def _fit_tomotopy(docs, vocabulary, X, K, seed, opts):
    import tomotopy as tp

    keep = set(vocabulary)
    model = tp.LDAModel(tw=tp.TermWeight.ONE, k=K, seed=seed)
    for d in docs:
        words = [w for w in d if w in keep]
        if words:
            model.add_doc(words)
    iterations = tomotopy_iterations(int(X.sum()), opts.tomotopy_max_iterations)
    model.train(iterations, workers=2)
    index = {w: i for i, w in enumerate(model.used_vocabs)}
    cols = np.array([index.get(w, -1) for w in vocabulary])
    B = np.zeros((K, len(vocabulary)))
    for k in range(K):
        dist = np.asarray(model.get_topic_word_dist(k))
        B[k] = np.where(cols >= 0, dist[np.maximum(cols, 0)], 0.0)
    counts = np.asarray(model.get_count_by_topics(), dtype=np.float64)
    return B, counts, {"iterations": iterations, "ll_per_word": model.ll_per_word}


def child(opts) -> int:
    t0 = time.perf_counter()
    docs, vocabulary, X = bag_of_words(opts.train, opts.vocab_size, opts.stopwords)
    prep = time.perf_counter() - t0
    fit = {"anchortopics": _fit_anchortopics, "gensim": _fit_gensim,
           "tomotopy": _fit_tomotopy}[opts.peer]
    topic_word, prevalence, info = fit(docs, vocabulary, X, opts.topics, opts.seed, opts)
    opts.out.mkdir(parents=True)
    np.save(opts.out / "topic_word.npy", np.asarray(topic_word, dtype=np.float64))
    np.save(opts.out / "prevalence.npy", np.asarray(prevalence, dtype=np.float64))
    (opts.out / "result.json").write_text(json.dumps({
        "vocabulary": vocabulary, "prep_seconds": prep, "n_tokens": int(X.sum()),
        "info": {k: v for k, v in info.items() if isinstance(v, (int, float, str))},
    }, ensure_ascii=False))
    return 0


def fit_peer(peer: str, train: Path, out: Path, *, topics: int, vocab_size: int,
             seed: int = 0, gensim_passes: int = GENSIM_PASSES,
             tomotopy_max_iterations: int = TOMOTOPY_MAX_ITERATIONS,
             stopwords: str = "english") -> dict:
    """Fit ``peer`` in a fresh process; returns ``status``, ``seconds``, ``cpu_seconds``,
    ``vocabulary``, ``topic_word`` (K, V), ``prevalence`` (K,), ``settings`` and ``info``."""
    from benchmarks.quality.run import REPO, anchorstream_command, children_cpu

    if not installed(peer):
        return {"status": "skipped (not installed)", "settings": settings(peer)}
    _, env = anchorstream_command()
    cmd = [sys.executable, "-m", "benchmarks.quality.peers", "--peer", peer, "--train",
           str(train), "--out", str(out), "--topics", str(topics), "--vocab-size",
           str(vocab_size), "--seed", str(seed), "--gensim-passes", str(gensim_passes),
           "--tomotopy-max-iterations", str(tomotopy_max_iterations), "--stopwords", stopwords]
    cpu0, t0 = children_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"status": f"failed (exit {proc.returncode}): " + " / ".join(tail),
                "settings": settings(peer)}
    meta = json.loads((out / "result.json").read_text(encoding="utf-8"))
    topic_word = np.load(out / "topic_word.npy")
    prevalence = np.load(out / "prevalence.npy")
    return {
        "status": "ok", "seconds": time.perf_counter() - t0, "cpu_seconds": children_cpu() - cpu0,
        "vocabulary": meta["vocabulary"], "topic_word": topic_word, "prevalence": prevalence,
        "prep_seconds": meta["prep_seconds"], "info": meta["info"],
        "settings": settings(peer, meta["info"].get("iterations")),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Fit one peer (child process of bench_quality).")
    p.add_argument("--peer", choices=PEERS, required=True)
    p.add_argument("--train", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--topics", type=int, required=True)
    p.add_argument("--vocab-size", type=int, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--gensim-passes", type=int, default=GENSIM_PASSES)
    p.add_argument("--tomotopy-max-iterations", type=int, default=TOMOTOPY_MAX_ITERATIONS)
    p.add_argument("--stopwords", default="english", help="a shipped stopword list's name")
    return child(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
