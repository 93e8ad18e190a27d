"""The confidence-bound ranking of bench_rank_confidence.py: the published ranking at z = 0,
and rare words discounted most."""

import numpy as np

from benchmarks.bench_rank_confidence import confidence_topic_word


def test_z_zero_is_the_model_and_rows_stay_distributions():
    rng = np.random.default_rng(0)
    B = rng.dirichlet(np.full(40, 0.3), size=5)
    prevalence = rng.dirichlet(np.ones(5))
    np.testing.assert_allclose(confidence_topic_word(B, prevalence, 1e4, 0.0), B, atol=1e-12)
    P = confidence_topic_word(B, prevalence, 1e4, 2.0)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert P.min() >= 0


def test_the_bound_discounts_small_counts_most():
    B = np.array([[0.5, 0.3, 0.2]])
    n_tokens = 50  # expected counts 25, 15 and 10
    at0, at1, at2 = (confidence_topic_word(B, np.array([1.0]), n_tokens, z)[0]
                     for z in (0.0, 1.0, 2.0))
    assert at0[0] / at0[2] < at1[0] / at1[2] < at2[0] / at2[2]
    assert np.all(np.diff(at2) < 0)  # the order of equal evidence per token is kept
    # Fewer expected tokens than z²: no evidence left.
    assert confidence_topic_word(B, np.array([1.0]), n_tokens, 3.5)[0, 2] == 0.0
