"""The stages of :meth:`anchorstream.model.pipeline.AnchorModel.fit`, one function each.

Rectification (cold, warm update or low-rank), the anchor search, the recovery and the topic
correlations, each run through the fit's :class:`~anchorstream.model.pipeline.StageTimer`
(``stage``), plus the input checks and the warm-start bookkeeping between them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from anchorstream._buffers import leading_view
from anchorstream.errors import AnchorstreamError, InputError
from anchorstream.model.anchors import anchor_min_df_for, candidate_words, find_anchors, row_noise
from anchorstream.model.candidates import CAP_MAX_SHARE
from anchorstream.model.correlations import dirichlet_alpha, topic_topic
from anchorstream.model.lowrank import DocumentCooccurrence, rectify_lowrank
from anchorstream.model.lowrank_warm import data_product, probes, rectify_lowrank_update
from anchorstream.model.recover import recover
from anchorstream.model.refine import refine_topics
from anchorstream.model.refine_warm import warm_start
from anchorstream.model.rectify import rectify, rectify_update
from anchorstream.stats.cooccurrence import Cooccurrence, take_square
from anchorstream.stats.sparse import SparseCooccurrence

#: Co-occurrences given without a dense V x V array: only the low-rank rectifier takes them.
IMPLICIT = (DocumentCooccurrence, SparseCooccurrence)

# The fit's own logger, as when these stages were part of it.
log = logging.getLogger("anchorstream.model.pipeline")

__all__ = ["IMPLICIT", "Rectified", "active_pairs", "active_part", "active_square",
           "anchor_min_df", "anchor_stage", "check_fit_input", "check_refine_cooc",
           "correlation_stage", "recover_stage", "recover_weights", "rectify_stage",
           "refine_stage", "warm_coefficients", "warm_columns", "warm_eigvecs"]


@dataclass
class Rectified:
    """The matrix the later stages work on, and the rectification state a warm refit needs."""

    C: object
    row_sums: np.ndarray | None = None
    row_sqnorms: np.ndarray | None = None
    eigvecs: np.ndarray | None = None
    factor: np.ndarray | None = None
    shift: float = 0.0
    data: np.ndarray | None = None
    data_product: np.ndarray | None = None  # low rank: the data times [factor, probes]
    probes: np.ndarray | None = None  # low rank: the probes of the change's size
    residual: float = 0.0
    change: float = 0.0
    warm_chain: int = 0
    n_iter: dict = field(default_factory=dict)


def check_fit_input(cooc, init, K: int, lowrank: bool) -> int:
    """InputError unless ``cooc`` (and the warm start ``init``) suit this fit; returns V."""
    if isinstance(cooc, IMPLICIT):
        if not lowrank:
            raise InputError(f"a {type(cooc).__name__} (no dense V x V matrix) needs "
                             "rectify_method='lowrank'; pass a Cooccurrence otherwise")
    elif not isinstance(cooc, Cooccurrence):
        raise InputError(f"fit expects a Cooccurrence, got {type(cooc).__name__}")
    if cooc.num_docs < 1:
        raise InputError("the co-occurrence holds no documents (need documents of >= 2 tokens)")
    V = cooc.n_words
    if init is not None:
        init._check_fitted()
        if init.topic_word_.shape != (V, K):
            raise InputError(
                f"init was fitted on {init.topic_word_.shape[0]} words and "
                f"{init.topic_word_.shape[1]} topics; this fit has {V} words and {K} topics "
                "(remap the warm start to the new vocabulary first)"
            )
    return V


def active_part(cooc, overwrite: bool):
    """The normalized co-occurrence of the words that occur in a document of >= 2 tokens, and
    their indices: a dense array (from a :class:`Cooccurrence`) or an operator (from a
    :class:`~anchorstream.model.lowrank.DocumentCooccurrence` or a
    :class:`~anchorstream.stats.sparse.SparseCooccurrence`)."""
    if isinstance(cooc, IMPLICIT):
        active = np.flatnonzero(cooc.row_sums() > 0)
        return (cooc if active.size == cooc.n_words else cooc.subset(active)), active
    counts = cooc.counts
    if (overwrite and isinstance(counts, np.ndarray) and counts.dtype == np.float64
            and counts.flags.c_contiguous and counts.flags.writeable):
        total = cooc.total_weight()
        C_full = counts
        C_full /= total  # what normalized() returns, in place
    else:
        C_full = cooc.normalized()
    return active_square(C_full)


def check_refine_cooc(refine_cooc, n_words: int) -> None:
    """InputError unless ``refine_cooc`` (``AnchorModel.fit(refine_cooc=...)``) is a
    co-occurrence over the fit's ``n_words`` words."""
    if not isinstance(refine_cooc, (*IMPLICIT, Cooccurrence)):
        raise InputError(f"refine_cooc must be a co-occurrence, got {type(refine_cooc).__name__}")
    if refine_cooc.n_words != n_words:
        raise InputError(f"refine_cooc has {refine_cooc.n_words} words, the fit {n_words}")


