"""One entry point over every topic-inference method, for batch fits and comparisons.

:func:`fit_topics` runs any method of :mod:`anchorstream.model.registry` and returns a
:class:`TopicFit` with the word-topic matrix, a topic-topic matrix and one representative word
per topic, which is all a snapshot needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from anchorstream.stats.cooccurrence import Cooccurrence, as_counts_csr, cooccurrence
from anchorstream.model.correlations import topic_topic
from anchorstream.errors import InputError
from anchorstream.model.pipeline import AnchorModel, ModelSettings, StageTimer
from anchorstream.model.recover import recover_groups, select_groups
from anchorstream.model.rectify import rectify
from anchorstream.model.refine import (REFINE_MAX_ITER, pair_counts, pair_loglik,
                                       refine_method_for, refine_topics, smoothed_start)
from anchorstream.model.registry import method_spec
from anchorstream.model.stages import (IMPLICIT, active_square, check_refine_cooc,
                                      rectify_stage, recover_weights)

# The other methods' modules are imported where they are used: AnchorFree pulls in
# scipy.optimize (HiGHS), ~0.2 s of the start-up of every `anchorstream fit` otherwise.

__all__ = ["DDP_NOVEL_PER_TOPIC", "NOVEL_WORD_TOPICS", "TSVD_TOPICS", "TopicFit", "fit_topics",
           "novel_word_min_df"]

#: DDP declares this many novel words per topic (``n_novel = 20 K``; the paper's experiments use
#: ``s = 10 K``). On Gibbs-truth semi-synthetic corpora (K = 50, V = 5000, 50k documents,
#: Dirichlet(0.03)) the spectral clustering of 10 K words left 4-5 topics without a group of
#: their own; 20 K: ℓ1 0.433 → 0.343 and 0.526 → 0.368 (60 words, two draws), 0.421 → 0.304
#: (100 words). Figures and commands: benchmarks/README.md (seed methods against their papers).
DDP_NOVEL_PER_TOPIC = 20

#: DDP in ``fit_topics``: each cluster re-anchored on its ``DDP_N_EXTREME`` most extreme words
#: before Algorithm 4 (None: the paper's plain cluster average). On ``synth60-50k`` (Gibbs truth,
#: K = 50, 60 words per document) ℓ1 0.327 -> 0.269 (10) / 0.260 (20), the default 0.197.
#: Over five fresh draws of that regime 1.73x -> 1.60x the default's ℓ1 (benchmarks/README.md,
#: seed methods, session 15); with ``NOVEL_CLUSTERS_PER_TOPIC`` below, 1.28x.
DDP_N_EXTREME: int | None = 10

#: RP in ``fit_topics``: noise-aware detection (``rp_topics(noise_aware=True)``) and the
#: clusters' re-anchoring on their ``RP_N_EXTREME`` most extreme words (None: the paper's plain
#: cluster average). On ``synth60-50k``: ℓ1 0.592 (the paper's detection, 5 words) -> 0.420
#: (noise-aware, 5) -> 0.345 (10) / 0.325 (20); on the one-anchor planted model of
#: ``bench_methods.py`` 10 words cost 0.04 against 5 (one true anchor per topic there).
#: Over five fresh draws 3.85x -> 1.82x the default's ℓ1 (benchmarks/README.md, seed methods,
#: session 15); with ``NOVEL_CLUSTERS_PER_TOPIC`` below, 1.38x.
RP_NOISE_AWARE = True
RP_N_EXTREME: int | None = 10

#: DDP and RP in ``fit_topics``: Algorithm 3 cuts ``NOVEL_CLUSTERS_PER_TOPIC × K`` clusters, each
#: is re-anchored, and the K groups farthest apart are kept (``novelgroups.distinct_groups``; 1 is
#: the paper's K clusters). Cut at K, the clustering split topics with many novel words and
#: merged those with a handful into a neighbour: 3 of 50 topics had no group on a Gibbs-truth
#: draw. Over five draws (K = 50, 60 words per document) DDP 1.60x -> 1.28x and RP 1.82x ->
#: 1.38x the default's ℓ1; 3 clusters per topic: 1.30x and 1.41x. Figures: benchmarks/README.md
#: (seed methods, session 20).
NOVEL_CLUSTERS_PER_TOPIC = 2

#: DDP and RP in ``fit_topics``: how the topics come from the groups. ``"recover"``: the groups
#: stand in for anchor words in the anchor pipeline's rectification and recovery
#: (:func:`_fit_groups`); ``"patterns"``: the paper's Algorithm 4 on the words' document
#: patterns (``estimate_topics``) for the groups ``distinct_groups`` keeps, what
#: ``ddp_topics``/``rp_topics`` return. Against ``"patterns"`` (benchmarks/README.md, "Seed
#: methods, session 33"): on issue 20's Gibbs-truth regime DDP 1.54x -> 1.03x and RP 1.66x ->
#: 1.22x the default's ℓ1 (five seeds), on nine real corpora held-out NPMI +0.015 (DDP) and
#: +0.023 (RP) on average, from -0.029 (DDP, long) to +0.088 (RP, tech); no dead topic of DDP
#: on any corpus (it had 6 on tech).
NOVEL_WORD_TOPICS = "recover"

#: TSVD in ``fit_topics``: how the topics come from its clustering. ``"documents"``: the paper's
#: steps 5-6, each topic the average of the documents richest in its catchwords (``tsvd.tsvd``);
#: ``"recover"``: steps 1-4 cut ``TSVD_CLUSTERS_PER_TOPIC × K`` clusters of documents
#: (``tsvd.tsvd_clusters``), each gives the ``TSVD_GROUP_WORDS`` words with the largest share of
#: their occurrences in it (``tsvd.cluster_words``), and these groups are recovered as DDP's and
#: RP's are (:func:`_fit_groups`); ``"auto"``: both, and the one under which the observed word
#: pairs are likelier is kept (:func:`_pair_fit`). An average of documents keeps the other topics
#: those documents hold: on issue 20's Gibbs-truth regime (60 words per document,
#: Dirichlet(0.03)) even an oracle average is at ℓ1 0.50; ``"documents"`` is at 3.6x the
#: default's ℓ1 there, ``"recover"`` at 0.84-0.89x (five draws), and ``"auto"`` keeps it. Where
#: one topic is most of every document and no word is an anchor (TSVD's own assumption,
#: ``tests/test_tsvd.py``'s corpus) the averages are right (ℓ1 0.07 against 0.33) and ``"auto"``
#: keeps them. Figures: benchmarks/README.md, "Seed methods, session 34".
TSVD_TOPICS = "auto"

#: ``"recover"``'s clusters per topic: at K, two topics sharing a cluster left 3 of 50 topics
#: without a group (ℓ1 0.27 to 0.30 with any choice of group words); at 2 K the selection
#: (``recover.select_groups``) keeps K of them, ℓ1 0.156; 3 K was no better (0.162-0.172 with
#: the other word rules tried).
TSVD_CLUSTERS_PER_TOPIC = 2

#: ``"recover"``'s words per cluster: 5 / 10 / 20 gave ℓ1 0.156 / 0.163 / 0.214 (the twentieth
#: word of a cluster is no longer specific to it).
TSVD_GROUP_WORDS = 5

#: ``"recover"``'s k-means++ restarts (the paper's 10 for ``"documents"``): with 2 K clusters
#: and the selection after them, 1 and 10 restarts gave the same ℓ1 to 0.001 on four draws, at
#: a seventh of the CPU (11 s against 70-95 s at 50k documents).
TSVD_RESTARTS = 1


@dataclass(frozen=True, eq=False)
class TopicFit:
    """The outcome of :func:`fit_topics`.

    Attributes
    ----------
    topic_word : ndarray of shape (n_words, n_topics)
        ``p(word | topic)``, columns sum to 1.
    topic_topic : ndarray of shape (n_topics, n_topics)
        Topic co-occurrence, sums to 1.
    anchors : ndarray of shape (n_topics,)
        A representative word per topic: the anchor (anchor methods), the first novel word
        (DDP/RP), or the most probable word (AnchorFree, TSVD, which have no anchors).
    timings : dict
        Seconds per stage.
    model : AnchorModel or None
        The fitted estimator for ``method="anchor"`` with ``qr``/``fast`` (warm-startable).
    refine : str
        The pair refinement that ran after the method (``none``, ``joint`` or ``pairs``;
        ``auto`` resolved by the mean document length).
    refine_passes : int
        Its EM passes.
    estimate : str or None
        How a method with more than one way to estimate its topics did (``TSVD_TOPICS``,
        ``NOVEL_WORD_TOPICS``): ``"recover"``, ``"documents"`` or ``"patterns"``; None for the
        others.
    """

    topic_word: np.ndarray
    topic_topic: np.ndarray
    anchors: np.ndarray
    timings: dict = field(default_factory=dict)
    model: AnchorModel | None = None
    refine: str = "none"
    refine_passes: int = 0
    estimate: str | None = None

    @classmethod
    def from_model(cls, model: AnchorModel) -> "TopicFit":
        """A fitted :class:`AnchorModel`'s topics, with its refinement and passes."""
        return cls(model.topic_word_, model.topic_topic_, model.anchors_, dict(model.timings_),
                   model, model.refine_, int(model.n_iter_.get("refine", 0)))

    @property
    def prevalence(self) -> np.ndarray:
        return self.topic_topic.sum(axis=1)


