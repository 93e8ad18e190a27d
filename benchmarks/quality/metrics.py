"""The quality benchmark's metrics, the same for every method.

A method is scored from what it outputs: its vocabulary (strings), its topic-word matrix and
its topic weights. Nothing of a method's own tokenizer enters the held-out scoring.

- **held-out NPMI@10**: each topic's 10 most probable words *as strings*, scored against the
  held-out raw documents tokenized permissively (NFKC + casefold, runs of ``[^\\W_]`` word
  characters; no stopword removal, no length filter, so no method's tokenizer is favoured).
  Document co-occurrence; a topic's score is the mean NPMI over its 45 pairs, a pair never
  seen together (or a word absent from the held-out text) scores −1
  (:func:`anchorstream.evaluate.npmi_coherence`); the model's score is the mean over topics.
- **unique@10**: distinct words among all top-10 lists / (10·K).
- **dead topics**: topics whose prevalence (the model's own topic weights, normalized to sum
  to 1) is below 0.001.
- **ℓ1 error** (where a truth is known): the model's topics restricted to the truth's
  vocabulary and renormalized, matched one-to-one to the true topics by the Hungarian
  algorithm, mean ℓ1 distance per topic (:func:`anchorstream.evaluate.recovery_error`;
  0 = exact, 2 = disjoint).

>>> index = HeldoutIndex.build(["Red apple pie", "apple tart", "red red car"])
>>> round(float(npmi([["apple", "pie"], ["red", "car"]], index)[0]), 3)
0.369
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from anchorstream.evaluate import npmi_coherence, recovery_error, top_words
from benchmarks.quality.corpora import Corpus, Truth, permissive_tokens

TOP_N = 10
#: The held-out index's cache version: 2 since the permissive tokens cut Chinese and Japanese
#: runs (session 43), so an index cached before is built again.
INDEX_VERSION = 2
DEAD_BELOW = 1e-3


@dataclass(frozen=True)
class HeldoutIndex:
    """Which held-out document holds which word: a binary (n_docs, n_words) CSC matrix.

    Attributes
    ----------
    words : list of str
        Every distinct permissive token of the held-out documents; column order.
    matrix : scipy.sparse.csc_matrix of shape (n_docs, n_words), float64, 0/1
    """

    words: list[str]
    matrix: sp.csc_matrix

    @classmethod
    def build(cls, texts) -> "HeldoutIndex":
        position: dict[str, int] = {}
        indices: list[int] = []
        indptr = [0]
        for text in texts:
            cols = {position.setdefault(w, len(position)) for w in permissive_tokens(text)}
            indices.extend(sorted(cols))
            indptr.append(len(indices))
        n = len(indptr) - 1
        X = sp.csr_matrix((np.ones(len(indices)), np.asarray(indices, dtype=np.int64),
                           np.asarray(indptr, dtype=np.int64)), shape=(n, len(position)))
        return cls(list(position), X.tocsc())

    @classmethod
    def for_corpus(cls, corpus: Corpus) -> "HeldoutIndex":
        """The corpus's index, built once and cached beside its held-out file."""
        npz = corpus.directory / f"heldout_index_v{INDEX_VERSION}.npz"
        words_file = corpus.directory / f"heldout_words_v{INDEX_VERSION}.json"
        if npz.is_file() and words_file.is_file() and (
                npz.stat().st_mtime >= corpus.heldout_path.stat().st_mtime):
            return cls(json.loads(words_file.read_text(encoding="utf-8")),
                       sp.load_npz(npz).tocsc())
        index = cls.build(corpus.heldout_texts)
        sp.save_npz(npz, index.matrix)
        words_file.write_text(json.dumps(index.words, ensure_ascii=False), encoding="utf-8")
        return index

    @property
    def n_docs(self) -> int:
        return self.matrix.shape[0]

    def columns(self, words: list[str]) -> sp.csc_matrix:
        """The (n_docs, len(words)) sub-matrix; a word never seen gives an empty column."""
        pos = {w: i for i, w in enumerate(self.words)}
        idx = [pos.get(w, -1) for w in words]
        present = [i for i in idx if i >= 0]
        sub = self.matrix[:, present]
        # Scatter the present columns into place; absent words stay all-zero.
        where = np.array([j for j, i in enumerate(idx) if i >= 0], dtype=np.int64)
        P = sp.csr_matrix((np.ones(len(where)), (np.arange(len(where)), where)),
                          shape=(len(where), len(words)))
        return (sub @ P).tocsc()


