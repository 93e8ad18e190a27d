"""Where a warm refit's refinement starts (anchorstream.model.refine_warm): the previous
refinement's topics where their anchors are kept, and the new topics' topic-topic entries
rescaled to the refined matrix's diagonal share."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorstream.errors import InputError
from anchorstream.model.refine_warm import warm_start


def test_warm_start_takes_the_previous_topics_of_kept_anchors():
    rng = np.random.default_rng(0)
    V, K = 30, 4
    B = rng.random((V, K))
    B /= B.sum(axis=0)
    R = rng.random((K, K))
    R = (R + R.T) / (2 * R.sum())
    prev_B = rng.random((V, 3))
    prev_R = rng.random((3, 3))
    prev_R = prev_R + prev_R.T
    anchors, prev_anchors = [11, 5, 20, 7], [7, 3, 11]
    B0, R0, kept = warm_start(B, R, anchors, prev_B, prev_R, prev_anchors)
    assert kept == 2  # words 11 and 7; 5 and 20 are new anchors
    np.testing.assert_allclose(B0[:, 0], prev_B[:, 2] / prev_B[:, 2].sum())
    np.testing.assert_allclose(B0[:, 3], prev_B[:, 0] / prev_B[:, 0].sum())
    np.testing.assert_array_equal(B0[:, [1, 2]], B[:, [1, 2]])
    np.testing.assert_allclose(B0.sum(axis=0), 1.0)
    assert np.isclose(R0.sum(), 1.0) and np.allclose(R0, R0.T)
    # The kept block keeps the previous proportions and this fit's total weight.
    block = R0[np.ix_([0, 3], [0, 3])]
    previous = prev_R[np.ix_([2, 0], [2, 0])]
    np.testing.assert_allclose(block / block.sum(), previous / previous.sum())
    assert np.isclose(block.sum(), R[np.ix_([0, 3], [0, 3])].sum())
    # Nothing kept: this fit's own start.
    B1, R1, none = warm_start(B, R, anchors, prev_B, prev_R, [1, 2, 3])
    assert none == 0
    np.testing.assert_array_equal(B1, B)
    np.testing.assert_allclose(R1, R)
    with pytest.raises(InputError, match="shapes"):
        warm_start(B, R, anchors, prev_B[:5], prev_R, prev_anchors)


def _problem(seed: int, K: int, kept_mask, prev_diagonal: float):
    """A recovered (B, R) over K topics and a previous refinement whose topics carry the
    anchors of the topics in ``kept_mask``; its topic-topic matrix puts ``prev_diagonal`` of
    each row's weight on the diagonal."""
    rng = np.random.default_rng(seed)
    V = 40
    B = rng.random((V, K))
    B /= B.sum(axis=0)
    R = rng.random((K, K)) + 0.05
    R = (R + R.T) / (2 * R.sum())
    anchors = rng.choice(1000, size=K, replace=False)
    kept = np.flatnonzero(kept_mask)
    n_prev = kept.size + 2  # two previous topics whose anchors are gone
    prev_anchors = np.concatenate([anchors[kept], [2000, 2001]])
    prev_B = rng.random((V, n_prev))
    off = rng.random((n_prev, n_prev))
    off = off + off.T
    np.fill_diagonal(off, 0.0)
    pi = rng.random(n_prev) + 0.1
    prev_R = off / off.sum(axis=1, keepdims=True) * ((1 - prev_diagonal) * pi)[:, None]
    prev_R = (prev_R + prev_R.T) / 2
    np.fill_diagonal(prev_R, prev_diagonal * pi)
    return B, R, anchors, prev_B, prev_R / prev_R.sum(), prev_anchors


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.lists(st.booleans(), min_size=3, max_size=9),
       st.sampled_from([0.3, 0.8, 0.95]))
def test_new_topics_keep_their_weight_and_take_the_kept_topics_diagonal_share(
        seed, kept_mask, prev_diagonal):
    kept_mask = np.array(kept_mask)
    if not kept_mask.any() or kept_mask.all():
        kept_mask[0], kept_mask[-1] = True, False
    K = kept_mask.size
    B, R, anchors, prev_B, prev_R, prev_anchors = _problem(seed, K, kept_mask, prev_diagonal)
    B0, R0, kept = warm_start(B, R, anchors, prev_B, prev_R, prev_anchors)
    kept_idx, new = np.flatnonzero(kept_mask), ~kept_mask
    assert kept == kept_idx.size
    np.testing.assert_array_equal(B0[:, new], B[:, new])
    assert np.isclose(R0.sum(), 1.0) and np.allclose(R0, R0.T) and (R0 >= 0).all()
    # The kept block: the previous proportions, this fit's weight.
    block = R0[np.ix_(kept_idx, kept_idx)]
    previous = prev_R[:kept_idx.size, :kept_idx.size]
    np.testing.assert_allclose(block / block.sum(), previous / previous.sum())
    assert np.isclose(block.sum(), R[np.ix_(kept_idx, kept_idx)].sum())
    # The new topics' entries: this fit's total weight; each new row the kept topics'
    # diagonal share on its diagonal, and its entries with the kept topics in this fit's
    # proportions.
    touching = new[:, None] | new[None, :]
    assert np.isclose(R0[touching].sum(), R[touching].sum())
    rows = prev_R[:kept_idx.size]  # the kept topics' previous rows
    share = np.trace(rows[:, :kept_idx.size]) / rows.sum()
    for k in np.flatnonzero(new):
        assert np.isclose(R0[k, k] / R0[k].sum(), share)
        np.testing.assert_allclose(R0[k, kept_idx] / R0[k, kept_idx].sum(),
                                   R[k, kept_idx] / R[k, kept_idx].sum())


def test_a_purely_diagonal_refinement_gives_new_topics_only_a_diagonal():
    kept_mask = np.array([True, False, True, False])
    B, R, anchors, prev_B, prev_R, prev_anchors = _problem(3, 4, kept_mask, 1.0)
    _, R0, kept = warm_start(B, R, anchors, prev_B, prev_R, prev_anchors)
    assert kept == 2
    new = ~kept_mask
    touching = new[:, None] | new[None, :]
    off = touching & ~np.eye(4, dtype=bool)
    assert (R0[off] == 0).all()
    assert np.isclose(R0[touching].sum(), R[touching].sum())


def test_without_rescaling_the_new_topics_keep_this_fits_rows():
    kept_mask = np.array([True, False, True, False, True])
    B, R, anchors, prev_B, prev_R, prev_anchors = _problem(5, 5, kept_mask, 0.9)
    _, R0, kept = warm_start(B, R, anchors, prev_B, prev_R, prev_anchors, rescale_new=False)
    _, rescaled, _ = warm_start(B, R, anchors, prev_B, prev_R, prev_anchors)
    assert kept == 3
    new = ~kept_mask
    touching = new[:, None] | new[None, :]
    np.testing.assert_allclose(R0[touching], R[touching])  # R sums to 1 already
    np.testing.assert_allclose(R0[~touching], rescaled[~touching])
    assert not np.allclose(rescaled[touching], R[touching])