def _most_probable(topic_word: np.ndarray) -> np.ndarray:
    return np.argmax(topic_word, axis=0).astype(np.int64)


def _correlations(C: np.ndarray, topic_word: np.ndarray, anchors: np.ndarray) -> np.ndarray:
    # The diagonal form (JSMF Alg. 4) needs each topic to give its anchor positive mass; the
    # pseudo-inverse form works for any B, so it is the fallback for anchorless methods.
    try:
        return topic_topic(C, topic_word, anchors, method="diagonal")
    except InputError:
        return topic_topic(C, topic_word, anchors, method="pinv")


def _refined(fit: TopicFit, C: np.ndarray, cooc: Cooccurrence, settings: dict,
             stage, pairs=None, refine_cooc=None) -> TopicFit:
    """``fit`` after the pair refinement the settings ask for (``refine``, default ``auto``:
    ``joint`` on short documents), as the anchor-word pipeline runs it after recovery.

    Every method's topics are a start for the same EM on the raw pairs' likelihood
    (:func:`~anchorstream.model.refine.refine_topics`); on short documents, where each method's
    moments are noisiest, it is what makes their topics usable (benchmarks/README.md, "Every
    method refined on short text"). Negative entries a method may leave (TSVD's pseudo-inverse
    correlations) are clipped first. ``pairs``: ``pair_counts(C)`` if already computed.
    ``refine_cooc``: where the refinement counts its pairs instead (as for
    :meth:`AnchorModel.fit`)."""
    if refine_cooc is not None:
        check_refine_cooc(refine_cooc, cooc.n_words)
        cooc, pairs = refine_cooc, None
        C = refine_cooc if isinstance(refine_cooc, IMPLICIT) else refine_cooc.counts
    method = refine_method_for(settings.get("refine", "auto"), cooc.num_docs, cooc.num_tokens)
    if method == "none":
        return fit
    B, R = _start(fit)
    if pairs is None:
        pairs = stage("pairs", lambda: pair_counts(C))
    refined = stage("refine", lambda: refine_topics(
        pairs, B, R, method=method,
        max_iter=int(settings.get("refine_max_iter", REFINE_MAX_ITER))))
    return TopicFit(refined.topic_word, refined.topic_topic, fit.anchors, fit.timings,
                    fit.model, method, refined.n_iter, fit.estimate)