def active_pairs(refine_cooc, active: np.ndarray):
    """The refinement's own co-occurrence on the fit's active words, in a form
    :func:`~anchorstream.model.refine.pair_counts` reads (:func:`check_refine_cooc` first)."""
    if isinstance(refine_cooc, IMPLICIT):
        return (refine_cooc if active.size == refine_cooc.n_words
                else refine_cooc.subset(active))
    return take_square(refine_cooc.counts, active)


def active_square(C_full: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A dense co-occurrence restricted to its words with mass, and their indices."""
    active = np.flatnonzero(C_full.sum(axis=1) > 0)
    # Usually every word is active: no copy of the V x V matrix then.
    return (C_full if active.size == C_full.shape[0] else take_square(C_full, active)), active


def warm_eigvecs(init, active: np.ndarray) -> np.ndarray | None:
    """The previous model's eigenvectors on the active words, when it has any."""
    vecs = None if init is None else getattr(init, "eigvecs_", None)
    if vecs is None:
        return None
    vecs = vecs[active]
    return vecs if np.any(vecs) else None



def rectify_stage(C, V, K, active, position, init, s, stage, warm_state, workspace, data_out):
    """Rectification of the active words' co-occurrence ``C`` (none unless ``s.rectify``)."""
    if not s.rectify:
        return Rectified(C)
    warm_eig = warm_eigvecs(init, active)
    if s.rectify_method == "lowrank":
        return _rectify_lowrank_stage(C, V, K, active, init, s, stage, warm_state, warm_eig)
    previous = _warm_previous(init, active, V, s)
    data = None

    def run():
        nonlocal data
        if previous is not None:
            updated = rectify_update(
                C, *previous, max_change=s.rectify_warm_change, dtype=np.dtype(s.rectify_dtype),
                overwrite_input=True, workspace=workspace, check_input=False)
            if updated is not None:
                return updated
        if warm_state:
            # before C's memory receives the result
            data = _cold_data(C, V, active, position, init, data_out)
        return rectify(
            C,
            K,
            method=s.rectify_method,
            max_iter=s.rectify_max_iter,
            tol=s.rectify_tol,
            init_eigvecs=warm_eig,
            random_state=s.random_state,
            dtype=np.dtype(s.rectify_dtype),
            anderson=s.rectify_anderson,
            # C (this fit's own array) is not needed afterwards: the result takes its memory.
            overwrite_input=True,
            # The eigenvectors only seed a later cold rectification: the loop's precision
            # (1e-6) is plenty, and refining costs a V x V product.
            refine_eigvecs=False,
            workspace=workspace,
        )

    rect = stage("rectify", run)
    out = _rectified(rect, V, K, active)
    if rect.n_iter == 0 and previous is not None:  # warm
        # The cold rectification's state carries on (shared: fits never write it).
        out.data = init.rectify_data_ if warm_state else None
        out.factor, out.shift = init.rectify_factor_, float(init.rectify_shift_)
        out.residual = float(init.rectify_residual_)
        out.change = float(rect.residual)
        out.warm_chain = init.rectify_warm_chain_ + 1
    else:
        out.data = data
        out.factor = np.zeros((V, K))
        out.factor[active] = rect.factor
        out.shift = float(rect.shift)
        out.residual = float(rect.residual)
    return out


def _rectify_lowrank_stage(C, V, K, active, init, s, stage, warm_state, warm_eig) -> Rectified:
    """The low-rank rectification: a warm update from ``init``'s cold state when it has one
    and the data moved little since (:func:`rectify_lowrank_update`), else cold. As for the
    dense path, the state (factor and the data's product with it) stays that of the last cold
    rectification along a chain of warm refits, so ``rectify_warm_change`` bounds the summed
    change."""
    previous = None
    if (init is not None and getattr(init, "rectify_data_product_", None) is not None
            and getattr(init, "rectify_factor_", None) is not None
            and (s.rectify_warm_limit is None
                 or init.rectify_warm_chain_ < s.rectify_warm_limit)):
        previous = (init.rectify_factor_[active], init.rectify_probes_[active],
                    init.rectify_data_product_[active])

    def run():
        if previous is not None:
            updated = rectify_lowrank_update(C, *previous, rows=s.rectify_rows,
                                             max_change=s.rectify_warm_change)
            if updated is not None:
                return updated
        return rectify_lowrank(
            C, K, rows=s.rectify_rows, max_iter=s.rectify_max_iter, tol=s.rectify_tol,
            anderson=s.rectify_anderson, init_eigvecs=warm_eig, random_state=s.random_state)

    rect = stage("rectify", run)
    out = _rectified(rect, V, K, active)
    if rect.n_iter == 0 and previous is not None:  # warm: the cold state carries on
        out.factor, out.data_product = init.rectify_factor_, init.rectify_data_product_
        out.probes = init.rectify_probes_
        out.residual = float(init.rectify_residual_)
        out.change = float(rect.residual)
        out.warm_chain = init.rectify_warm_chain_ + 1
        return out
    out.factor = np.zeros((V, rect.factor.shape[1]))
    out.factor[active] = rect.factor
    out.shift, out.residual = float(rect.shift), float(rect.residual)
    if warm_state:
        out.probes = probes(V, s.random_state)
        out.data_product = np.zeros((V, K + out.probes.shape[1]))
        out.data_product[active] = data_product(
            C, np.hstack([rect.factor, out.probes[active]]))
    return out


def _rectified(rect, V, K, active) -> Rectified:
    """The part of a rectification result both paths keep the same way."""
    eigvecs = np.zeros((V, K))
    eigvecs[active] = rect.eigvecs
    return Rectified(rect.matrix, rect.row_sums, rect.row_sqnorms, eigvecs,
                     n_iter={"rectify": int(rect.n_iter)})


def _warm_previous(init, active, V, s):
    """``(previous_data, factor, shift)`` for :func:`rectify_update`, or None for a cold fit.

    A warm refit follows the data's change since the last cold rectification, to first order,
    instead of rerunning alternating projection. The state stays that of the cold
    rectification for the whole chain: the update's error grows with the change it follows, so
    one update from the cold point over the summed change is as good as a chain of small ones,
    and the summed change is what max_change bounds.
    """
    if (init is not None
            and getattr(init, "rectify_data_", None) is not None
            and init.rectify_data_.shape == (V, V)
            and getattr(init, "rectify_factor_", None) is not None
            and (s.rectify_warm_limit is None
                 or init.rectify_warm_chain_ < s.rectify_warm_limit)):
        prev_data = (init.rectify_data_ if active.size == V
                     else take_square(init.rectify_data_, active))
        return prev_data, init.rectify_factor_[active], init.rectify_shift_
    return None


def _cold_data(C, V, active, position, init, data_out):
    """This fit's data as the state of later warm refits (cold path only)."""
    data = leading_view(data_out, (V, V), np.float32)
    current = None if init is None else getattr(init, "rectify_data_", None)
    if data is None or (current is not None and np.shares_memory(data, current)):
        data = np.empty((V, V), dtype=np.float32)
    if active.size == V:
        np.copyto(data, C, casting="same_kind")
    else:  # zero rows for the unused words
        data[...] = take_square(C, position)
    return data


def anchor_min_df(cooc, K, active, s) -> float:
    """``s.anchor_min_df``, lowered (and logged) where fewer than ``2 K`` words reach it,
    raised where more than ``s.anchor_candidates * K`` words do, and lowered towards 5% of the
    documents where they are long (``candidates.well_estimated_min_df``)."""
    min_df = anchor_min_df_for(cooc.doc_freq[active], K, s.anchor_min_df, s.anchor_candidates,
                               num_docs=cooc.num_docs, num_tokens=cooc.num_tokens)
    if min_df < s.anchor_min_df:
        log.info("anchor_min_df %g lowered to %.4g: fewer than %d words are in %g documents, "
                 "or fewer of these %.1f-token documents estimate a row as well",
                 s.anchor_min_df, min_df, 2 * K, s.anchor_min_df,
                 float(cooc.num_tokens) / max(float(cooc.num_docs), 1.0))
    elif min_df > s.anchor_min_df:
        log.info("anchor_min_df %g raised to %.4g: anchor candidates are the %d x %d most "
                 "frequent words (and every word in %g%% of the documents)", s.anchor_min_df,
                 min_df, s.anchor_candidates, K, 100 * CAP_MAX_SHARE)
    return min_df


def anchor_stage(cooc, rect: Rectified, K, min_df, active, position, init, s, stage):
    """The anchor words (indices into the active words) and the QR search's products with the
    anchor rows (None for the other finders, and for the chi-square ADMM, which does not read
    them); ``min_df`` is :func:`anchor_min_df`'s."""
    V = cooc.n_words
    candidates = candidate_words(cooc.doc_freq[active], min_df)
    if candidates.sum() < K:
        raise InputError(
            f"only {int(candidates.sum())} words appear in >= anchor_min_df="
            f"{min_df:g} documents, need at least n_topics={K} anchor candidates; "
            "lower anchor_min_df or the number of topics"
        )
    pinned = []
    for word in s.pinned_anchors:
        if not 0 <= word < V or position[word] < 0:
            raise InputError(f"pinned anchor {word} is not a word that occurs in the corpus")
        pinned.append(int(position[word]))
    # A refit seeds the search with init's anchors (the search's local cleanup keeps an anchor
    # unless a word is WARM_SWAP_MARGIN farther), with either rectifier. The low-rank
    # rectifier's refits searched cold until session 18: over five warm refits of 1% each on
    # the demo corpus (bench_churn.py, K = 20) that gave 9 topic births, seeded 2 (AP: 0), and
    # seeded its warm refits stay within 0.0035 held-out NPMI of a cold refit on medium, tech
    # and long (bench_warm_refresh.py; benchmarks/README.md, "Low-rank rectification as the
    # default"). With the dense rectifier it also saves one pass over V x V per anchor.
    warm_anchors = None
    if init is not None:
        mapped = position[init.anchors_] if init.anchors_.size == K else np.full(K, -1)
        warm_anchors = mapped if np.all(mapped >= 0) else None
    # Each row's expected squared sampling error, taken off its distance (row_noise).
    noise = (row_noise(cooc.doc_freq[active], cooc.num_docs, cooc.num_tokens, s.anchor_noise)
             if s.anchor_noise > 0 else None)
    # The QR search's coordinates give the recovery its products with the anchor rows,
    # which l2 and the unweighted ADMM read (the chi-square weights need a product of their
    # own, recover._solve).
    qr = s.anchor_method == "qr"
    products = qr and recover_weights(s) == "none"
    found = stage(
        "anchors",
        lambda: find_anchors(
            rect.C,
            K,
            method=s.anchor_method,
            candidates=candidates,
            pinned=tuple(pinned),
            init=warm_anchors,
            # Rectification checked its input and returns a finite, non-negative matrix,
            # with its row statistics.
            check_input=not s.rectify,
            row_sums=rect.row_sums,
            row_sqnorms=rect.row_sqnorms,
            noise=noise,
            **({"return_products": products} if qr else
               {"projection_dim": s.projection_dim, "random_state": s.random_state}),
        ),
    )
    return found if products else (found, None)


def warm_columns(previous, anchors) -> np.ndarray:
    """For each of this fit's ``anchors``, the column of the previous fit's coefficients that
    seeds it (-1: none): the column of the same anchor word wherever it was, else the column
    at the same position if its anchor was replaced (the seeded search swaps an anchor in
    place), else none. Both are word indices of the same vocabulary.

    >>> warm_columns([5, 7, 9], [5, 8, 9]).tolist()    # 7 replaced by 8 in place
    [0, 1, 2]
    >>> warm_columns([5, 7, 9], [9, 5, 4]).tolist()    # 7 dropped, the rest moved: 4 is new
    [2, 0, -1]
    """
    previous = [int(a) for a in previous]
    anchors = [int(a) for a in anchors]
    where = {a: j for j, a in enumerate(previous)}
    kept = set(anchors)
    return np.array([where[a] if a in where
                     else k if k < len(previous) and previous[k] not in kept else -1
                     for k, a in enumerate(anchors)], dtype=np.int64)


def warm_coefficients(init, anchors, active, K: int) -> np.ndarray:
    """``init``'s recovery coefficients on the active words as a start for this fit's
    ``anchors`` (indices into ``active``), their columns matched by :func:`warm_columns`. A
    topic with no match starts at 0; a word left with no mass (absent last time, or all of it
    on such topics) starts uniform.

    The anchors of a refit need not keep their positions: the search drops a seed that is no
    longer a candidate (the candidates are the most frequent words, ``anchor_candidates``),
    and every seed after it moves up one. Seeded position by position, the recovery of such
    a refresh took 0.14-0.22 s against 0.035 s (npm summaries, K = 50, one warm refresh in
    four; 5-9% of the words started on the support of their new optimum, against 56-65%);
    matched by anchor, 0.07-0.11 s.
    """
    coef = np.asarray(init.coef_, dtype=np.float64)[active]
    previous = np.asarray(init.anchors_, dtype=np.int64)
    if previous.size == coef.shape[1]:
        cols = warm_columns(previous, active[np.asarray(anchors, dtype=np.int64)])
        coef = np.where(cols >= 0, coef[:, np.maximum(cols, 0)], 0.0)
    else:
        coef = coef.copy()
    empty = coef.sum(axis=1) <= 0
    coef[empty] = 1.0 / K
    return coef


def recover_weights(s) -> str:
    """The column weights the recovery solves with: ``s.recover_weights`` for ADMM, whose
    least-squares loss they belong to, ``"none"`` for the other methods (their papers' losses)."""
    return s.recover_weights if s.recover_method == "admm" else "none"


def recover_stage(rect: Rectified, anchors, products, K, active, init, s, stage):
    """The recovery, warm-started from ``init``'s coefficients on the active words
    (:func:`warm_coefficients`)."""
    warm_coef = None if init is None else warm_coefficients(init, anchors, active, K)
    return stage(
        "recover",
        lambda: recover(
            rect.C,
            anchors,
            method=s.recover_method,
            init=warm_coef,
            tol=s.recover_tol,
            max_iter=s.recover_max_iter,
            check_input=not s.rectify,
            row_sums=rect.row_sums,
            anchor_products=products,
            weights=recover_weights(s),
        ),
    )


def _alpha(A):
    try:
        return dirichlet_alpha(A)
    except (AnchorstreamError, ValueError, FloatingPointError, np.linalg.LinAlgError):
        return None  # the Dirichlet fit is optional: a correlated A may not admit one


def correlation_stage(C, topic_word, anchors, s, stage):
    """The topic-topic matrix and, where one fits, its Dirichlet ``alpha`` (else None)."""

    def correlations():
        A = topic_topic(C, topic_word, anchors, method=s.correlation_method)
        return A, _alpha(A)

    return stage("correlations", correlations)


def refine_stage(pairs, topic_word, A, method, s, stage, *, anchors=None, active=None,
                 init=None, final_loglik: bool = True, windows: bool = False):
    """EM (``method``: pairs or joint) on the raw pairs' likelihood from the recovered
    ``(topic_word, A)`` (:func:`~anchorstream.model.refine.refine_topics`):
    ``(topic_word, A, alpha, Refined)``, ``A`` and ``alpha`` those of the refined model.

    A refit whose ``init`` ran the same refinement starts it from ``init``'s refined topics
    where their anchors (``active[anchors]``, word ids) are anchors again
    (:func:`~anchorstream.model.refine_warm.warm_start`), for at most ``refine_warm_max_iter``
    passes, or ``refine_warm_new_max_iter`` (no fewer) where some topic's anchor is new
    (``refine_warm_max_iter`` 0: from the recovered topics, as a cold fit); the fit passes no
    ``init`` when it rectified cold; ``windows``: ``pairs`` are those of windows of the
    documents (the new topics' topic-topic rows then start as recovered). ``final_loglik``: as
    for :func:`~anchorstream.model.refine.refine_topics`."""
    start, max_iter = (topic_word, A), s.refine_max_iter
    # check_fit_input has made sure init is on these words and topics.
    if init is not None and s.refine_warm_max_iter > 0 and init.refine_ == method:
        B0, R0, kept = warm_start(topic_word, A, active[anchors], init.topic_word_[active],
                                  init.topic_topic_, init.anchors_, rescale_new=not windows)
        log.debug("refinement starts from the previous one on %d of %d topics", kept,
                  topic_word.shape[1])
        if kept:
            warm = s.refine_warm_max_iter
            if kept < topic_word.shape[1]:
                warm = max(warm, s.refine_warm_new_max_iter)
            start, max_iter = (B0, R0), min(max_iter, warm)
    refined = stage("refine", lambda: refine_topics(pairs, *start, method=method,
                                                    max_iter=max_iter,
                                                    final_loglik=final_loglik))
    return refined.topic_word, refined.topic_topic, _alpha(refined.topic_topic), refined
