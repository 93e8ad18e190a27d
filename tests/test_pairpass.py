"""One E-step pass over the pairs (``anchorstream/model/pairpass.py``): float32 in blocks
against the float64 kernel pass; the log-likelihood alone (``loglik_pass``) against the
E-step's."""

from __future__ import annotations

import numpy as np
import pytest

from anchorstream.model.pairpass import em_pass as _estep
from anchorstream.model.pairpass import loglik_pass
from anchorstream.model.refine import pair_counts, pair_loglik
from anchorstream.stats import tiles
from tests.naive_pairs import naive_em_pass


def _float64_estep(pairs, B, R):
    """The E-step by the NumPy twin, in float64."""
    return naive_em_pass(pairs.indptr, pairs.indices, pairs.data, np.ascontiguousarray(B @ R), B)


@pytest.mark.parametrize("K", [1, 5, 8, 13])
def test_estep_in_float32_agrees_with_float64(rng, K):
    # Any K: the float32 pass pads the topics to a multiple of 8 columns and cuts M back.
    C = rng.random((30, 30)) * (rng.random((30, 30)) < 0.5)
    pairs = pair_counts(C + C.T)
    B = rng.random((30, K)) + 0.01
    B /= B.sum(axis=0)
    R = rng.random((K, K))
    R = (R + R.T) / (2 * R.sum())
    ll, M = _estep(pairs, B, R)
    want_ll, want_M = _float64_estep(pairs, B, R)
    assert M.shape == (30, K) and M.dtype == np.float64
    assert ll == pytest.approx(want_ll, rel=1e-6)
    np.testing.assert_allclose(M, want_M, rtol=1e-5)


def test_estep_flushes_entries_whose_products_would_be_subnormal(rng):
    # Entries of 1e-25 and 1e-30 (normal float32 numbers whose products with each other, or
    # with a small weight, are subnormal: ~100x slower arithmetic) go to 0 in the float32
    # pass; the E-step is the float64 one all the same.
    from anchorstream.model.pairpass import _FLUSH, _pad_into

    C = rng.random((20, 20))
    pairs = pair_counts(C + C.T)
    B = rng.random((20, 6)) + 0.01
    B[rng.random(B.shape) < 0.3] = 1e-25
    B[0, :3] = 1e-30
    B /= B.sum(axis=0)
    R = rng.random((6, 6))
    R = (R + R.T) / (2 * R.sum())
    padded = np.zeros((20, 8), dtype=np.float32)
    _pad_into(padded, B)
    assert not np.any((padded > 0) & (padded < _FLUSH))
    assert not padded[:, 6:].any()
    assert _FLUSH**2 >= np.finfo(np.float32).tiny and 1e-25 < _FLUSH < 1e-18
    ll, M = _estep(pairs, B, R)
    want_ll, want_M = _float64_estep(pairs, B, R)
    assert ll == pytest.approx(want_ll, rel=1e-6)
    np.testing.assert_allclose(M, want_M, rtol=1e-5, atol=1e-12 * np.abs(want_M).max())


def test_estep_falls_back_to_float64_where_float32_cannot_hold_a_probability():
    # Word 2's weights (1e-20) make its pairs' probabilities ~1e-40: below float32's smallest
    # normal number, but a positive probability all the same, so the log-likelihood is finite.
    pairs = pair_counts(np.ones((3, 3)))
    B = np.array([[0.5, 0.5], [0.5, 0.5], [1e-20, 1e-20]])
    R = np.full((2, 2), 0.25)
    ll, M = _estep(pairs, B, R)
    want_ll, want_M = _float64_estep(pairs, B, R)
    assert np.isfinite(ll) and ll == pytest.approx(want_ll, rel=1e-12)
    np.testing.assert_allclose(M, want_M, rtol=1e-12)
    assert ll == pytest.approx(pair_loglik(pairs, B, R), rel=1e-12)


def test_an_impossible_pair_gives_minus_infinity_and_the_rest_of_m():
    """A pair of words that share no topic has probability 0: the float64 pass (to which the
    float32 one falls back) says -inf, and M still holds every other pair, as EM needs."""
    C = np.array([[1.0, 2.0, 1.0], [2.0, 1.0, 3.0], [1.0, 3.0, 1.0]])
    # Word 1 is only in topic 0, word 2 only in topic 1, and no pair of words comes from the
    # two topics (R diagonal), but words 1 and 2 co-occur.
    B = np.array([[0.5, 0.5], [0.5, 0.0], [0.0, 0.5]])
    R = np.array([[0.5, 0.0], [0.0, 0.5]])
    pairs = pair_counts(C)
    ll, M = _estep(pairs, B, R, block=2)
    want_ll, want_M = _float64_estep(pairs, B, R)
    assert ll == want_ll == -np.inf
    assert loglik_pass(pairs, B, R, block=2) == pair_loglik(pairs, B, R) == -np.inf
    np.testing.assert_allclose(M, want_M, rtol=1e-12)
    assert np.any(M > 0)