def _start(fit: TopicFit) -> tuple[np.ndarray, np.ndarray]:
    """``fit``'s topics and topic-topic matrix as a start of the pair EM: negative entries
    clipped, columns normalized, the topic-topic matrix symmetrized (an identity if nothing is
    left of it)."""
    B = np.maximum(np.asarray(fit.topic_word, dtype=np.float64), 0.0)
    mass = B.sum(axis=0)
    B = np.divide(B, mass, out=np.zeros_like(B), where=mass > 0)
    R = np.maximum(np.asarray(fit.topic_topic, dtype=np.float64), 0.0)
    R = (R + R.T) / 2.0
    if not R.sum() > 0:
        R = np.eye(B.shape[1])
    return B, R


def _pair_fit(pairs, fit: TopicFit) -> float:
    """Mean log-likelihood of the observed word pairs where the pair refinement would start
    from ``fit`` (its topics smoothed by ``refine.smoothed_start``, so that no observed pair
    makes an estimate ``-inf``): how TSVD's ``auto`` compares its two estimates."""
    B, R = _start(fit)
    return float(pair_loglik(pairs, smoothed_start(pairs, B), R / R.sum()))


def novel_word_min_df(split, n_topics: int, min_df: float) -> float:
    """``anchor_min_df`` for DDP and RP: as for anchor words
    (:func:`~anchorstream.model.anchors.anchor_min_df_for`), over the words seen in both halves of
    the documents (the only ones the novel-word tests can pick)."""
    from anchorstream.model.anchors import anchor_min_df_for

    seen = (split.mass_first > 0) & (split.mass_second > 0)
    return anchor_min_df_for(np.asarray(split.doc_freq)[seen], n_topics, min_df)