def top_word_strings(vocabulary: list[str], topic_word: np.ndarray, n: int = TOP_N):
    """Each topic's ``n`` most probable words; ``topic_word`` is (K, V), rows are topics."""
    idx = top_words(np.asarray(topic_word, dtype=np.float64).T, n)
    return [[vocabulary[i] for i in row] for row in idx]


def published_top_words(vocabulary: list[str], topic_word: np.ndarray,
                        n: int = TOP_N) -> list[list[str]]:
    """Each topic's ``n`` top words ranked above the whole background level at the default
    spread (:mod:`anchorstream.model.background`): what a snapshot publishes where documents
    are :data:`~anchorstream.model.background.SHORT_DOCUMENTS` tokens long or more (and at
    every length before session 61; :func:`labels_top_words` ranks as a snapshot does at every
    length), for the scripts that fit in process. ``topic_word`` is (K, V), rows are topics."""
    from anchorstream.model.background import (BACKGROUND_SPREAD, background_level,
                                               ranked_top_words)

    B = np.asarray(topic_word, dtype=np.float64)
    top = ranked_top_words(B, n, background_level(B, BACKGROUND_SPREAD))
    return [[vocabulary[i] for i in row] for row in top]


def labels_top_words(vocabulary: list[str], topic_word: np.ndarray, mean_length: float,
                     n: int = TOP_N) -> list[list[str]]:
    """Each topic's ``n`` top words as an anchorstream snapshot would label this model, whatever
    method fitted it (``topic_word`` is (K, V), rows are topics): where documents are shorter
    than :data:`~anchorstream.model.background.SHORT_DOCUMENTS` tokens on average
    (``mean_length``, in anchorstream's tokens) above as little of the background level as
    tells the labels apart, no word in more than a capped share of them
    (:func:`~anchorstream.model.background.distinct_top_words`), else above the whole level
    (:func:`anchorstream.snapshot.write.write_snapshot`'s choice). Scoring a peer's topics
    this way separates what its model scores from what its ranking by probability scores."""
    from anchorstream.model.background import (BACKGROUND_SPREAD, background_level,
                                               top_words_for_length)

    B = np.asarray(topic_word, dtype=np.float64)
    # As a snapshot stores the topics: each row a distribution, in float32.
    B = (B / np.maximum(B.sum(axis=1, keepdims=True), np.finfo(float).tiny)).astype(np.float32)
    top = top_words_for_length(B, n, background_level(B, BACKGROUND_SPREAD), mean_length).top
    return [[vocabulary[i] for i in row] for row in top]


def npmi(top: list[list[str]], index: HeldoutIndex) -> np.ndarray:
    """Held-out NPMI of each topic's top words (strings), shape (K,)."""
    union = sorted({w for row in top for w in row})
    pos = {w: i for i, w in enumerate(union)}
    top_idx = np.array([[pos[w] for w in row] for row in top], dtype=np.int64)
    return npmi_coherence(top_idx, index.columns(union))


def unique(top: list[list[str]]) -> float:
    """Distinct words among all top lists / (len(top) * len(top[0]))."""
    return len({w for row in top for w in row}) / sum(len(row) for row in top)


def dead_topics(prevalence, threshold: float = DEAD_BELOW) -> int:
    """Topics whose share of the (normalized) topic weights is below ``threshold``."""
    p = np.maximum(np.asarray(prevalence, dtype=np.float64), 0.0)
    total = p.sum()
    if not total > 0:
        return int(p.size)
    return int(np.sum(p / total < threshold))


