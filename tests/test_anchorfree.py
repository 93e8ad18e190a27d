"""AnchorFree (Huang et al. 2016): exact recovery without anchors, where anchor methods fail."""

from __future__ import annotations

import numpy as np
import pytest

from anchorstream.model.anchorfree import anchor_free, square_root_factor
from anchorstream.stats.cooccurrence import Cooccurrence
from anchorstream.errors import InputError
from anchorstream.evaluate import recovery_error
from anchorstream.model.pipeline import AnchorModel
from anchorstream.synthetic import (
    dirichlet_second_moment,
    planted_model,
    population_cooccurrence,
)


def scattered_topics(n_words, n_topics, rng):
    """The paper's supplementary construction, with no anchor words at all.

    Exponential entries with about half set to zero (Huang et al. 2016, App. D); rows with
    fewer than two non-zeros are redrawn, so no word belongs to a single topic (non-separable),
    while the zero patterns scatter the rows over the faces of the orthant (sufficiently
    scattered with high probability).
    """
    C = rng.exponential(size=(n_words, n_topics)) * (rng.random((n_words, n_topics)) < 0.5)
    while True:
        bad = (C > 0).sum(axis=1) < 2
        if not bad.any():
            break
        C[bad] = rng.exponential(size=(bad.sum(), n_topics)) * (
            rng.random((bad.sum(), n_topics)) < 0.5
        )
    return C / C.sum(axis=0)


def as_cooccurrence(P, num_docs=1000):
    V = P.shape[0]
    return Cooccurrence(P * num_docs, P.sum(axis=1) * num_docs, np.full(V, float(num_docs)),
                        num_docs, 100 * num_docs)


@pytest.fixture(scope="module")
def scattered():
    rng = np.random.default_rng(7)
    V, K = 300, 10
    C = scattered_topics(V, K, rng)
    E = dirichlet_second_moment(np.full(K, 0.3))
    return C, E, population_cooccurrence(C, E)


def test_scattered_model_has_no_anchor_words(scattered):
    C, _, _ = scattered
    assert np.all((C > 0).sum(axis=1) >= 2)


def test_recovers_non_separable_topics_where_anchor_methods_fail(scattered):
    C, E, P = scattered
    K = C.shape[1]
    result = anchor_free(P, K)
    err, _, matching = recovery_error(C, result.topic_word)
    # Exact population input: identifiability (Theorem 1) means recovery to rounding.
    assert err < 1e-8
    E_est = result.topic_topic[np.ix_(matching, matching)]
    np.testing.assert_allclose(E_est, E, atol=1e-10)
    assert result.converged

    anchor_model = AnchorModel(K, anchor_min_df=0).fit(as_cooccurrence(P))
    anchor_err = recovery_error(C, anchor_model.topic_word_)[0]
    # The anchor pipeline must pick rows that are not vertices: a clear, measurable error.
    assert anchor_err > 0.05
    assert anchor_err > 1e6 * err


def test_columns_on_simplex_and_topic_topic_normalized(scattered):
    C, _, P = scattered
    r = anchor_free(P, C.shape[1])
    assert r.topic_word.min() >= 0
    np.testing.assert_allclose(r.topic_word.sum(axis=0), 1.0)
    np.testing.assert_allclose(r.topic_topic, r.topic_topic.T)
    assert r.topic_topic.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(r.factor @ r.factor.T, P, atol=1e-12)


def test_separable_model_is_recovered_too():
    # Proposition 1: with anchors the criterion still identifies the truth.
    truth = planted_model(80, 4, random_state=3)
    P = population_cooccurrence(truth.topic_word, truth.topic_topic)
    r = anchor_free(P, 4)
    assert recovery_error(truth.topic_word, r.topic_word)[0] < 1e-8


def test_warm_start_from_previous_topics(scattered):
    C, _, P = scattered
    K = C.shape[1]
    first = anchor_free(P, K)
    again = anchor_free(P, K, init=first.topic_word)
    # Started at the optimum, a sweep cannot improve it: stop after the second sweep.
    assert again.n_iter <= 2
    assert recovery_error(first.topic_word, again.topic_word)[0] < 1e-8


def test_sampled_cooccurrence_is_close():
    from anchorstream.stats.cooccurrence import cooccurrence
    from anchorstream.model.rectify import rectify
    from anchorstream.synthetic import PlantedModel, sample_documents

    rng = np.random.default_rng(11)
    V, K = 100, 4
    C = scattered_topics(V, K, rng)
    alpha = np.full(K, 0.3)
    truth = PlantedModel(C, np.full(K, -1), dirichlet_second_moment(alpha), alpha)
    X, _ = sample_documents(truth, 10000, random_state=12)
    R = rectify(cooccurrence(X).normalized(), K, random_state=0).matrix
    r = anchor_free(R, K)
    assert recovery_error(C, r.topic_word)[0] < 0.1