def _fit_groups(C, candidates, K, settings, random_state, stage, timings) -> TopicFit:
    """DDP's and RP's topics from their novel-word groups: the anchor pipeline's rectification
    of the normalized co-occurrence ``C``, the ``K`` of the ``candidates`` groups whose mean
    rows lie farthest apart (:func:`~anchorstream.model.recover.select_groups`, in place of
    ``distinct_groups``' choice on the document patterns) and the pipeline's recovery (method
    and weights as set) with each group's mean row as its topic's anchor row
    (:func:`~anchorstream.model.recover.recover_groups`).

    Ding et al.'s Algorithm 4 (``ddp_topics(...).topic_word``) regresses each word's document
    pattern, unrectified, on the groups'; on Gibbs-truth corpora (K = 50, 60 words per
    document, 50k and 100k documents) the topics recovered this way have 0.6-0.8 of its ℓ1
    error (``NOVEL_WORD_TOPICS``; docs/algorithms.md, "Novel words")."""
    s = ModelSettings(n_topics=K, random_state=random_state, **settings)
    V = C.shape[0]
    C_active, active = active_square(C)
    position = np.full(V, -1)
    position[active] = np.arange(active.size)
    if s.rectify and s.rectify_method != "lowrank" and C_active is C:
        C_active = C.copy()  # the dense rectifier works in its input's memory; C is refined
    rect = rectify_stage(C_active, V, K, active, position, None, s, stage, False, None, None)
    local = [g for g in (position[g][position[g] >= 0] for g in candidates) if g.size]
    if len(local) < K:
        raise InputError(f"only {len(local)} groups of novel words occur in documents of >= 2 "
                         f"tokens, need n_topics={K}")
    weights = recover_weights(s)
    if len(local) > K:  # the K whose mean rows lie farthest apart
        kept = stage("select_groups", lambda: select_groups(
            rect.C, local, K, weights=weights, check_input=not s.rectify,
            row_sums=rect.row_sums))
        local = [local[i] for i in kept]
    rec = stage("recover", lambda: recover_groups(
        rect.C, local, method=s.recover_method, tol=s.recover_tol, max_iter=s.recover_max_iter,
        check_input=not s.rectify, row_sums=rect.row_sums, weights=weights))
    # Each group's first word (in the finder's order) represents its topic.
    anchors = np.array([g[0] for g in local], dtype=np.int64)
    A = stage("correlations", lambda: _correlations(rect.C, rec.topic_word, anchors))
    B = np.zeros((V, K))
    B[active] = rec.topic_word
    return TopicFit(B, A, active[anchors], timings)


def _fit_anchorfree(C, K, settings, random_state, init, stage, timings,
                    num_tokens: float) -> TopicFit:
    """``fit_topics(method="anchorfree")`` on the normalized co-occurrence ``C`` of
    ``num_tokens`` tokens (the scale of the sampling noise the LPs' slack allows for)."""
    from anchorstream.model.anchorfree import anchor_free, noise_slack

    active = np.flatnonzero(C.sum(axis=1) > 0)
    P = C[np.ix_(active, active)]
    s = ModelSettings(n_topics=K, random_state=random_state, **settings)
    eig = None
    if s.rectify:
        rect = stage("rectify", lambda: rectify(
            P, K, max_iter=s.rectify_max_iter, tol=s.rectify_tol,
            dtype=np.dtype(s.rectify_dtype), anderson=s.rectify_anderson,
            random_state=random_state))
        # The square-root factor is rectification's own eigenpairs (no second solve).
        P, eig = rect.matrix, (rect.eigvals, rect.eigvecs)
    warm = None
    if init is not None:
        warm = np.asarray(init, dtype=np.float64)[active]
        if warm.shape != (active.size, K) or not np.any(warm):
            warm = None
    words = s.anchorfree_words * K if s.anchorfree_words else None
    slack = noise_slack(s.anchorfree_slack, num_tokens)
    res = stage("anchorfree", lambda: anchor_free(
        P, K, init=warm, eig=eig, constraint_words=words, slack=slack))
    B = np.zeros((C.shape[0], K))
    B[active] = res.topic_word
    return TopicFit(B, res.topic_topic, _most_probable(B), timings)


