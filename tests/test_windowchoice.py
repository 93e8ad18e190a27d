"""Refining on windows only where documents change subject (anchorstream/model/windowchoice.py,
``fit --refine-window auto``)."""

from __future__ import annotations

import doctest
import json

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import anchorstream.model.windowchoice as windowchoice_mod
from anchorstream.model.lowrank import DocumentCooccurrence
from anchorstream.model.methods import fit_topics
from anchorstream.model.pipeline import AnchorModel
from anchorstream.model.windowchoice import (AUTO_WINDOW, PERSISTENCE_THRESHOLD, WindowChoice,
                                             subject_persistence)
from anchorstream.synthetic import planted_model, sample_documents
from anchorstream.text.tokenize import count_matrix
from anchorstream.text.windows import window_documents
from daemon.cli import main

V, K = 60, 4


def test_module_doctests():
    result = doctest.testmod(windowchoice_mod)
    assert result.failed == 0 and result.attempted > 0


def _slow_persistence(docs, size, vocab, topic_word, prevalence) -> float:
    """The definition, pair by pair: every ordered pair of distinct token positions of a
    document whose vocabulary tokens fall in two or more windows."""
    index = {w: i for i, w in enumerate(vocab)}
    q = topic_word * prevalence
    mass = q.sum(axis=1, keepdims=True)
    q = np.divide(q, mass, out=np.zeros_like(q), where=mass > 0)
    within, cross, tokens = [], [], []
    for doc in docs:
        kept = [(p // size, index[t]) for p, t in enumerate(doc) if t in index]
        if len({u for u, _ in kept}) < 2:
            continue
        tokens += [w for _, w in kept]
        for a, (u, i) in enumerate(kept):
            for b, (v, j) in enumerate(kept):
                if a != b:
                    (within if u == v else cross).append(q[i] @ q[j])
    if not within or not cross:
        return float("nan")
    r = float(np.mean(q[tokens], axis=0) @ np.mean(q[tokens], axis=0))
    spread = np.mean(within) - r
    return float("nan") if not spread > 1e-9 * np.mean(within) else (np.mean(cross) - r) / spread


DOCS = st.lists(st.lists(st.sampled_from("abcdefg"), max_size=14), max_size=8)


@settings(max_examples=80, deadline=None)
@given(DOCS, st.integers(2, 6), st.integers(0, 2**32 - 1))
def test_persistence_is_its_definition_pair_by_pair(docs, size, seed):
    vocab = list("abcdef")  # g stands outside the vocabulary and takes places
    rng = np.random.default_rng(seed)
    B = rng.dirichlet(np.ones(len(vocab)), size=3).T
    prevalence = rng.dirichlet(np.ones(3))
    choice = WindowChoice.from_token_lists(docs, vocab, window=size)
    got = subject_persistence(choice.documents, choice.windows, choice.window_doc, B,
                              prevalence)
    want = _slow_persistence(docs, size, vocab, B, prevalence)
    if np.isnan(want):
        assert np.isnan(got)
    else:
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12)
    # The windows are window_documents' own, and each one's document is where it came from.
    np.testing.assert_array_equal(
        choice.windows.toarray(), count_matrix(window_documents(docs, size), vocab).toarray())
    summed = np.zeros((len(docs), len(vocab)))
    np.add.at(summed, choice.window_doc, choice.windows.toarray())
    np.testing.assert_array_equal(summed, choice.documents.toarray())


def _token_docs(truth, n_docs: int, n_windows: int, drift: bool, seed: int) -> list[list[str]]:
    """Documents of ``n_windows`` windows of AUTO_WINDOW tokens: each window with its own
    topic mixture (``drift``), or one mixture for the whole document, its words in random
    order."""
    rng = np.random.default_rng(seed)
    length = AUTO_WINDOW * (1 if drift else n_windows)
    X, _ = sample_documents(truth, n_docs * (n_windows if drift else 1), doc_length=length,
                            random_state=seed)
    rows = [rng.permutation(np.repeat(X.indices[X.indptr[d]:X.indptr[d + 1]],
                                      X.data[X.indptr[d]:X.indptr[d + 1]].astype(np.int64)))
            for d in range(X.shape[0])]
    if drift:
        rows = [np.concatenate(rows[d * n_windows:(d + 1) * n_windows]) for d in range(n_docs)]
    return [[f"w{i:03d}" for i in row] for row in rows]


@pytest.fixture(scope="module")
def truth():
    # Documents of one topic mostly (alpha 0.1): a window says which.
    return planted_model(V, K, anchor_mass=0.08, alpha=0.1, random_state=3)


@pytest.mark.parametrize("drift", [False, True])
def test_planted_documents_that_drift_have_low_persistence(truth, drift):
    docs = _token_docs(truth, 400, 3, drift, seed=5)
    vocab = [f"w{i:03d}" for i in range(V)]
    choice = WindowChoice.from_token_lists(docs, vocab)
    decision = choice.decide(truth.topic_word, truth.topic_topic.sum(axis=1))
    if drift:  # distant windows: independent mixtures, agreeing as unrelated documents do
        assert abs(decision.persistence) < 0.1, decision
        assert decision.window == AUTO_WINDOW
    else:  # exchangeable words: distant pairs agree as near ones
        assert decision.persistence == pytest.approx(1.0, abs=0.05)
        assert decision.window is None
    assert decision.to_dict() == {"window": decision.window,
                                  "persistence": round(decision.persistence, 4),
                                  "threshold": PERSISTENCE_THRESHOLD}


@pytest.mark.parametrize("refine", ["auto", "joint"])
@pytest.mark.parametrize("drift", [False, True])
def test_auto_fits_as_the_choice_it_made(truth, drift, refine):
    """``refine_cooc=WindowChoice`` gives the topics of the refinement it chose, given
    directly: the windows' co-occurrence, or the whole documents' (which ``auto`` leaves
    unrefined at 72 tokens, and ``joint`` refines, reading their pairs after the choice)."""
    docs = _token_docs(truth, 500, 3, drift, seed=7)
    vocab = [f"w{i:03d}" for i in range(V)]
    X = count_matrix(docs, vocab)
    choice = WindowChoice.from_token_lists(docs, vocab, X, length_cap=25.0)
    cooc = DocumentCooccurrence(X, length_cap=25.0)
    kwargs = dict(anchor_min_df=5, random_state=0, refine=refine)
    auto = AnchorModel(K, **kwargs).fit(cooc, refine_cooc=choice)
    assert auto.refine_windows_.window == (AUTO_WINDOW if drift else None)
    given_ = AnchorModel(K, **kwargs).fit(cooc, refine_cooc=choice.cooc if drift else None)
    np.testing.assert_allclose(auto.topic_word_, given_.topic_word_, atol=1e-12)
    assert auto.refine_ == given_.refine_ == ("none" if refine == "auto" and not drift
                                               else "joint")
    assert auto.refine_loglik_ == given_.refine_loglik_
    if refine == "joint":
        return
    # Another method decides from its own topics, the same way.
    fit = fit_topics(K, cooc=cooc, method="anchorfree", random_state=0, refine_cooc=choice)
    assert fit.windows is not None and fit.windows.window == (AUTO_WINDOW if drift else None)
    assert fit.refine == ("joint" if drift else "none")


def test_fit_refine_window_auto_says_what_it_chose(truth, tmp_path, capsys):
    docs = _token_docs(truth, 600, 3, True, seed=9)
    path = tmp_path / "docs.txt"
    path.write_text("".join(" ".join(d) + "\n" for d in docs), encoding="utf-8")
    base = ["fit", "--input", str(path), "--format", "text", "--stopwords", "none", "-k",
            str(K), "--min-df", "2", "--max-df", "1", "--anchor-min-df", "5", "--quiet"]
    assert main([*base, "--out", str(tmp_path / "auto"), "--refine-window", "auto"]) == 0
    assert main([*base, "--out", str(tmp_path / "win"), "--refine-window", str(AUTO_WINDOW)]
                ) == 0
    err = capsys.readouterr().err
    assert "--refine-window auto: the refinement counted its pairs in windows of 24 tokens" in err
    assert "model.refine_window: 24 for such documents" in err
    auto = json.loads((tmp_path / "auto" / "manifest.json").read_text())
    settings_ = auto["settings"]
    assert settings_["refine_window"] == AUTO_WINDOW
    assert settings_["refine_window_auto"]["window"] == AUTO_WINDOW
    assert settings_["refine_window_auto"]["persistence"] < PERSISTENCE_THRESHOLD
    assert auto["extra"]["fit"]["refine"] == "joint"
    np.testing.assert_allclose(np.load(tmp_path / "auto" / "topic_word.npy"),
                               np.load(tmp_path / "win" / "topic_word.npy"), atol=1e-12)
    # With --refine none nothing is decided, and the snapshot says no windows were used.
    assert main([*base, "--out", str(tmp_path / "none"), "--refine-window", "auto",
                 "--refine", "none"]) == 0
    none = json.loads((tmp_path / "none" / "manifest.json").read_text())["settings"]
    assert none["refine_window"] is None and "refine_window_auto" not in none
    capsys.readouterr()
    # A store keeps the windows of one length: auto is for documents.
    store = str(tmp_path / "store")
    assert main(["ingest", str(path), "--store", store, "--format", "text",
                 "--admit-threshold", "1", "--stopwords", "none", "-q"]) == 0
    assert main(["fit", "--store", store, "-k", str(K), "--out", str(tmp_path / "s"),
                 "--refine-window", "auto"]) == 1
    err = capsys.readouterr().err
    assert "--refine-window auto" in err and "--input --refine-window auto" in err
    assert not (tmp_path / "s").exists()
    with pytest.raises(SystemExit) as exit_:
        main(["ingest", str(path), "--store", store, "--refine-window", "auto"])
    assert exit_.value.code == 2 and "'auto'" in capsys.readouterr().err
