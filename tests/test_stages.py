"""The pipeline's stages (anchorstream/model/stages.py): how a refit's recovery is seeded."""

from types import SimpleNamespace

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from anchorstream.model.pipeline import ModelSettings
from anchorstream.model.stages import recover_weights, warm_coefficients, warm_columns


@st.composite
def refit_anchors(draw):
    """A previous fit's anchors and a refit's: some kept (in their order, a dropped seed
    moving the rest up), some replaced, all distinct word indices."""
    K = draw(st.integers(1, 12))
    previous = draw(st.lists(st.integers(0, 60), min_size=K, max_size=K, unique=True))
    keep = draw(st.lists(st.booleans(), min_size=K, max_size=K))
    kept = [a for a, k in zip(previous, keep) if k]
    fresh = [w for w in range(61, 61 + K)]
    new = list(kept) + fresh[: K - len(kept)]
    if draw(st.booleans()):  # a search that kept positions: replacements in place
        new = [a if k else f for a, k, f in zip(previous, keep, fresh)]
    return previous, new


@given(refit_anchors())
def test_each_kept_anchor_is_seeded_by_its_own_column_and_no_column_twice(case):
    previous, new = case
    cols = warm_columns(previous, new)
    assert cols.shape == (len(new),)
    for k, a in enumerate(new):
        if a in previous:
            assert cols[k] == previous.index(a)
        elif cols[k] >= 0:  # replaced in place: its predecessor is gone
            assert cols[k] == k and previous[k] not in new
    used = cols[cols >= 0]
    assert used.size == np.unique(used).size


def test_a_dropped_seed_does_not_shift_the_coefficients_of_the_anchors_after_it():
    # The search drops a seed that is no longer a candidate and the rest move up one: their
    # coefficients must move with them, not stay at their old positions.
    rng = np.random.default_rng(0)
    V, K = 30, 4
    coef = rng.dirichlet(np.ones(K), size=V)
    coef[7] = 0.0  # a word absent from the previous fit
    init = SimpleNamespace(coef_=coef, anchors_=np.array([3, 9, 14, 20]))
    active = np.arange(V)
    anchors = np.array([3, 14, 20, 25])  # 9 dropped, 25 new at the end
    got = warm_coefficients(init, anchors, active, K)
    np.testing.assert_array_equal(got[:, 0], np.where(coef[:, 0] > 0, coef[:, 0], 0.25))
    live = coef.sum(axis=1) > 0
    np.testing.assert_array_equal(got[live, 1], coef[live, 2])
    np.testing.assert_array_equal(got[live, 2], coef[live, 3])
    np.testing.assert_array_equal(got[live, 3], 0.0)  # a new anchor's topic starts at 0
    np.testing.assert_array_equal(got[7], np.full(K, 0.25))  # no mass: uniform
    # On a subset of active words the rows follow ``active`` and the anchors index into it.
    sub = np.array([3, 5, 14, 20, 25, 29])
    got = warm_coefficients(init, np.array([0, 2, 3, 4]), sub, K)
    np.testing.assert_array_equal(got[1, :3], coef[5, [0, 2, 3]])


def test_the_chi_square_weights_reach_only_the_admm_recovery():
    assert recover_weights(ModelSettings(5)) == "chi2"
    assert recover_weights(ModelSettings(5, recover_weights="none")) == "none"
    for method in ("l2", "kl", "inverse"):
        assert recover_weights(ModelSettings(5, recover_method=method)) == "none"