def fit_topics(
    n_topics: int,
    *,
    cooc: Cooccurrence | None = None,
    documents=None,
    method: str = "anchor",
    anchor_method: str = "qr",
    random_state: int = 0,
    on_stage=None,
    init: np.ndarray | None = None,
    split=None,
    sketch=None,
    overwrite_cooc: bool = False,
    warm_state: bool = True,
    rectify_workspace: np.ndarray | None = None,
    refine_cooc=None,
    **settings,
) -> TopicFit:
    """Fit topics with any of the supported methods.

    Parameters
    ----------
    n_topics : int
    cooc : Cooccurrence, optional
        Needed by the co-occurrence methods; computed from ``documents`` when omitted.
    documents : sparse matrix of shape (n_docs, n_words), optional
        Word counts; needed by ``tsvd`` and by the ``ddp``/``rp`` anchor finders. Row ``d``
        is document id ``d`` (the seed of its random direction in RP).
    method : {"anchor", "anchorfree", "tsvd"}
    anchor_method : {"qr", "fast", "ddp", "rp"}
        With ``method="anchor"``.
    random_state : int
    on_stage : callable, optional
        As for :meth:`AnchorModel.fit`.
    init : ndarray of shape (n_words, n_topics), optional
        A previous word-topic matrix on the same words (zero rows for new ones): the warm
        start of ``anchorfree``. Ignored by the other methods.
    overwrite_cooc : bool
        As for :meth:`AnchorModel.fit` (anchors qr/fast only): ``cooc`` may be overwritten.
    warm_state : bool
        As for :meth:`AnchorModel.fit`: False keeps no copy of the co-occurrence, which only
        a later warm-started refit of the returned ``model`` would use.
    rectify_workspace : ndarray, optional
        As for :meth:`AnchorModel.fit` (anchors qr/fast only).
    refine_cooc : Cooccurrence or DocumentCooccurrence, optional
        Where the pair refinement counts its word pairs, over ``cooc``'s words (the documents
        cut into windows: :mod:`anchorstream.text.windows`); ``refine="auto"`` then decides
        by its documents' length. Default: ``cooc``.
    split, sketch : SplitStatistic, RPSketch, optional
        The statistics of ``ddp``/``rp`` (:mod:`anchorstream.model.novelwords`) when they were kept
        elsewhere (a store); then ``documents`` are not needed.
    **settings
        Further :class:`~anchorstream.model.pipeline.ModelSettings` fields (``rectify``,
        ``recover_method``, ``anchor_min_df``, ...).

    Returns
    -------
    TopicFit

    Raises
    ------
    InputError
        For an unknown method, or a document method without ``documents``.
    """
    try:
        spec = method_spec(method, anchor_method)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    needs_docs = spec.needs_documents
    if split is not None and (spec.statistics == "split" or sketch is not None):
        needs_docs = False
    if needs_docs and documents is None:
        raise InputError(
            f"{spec.label} works on documents, not on a co-occurrence matrix alone: pass documents "
            "(batch fit from files), or choose anchors qr/fast or method anchorfree"
        )
    if cooc is None:
        if documents is None:
            raise InputError("fit_topics needs cooc or documents")
        cooc = cooccurrence(documents)
    timings: dict[str, float] = {}
    stage = StageTimer(timings, on_stage)

    if spec.anchor_words:
        model = AnchorModel(
            n_topics, anchor_method=anchor_method, random_state=random_state, **settings
        ).fit(cooc, on_stage=on_stage, overwrite_cooc=overwrite_cooc, warm_state=warm_state,
              rectify_workspace=rectify_workspace, refine_cooc=refine_cooc)
        return TopicFit.from_model(model)

    C = cooc.normalized()
    K = n_topics
    if method == "anchor":  # DDP / RP (Ding et al. 2014)
        from anchorstream.model.novelwords import ddp_topics, rp_topics
        from anchorstream.stats.wordpatterns import rp_sketch, split_statistic

        min_df = float(settings.get("anchor_min_df", 0))
        if documents is not None:
            doc_ids = np.arange(documents.shape[0], dtype=np.int64)
        if split is None:
            split = stage("statistics",
                          lambda: split_statistic(documents, doc_ids, seed=random_state))
        min_df = novel_word_min_df(split, K, min_df)
        if anchor_method == "ddp":
            res = stage("novel_words", lambda: ddp_topics(
                split, K, n_novel=DDP_NOVEL_PER_TOPIC * K, min_df=min_df,
                n_extreme=DDP_N_EXTREME, n_clusters=NOVEL_CLUSTERS_PER_TOPIC * K,
                random_state=random_state))
        else:
            if sketch is None:
                sketch = stage("sketch", lambda: rp_sketch(
                    documents, doc_ids, n_projections=50 * K, seed=random_state))
            res = stage("novel_words", lambda: rp_topics(
                sketch, split, K, min_df=min_df, n_extreme=RP_N_EXTREME,
                noise_aware=RP_NOISE_AWARE, n_clusters=NOVEL_CLUSTERS_PER_TOPIC * K,
                random_state=random_state))
        if NOVEL_WORD_TOPICS == "patterns":
            anchors = np.asarray(res.anchors, dtype=np.int64)
            A = stage("correlations", lambda: _correlations(C, res.topic_word, anchors))
            fit = TopicFit(res.topic_word, A, anchors, timings)
        else:
            fit = _fit_groups(C, res.candidates, K, settings, random_state, stage, timings)
        return _refined(replace(fit, estimate=NOVEL_WORD_TOPICS), C, cooc, settings, stage,
                        refine_cooc=refine_cooc)

    if method == "anchorfree":
        return _refined(_fit_anchorfree(C, K, settings, random_state, init, stage, timings,
                                        cooc.num_tokens), C, cooc, settings, stage,
                        refine_cooc=refine_cooc)

    return _fit_tsvd(C, cooc, documents, K, settings, random_state, stage, timings, refine_cooc)