def test_deterministic(scattered):
    C, _, P = scattered
    a = anchor_free(P, C.shape[1])
    b = anchor_free(P, C.shape[1])
    np.testing.assert_array_equal(a.topic_word, b.topic_word)


def test_square_root_factor_clips_negative_eigenvalues():
    P = np.diag([0.5, 0.3, -0.2])
    B = square_root_factor(P, 3)
    np.testing.assert_allclose(B @ B.T, np.diag([0.5, 0.3, 0.0]), atol=1e-15)


@pytest.mark.parametrize(
    "P, K, match",
    [
        (np.ones((3, 4)), 2, "square"),
        (np.full((3, 3), np.nan), 2, "NaN"),
        (np.eye(4) / 4, 4, "n_topics"),
        (np.eye(4) / 4, 0, "n_topics"),
    ],
)
def test_bad_input(P, K, match):
    with pytest.raises(InputError, match=match):
        anchor_free(P, K)


def test_bad_init(scattered):
    C, _, P = scattered
    with pytest.raises(InputError, match="init"):
        anchor_free(P, C.shape[1], init=np.ones((3, 3)))


def test_sampled_corpus_with_rare_words_is_recovered_by_fit_topics():
    # A sampled co-occurrence: the rows of rare words are noisy, and C >= 0 imposed on every
    # word cuts the true topics out of the feasible set (the determinant criterion then picks
    # wrong vertices). fit_topics constrains only the most frequent words.
    from anchorstream.model.methods import fit_topics
    from anchorstream.model.rectify import rectify
    from anchorstream.stats.cooccurrence import cooccurrence
    from anchorstream.synthetic import PlantedModel, sample_documents

    rng = np.random.default_rng(11)
    V, K = 300, 5
    C = scattered_topics(V, K, rng) / np.arange(1, V + 1)[:, None]  # Zipf-like word mass
    C /= C.sum(axis=0)
    alpha = np.full(K, 0.1)
    truth = PlantedModel(C, np.full(K, -1), dirichlet_second_moment(alpha), alpha)
    X, _ = sample_documents(truth, 5000, doc_length=50, random_state=12)
    fit = fit_topics(K, documents=X, method="anchorfree")
    err = recovery_error(C, fit.topic_word)[0]
    assert err < 0.1  # measured 0.05

    R = rectify(cooccurrence(X).normalized(), K, random_state=0)
    every_word = anchor_free(R.matrix, K, eig=(R.eigvals, R.eigvecs))
    assert recovery_error(C, every_word.topic_word)[0] > 2 * err  # measured 0.23


def sampled_scattered(n_docs, *, random_state):
    """Documents of 50 words sampled from 5 scattered topics over 300 Zipf-weighted words (no
    anchor words), Dirichlet(0.1): ``(C, X)``."""
    from anchorstream.synthetic import PlantedModel, sample_documents

    rng = np.random.default_rng(11)
    V, K = 300, 5
    C = scattered_topics(V, K, rng) / np.arange(1, V + 1)[:, None]
    C /= C.sum(axis=0)
    alpha = np.full(K, 0.1)
    truth = PlantedModel(C, np.full(K, -1), dirichlet_second_moment(alpha), alpha)
    X, _ = sample_documents(truth, n_docs, doc_length=50, random_state=random_state)
    return C, X


def test_anchorfree_settings_reach_the_fit():
    # fit_topics hands anchorfree_words / anchorfree_slack to the LPs: the defaults given
    # explicitly change nothing, each other value changes the topics, and the paper's exact
    # criterion (every word, no slack) recovers the sampled topics worse.
    from anchorstream.model.anchorfree import ANCHORFREE_SLACK, ANCHORFREE_WORDS
    from anchorstream.model.methods import fit_topics

    C, X = sampled_scattered(2000, random_state=13)
    K = C.shape[1]

    def fit(**kw):
        return fit_topics(K, documents=X, method="anchorfree", **kw).topic_word

    default = fit()
    assert np.array_equal(fit(anchorfree_words=ANCHORFREE_WORDS,
                              anchorfree_slack=ANCHORFREE_SLACK), default)
    assert not np.allclose(fit(anchorfree_slack=0.0), default, atol=1e-4)
    assert not np.allclose(fit(anchorfree_words=2), default, atol=1e-4)
    exact = fit(anchorfree_words=0, anchorfree_slack=0.0)
    assert recovery_error(C, exact)[0] > recovery_error(C, default)[0]


