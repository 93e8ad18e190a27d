"""Semi-synthetic corpora: documents drawn from a known LDA model (Arora et al. 2013 §5).

The truth is the topics of a collapsed Gibbs LDA fit (tomotopy, K = 50, 1000 iterations) of
the ``tech`` corpus's training documents, tokenized by anchorstream's tokenizer and restricted
to its 5000 most document-frequent words (``select_vocabulary`` with the defaults of
``anchorstream fit``; words that the metrics' permissive tokenizer would cut apart, such as
``rock'n'roll``, are left out so a drawn held-out text re-tokenizes to the same words). It is
fitted once and cached (``_truth/`` in the cache). An LDA model is the generative story of the
documents and no anchor method, so no planted anchor word favours the anchor methods.

Documents: θ ~ Dirichlet(α) per document, then each of the ``L`` words drawn from ``B θ``.
The training documents are drawn in fixed chunks of 10,000 with their own seeds, so a larger
corpus of the same ``L`` and α starts with the smaller ones; the 10,000 held-out documents are
drawn from a separate stream.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.quality.corpora import REPO, SEED, _WORD, cache_root

TRUTH_CORPUS = "tech"
TRUTH_TOPICS = 50
TRUTH_VOCAB = 5000
TRUTH_ITERATIONS = 1000
N_HELDOUT = 10_000
_CHUNK = 10_000
BENCH_PYTHON = REPO / "benchmarks" / ".cache" / "venv" / "bin" / "python"


def truth_dir() -> Path:
    return cache_root() / "_truth" / f"{TRUTH_CORPUS}-lda-k{TRUTH_TOPICS}-v{TRUTH_VOCAB}"


def load_truth() -> tuple[np.ndarray, list[str], dict]:
    """``(topic_word (V, K), vocabulary, meta)`` of the truth, fitted on first use.

    The fit needs tomotopy (the ``bench`` extra). Without it in this interpreter, the fit runs
    once in the benchmark environment (``benchmarks/.cache/venv``) when that exists.
    """
    d = truth_dir()
    if not (d / "meta.json").is_file():
        try:
            import tomotopy  # noqa: F401
        except ImportError:
            if not BENCH_PYTHON.is_file():
                raise ImportError(
                    "the semi-synthetic truth is fitted with tomotopy: install the bench extra "
                    "(make benchmarks/.cache/venv/.installed) or run once in an environment "
                    "with tomotopy"
                ) from None
            print("fitting the semi-synthetic truth in the benchmark environment ...",
                  file=sys.stderr, flush=True)
            subprocess.run([str(BENCH_PYTHON), "-m", "benchmarks.quality.synthetic"],
                           cwd=REPO, check=True,
                           env={**os.environ, "PYTHONPATH": str(REPO)})
        else:
            fit_truth()
    meta = json.loads((d / "meta.json").read_text())
    B = np.load(d / "topic_word.npy")
    vocab = (d / "vocab.txt").read_text(encoding="utf-8").splitlines()
    return B, vocab, meta


def fit_truth() -> Path:
    """Fit the truth with tomotopy and cache it; returns its directory."""
    import tomotopy as tp

    from anchorstream.text.tokenize import Tokenizer, select_vocabulary
    from benchmarks.quality.corpora import load

    corpus = load(TRUTH_CORPUS)
    tok = Tokenizer()
    docs = [tok(t) for t in corpus.train_texts()]
    vocab = [w for w in select_vocabulary(docs, min_df=5, max_df=0.5, max_size=TRUTH_VOCAB + 200)
             if _WORD.fullmatch(w)][:TRUTH_VOCAB]
    keep = set(vocab)
    model = tp.LDAModel(tw=tp.TermWeight.ONE, k=TRUTH_TOPICS, seed=SEED)
    n_docs = 0
    for d in docs:
        words = [w for w in d if w in keep]
        if words:
            model.add_doc(words)
            n_docs += 1
    t0 = time.perf_counter()
    print(f"fitting the truth: tomotopy LDA, K={TRUTH_TOPICS}, {n_docs} documents, "
          f"{TRUTH_ITERATIONS} iterations ...", file=sys.stderr, flush=True)
    # One worker: tomotopy's result depends on the thread schedule otherwise, and the truth
    # must be the same wherever it is rebuilt (~10 minutes, once).
    model.train(TRUTH_ITERATIONS, workers=1)
    seconds = time.perf_counter() - t0
    index = {w: i for i, w in enumerate(model.used_vocabs)}
    B = np.zeros((len(vocab), TRUTH_TOPICS))
    cols = np.array([index[w] for w in vocab])
    for k in range(TRUTH_TOPICS):
        B[:, k] = np.asarray(model.get_topic_word_dist(k))[cols]
    B /= B.sum(axis=0, keepdims=True)  # every used word is in vocab; guards round-off
    d = truth_dir()
    tmp = d.with_name(d.name + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    np.save(tmp / "topic_word.npy", B)
    (tmp / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    (tmp / "meta.json").write_text(json.dumps({
        "corpus": TRUTH_CORPUS, "n_docs": n_docs, "n_tokens": int(model.num_words),
        "n_topics": TRUTH_TOPICS, "vocab_size": len(vocab), "iterations": TRUTH_ITERATIONS,
        "tomotopy": tp.__version__, "alpha": float(np.mean(model.alpha)), "eta": model.eta,
        "seed": SEED, "workers": 1, "ll_per_word": model.ll_per_word, "seconds": seconds,
    }, indent=1))
    if d.exists():
        import shutil

        shutil.rmtree(d)
    tmp.rename(d)
    return d


def sample_texts(B: np.ndarray, vocab: list[str], n_docs: int, doc_length: int, alpha: float,
                 seed) -> list[str]:
    """``n_docs`` documents of ``doc_length`` words from topics ``B`` (V, K), θ ~ Dir(alpha).

    Topic counts per document are multinomial(L, θ); the words of each topic are then drawn
    for all documents at once (one ``choice`` per topic), which is exact and fast.
    """
    rng = np.random.default_rng(seed)
    V, K = B.shape
    theta = rng.dirichlet(np.full(K, alpha), size=n_docs)
    counts = rng.multinomial(doc_length, theta)  # (n_docs, K)
    words = np.empty((n_docs, doc_length), dtype=np.int64)
    fill = np.zeros(n_docs, dtype=np.int64)
    for k in range(K):
        n_k = counts[:, k]
        total = int(n_k.sum())
        if total == 0:
            continue
        drawn = rng.choice(V, size=total, p=B[:, k])
        docs = np.repeat(np.arange(n_docs), n_k)
        slot = fill[docs] + (np.arange(total) - np.repeat(np.cumsum(n_k) - n_k, n_k))
        words[docs, slot] = drawn
        fill += n_k
    for row in words:
        rng.shuffle(row)  # the order of a bag of words is arbitrary; shuffled for readers
    vocab_arr = np.asarray(vocab, dtype=object)
    return [" ".join(vocab_arr[row]) for row in words]


def build_synthetic(doc_length: int, n_train: int, alpha: float):
    """``(train, heldout, description)`` of one semi-synthetic corpus (see the module doc)."""
    B, vocab, meta = load_truth()
    train: list[str] = []
    chunk = 0
    while len(train) < n_train:
        n = min(_CHUNK, n_train - len(train))
        train += sample_texts(B, vocab, n, doc_length, alpha, [SEED, doc_length,
                                                                int(alpha * 1e6), chunk])
        chunk += 1
    held = sample_texts(B, vocab, N_HELDOUT, doc_length, alpha,
                        [SEED, doc_length, int(alpha * 1e6), 10**6])
    return train, held, {
        "source": f"drawn from the truth: tomotopy {meta['tomotopy']} LDA (K = "
                  f"{meta['n_topics']}, {meta['iterations']} Gibbs iterations, seed "
                  f"{meta['seed']}) of the {meta['corpus']} corpus's {meta['n_docs']} training "
                  f"documents on its {meta['vocab_size']} most frequent words; "
                  f"{doc_length} words per document, θ ~ Dirichlet({alpha})",
        "license": "generated (from topics of the tech corpus)",
        "split": f"{n_train} train (prefix of a fixed seeded sequence) / {N_HELDOUT} held-out "
                 "(own stream)",
        "n_topics": int(meta["n_topics"]),
        "vocab_size": int(meta["vocab_size"]),
    }


if __name__ == "__main__":
    fit_truth()
