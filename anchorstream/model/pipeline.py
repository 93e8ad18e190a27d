"""The rectified anchor-word pipeline as one estimator.

:class:`AnchorModel` composes the stages — rectify (JSMF Alg. 1), find anchors (JSMF Alg. 2 or
Arora 2013 Alg. 4), recover (RecoverL2/KL, ADMM-DR or the inversion baseline) and the topic-topic
matrix with Dirichlet α (JSMF Alg. 4) — on a :class:`~anchorstream.stats.cooccurrence.Cooccurrence`.
The constructor only stores settings; :meth:`AnchorModel.fit` learns the attributes that end in
``_``. Passing the previous model as ``init`` warm-starts the fit: rectification updates the
previous cold state to the data's change (or, cold, the eigenvectors seed its eigensolver), the
anchors seed the anchor search (:func:`~anchorstream.model.stages.anchor_stage`), the
coefficients seed recovery, and a refinement starts from the previous refined topics of the
anchors kept (:func:`~anchorstream.model.refine.warm_start`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from anchorstream.model.registry import (COUNT_ANCHORS, RECOVER_WEIGHTS, RECTIFY_METHODS,
                                         rectify_method_for)
from anchorstream.model.anchors import ANCHOR_CANDIDATES, ANCHOR_MIN_DF, ANCHOR_NOISE
from anchorstream.model.anchorfree import ANCHORFREE_SLACK, ANCHORFREE_WORDS
from anchorstream.model.refine import (REFINE_MAX_ITER, REFINE_METHODS, REFINE_WARM_MAX_ITER,
                                       REFINE_WARM_NEW_MAX_ITER, pair_counts, refine_method_for)
from anchorstream.model.rectify_warm import RECTIFY_WARM_CHANGE
from anchorstream.stats.cooccurrence import Cooccurrence, take_square
from anchorstream.errors import InputError, NotFittedError
from anchorstream.model.stages import (
    active_pairs,
    active_part,
    anchor_min_df,
    anchor_stage,
    check_fit_input,
    check_refine_cooc,
    correlation_stage,
    recover_stage,
    rectify_stage,
    refine_stage,
)

log = logging.getLogger(__name__)

__all__ = ["RECOVER_METHODS", "AnchorModel", "ModelSettings"]

RECOVER_METHODS = ("admm", "l2", "kl", "inverse")
CORRELATION_METHODS = ("diagonal", "pinv")

#: A progress hook: called with the stage name when it starts and its seconds when it ends.
StageCallback = Callable[[str, float | None], None]


class StageTimer:
    """Runs pipeline stages, recording their seconds in ``timings`` and reporting to a hook.

    ``stage(name, fn)`` calls ``on_stage(name, None)``, runs ``fn()``, stores its duration in
    ``timings[name]``, calls ``on_stage(name, seconds)`` and returns ``fn``'s result.
    """

    def __init__(self, timings: dict[str, float], on_stage: StageCallback | None = None):
        self.timings = timings
        self.on_stage = on_stage

    def __call__(self, name: str, fn):
        if self.on_stage:
            self.on_stage(name, None)
        t0 = time.perf_counter()
        out = fn()
        self.timings[name] = time.perf_counter() - t0
        if self.on_stage:
            self.on_stage(name, self.timings[name])
        return out


@dataclass(frozen=True)
class ModelSettings:
    """Every setting of the pipeline; recorded verbatim in each snapshot's manifest."""

    n_topics: int
    rectify: bool = True
    rectify_method: str = "auto"  # resolved in __post_init__ (rectify_method_for)
    rectify_max_iter: int = 150
    # Measured trade-off (benchmarks/README.md, "Rectification tolerance"): on 50k npm
    # documents 1e-3 took 12 accelerated iterations against 25 at 1e-4 (rectify 2.5 s against
    # 3.7 s), with higher held-out NPMI (+0.002 against -0.030, mean of 4 splits) but more
    # shared top words (unique@10 0.56 against 0.67); semi-synthetic ℓ1 error was equal on
    # 8-word documents and 7-27% higher on 20-word ones at 10k-30k documents. A service that
    # refreshes all day takes the faster default; 1e-4 is one setting away.
    rectify_tol: float = 1e-3
    rectify_dtype: str = "float32"
    rectify_anderson: int = 5
    # A warm refit updates the last cold rectification to first order in the data's change
    # since (rectify_update) instead of rerunning alternating projection. The update's
    # distance from a cold result grew as about half the change it followed (relative
    # Frobenius; 1% new npm documents change the co-occurrence by ~0.01, 12-15 rounds of 1%
    # by ~0.04), so a change since the cold rectification above rectify_warm_change rectifies
    # cold again. On 50k npm documents plus rounds of 1%, the warm refits' held-out NPMI stayed
    # within noise of cold refits' up to a summed change of ~0.04 (0.000-0.007 below over
    # 21 rounds) and fell 0.023 below beyond it (benchmarks/README.md, "Refresh cold vs warm").
    # Those figures are the dense rectifier's with the papers' estimator; the low-rank update
    # strays by 0.3-0.85 of the change, and with the default document weighting 1% new npm
    # documents change the counts by ~0.018, the change growing as the square root of the
    # rounds (benchmarks/README.md, "What the daemon reads, and refreshes in a row").
    # Session 50 raised the bound from 0.04 to 0.06: over chains of 5 refreshes of 1% on eight
    # quality corpora (5 to 400 tokens a document) the warm refits' held-out NPMI was 0.0050
    # below cold refits' on average against 0.0056 at 0.04, and a refresh cost 0.28 of a cold
    # fit on average over the chain against 0.43 (the cold rectifications the bound forces are
    # most of it); the daemon's chain on 50k npm summaries stayed ahead of its cold peer for
    # the 35 rounds to 0.06 and fell 0.01-0.02 behind past ~0.07 (0.08 let it run on); see
    # benchmarks/README.md, "The warm bound raised to 0.06".
    # rectify_warm_limit additionally caps the warm refits in a row (None: no cap; 0: every
    # refit rectifies cold).
    rectify_warm_change: float = RECTIFY_WARM_CHANGE
    rectify_warm_limit: int | None = None
    # rectify_method "lowrank": words whose rows and columns are checked for negative entries
    # each iteration (None: anchorstream.model.lowrank.default_rows, 10 K + 1000).
    rectify_rows: int | None = None
    anchor_method: str = "qr"
    # Anchors need this many documents; a small corpus falls back (anchors.anchor_min_df_for).
    anchor_min_df: int = ANCHOR_MIN_DF
    # At most this many candidates per topic, the most frequent (0: no cap); see
    # anchors.ANCHOR_CANDIDATES.
    anchor_candidates: int = ANCHOR_CANDIDATES
    # The anchor search takes this multiple of each row's expected squared sampling error
    # off its distance to the span (anchors.row_noise; 0: the plain farthest row).
    anchor_noise: float = ANCHOR_NOISE
    projection_dim: int = 1000
    pinned_anchors: tuple[int, ...] = field(default_factory=tuple)
    recover_method: str = "admm"
    recover_max_iter: int = 500
    recover_tol: float | None = None  # None: the method's own default (recover.DEFAULT_TOL)
    # recover_method "admm": "chi2" weights each column of the loss by 1 / p(w) (the
    # chi-square metric), "none" is JSMF's unweighted loss; the other methods keep their
    # papers' losses (benchmarks/README.md, "Recovery in the chi-square metric").
    recover_weights: str = "chi2"
    correlation_method: str = "diagonal"
    # After recovery: EM on the likelihood of the raw word pairs, from the anchor model
    # (anchorstream.model.refine); "none" publishes the anchor model as recovered, "auto" is
    # "joint" on short documents (refine.REFINE_AUTO_MAX_LENGTH) and "none" otherwise.
    refine: str = "auto"
    refine_max_iter: int = REFINE_MAX_ITER
    # A refit whose refinement starts from the previous one runs at most this many passes
    # (also at most refine_max_iter); 0 refits refine like a cold fit.
    refine_warm_max_iter: int = REFINE_WARM_MAX_ITER
    # ... and at most this many (at least refine_warm_max_iter) when some topic's anchor is new:
    # its topic starts from the anchor model, not from a refinement.
    refine_warm_new_max_iter: int = REFINE_WARM_NEW_MAX_ITER
    # method anchorfree: the LPs' constraint words per topic (the most frequent; 0: every word)
    # and the noise slack C(v, k) >= -anchorfree_slack * sigma_v, sigma_v the first-order
    # sampling noise of word v's row of the factor; see anchorstream.model.anchorfree.
    anchorfree_words: int = ANCHORFREE_WORDS
    anchorfree_slack: float = ANCHORFREE_SLACK
    random_state: int = 0

    def __post_init__(self):
        def choice(name, allowed):
            value = getattr(self, name)
            if value not in allowed:
                raise InputError(f"{name} must be one of {allowed}, got {value!r}")

        if not isinstance(self.n_topics, (int, np.integer)) or self.n_topics < 1:
            raise InputError(f"n_topics must be a positive integer, got {self.n_topics!r}")
        choice("rectify_method", RECTIFY_METHODS)
        object.__setattr__(self, "rectify_method",
                           rectify_method_for(self.rectify_method, self.recover_method))
        choice("rectify_dtype", ("float64", "float32"))
        choice("anchor_method", COUNT_ANCHORS)
        choice("recover_method", RECOVER_METHODS)
        choice("recover_weights", RECOVER_WEIGHTS)
        choice("correlation_method", CORRELATION_METHODS)
        choice("refine", REFINE_METHODS)
        for name in ("rectify_max_iter", "recover_max_iter", "projection_dim", "refine_max_iter"):
            if getattr(self, name) < 1:
                raise InputError(f"{name} must be >= 1, got {getattr(self, name)!r}")
        for name in ("refine_warm_max_iter", "refine_warm_new_max_iter"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < 0:
                raise InputError(f"{name} must be an integer >= 0, got {value!r}")
        if self.rectify_warm_limit is not None and (
                not isinstance(self.rectify_warm_limit, (int, np.integer))
                or self.rectify_warm_limit < 0):
            raise InputError("rectify_warm_limit must be None or an integer >= 0, got "
                             f"{self.rectify_warm_limit!r}")
        if not 0 <= self.rectify_warm_change <= 1:
            raise InputError(
                f"rectify_warm_change must be in [0, 1], got {self.rectify_warm_change!r}")
        if not isinstance(self.rectify_anderson, (int, np.integer)) or self.rectify_anderson < 0:
            raise InputError(
                f"rectify_anderson must be an integer >= 0, got {self.rectify_anderson!r}")
        if self.rectify_rows is not None and (
                not isinstance(self.rectify_rows, (int, np.integer)) or self.rectify_rows < 1):
            raise InputError(
                f"rectify_rows must be None or a positive integer, got {self.rectify_rows!r}")
        if self.anchor_min_df < 0:
            raise InputError(f"anchor_min_df must be >= 0, got {self.anchor_min_df!r}")
        if (isinstance(self.anchor_noise, bool)
                or not isinstance(self.anchor_noise, (int, float, np.integer, np.floating))
                or not 0 <= self.anchor_noise < float("inf")):
            raise InputError(
                f"anchor_noise must be a finite number >= 0, got {self.anchor_noise!r}")
        if (not isinstance(self.anchor_candidates, (int, np.integer))
                or self.anchor_candidates < 0):
            raise InputError("anchor_candidates must be an integer >= 0 (0 = no cap), got "
                             f"{self.anchor_candidates!r}")
        if (not isinstance(self.anchorfree_words, (int, np.integer))
                or self.anchorfree_words < 0):
            raise InputError("anchorfree_words must be an integer >= 0 (0 = every word), got "
                             f"{self.anchorfree_words!r}")
        if not self.anchorfree_slack >= 0:
            raise InputError(f"anchorfree_slack must be >= 0, got {self.anchorfree_slack!r}")
        object.__setattr__(self, "pinned_anchors", tuple(int(a) for a in self.pinned_anchors))

    def as_dict(self) -> dict:
        d = asdict(self)
        d["pinned_anchors"] = list(self.pinned_anchors)
        return d


class AnchorModel:
    """Rectified anchor-word topic model fitted on a co-occurrence matrix.

    Parameters
    ----------
    n_topics : int
    **settings
        Any field of :class:`ModelSettings` (``rectify``, ``anchor_method``,
        ``recover_method``, ...).

    Attributes
    ----------
    topic_word_ : ndarray of shape (n_words, n_topics)
        ``p(word | topic)``; columns sum to 1. Words that never occur get zero rows.
    coef_ : ndarray of shape (n_words, n_topics)
        ``p(topic | word)`` from recovery (rows on the simplex; zero rows for absent words);
        before any ``refine``: it seeds the next refit's recovery.
    anchors_ : ndarray of shape (n_topics,)
        Word index of each topic's anchor.
    topic_topic_ : ndarray of shape (n_topics, n_topics)
        Joint topic co-occurrence ``A``; sums to 1.
    prevalence_ : ndarray of shape (n_topics,)
        Row sums of ``A``: the share of the corpus each topic accounts for.
    alpha_ : ndarray of shape (n_topics,) or None
        Dirichlet parameter fitted to ``A`` (None where the fit failed).
    eigvecs_ : ndarray of shape (n_words, n_topics) or None
        Leading eigenvectors of the rectified matrix (they seed the eigensolver of a later
        cold rectification).
    rectify_data_ : ndarray of shape (n_words, n_words), float32, or None
        The normalized co-occurrence the last cold rectification fitted (zero rows for
        unused words); with ``rectify_factor_`` and ``rectify_shift_`` the state a warm refit
        updates (:func:`~anchorstream.model.rectify.rectify_update`). Warm refits carry it on
        unchanged. None with ``warm_state=False``, and for the low-rank rectifier.
    rectify_data_product_ : ndarray of shape (n_words, n_topics + 16) or None
        Low-rank rectifier: that co-occurrence times ``rectify_factor_`` and
        ``rectify_probes_``, all a warm low-rank update needs of the old data
        (:func:`~anchorstream.model.lowrank_warm.rectify_lowrank_update`). None for the dense
        rectifier and with ``warm_state=False``.
    rectify_probes_ : ndarray of shape (n_words, 16) or None
        The random vectors whose products estimate the size of the data's change.
    rectify_factor_ : ndarray of shape (n_words, n_topics) or None
        That cold rectified matrix's rank-``K`` core ``F``: the matrix is
        ``max(F Fᵀ + shift, 0)``.
    rectify_shift_ : float
    rectify_residual_ : float
        Relative change in the last alternating-projection iteration of the cold
        rectification this fit's state descends from (0 when not rectified).
    rectify_change_ : float
        Relative change of the co-occurrence since the cold rectification that a warm update
        followed (0 for a cold one).
    rectify_warm_chain_ : int
        Warm updates in a row that ended with this fit's (0: it rectified cold).
    n_iter_ : dict
        Iterations used per stage.
    refine_ : str
        The refinement this fit ran, ``none``, ``pairs`` or ``joint`` (``auto`` resolved by
        the mean document length, :func:`~anchorstream.model.refine.refine_method_for`).
    refine_loglik_ : tuple of float or None
        With ``refine``: the pair log-likelihood (per ordered pair) of the anchor model and of
        the refined one (:func:`~anchorstream.model.refine.refine_topics`); None without, or
        when :meth:`fit` was asked not to find it (``refine_loglik=False``).
    timings_ : dict
        Seconds per stage: ``rectify``, ``anchors``, ``recover``, ``correlations``, and with
        ``refine`` also ``pairs`` (reading the raw pairs) and ``refine``.

    Examples
    --------
    >>> from anchorstream.synthetic import planted_model, sample_documents
    >>> from anchorstream.stats.cooccurrence import cooccurrence
    >>> truth = planted_model(200, 5, random_state=0)
    >>> X, _ = sample_documents(truth, 2000, random_state=0)
    >>> model = AnchorModel(5, anchor_min_df=0).fit(cooccurrence(X))
    >>> model.topic_word_.shape
    (200, 5)
    """

    def __init__(self, n_topics: int, **settings):
        self.settings = ModelSettings(n_topics=n_topics, **settings)

    @property
    def n_topics(self) -> int:
        return self.settings.n_topics

    def get_params(self) -> dict:
        """The settings as a plain JSON-serialisable dict."""
        return self.settings.as_dict()

    def _check_fitted(self):
        if not hasattr(self, "topic_word_"):
            raise NotFittedError("this AnchorModel is not fitted yet; call fit() first")

    def fit(
        self,
        cooc: Cooccurrence,
        *,
        init: AnchorModel | None = None,
        on_stage: StageCallback | None = None,
        overwrite_cooc: bool = False,
        warm_state: bool = True,
        rectify_workspace: np.ndarray | None = None,
        rectify_data_out: np.ndarray | None = None,
        refine_loglik: bool = True,
        refine_cooc: Cooccurrence | None = None,
    ) -> AnchorModel:
        """Learn topics from a co-occurrence.

        Parameters
        ----------
        cooc : Cooccurrence
            Sufficient statistics over ``n_words`` words.
        init : AnchorModel, optional
            A model fitted earlier on the same vocabulary (same ``n_words``): warm start.
        on_stage : callable, optional
            ``on_stage(name, None)`` when a stage starts, ``on_stage(name, seconds)`` when it ends.
        overwrite_cooc : bool
            Let the fit work in ``cooc.counts``' memory (it is left holding an intermediate
            matrix, and ``cooc`` must not be used afterwards): saves a V x V copy when the
            caller built ``cooc`` for this fit only.
        warm_state : bool
            Keep what a warm refit needs beyond the rectified core: a float32 copy of the
            co-occurrence (``rectify_data_``, 100 MB at V = 5000). A one-off fit passes False.
        rectify_workspace : ndarray, optional
            Memory for the rectification's iterate: a C-contiguous array of ``rectify_dtype``
            with at least ``n_words²`` elements (see :func:`~anchorstream.model.rectify.rectify`).
        rectify_data_out : ndarray, optional
            Memory for ``rectify_data_`` when this fit rectifies cold (float32, at least
            ``n_words²`` elements), e.g. the state before ``init``'s; ignored if it is
            ``init``'s.
        refine_loglik : bool
            With a refinement, find its log-likelihood at the result (``refine_loglik_``): one
            more pass over the pairs without the scatter, ~15 ms of a daemon's warm refresh
            of 50,000 npm summaries. The daemon, which publishes no such figure, passes False
            (``refine_loglik_`` is then None).
        refine_cooc : Cooccurrence, optional
            Where the refinement counts its word pairs instead of ``cooc`` (same words): the
            documents cut into windows (:mod:`anchorstream.text.windows`). ``refine="auto"``
            then decides by its documents' length. A
            :class:`~anchorstream.model.lowrank.DocumentCooccurrence` forms no V x V array.

        Returns
        -------
        self

        Raises
        ------
        InputError
            When the co-occurrence has fewer usable words than topics, or ``init`` does not
            match the vocabulary size.
        """
        s = self.settings
        K = s.n_topics
        V = check_fit_input(cooc, init, K, s.rectify and s.rectify_method == "lowrank")
        if refine_cooc is not None:
            check_refine_cooc(refine_cooc, V)
        # Words that never occur in a document of >= 2 tokens have zero rows: no anchor can be
        # one and row normalisation would divide by zero, so the stages run on the others.
        C, active = active_part(cooc, overwrite_cooc)
        if active.size <= K:
            raise InputError(
                f"only {active.size} words occur in documents of >= 2 tokens, need more than "
                f"n_topics={K}; use fewer topics or more documents"
            )
        position = np.full(V, -1)
        position[active] = np.arange(active.size)
        timings: dict[str, float] = {}
        stage = StageTimer(timings, on_stage)
        # The raw pairs, read before rectification takes C's memory.
        pairs_of = cooc if refine_cooc is None else refine_cooc
        refine = refine_method_for(s.refine, pairs_of.num_docs, pairs_of.num_tokens)
        pairs = None if refine == "none" else stage("pairs", lambda: pair_counts(
            C if refine_cooc is None else active_pairs(refine_cooc, active)))

        rect = rectify_stage(C, V, K, active, position, init, s, stage, warm_state,
                             rectify_workspace, rectify_data_out)
        min_df = anchor_min_df(cooc, K, active, s)
        self.anchor_min_df_ = float(min_df)
        anchors, products = anchor_stage(cooc, rect, K, min_df, active, position, init, s,
                                         stage)
        rec = recover_stage(rect, anchors, products, K, active, init, s, stage)
        A, alpha = correlation_stage(rect.C, rec.topic_word, anchors, s, stage)
        topic_word, refined = rec.topic_word, None
        if pairs is not None:
            # A refit that rectified cold refines cold too: no warm path outlives the cold
            # rectification that ends a chain of warm updates.
            warm = init if rect.n_iter.get("rectify", 0) == 0 else None
            topic_word, A, alpha, refined = refine_stage(pairs, topic_word, A, refine, s, stage,
                                                         anchors=anchors, active=active,
                                                         init=warm, final_loglik=refine_loglik,
                                                         windows=refine_cooc is not None)
        self._store(V, K, active, anchors, rect, rec, topic_word, A, alpha)
        self.refine_ = refine
        self.refine_loglik_ = (None if refined is None or not refine_loglik
                               else (refined.loglik[0], refined.loglik[-1]))
        self.n_iter_ = {**rect.n_iter, "recover": int(rec.n_iter),
                        **({} if refined is None else {"refine": refined.n_iter})}
        self.timings_ = timings
        self.num_docs_ = int(cooc.num_docs)
        return self

    def _store(self, V, K, active, anchors, rect, rec, B, A, alpha) -> None:
        """The fitted attributes, on all ``V`` words (zero rows for the inactive ones)."""
        topic_word = np.zeros((V, K))
        topic_word[active] = B
        coef = np.zeros((V, K))
        coef[active] = rec.coef
        self.topic_word_ = topic_word
        self.coef_ = coef
        self.anchors_ = active[np.asarray(anchors, dtype=np.int64)]
        self.topic_topic_ = A
        self.prevalence_ = A.sum(axis=1)
        self.alpha_ = alpha
        self.eigvecs_ = rect.eigvecs
        self.rectify_data_ = rect.data
        self.rectify_data_product_ = rect.data_product
        self.rectify_probes_ = rect.probes
        self.rectify_factor_ = rect.factor
        self.rectify_shift_ = rect.shift
        self.rectify_residual_ = rect.residual
        self.rectify_change_ = rect.change
        self.rectify_warm_chain_ = rect.warm_chain
        self.recover_converged_ = float(rec.converged)

    def top_words(self, n: int = 20) -> np.ndarray:
        """Indices of each topic's ``n`` most probable words, shape (n_topics, n)."""
        self._check_fitted()
        order = np.argsort(-self.topic_word_, axis=0, kind="stable")[:n]
        return order.T

    def remapped(self, old_vocabulary: Sequence[str], new_vocabulary: Sequence[str]) -> AnchorModel:
        """This fitted model's warm-start state moved onto another vocabulary.

        Words new to ``new_vocabulary`` get zero rows (recovery starts them uniform); anchors
        that left the vocabulary disable the anchor warm start. Used by the daemon when the
        streaming vocabulary admitted or evicted words between two refreshes.

        Returns
        -------
        AnchorModel
            A copy carrying ``topic_word_``, ``coef_``, ``eigvecs_`` and ``anchors_`` in the
            new word order.
        """
        self._check_fitted()
        # Where no word was admitted or dropped since, every word stays put.
        same_words = list(old_vocabulary) == list(new_vocabulary)
        if same_words:
            src = np.arange(len(new_vocabulary), dtype=np.int64)
        else:
            index = {w: i for i, w in enumerate(old_vocabulary)}
            src = np.fromiter((index.get(w, -1) for w in new_vocabulary), dtype=np.int64,
                              count=len(new_vocabulary))
        keep = src >= 0
        V = len(new_vocabulary)

        def move(arr):
            if arr is None:
                return None
            out = np.zeros((V, arr.shape[1]))
            out[keep] = arr[src[keep]]
            return out

        clone = AnchorModel.__new__(AnchorModel)
        clone.settings = self.settings
        for name, value in vars(self).items():
            if name.endswith("_"):
                setattr(clone, name, value)
        clone.topic_word_ = move(self.topic_word_)
        clone.coef_ = move(self.coef_)
        clone.eigvecs_ = move(self.eigvecs_)
        clone.rectify_factor_ = move(self.rectify_factor_)
        for name in ("rectify_data_product_", "rectify_probes_"):
            if getattr(self, name, None) is not None:
                setattr(clone, name, move(getattr(self, name)))
        if self.rectify_data_ is not None:
            # Zeros for new words. Shared, not copied, when the vocabulary is unchanged: a
            # fit reads its init's data and never writes it.
            same = src.size == self.rectify_data_.shape[0] and np.array_equal(
                src, np.arange(src.size))
            clone.rectify_data_ = (self.rectify_data_ if same
                                   else take_square(self.rectify_data_, src))
        if same_words:
            clone.anchors_ = np.array(self.anchors_, dtype=np.int64)
        else:
            new_index = {w: i for i, w in enumerate(new_vocabulary)}
            mapped = [new_index.get(old_vocabulary[a], -1) for a in self.anchors_]
            clone.anchors_ = np.array(mapped, dtype=np.int64)
        if np.any(clone.anchors_ < 0):
            # position lookup in fit() treats any missing anchor as "no anchor warm start"
            clone.anchors_ = np.zeros(0, dtype=np.int64)
        return clone
