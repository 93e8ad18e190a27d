"""numba kernels of the pair-likelihood refinement (``anchorstream/model/refine.py``).

Arrays in, arrays out; the wrappers in ``anchorstream/model/refine.py`` and
``anchorstream/model/pairpass.py`` check shapes, dtypes and contiguity. Slow twins (vectorized
NumPy/SciPy) live in ``tests/naive_pairs.py``.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def pairs_em_scatter(tiles, indices, data, G, B, M, p_min, row0, row1, pbuf):
    """One E-step pass over the word pairs of the rows ``row0 <= i < row1``: ``M += W B``, and
    each pair's probability left in ``pbuf`` for the caller's logarithms.

    The pairs are the upper triangle (diagonal included) of a symmetric matrix ``C`` whose
    ordered entries sum to 1 (an off-diagonal entry stands for the two ordered pairs ``(i, j)``
    and ``(j, i)``). The model gives the pair ``(i, j)`` the probability
    ``p_ij = G_i · B_j`` with ``G = B R`` (``R`` symmetric, so ``p`` is too), and the E-step
    needs ``W = C / p`` (elementwise, on the pairs) only through ``M = W B``. One serial pass
    adds, per pair, ``w B_j`` to row ``i`` and ``w B_i`` to row ``j`` (once on the diagonal);
    ``O(nnz K)``, no ``V x V`` array. Serial: the scatter into row ``j`` would race across
    threads, and the fixed order keeps the bits the same on every run. ``reassoc`` lets the
    dot product ``G_i · B_j`` run in SIMD lanes (1.6x faster on 1.9M pairs at K = 100; the
    sums differ from the sequential ones in the last bits only).

    The arithmetic on ``G``, ``B`` and ``M`` is in their dtype: the refinement passes float32
    with the topics padded to a multiple of 8 columns (``model/pairpass.py``), which fills the
    SIMD lanes and halves the bytes each random row access moves; ``C``'s entries and ``w``'s
    division stay float64. There ``p_min`` keeps ``w = c / p`` and the sums into ``M`` far
    from float32's overflow.

    The log-likelihood ``Σ_ij C_ij log p_ij`` is the caller's: it takes the logarithms of a
    whole buffer at once (NumPy), where one scalar ``log`` per pair here was a quarter of the
    pass (11.5 of 46 ms on the npm summaries' 0.8M pairs at K = 100).

    The pass visits the pairs one column tile at a time (``tiles``, from
    :func:`~anchorstream._kernels.tiles.column_tiles`): every row's pairs with columns in the
    first tile, then every row's in the next, so that the rows ``B_j`` and ``M_j`` of one
    tile's columns, read and written at random, stay in the core's cache while the rows ``i``
    stream by. Each ``M`` row receives its terms in the same order as in a row-by-row pass (a
    column ``j`` gets all of them in its tile, from the rows before ``j``, before its own row
    adds any), and ``pbuf`` keeps the CSR's positions, so ``M`` and ``pbuf`` are the same to
    the bit with or without tiles.

    Parameters
    ----------
    tiles : int64 ndarray of shape (n_tiles + 1, n_words)
        Row ``i``'s pairs with columns in tile ``s`` are at ``tiles[s, i] <= t < tiles[s + 1,
        i]``: ``tiles[0]`` is the CSR's ``indptr[:-1]``, ``tiles[-1]`` its ``indptr[1:]`` (one
        tile: the rows as they are).
    indices : int ndarray of shape (nnz,)
        Columns, each at or after its row.
    data : float64 ndarray of shape (nnz,)
        ``C``'s entries; zeros are skipped.
    G, B : float32 or float64 ndarray of shape (n_words, n_topics), C-contiguous
    M : ndarray of shape (n_words, n_topics), C-contiguous, of ``B``'s dtype
        Added into.
    p_min : float
        A pair with ``C_ij > 0`` and ``p_ij <= p_min`` is impossible: it adds nothing to ``M``.
    row0, row1 : int
        The rows of this call.
    pbuf : float ndarray of shape (>= indptr[row1] - indptr[row0],)
        ``pbuf[t - indptr[row0]]`` receives ``p`` of pair ``t`` (``indptr[row0]`` is
        ``tiles[0, row0]``), and 1 where the pair's count is 0 or the pair is impossible (its
        logarithm then adds 0).

    Returns
    -------
    bool
        Whether some pair was impossible (the log-likelihood is then ``-inf``).
    """
    K = B.shape[1]
    impossible = False
    if row1 <= row0:
        return impossible
    base = tiles[0, row0]
    last = tiles.shape[0] - 1
    if K == 0:
        for t in range(base, tiles[last, row1 - 1]):
            pbuf[t - base] = 1.0
            if data[t] != 0.0:
                impossible = True
        return impossible
    # ``p`` and ``w`` in the arrays' dtype: a float64 one would turn the float32 products
    # into float64 ones. (``p`` starts from a zero of that dtype and sums all K terms: a sum
    # started from the first term leaves K - 1 for the SIMD loop, whose remainder is slow.)
    zero = G[0, 0] - G[0, 0]
    weight = np.empty(1, dtype=M.dtype)
    for s in range(last):
        for i in range(row0, row1):
            Gi, Bi, Mi = G[i], B[i], M[i]
            for t in range(tiles[s, i], tiles[s + 1, i]):
                c = data[t]
                if c == 0.0:
                    pbuf[t - base] = 1.0
                    continue
                j = indices[t]
                Bj = B[j]
                p = zero
                for k in range(K):
                    p += Gi[k] * Bj[k]
                if not p > p_min:
                    impossible = True
                    pbuf[t - base] = 1.0
                    continue
                pbuf[t - base] = p
                weight[0] = c / p
                w = weight[0]
                if j == i:
                    for k in range(K):
                        Mi[k] += w * Bi[k]
                else:
                    Mj = M[j]
                    for k in range(K):
                        Mi[k] += w * Bj[k]
                        Mj[k] += w * Bi[k]
    return impossible


@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def pairs_probabilities(tiles, indices, data, G, B, p_min, row0, row1, pbuf):
    """Each pair's probability ``p_ij = G_i · B_j`` for the rows ``row0 <= i < row1``, into
    ``pbuf``: :func:`pairs_em_scatter`'s pass without its scatter into ``M`` (a third of its
    work), for a log-likelihood alone (the refinement's last point), by the same column tiles.
    Arguments, ``pbuf``'s contents and the result as for :func:`pairs_em_scatter`.
    """
    K = B.shape[1]
    impossible = False
    if row1 <= row0:
        return impossible
    base = tiles[0, row0]
    # p in the arrays' dtype, as in pairs_em_scatter; with no topics every observed pair is
    # impossible (p = 0).
    zero = np.zeros(1, G.dtype)[0]
    for s in range(tiles.shape[0] - 1):
        for i in range(row0, row1):
            Gi = G[i]
            for t in range(tiles[s, i], tiles[s + 1, i]):
                pbuf[t - base] = 1.0
                if data[t] == 0.0:
                    continue
                Bj = B[indices[t]]
                p = zero
                for k in range(K):
                    p += Gi[k] * Bj[k]
                if p > p_min:
                    pbuf[t - base] = p
                else:
                    impossible = True
    return impossible


@numba.njit(cache=True)
def pairs_diagonal(indptr, indices):
    """Positions of the diagonal entries ``(i, i)`` of a CSR, increasing: one pass, where
    ``flatnonzero(indices == repeat(arange(n), diff(indptr)))`` made two temporaries the size
    of the pairs (23M pairs at V = 50,000: 2 s, most of it the kernel zeroing their pages)."""
    n = indptr.size - 1
    count = 0
    for i in range(n):
        for t in range(indptr[i], indptr[i + 1]):
            if indices[t] == i:
                count += 1
    out = np.empty(count, dtype=np.int64)
    count = 0
    for i in range(n):
        for t in range(indptr[i], indptr[i + 1]):
            if indices[t] == i:
                out[count] = t
                count += 1
    return out


@numba.njit(cache=True)
def pairs_row_sums(indptr, indices, data):
    """The rows of the full symmetric matrix whose upper triangle is the CSR, summed: each
    entry's own row and, off the diagonal, its mirror's, as two sums each taken in the
    entries' order and then added (as two ``bincount`` calls add them), without the
    temporaries of ``repeat``-ing the rows.

    Returns
    -------
    float64 ndarray of shape (n,)
    """
    n = indptr.size - 1
    own = np.zeros(n)
    mirror = np.zeros(n)
    for i in range(n):
        for t in range(indptr[i], indptr[i + 1]):
            j = indices[t]
            own[i] += data[t]
            if j != i:
                mirror[j] += data[t]
    return own + mirror


@numba.njit(cache=True)
def pairs_upper_from_dense(dense):
    """The upper triangle (diagonal included) of a square dense matrix as CSR arrays.

    Two serial passes (count, then fill) over the upper half only: no full-matrix temporary,
    as ``scipy.sparse.triu(csr_matrix(dense))`` would make.

    Parameters
    ----------
    dense : float ndarray of shape (n, n)

    Returns
    -------
    indptr : int64 ndarray of shape (n + 1,)
    indices : int32 ndarray of shape (nnz,)
    data : float64 ndarray of shape (nnz,)
        The nonzero entries ``dense[i, j]``, ``j >= i``, by row, then column.
    """
    n = dense.shape[0]
    indptr = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        count = 0
        for j in range(i, n):
            if dense[i, j] != 0.0:
                count += 1
        indptr[i + 1] = indptr[i] + count
    indices = np.empty(indptr[n], dtype=np.int32)
    data = np.empty(indptr[n], dtype=np.float64)
    t = 0
    for i in range(n):
        for j in range(i, n):
            v = dense[i, j]
            if v != 0.0:
                indices[t] = j
                data[t] = v
                t += 1
    return indptr, indices, data
