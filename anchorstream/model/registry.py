"""The method registry: every topic-inference method, what it needs and what it warm-starts from.

One place answers "does this method need documents?", "which statistics must the store keep for
it?", "what does a refresh reuse?" and "which settings does it read?"; the configuration, the
refresher, ``fit``, the document statistics and the CLI all ask here. This module imports no
other library code, so anything may import it.

========================  ===========================================  ====================
method / anchors          paper                                        needs
========================  ===========================================  ====================
anchor + qr / fast        JSMF Alg. 2 / Arora 2013 Alg. 4               co-occurrence
anchor + ddp / rp         Ding et al. 2014, Alg. 1 / 2 (+ 3, 4)         documents
anchorfree                Huang et al. 2016                             co-occurrence
tsvd                      Bansal et al. 2014                            documents
========================  ===========================================  ====================
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ANCHOR_METHODS", "COUNT_ANCHORS", "DOCUMENT_ANCHORS", "METHODS", "RECOVER_WEIGHTS",
           "RECTIFY_METHODS", "MethodSpec", "method_spec", "rectify_method_for"]

#: Topic methods (``fit --method``, ``model.method``).
METHODS = ("anchor", "anchorfree", "tsvd")
#: Anchor finders on the co-occurrence alone.
COUNT_ANCHORS = ("qr", "fast")
#: Anchor finders on documents (novel words by data-dependent or random projections).
DOCUMENT_ANCHORS = ("ddp", "rp")
#: Every anchor finder (``fit --anchors``, ``model.anchor_method``).
ANCHOR_METHODS = COUNT_ANCHORS + DOCUMENT_ANCHORS
#: Rectifiers of the anchor pipeline (``fit --rectify-method``, ``model.rectify_method``).
RECTIFY_METHODS = ("auto", "ap", "lowrank")
#: Column weights of the ADMM recovery's loss (``fit --recover-weights``,
#: ``model.recover_weights``; ``anchorstream.model.recover.WEIGHTS``).
RECOVER_WEIGHTS = ("chi2", "none")


def rectify_method_for(rectify_method: str, recover_method: str) -> str:
    """The rectifier ``auto`` stands for: ``lowrank``, except ``ap`` for the recovery that reads
    every entry of the rectified matrix (``kl``). Others are returned as they are.

    Low-rank is the default because it gives the dense rectifier's topics on every corpus of
    the quality benchmark at less CPU, refreshes warm at 6-10% of a cold fit, and holds no
    V x V array (benchmarks/README.md, "Low-rank rectification as the default").
    """
    if rectify_method != "auto":
        return rectify_method
    return "ap" if recover_method == "kl" else "lowrank"


@dataclass(frozen=True)
class MethodSpec:
    """What one method (with its anchor finder) needs and reuses.

    Attributes
    ----------
    method, anchor_method : str
        As configured; ``anchor_method`` matters only for ``method="anchor"`` and is ``"qr"``
        otherwise.
    statistics : {"counts", "split", "split+sketch", "reservoir"}
        What the store must keep: the co-occurrence only, or beside it the document statistics
        of :mod:`anchorstream.stats.documents` (the split statistic of DDP, the split statistic
        and a random-projection sketch of RP, a reservoir of documents for TSVD).
    warm_start : {"rectification", "topic_word", "none"}
        What a refresh reuses from the previous model: the rectification's state (the anchor-word
        pipeline), the previous word-topic matrix as the initial point (AnchorFree), nothing.
    paper : str
    settings : tuple of str
        The ``model.*`` settings the method reads beyond ``num_topics`` and ``random_state``.
    """

    method: str
    anchor_method: str
    statistics: str
    warm_start: str
    paper: str
    settings: tuple[str, ...] = ()

    @property
    def needs_documents(self) -> bool:
        """Whether the method works on documents, not on the co-occurrence alone."""
        return self.statistics != "counts"

    @property
    def anchor_words(self) -> bool:
        """Whether this is the rectified anchor-word pipeline (``AnchorModel``)."""
        return self.method == "anchor" and self.anchor_method in COUNT_ANCHORS

    @property
    def label(self) -> str:
        """How messages name it: ``anchors='ddp'`` for an anchor finder, else the method."""
        return f"anchors={self.anchor_method!r}" if self.method == "anchor" else self.method


_PIPELINE = ("rectify", "rectify_method", "rectify_max_iter", "rectify_tol", "rectify_dtype",
             "rectify_anderson", "rectify_rows", "rectify_warm_change", "rectify_warm_limit",
             "recover_method", "recover_weights", "anchor_min_df", "anchor_candidates",
             "anchor_noise", "refine", "refine_max_iter", "refine_warm_max_iter",
             "refine_warm_new_max_iter")
#: What DDP's, RP's and TSVD's word groups go through: the pipeline's rectification and recovery
#: (``methods._fit_groups``), then the refinement.
_GROUPS = ("rectify", "rectify_method", "rectify_max_iter", "rectify_tol", "rectify_dtype",
           "rectify_anderson", "rectify_rows", "recover_method", "recover_weights", "refine",
           "refine_max_iter")
_SPECS = {
    ("anchor", "qr"): MethodSpec("anchor", "qr", "counts", "rectification",
                                 "JSMF Alg. 2 (sparse pivoted QR)", _PIPELINE),
    ("anchor", "fast"): MethodSpec("anchor", "fast", "counts", "rectification",
                                   "Arora et al. 2013 Alg. 4 (FastAnchorWords)", _PIPELINE),
    ("anchor", "ddp"): MethodSpec("anchor", "ddp", "split", "none",
                                  "Ding et al. 2014 Alg. 1 (data-dependent projections)",
                                  ("anchor_min_df",) + _GROUPS),
    ("anchor", "rp"): MethodSpec("anchor", "rp", "split+sketch", "none",
                                 "Ding et al. 2014 Alg. 2 (random projections)",
                                 ("anchor_min_df", "rp_projections") + _GROUPS),
    ("anchorfree", "qr"): MethodSpec("anchorfree", "qr", "counts", "topic_word",
                                     "Huang et al. 2016 (AnchorFree)",
                                     ("rectify", "rectify_max_iter", "rectify_tol",
                                      "rectify_dtype", "rectify_anderson", "refine",
                                      "refine_max_iter")),
    ("tsvd", "qr"): MethodSpec("tsvd", "qr", "reservoir", "none",
                               "Bansal et al. 2014 (thresholded SVD)",
                               ("tsvd_documents", "anchor_min_df") + _GROUPS),
}


def method_spec(method: str, anchor_method: str = "qr") -> MethodSpec:
    """The registry's entry for ``method`` (and ``anchor_method`` when ``method="anchor"``).

    Raises ``ValueError`` (naming what is allowed) for an unknown method or anchor finder, and
    for a document anchor finder with a method other than ``"anchor"``; other methods ignore a
    count anchor finder.

    >>> method_spec("anchor", "rp").statistics
    'split+sketch'
    >>> method_spec("tsvd").needs_documents
    True
    """
    if method not in METHODS:
        raise ValueError(f"method: got {method!r}; allowed: {', '.join(METHODS)}")
    if anchor_method not in ANCHOR_METHODS:
        raise ValueError(f"anchor_method: got {anchor_method!r}; allowed: "
                         f"{', '.join(ANCHOR_METHODS)}")
    if method != "anchor":
        if anchor_method in DOCUMENT_ANCHORS:
            raise ValueError(f"anchor_method: got {anchor_method!r} with method={method!r}; "
                             "anchor finders apply only to method 'anchor'")
        anchor_method = "qr"
    return _SPECS[(method, anchor_method)]
