"""The method registry: one answer to "what does this method need", asked by every caller."""

from __future__ import annotations


import numpy as np
import pytest

from anchorstream.errors import InputError
from anchorstream.model.methods import fit_topics
from anchorstream.model.registry import (ANCHOR_METHODS, DOCUMENT_ANCHORS, METHODS,
                                         method_spec)
from anchorstream.stats.documents import DocStatsSettings
from anchorstream.stats.cooccurrence import cooccurrence
from anchorstream.synthetic import planted_model, sample_documents
from daemon.settings import ModelConfig, parse_config

SPECS = [(m, a) for m in METHODS for a in (ANCHOR_METHODS if m == "anchor" else ("qr",))]


@pytest.mark.parametrize(("method", "anchor_method"), SPECS)
def test_every_caller_agrees_with_the_registry(method, anchor_method):
    spec = method_spec(method, anchor_method)
    cfg = parse_config({"model": {"method": method, "anchor_method": anchor_method}}).model
    assert cfg.needs_documents == spec.needs_documents
    stats = DocStatsSettings.for_method(method, anchor_method, n_topics=4)
    assert stats.enabled == spec.needs_documents
    assert stats.split == (spec.statistics in ("split", "split+sketch"))
    assert stats.sketch == (spec.statistics == "split+sketch")
    assert (stats.reservoir > 0) == (spec.statistics == "reservoir")
    fields = set(ModelConfig.model_fields)
    assert set(spec.settings) <= fields, set(spec.settings) - fields


@pytest.mark.parametrize(("method", "anchor_method"), SPECS)
def test_fit_topics_refuses_counts_alone_exactly_for_document_methods(method, anchor_method):
    X, _ = sample_documents(planted_model(60, 3, random_state=1), 400, doc_length=30,
                            random_state=2)
    cooc = cooccurrence(X)
    spec = method_spec(method, anchor_method)
    if spec.needs_documents:
        with pytest.raises(InputError, match="works on documents"):
            fit_topics(3, cooc=cooc, method=method, anchor_method=anchor_method)
    else:
        fit = fit_topics(3, cooc=cooc, method=method, anchor_method=anchor_method)
        assert fit.topic_word.shape == (60, 3)
        assert np.allclose(fit.topic_word.sum(axis=0), 1)


def test_unknown_and_mismatched_methods_name_what_is_allowed():
    with pytest.raises(ValueError, match="method: got 'lda'; allowed: anchor, anchorfree, tsvd"):
        method_spec("lda")
    with pytest.raises(ValueError, match="allowed: qr, fast, ddp, rp"):
        method_spec("anchor", "kmeans")
    for a in DOCUMENT_ANCHORS:
        with pytest.raises(ValueError, match="only to method 'anchor'"):
            method_spec("tsvd", a)
    assert method_spec("anchorfree", "fast") is method_spec("anchorfree")
