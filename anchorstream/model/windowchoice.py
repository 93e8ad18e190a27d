"""Whether the pair refinement counts its pairs in windows: decided from the documents.

Counting the refinement's pairs inside windows of 24 tokens (:mod:`anchorstream.text.windows`)
gains where a document moves from subject to subject (manuals' sections, speeches'
paragraphs, e-mail) and loses where it keeps one (technical package descriptions), and the
documents' length does not tell the two apart (benchmarks/README.md, "The refinement's pairs
in windows"). The fitted topics do. With ``q_w = p(topic | w)`` of the anchor model before
its refinement, a pair of tokens ``(i, j)`` agrees on a subject by ``q_i · q_j``. Over the
documents that span two or more windows, the *subject persistence* is

    (mean agreement of pairs across windows − r) / (mean agreement of pairs in a window − r)

with ``r = ‖q̄‖²`` the agreement of two tokens drawn independently (``q̄`` the tokens' mean
``q``). It is 1 where a window's pairs say no more about the subject than the document's
(words exchangeable within a document) and falls as documents drift: 0 would mean distant
windows share no more subject than two unrelated documents. ``refine_window: auto``
(``anchorstream fit --refine-window auto``) refines on the windows when it is below
:data:`PERSISTENCE_THRESHOLD`.

The threshold, from sixteen corpora (benchmarks/README.md, "Choosing the windows from the
documents"): where windows of 24 tokens gained by more than 0.005 of held-out NPMI the
persistence was 0.46-0.80, where they lost 0.95-1.45. It needs each document's tokens in
order, so only ``fit --input`` decides: a store keeps no pairs across windows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from anchorstream.errors import InputError
from anchorstream.text.tokenize import count_matrix
from anchorstream.text.windows import check_window, window_documents

__all__ = ["AUTO_WINDOW", "PERSISTENCE_THRESHOLD", "WindowChoice", "WindowDecision",
           "subject_persistence"]

#: The window ``auto`` considers, in tokens: session 39's choice (16-32 measured alike).
AUTO_WINDOW = 24
#: Below this subject persistence ``auto`` refines on the windows.
PERSISTENCE_THRESHOLD = 0.9


def subject_persistence(documents, windows, window_doc, topic_word, prevalence) -> float:
    """The subject persistence of documents cut into windows (see the module notes).

    Parameters
    ----------
    documents : sparse matrix of shape (n_docs, n_words)
        Word counts of the documents.
    windows : sparse matrix of shape (n_windows, n_words)
        Word counts of their windows, over the same words: the windows of a document sum to
        its row.
    window_doc : array of int of shape (n_windows,)
        The document of each window.
    topic_word : array of shape (n_words, n_topics)
        ``p(word | topic)``.
    prevalence : array of shape (n_topics,)
        ``p(topic)``.

    Returns
    -------
    float
        NaN where no document has tokens in two windows, or pairs in one window agree no
        more than independent tokens (to rounding: 1e-9 of their agreement).

    Examples
    --------
    Two topics, each document one of them throughout: persistence 1.

    >>> B = np.array([[.5, 0], [.5, 0], [0, .5], [0, .5]])
    >>> docs = sp.csr_matrix([[2., 2, 0, 0], [0, 0, 2, 2]])
    >>> wins = sp.csr_matrix([[1., 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 1, 1]])
    >>> round(subject_persistence(docs, wins, [0, 0, 1, 1], B, [.5, .5]), 6)
    1.0

    One document that changes topic from its first window to its second: its distant pairs
    agree less than independent tokens.

    >>> wins = sp.csr_matrix([[2., 2, 0, 0], [0, 0, 2, 2]])
    >>> docs = sp.csr_matrix([[2., 2, 2, 2]])
    >>> round(subject_persistence(docs, wins, [0, 0], B, [.5, .5]), 6)
    -1.0
    """
    X = sp.csr_matrix(documents, dtype=np.float64)
    Xw = sp.csr_matrix(windows, dtype=np.float64)
    window_doc = np.asarray(window_doc, dtype=np.int64)
    B = np.asarray(topic_word, dtype=np.float64)
    if (Xw.shape[1] != X.shape[1] or B.shape[0] != X.shape[1]
            or window_doc.shape != (Xw.shape[0],)):
        raise InputError(
            f"documents {X.shape}, windows {Xw.shape}, window_doc {window_doc.shape} and "
            f"topic_word {B.shape} do not fit together")
    q = B * np.asarray(prevalence, dtype=np.float64)
    mass = q.sum(axis=1, keepdims=True)
    q = np.divide(q, mass, out=np.zeros_like(q), where=mass > 0)
    filled = np.diff(Xw.indptr) > 0
    spans = np.bincount(window_doc[filled], minlength=X.shape[0]) >= 2
    if not spans.any():
        return float("nan")
    Xd, Xu = X[spans], Xw[spans[window_doc] & filled]
    n, nu = np.asarray(Xd.sum(axis=1)).ravel(), np.asarray(Xu.sum(axis=1)).ravel()
    # Σ over ordered pairs of distinct tokens of q_i · q_j = ‖Σ q‖² − Σ ‖q_i‖², per row.
    self_pairs = float(np.asarray(Xd.sum(axis=0)).ravel() @ (q * q).sum(axis=1))
    Y, Yu = Xd @ q, Xu @ q
    total = float(np.sum(Y * Y)) - self_pairs
    within = float(np.sum(Yu * Yu)) - self_pairs
    n_total, n_within = float(n @ n - n.sum()), float(nu @ nu - nu.sum())
    mean = np.asarray(Xd.sum(axis=0)).ravel() @ q / n.sum()
    r = float(mean @ mean)
    near = within / n_within if n_within > 0 else 0.0
    spread = near - r
    if not spread > 1e-9 * near or not n_total > n_within:  # no more than rounding
        return float("nan")
    return ((total - within) / (n_total - n_within) - r) / spread


@dataclass(frozen=True)
class WindowDecision:
    """What ``refine_window: auto`` chose: the ``window`` (None: whole documents) and the
    ``persistence`` it chose by."""

    window: int | None
    persistence: float
    threshold: float = PERSISTENCE_THRESHOLD

    def to_dict(self) -> dict:
        """For a snapshot's settings (NaN persistence as None: JSON has no NaN)."""
        p = self.persistence
        return {"window": self.window, "persistence": None if np.isnan(p) else round(p, 4),
                "threshold": self.threshold}