def l1_error(truth: Truth, vocabulary: list[str], topic_word: np.ndarray) -> float:
    """Mean ℓ1 distance per topic to the truth after Hungarian matching.

    ``topic_word`` is the model's (K, V) over ``vocabulary``; words of the truth the model
    lacks get probability 0, words the truth lacks are dropped, then each topic is
    renormalized (a topic with no mass on the truth's words stays all-zero: distance 1).
    """
    est = np.maximum(np.asarray(topic_word, dtype=np.float64), 0.0)
    pos = {w: i for i, w in enumerate(vocabulary)}
    B_est = np.zeros((len(truth.vocabulary), est.shape[0]))
    for j, w in enumerate(truth.vocabulary):
        i = pos.get(w)
        if i is not None:
            B_est[j] = est[:, i]
    mass = B_est.sum(axis=0, keepdims=True)
    B_est = np.divide(B_est, mass, out=np.zeros_like(B_est), where=mass > 0)
    return recovery_error(truth.topic_word, B_est)[0]


def evaluate(vocabulary: list[str], topic_word: np.ndarray, prevalence, index: HeldoutIndex,
             truth: Truth | None = None, top: list[list[str]] | None = None,
             mean_length: float | None = None) -> dict:
    """All metrics of one fitted model.

    Parameters
    ----------
    vocabulary : list of str, length V
    topic_word : array_like of shape (K, V)
        Rows are topics (``p(w | z)``, any non-negative scale).
    prevalence : array_like of shape (K,)
        The model's topic weights.
    index : HeldoutIndex
    truth : Truth, optional
    top : list of K lists of words, optional
        The top words the method publishes, when it ranks them otherwise than by
        probability (anchorstream's ``topics.json`` above the background); default each row's
        ``TOP_N`` most probable words.
    mean_length : float, optional
        The corpus's mean document length in anchorstream's tokens: with it, the model's
        topics are also scored as anchorstream would label them (:func:`labels_top_words`).

    Returns
    -------
    dict
        ``npmi`` (mean held-out NPMI@10), ``npmi_per_topic`` (list), ``unique``, ``dead``,
        ``l1`` (NaN without a truth), ``n_topics`` and ``top_words`` (K lists of 10);
        ``npmi_probability`` (the mean NPMI of each topic's 10 most probable words: ``npmi``
        where ``top`` is not given); with ``mean_length``, ``npmi_labels`` and
        ``unique_labels`` (of :func:`labels_top_words`).
    """
    topic_word = np.asarray(topic_word, dtype=np.float64)
    by_probability = top_word_strings(list(vocabulary), topic_word)
    top = by_probability if top is None else [list(row[:TOP_N]) for row in top]
    per_topic = npmi(top, index)
    extra = {"npmi_probability": float(np.mean(per_topic)) if top is by_probability
             else float(np.mean(npmi(by_probability, index)))}
    if mean_length is not None:
        labels = labels_top_words(list(vocabulary), topic_word, mean_length)
        extra.update(npmi_labels=float(np.mean(npmi(labels, index))),
                     unique_labels=unique(labels))
    return {
        **extra,
        "npmi": float(np.mean(per_topic)),
        "npmi_per_topic": [float(x) for x in per_topic],
        "unique": unique(top),
        "dead": dead_topics(prevalence),
        "l1": float("nan") if truth is None else l1_error(truth, list(vocabulary), topic_word),
        "n_topics": int(topic_word.shape[0]),
        "top_words": top,
    }


def read_snapshot_top_words(path: Path, n: int = TOP_N) -> list[list[str]]:
    """The top words an anchorstream snapshot publishes (``topics.json``), ``n`` per topic."""
    topics = json.loads((Path(path) / "topics.json").read_text(encoding="utf-8"))
    return [[w for w, _ in t["top_words"][:n]] for t in topics]


def read_snapshot_model(path: Path) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``(vocabulary, topic_word (K, V), prevalence (K,))`` of an anchorstream snapshot."""
    path = Path(path)
    vocabulary = (path / "vocab.txt").read_text(encoding="utf-8").splitlines()
    topic_word = np.load(path / "topic_word.npy")
    topics = json.loads((path / "topics.json").read_text(encoding="utf-8"))
    prevalence = np.array([t["prevalence"] for t in topics], dtype=np.float64)
    return vocabulary, topic_word, prevalence
