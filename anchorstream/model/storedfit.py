"""Topics from a store's document statistics (DDP and RP novel words).

Sits above :mod:`anchorstream.model.methods` (it calls ``fit_topics``) and beside the store's
reader: the statistics themselves (:mod:`anchorstream.stats.documents`) know nothing of models.
"""

from __future__ import annotations

from anchorstream.errors import InputError
from anchorstream.model.methods import fit_topics
from anchorstream.model.refine import REFINE_MAX_ITER
from anchorstream.stats.documents import DocumentState

__all__ = ["fit_novel_words"]


def fit_novel_words(
    n_topics: int,
    cooc,
    state: DocumentState,
    *,
    anchor_method: str,
    min_df: float = 0.0,
    random_state: int = 0,
    on_stage=None,
    refine: str = "auto",
    refine_max_iter: int = REFINE_MAX_ITER,
    **settings,
):
    """DDP or RP topics from a store's statistics (what ``fit_topics`` does from documents).

    Parameters
    ----------
    n_topics : int
    cooc : Cooccurrence
        Over the same words as ``state`` (for the topic-topic matrix).
    state : DocumentState
        With ``split`` (and ``sketch`` for RP).
    anchor_method : {"ddp", "rp"}
    min_df : float
        Novel-word candidates need this (possibly decayed) document frequency.
    random_state : int
    on_stage : callable, optional
        As for :meth:`anchorstream.model.pipeline.AnchorModel.fit`.
    refine, refine_max_iter
        The pair refinement after the method, as in ``fit_topics``.
    **settings
        Further :class:`~anchorstream.model.pipeline.ModelSettings` fields: the rectification
        and recovery the novel-word groups go through (``rectify_*``, ``recover_*``), as in
        ``fit_topics``.

    Returns
    -------
    anchorstream.model.methods.TopicFit

    Raises
    ------
    InputError
        For a state without the needed statistics, or too little data (from the algorithms).
    """
    if anchor_method not in ("ddp", "rp"):
        raise InputError(f"anchor_method must be 'ddp' or 'rp', got {anchor_method!r}")
    if state.split is None or (anchor_method == "rp" and state.sketch is None):
        raise InputError(
            f"anchors {anchor_method!r} need the store's "
            f"{'split statistic and RP sketch' if anchor_method == 'rp' else 'split statistic'}"
            "; open the store with DocStatsSettings.for_method('anchor', "
            f"{anchor_method!r}, ...)"
        )
    return fit_topics(int(n_topics), cooc=cooc, method="anchor", anchor_method=anchor_method,
                      random_state=random_state, on_stage=on_stage, split=state.split,
                      sketch=state.sketch if anchor_method == "rp" else None,
                      anchor_min_df=min_df, refine=refine, refine_max_iter=refine_max_iter,
                      **settings)