@pytest.mark.parametrize("block", [1, 7, 40, 1 << 16])
def test_the_pass_in_blocks_of_pairs_is_the_same_pass(rng, block):
    """Blocks of whole rows (one row may exceed the block) give the float64 pass's
    log-likelihood and M, and the same M whatever the block; a stored zero adds nothing."""
    C = rng.random((25, 25)) * (rng.random((25, 25)) < 0.6)
    C[3, 3] = 0.0
    C[4, 4] = 2.0  # diagonal pairs count once, off-diagonal ones twice
    pairs = pair_counts(C + C.T)
    B = rng.random((25, 6)) + 0.01
    B /= B.sum(axis=0)
    R = rng.random((6, 6))
    R = (R + R.T) / (2 * R.sum())
    ll, M = _estep(pairs, B, R, block=block)
    want_ll, want_M = _float64_estep(pairs, B, R)
    assert ll == pytest.approx(want_ll, rel=1e-6)
    np.testing.assert_allclose(M, want_M, rtol=1e-5)
    one_ll, one_M = _estep(pairs, B, R, block=1 << 20)
    np.testing.assert_array_equal(M, one_M)
    assert ll == pytest.approx(one_ll, rel=1e-12)


@pytest.mark.parametrize("block", [1, 7, 1 << 16])
@pytest.mark.parametrize("K", [1, 6, 13])
def test_the_loglik_pass_is_the_estep_loglik(rng, K, block):
    """The same float32 probabilities as the E-step, in any blocks: the same log-likelihood
    bit for bit (a refinement's trace compares the two), within float32's error of float64."""
    C = rng.random((25, 25)) * (rng.random((25, 25)) < 0.6)
    C[3, 3] = 0.0
    pairs = pair_counts(C + C.T)
    B = rng.random((25, K)) + 0.01
    B /= B.sum(axis=0)
    R = rng.random((K, K))
    R = (R + R.T) / (2 * R.sum())
    ll = loglik_pass(pairs, B, R, block=block)
    assert ll == _estep(pairs, B, R, block=block)[0]
    assert loglik_pass(pairs, B, R) == _estep(pairs, B, R)[0] == pair_loglik(pairs, B, R)
    assert ll == pytest.approx(_float64_estep(pairs, B, R)[0], rel=1e-6)


def test_the_loglik_pass_falls_back_to_float64_as_the_estep_does():
    pairs = pair_counts(np.ones((3, 3)))
    B = np.array([[0.5, 0.5], [0.5, 0.5], [1e-20, 1e-20]])  # pairs of word 2: p ~ 1e-40
    R = np.full((2, 2), 0.25)
    ll = loglik_pass(pairs, B, R)
    assert np.isfinite(ll) and ll == pytest.approx(_float64_estep(pairs, B, R)[0], rel=1e-12)


@pytest.mark.parametrize("tile_bytes", [1, 200, 1 << 30])
def test_the_pass_by_column_tiles_is_the_same_pass_to_the_bit(rng, monkeypatch, tile_bytes):
    """However small the tiles (one word each at 1 byte: 40 tiles), the float32 pass and the
    float64 one give the log-likelihood and M of a pass over whole rows."""
    C = rng.random((40, 40)) * (rng.random((40, 40)) < 0.5)
    pairs = pair_counts(C + C.T)
    B = rng.random((40, 7)) + 0.01
    B /= B.sum(axis=0)
    R = rng.random((7, 7))
    R = (R + R.T) / (2 * R.sum())
    small = B.copy()
    small[5] = 1e-20  # word 5's pairs ~1e-40: the float64 pass
    want = [_estep(pairs, X, R, block=block) for X in (B, small) for block in (3, 1 << 16)]
    monkeypatch.setattr(tiles, "TILE_BYTES", tile_bytes)
    monkeypatch.setattr(tiles, "UNTILED_BYTES", 0)
    fresh = pair_counts(C + C.T)  # no tiles kept from the passes above
    got = [_estep(fresh, X, R, block=block) for X in (B, small) for block in (3, 1 << 16)]
    assert fresh.tiles(tiles.tile_width(40, 32)).shape[0] - 1 == (40 if tile_bytes == 1 else
                                                                  14 if tile_bytes == 200 else 1)
    for (ll, M), (want_ll, want_M) in zip(got, want):
        assert ll == want_ll
        np.testing.assert_array_equal(M, want_M)
    assert loglik_pass(fresh, B, R) == want[1][0]


def test_the_pass_keeps_its_buffers_for_the_next_and_starts_each_afresh(rng):
    """The float32 arrays are the pairs' own from the second pass on, and a pass leaves
    nothing in them that the next reads: passes at other points, in any order, give what
    fresh pairs give."""
    C = rng.random((30, 30)) * (rng.random((30, 30)) < 0.5)
    pairs = pair_counts(C + C.T)
    points = []
    for K in (5, 5, 12):
        B = rng.random((30, K)) + 0.01
        B /= B.sum(axis=0)
        R = rng.random((K, K))
        points.append((B, (R + R.T) / (2 * R.sum())))
    first = _estep(pairs, *points[0])
    kept = pairs.__dict__["_pass_buffers"]
    for B, R in points[1:] + points[:1]:
        ll, M = _estep(pairs, B, R)
        want_ll, want_M = _estep(pair_counts(C + C.T), B, R)
        assert ll == want_ll and loglik_pass(pairs, B, R) == want_ll
        np.testing.assert_array_equal(M, want_M)
    assert pairs.__dict__["_pass_buffers"][0].shape == kept[0].shape == (30, 8)
    np.testing.assert_array_equal(_estep(pairs, *points[0])[1], first[1])
