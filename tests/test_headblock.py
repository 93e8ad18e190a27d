"""The sparse counts' dense head block (anchorstream/stats/headblock.py): the block chosen, the
products it gives, and SparseCooccurrence's use of it."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorstream.model.pipeline import AnchorModel
from anchorstream.stats import tiles
from anchorstream.stats.cooccurrence import cooccurrence
from anchorstream.stats.headblock import head_block
from anchorstream.stats.sparse import SparseCooccurrence
from anchorstream.synthetic import planted_model, sample_documents


def _zipf_upper(seed: int, n: int, docs: int = 400, length: int = 12) -> sp.csr_matrix:
    """Counts of documents of Zipf-distributed words: dense among the common words, sparse in
    the tail, as real text."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, n + 1)
    p /= p.sum()
    perm = rng.permutation(n)  # the common words anywhere in the vocabulary
    rows = []
    for _ in range(docs):
        h = np.bincount(perm[rng.choice(n, length, p=p)], minlength=n).astype(float)
        rows.append(h)
    X = sp.csr_matrix(np.array(rows))
    return sp.triu(sp.csr_matrix(cooccurrence(X).counts), format="csr")


def _full(U: sp.csr_matrix) -> np.ndarray:
    D = U.toarray()
    return D + np.triu(D, 1).T


@given(st.integers(0, 2**16), st.integers(2, 40))
@settings(max_examples=40, deadline=None)
def test_the_block_is_the_largest_that_takes_no_more_memory_than_its_pairs(seed, n):
    U = _zipf_upper(seed, n, docs=30, length=6)
    head = head_block(U, min_words=1)
    full = _full(U)
    order = np.argsort(-(full != 0).sum(axis=1), kind="stable")
    stored = [int(np.count_nonzero(np.triu(full[np.ix_(w, w)])))
              for w in (np.sort(order[:b]) for b in range(1, n + 1))]
    fits = [b for b in range(1, n + 1) if 4 * b * b <= 12 * stored[b - 1]]
    if not fits:
        assert head is None
        return
    assert head is not None and head.words.size == max(fits)
    np.testing.assert_array_equal(head.words, np.sort(order[: max(fits)]))
    assert head.block.nbytes <= 12 * stored[head.words.size - 1]  # no more than its pairs
    np.testing.assert_array_equal(head.block, full[np.ix_(head.words, head.words)]
                                  .astype(np.float32))
    # Block and rest: every stored pair once.
    assert head.rest.nnz + stored[head.words.size - 1] == U.nnz


def test_fewer_than_min_words_builds_no_block():
    U = _zipf_upper(0, 60, docs=40, length=8)
    head = head_block(U, min_words=1)
    assert head is not None and 1 < head.words.size < 60
    assert head_block(U, min_words=head.words.size + 1) is None
    assert head_block(sp.csr_matrix((5, 5)), min_words=1) is None  # nothing stored


@pytest.mark.parametrize("seed", range(4))
def test_products_through_the_block_equal_the_sparse_products(seed):
    U = _zipf_upper(seed, 300)
    head = head_block(U, min_words=1)
    assert head is not None and head.words.size < 300  # not every word: the tail is sparse
    Z = np.random.default_rng(seed).standard_normal((300, 7))
    want = _full(U) @ Z
    got = head.matmul(Z)
    # float32 block: ~1e-7 of the product's size.
    assert np.abs(got - want).max() <= 1e-6 * np.abs(want).max()


def _sparse(U, n, min_words):
    S = SparseCooccurrence(U, np.ones(n), np.ones(n), 400, 4800)
    S.head_min_words = min_words
    return S