def _fit_tsvd(C, cooc: Cooccurrence, documents, K: int, settings: dict, random_state: int,
              stage, timings: dict, refine_cooc=None) -> TopicFit:
    """``fit_topics(method="tsvd")``: the estimate ``TSVD_TOPICS`` names, refined."""
    fits = {}
    if TSVD_TOPICS in ("documents", "auto"):
        from anchorstream.model.tsvd import tsvd

        res = stage("tsvd", lambda: tsvd(documents, K, random_state=random_state))
        anchors = _most_probable(res.topic_word)
        A = stage("correlations", lambda: topic_topic(C, res.topic_word, anchors,
                                                      method="pinv"))
        fits["documents"] = TopicFit(res.topic_word, A, anchors, timings)
    if TSVD_TOPICS in ("recover", "auto"):
        try:
            groups = stage("tsvd_clusters",
                           lambda: _tsvd_groups(documents, cooc, K, settings, random_state))
            fits["recover"] = _fit_groups(C, groups, K, settings, random_state, stage, timings)
        except InputError:
            if TSVD_TOPICS == "recover":
                raise
            # auto: too few documents or word groups for 2 K clusters; the averages remain.
    pairs = None
    if len(fits) > 1:  # auto: the estimate under which the observed word pairs are likelier
        pairs = stage("pairs", lambda: pair_counts(C))
        scores = stage("choose", lambda: {k: _pair_fit(pairs, f) for k, f in fits.items()})
        chosen = max(scores, key=scores.get)
    else:
        (chosen,) = fits
    return _refined(replace(fits[chosen], estimate=chosen), C, cooc, settings, stage, pairs,
                    refine_cooc)


def _tsvd_groups(documents, cooc: Cooccurrence, K: int, settings: dict,
                 random_state: int) -> tuple[np.ndarray, ...]:
    """TSVD's clusters of ``documents`` and each one's words (``TSVD_TOPICS = "recover"``):
    words in at least ``anchor_min_df`` documents of ``cooc`` (as anchors need), the clusters
    at most one fewer than the non-empty documents."""
    from anchorstream.model.candidates import anchor_min_df_for
    from anchorstream.model.tsvd import cluster_words, tsvd_clusters

    s = ModelSettings(n_topics=K, random_state=random_state, **settings)
    X = as_counts_csr(documents)
    non_empty = int(np.count_nonzero(np.diff(X.indptr)))
    n_clusters = max(K, min(TSVD_CLUSTERS_PER_TOPIC * K, non_empty - 1))
    clusters = tsvd_clusters(X, n_clusters, w0=1.0 / K, n_init=TSVD_RESTARTS,
                             random_state=random_state)
    min_df = anchor_min_df_for(cooc.doc_freq, K, s.anchor_min_df)
    return cluster_words(X, clusters.labels, n_clusters, TSVD_GROUP_WORDS,
                         candidates=cooc.doc_freq >= min_df)