@dataclass(frozen=True)
class WindowChoice:
    """The refinement's pairs in windows or in whole documents, decided after the topics are
    found (``AnchorModel.fit(refine_cooc=WindowChoice(...))``, ``fit_topics``).

    Attributes
    ----------
    cooc : Cooccurrence or DocumentCooccurrence
        The windows' co-occurrence: the refinement's pairs if the windows are chosen.
    documents, windows, window_doc
        As for :func:`subject_persistence`.
    window : int
        The windows' length in tokens.
    threshold : float
        Windows where the persistence is below it.
    """

    cooc: object
    documents: sp.csr_matrix
    windows: sp.csr_matrix
    window_doc: np.ndarray
    window: int = AUTO_WINDOW
    threshold: float = PERSISTENCE_THRESHOLD

    @classmethod
    def from_token_lists(cls, token_lists, vocabulary, documents=None, *,
                         length_cap: float | None = 2, window: int = AUTO_WINDOW
                         ) -> WindowChoice:
        """The choice for tokenized documents over ``vocabulary``: their windows of ``window``
        tokens (:func:`~anchorstream.text.windows.window_documents`) counted with
        ``length_cap`` as the refinement would. ``documents``: ``count_matrix(token_lists,
        vocabulary)`` if already computed."""
        from anchorstream.model.lowrank import DocumentCooccurrence

        lists = list(token_lists)
        size = check_window(window)
        n = np.fromiter((len(t) for t in lists), dtype=np.int64, count=len(lists))
        per_doc = np.where(n > size, -(-n // size), (n > 0).astype(np.int64))
        X = count_matrix(lists, vocabulary) if documents is None else documents
        Xw = count_matrix(window_documents(lists, size), vocabulary)
        window_doc = np.repeat(np.arange(len(lists), dtype=np.int64), per_doc)
        return cls(DocumentCooccurrence(Xw, length_cap=length_cap), sp.csr_matrix(X), Xw,
                   window_doc, size)

    @property
    def n_words(self) -> int:
        return self.cooc.n_words

    def decide(self, topic_word, prevalence) -> WindowDecision:
        """The decision for topics ``topic_word`` (n_words x K) of prevalence ``prevalence``."""
        p = subject_persistence(self.documents, self.windows, self.window_doc, topic_word,
                                prevalence)
        chosen = self.window if p < self.threshold else None  # NaN: whole documents
        return WindowDecision(chosen, p, self.threshold)