def test_sparse_cooccurrence_multiplies_through_its_block_and_can_drop_it():
    n = 300
    U = _zipf_upper(7, n)
    plain, headed = _sparse(U, n, n + 1), _sparse(U, n, 1)
    Z = np.random.default_rng(1).standard_normal((n, 5))
    want = plain @ Z
    assert plain.head_block() is None
    got = headed @ Z
    block = headed.head_block()
    assert block is not None and headed.head_block() is block  # chosen once
    assert np.abs(got - want).max() <= 1e-6 * np.abs(want).max()
    # A vector (1-d) goes through it too.
    assert np.abs(headed @ Z[:, 0] - want[:, 0]).max() <= 1e-6 * np.abs(want).max()
    headed.drop_head_block()
    assert headed._head is False  # freed until the next product
    np.testing.assert_allclose(headed @ Z, got, rtol=1e-12, atol=0)


def test_the_low_rank_fit_is_the_same_through_the_block():
    # Planted topics, counts dense among the common words: the fit through the float32
    # block finds the same anchors and topics as the float64 sparse products.
    truth = planted_model(400, 6, random_state=3)
    X, _ = sample_documents(truth, 3000, doc_length=40, random_state=3)
    dense = cooccurrence(X)
    fits = []
    for min_words in (401, 1):
        S = SparseCooccurrence.from_dense(dense)
        S.head_min_words = min_words
        fits.append(AnchorModel(6, rectify_method="lowrank", anchor_min_df=0,
                                random_state=0).fit(S))
        assert (S.head_block() is None) == (min_words == 401)
    a, b = fits
    np.testing.assert_array_equal(np.sort(a.anchors_), np.sort(b.anchors_))
    assert np.abs(a.topic_word_ - b.topic_word_).sum(axis=0).max() < 1e-4


@pytest.mark.parametrize("b", [1, 5, 8, 46])
def test_one_product_builds_no_block_and_equals_the_product_through_it(b):
    # A warm refresh multiplies the counts once: building the block would cost more than the
    # product it speeds up. matmul_once leaves it unchosen, computes in float32 as the block
    # does, and goes through the block where one was chosen already.
    n = 300
    U = _zipf_upper(11, n)
    once, headed = _sparse(U, n, 1), _sparse(U, n, 1)
    Z = np.random.default_rng(b).standard_normal((n, b))
    want = _sparse(U, n, n + 1) @ Z  # float64, no block
    got = once.matmul_once(Z)
    assert once._head is False  # not chosen
    assert got.shape == want.shape and got.dtype == np.float64
    assert np.abs(got - want).max() <= 1e-6 * np.abs(want).max()
    assert np.abs(once.matmul_once(Z[:, 0]) - want[:, 0]).max() <= 1e-6 * np.abs(want).max()
    through = headed @ Z
    assert headed.head_block() is not None
    np.testing.assert_array_equal(headed.matmul_once(Z), through)


def test_one_product_of_too_few_words_for_a_block_is_the_float64_product():
    n = 60
    U = _zipf_upper(12, n)
    S = _sparse(U, n, n + 1)  # fewer words than a block needs
    Z = np.random.default_rng(0).standard_normal((n, 3))
    np.testing.assert_array_equal(S.matmul_once(Z), S @ Z)


@pytest.mark.parametrize("min_words", [1, 301])
def test_products_by_column_tiles_are_the_same_to_the_bit(monkeypatch, min_words):
    # Tiles of one word, whatever the product: through the block's rest (min_words 1), the
    # float64 pairs (no block) and one product in float32 (matmul_once) alike.
    n = 300
    U = _zipf_upper(13, n)
    Z = np.random.default_rng(2).standard_normal((n, 9))
    want = [_sparse(U, n, min_words) @ Z, _sparse(U, n, min_words).matmul_once(Z)]
    monkeypatch.setattr(tiles, "TILE_BYTES", 1)
    monkeypatch.setattr(tiles, "UNTILED_BYTES", 0)
    S, once = _sparse(U, n, min_words), _sparse(U, n, min_words)
    got = [S @ Z, once.matmul_once(Z)]
    kept = (S.head_block().tiles if min_words == 1 else S._tiles())
    assert kept(1).shape[0] == n + 1  # n tiles of one column
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