def test_readouts_agree_on_exact_input(scattered):
    C, _, P = scattered
    a = anchor_free(P, C.shape[1], readout="factor")
    b = anchor_free(P, C.shape[1], readout="regression")
    assert recovery_error(a.topic_word, b.topic_word)[0] < 1e-8
    with pytest.raises(InputError, match="readout"):
        anchor_free(P, C.shape[1], readout="lsq")
    with pytest.raises(InputError, match="constraint_words"):
        anchor_free(P, C.shape[1], constraint_words=2)


def test_words_in_no_topic_do_not_become_random_constraints(scattered):
    # Zero rows of C give rows of the eigenbasis at rounding level (~1e-17); scaled to unit
    # length they were random constraints that made the LPs infeasible (the paper's own
    # protocol has ~1/2^F such words).
    C, E, _ = scattered
    C0 = np.vstack([C, np.zeros((5, C.shape[1]))])
    P = population_cooccurrence(C0, E)
    r = anchor_free(P, C.shape[1], min_mass=-np.inf)
    assert recovery_error(C0, r.topic_word)[0] < 1e-8


def test_noise_slack_lets_sampled_topics_back_into_the_feasible_set():
    # Every word constrains C >= 0 here, so noisy rows cut the true topics out (measured ℓ1
    # 0.23); the slack C(v, k) >= -c σ_v gives each row its own sampling noise (measured 0.19
    # at the default c, 0.17 at 1.5 c), and on the planted vertices it does no harm.
    from anchorstream.model.anchorfree import ANCHORFREE_SLACK, noise_slack
    from anchorstream.model.rectify import rectify
    from anchorstream.stats.cooccurrence import cooccurrence

    C, X = sampled_scattered(5000, random_state=12)
    K = C.shape[1]
    cooc = cooccurrence(X)
    R = rectify(cooc.normalized(), K, random_state=0)

    def error(c):
        res = anchor_free(R.matrix, K, eig=(R.eigvals, R.eigvecs),
                          slack=noise_slack(c, cooc.num_tokens))
        return recovery_error(C, res.topic_word)[0]

    exact, slack = error(0.0), error(ANCHORFREE_SLACK)
    assert slack < exact - 0.02
    assert error(1.5 * ANCHORFREE_SLACK) < slack


def test_noise_slack_and_settings_reject_bad_values(scattered):
    C, _, P = scattered
    with pytest.raises(InputError, match="slack"):
        anchor_free(P, C.shape[1], slack=-1.0)
    with pytest.raises(InputError, match="anchorfree_words"):
        AnchorModel(3, anchorfree_words=-1)
    with pytest.raises(InputError, match="anchorfree_slack"):
        AnchorModel(3, anchorfree_slack=float("nan"))


def test_warm_started_lps_reach_the_cold_solves_optimum(monkeypatch):
    # Each (column, sign) keeps its own HiGHS model across sweeps (warm starts); with no HiGHS
    # class at hand every LP is a cold linprog call. Both must reach the same determinant and
    # topics on a sampled co-occurrence where the slack and the cutting planes are active.
    import anchorstream.model.anchorfree as af
    from anchorstream.model.rectify import rectify
    from anchorstream.stats.cooccurrence import cooccurrence

    if af._highs_class() is None:
        pytest.skip("no HiGHS Python class (highspy, or SciPy >= 1.15): only the cold path")
    C, X = sampled_scattered(3000, random_state=14)
    K = C.shape[1]
    cooc = cooccurrence(X)
    R = rectify(cooc.normalized(), K, random_state=0)

    def fit():
        return af.anchor_free(R.matrix, K, eig=(R.eigvals, R.eigvecs), constraint_words=20 * K,
                              slack=af.noise_slack(af.ANCHORFREE_SLACK, cooc.num_tokens))

    warm = fit()
    monkeypatch.setattr(af, "_highs_class", lambda: None)
    cold = fit()
    assert warm.n_lp > 2 * K * warm.n_iter  # cutting-plane rounds were needed
    assert warm.log_det == pytest.approx(cold.log_det, abs=1e-6)
    np.testing.assert_allclose(warm.topic_word, cold.topic_word, atol=1e-6)


def test_the_solver_prints_nothing_to_standard_output():
    # HiGHS's public class prints its banner from its constructor, once per process, before
    # logging can be turned off: a fresh process shows whether any reaches stdout.
    import subprocess
    import sys

    code = ("from anchorstream.synthetic import planted_model, population_cooccurrence\n"
            "from anchorstream.model.anchorfree import anchor_free\n"
            "m = planted_model(60, 3, random_state=0)\n"
            "anchor_free(population_cooccurrence(m.topic_word, m.topic_topic), 3)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600, check=True)
    assert out.stdout == "", out.stdout
