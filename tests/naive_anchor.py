"""Slow, obviously-correct twins of the rectification and anchor-finding code.

Loops and dense textbook linear algebra only: each function mirrors a paper's pseudo-code line
by line, so a disagreement with the fast version points at the fast version.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg


def naive_rectify_clip(block, shift, old, out):
    """Loop twin of ``anchor_rectify_clip``."""
    n_rows, n_cols = block.shape
    partial = np.zeros((n_rows, 3))
    for i in range(n_rows):
        for j in range(n_cols):
            v = max(block[i, j] + shift, 0.0)
            o = old[i, j]
            partial[i, 0] += (v - o) ** 2
            partial[i, 1] += o * o
            partial[i, 2] += v
            block[i, j] = v
            out[i, j] = v
    return partial


def naive_rectify(C, K, max_iter, tol=0.0):
    """JSMF Algorithm 1 with a full ``scipy.linalg.eigh`` per iteration.

    Returns the normalised matrix, the number of iterations and the last relative change.
    """
    V = C.shape[0]
    nn = np.array(C, dtype=np.float64)
    change = np.inf
    t = 0
    for t in range(1, max_iter + 1):
        w, U = scipy.linalg.eigh(nn)
        w, U = w[::-1][:K], U[:, ::-1][:, :K]
        psd = (U * np.maximum(w, 0.0)) @ U.T
        nor = psd + (1.0 - psd.sum()) / V**2
        new = np.maximum(nor, 0.0)
        change = np.linalg.norm(new - nn) / np.linalg.norm(nn)
        nn = new
        if change <= tol:
            break
    return nn / nn.sum(), t, change


def _row_normalized(C):
    C = np.asarray(C, dtype=np.float64)
    s = C.sum(axis=1, keepdims=True)
    return np.divide(C, s, out=np.zeros_like(C), where=s > 0)


def naive_pivoted_qr(C, K, candidates=None):
    """Explicit column-pivoted QR on the rows of the row-normalised ``C``.

    Every step projects all rows onto the orthogonal complement of the new direction (the
    explicit version that JSMF Algorithm 2 avoids).
    """
    P = _row_normalized(C)
    V = P.shape[0]
    allowed = np.ones(V, bool) if candidates is None else np.asarray(candidates, bool).copy()
    allowed &= np.asarray(C).sum(axis=1) > 0
    chosen = []
    for _ in range(K):
        norms = np.array(
            [P[i] @ P[i] if allowed[i] and i not in chosen else -1.0 for i in range(V)]
        )
        n = int(np.argmax(norms))
        chosen.append(n)
        q = P[n] / np.sqrt(P[n] @ P[n])
        for i in range(V):
            P[i] = P[i] - (P[i] @ q) * q
    return np.array(chosen)


def _distance_to_span(x, rows):
    """Euclidean distance of ``x`` to the linear span of ``rows`` (least squares)."""
    if len(rows) == 0:
        return float(np.linalg.norm(x))
    A = np.asarray(rows).T
    coef = np.linalg.lstsq(A, x, rcond=None)[0]
    return float(np.linalg.norm(x - A @ coef))


def naive_fast_anchor_words(points, K, candidates=None, cleanup=True):
    """Arora et al. 2013 Algorithm 4 on given points (rows), distances by least squares."""
    X = np.asarray(points, dtype=np.float64)
    V = X.shape[0]
    allowed = np.ones(V, bool) if candidates is None else np.asarray(candidates, bool)
    S = []
    for _ in range(K):
        d = [_distance_to_span(X[i], X[S]) if allowed[i] and i not in S else -1.0
             for i in range(V)]
        S.append(int(np.argmax(d)))
    if cleanup:
        for pos in range(K):
            others = S[:pos] + S[pos + 1 :]
            d = [_distance_to_span(X[i], X[others]) if allowed[i] and i not in others else -1.0
                 for i in range(V)]
            best = int(np.argmax(d))
            if d[best] > d[S[pos]] * (1 + 1e-9):
                S[pos] = best
    return np.array(S)


def naive_dense_to_csr(dense, nnz):
    """Loop twin of ``anchor_dense_to_csr``: each nonzero appended row by row."""
    indptr = [0]
    indices, data = [], []
    for row in dense:
        for j, v in enumerate(row):
            if v != 0.0:
                indices.append(j)
                data.append(v)
        indptr.append(len(indices))
    assert len(indices) == nnz
    return (np.array(indptr, dtype=np.int64), np.array(indices, dtype=np.int32),
            np.array(data, dtype=dense.dtype))


def naive_update_difference(rows, previous, diff):
    """Twin of ``anchor_update_difference``."""
    prev = previous.astype(np.float64)
    d = rows - prev
    diff[...] = d
    bad = np.count_nonzero(~(np.isfinite(rows) & np.isfinite(prev)))
    top = float(np.max(np.abs(np.nan_to_num(rows, nan=0.0, posinf=0.0, neginf=0.0))))
    return np.array([float(np.sum(d * d)), float(np.sum(prev * prev)), float(bad), top])


def naive_negative_entries(block):
    """Twin of ``anchor_negative_entries``: numpy's nonzero and a gather."""
    rows, cols = np.nonzero(block < 0)
    return rows.astype(np.int64), cols.astype(np.int64), -block[rows, cols].astype(np.float64)


def naive_negative_entries_rechecked(block, Y, cols_of, bound, floor, max_candidates):
    """Twin of ``negative_entries_rechecked``: the candidates by numpy, their float64 dot
    products, the negative ones kept in row-major order."""
    rows, cols = np.nonzero(block < np.outer(bound, bound[cols_of]) + floor)
    if rows.size > max_candidates:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0), rows.size
    exact = np.einsum("ij,ij->i", Y[rows], Y[cols_of[cols]])
    keep = exact < 0
    return (rows[keep].astype(np.int64), cols[keep].astype(np.int64), -exact[keep],
            rows.size)


def naive_corrections_csr(rows, cols, values, scanned, outside):
    """Twin of ``corrections_csr``: the coordinates, mirrored, in a stable sort by row."""
    mirror = outside[rows]
    r = np.concatenate([rows, scanned[cols[mirror]]])
    c = np.concatenate([scanned[cols], rows[mirror]])
    v = np.concatenate([values, values[mirror]])
    # The kernel writes each row's entries in the order of the entries they come from (no
    # entry puts both its own value and its mirror into one row): a sort by row, then entry.
    entry = np.concatenate([np.arange(rows.size), np.flatnonzero(mirror)])
    order = np.lexsort((entry, r))
    indptr = np.concatenate([[0], np.cumsum(np.bincount(r, minlength=outside.size))])
    return indptr.astype(np.int64), c[order].astype(np.int64), v[order].astype(np.float64)


def naive_corrections_sums(rows, cols, values, scanned, outside):
    """Twin of ``corrections_sums``: ``E`` formed densely, times a vector of ones."""
    return naive_corrections_matmul(rows, cols, values, scanned, outside,
                                    np.ones((outside.size, 1)))[:, 0]


def naive_corrections_matmul(rows, cols, values, scanned, outside, Z):
    """Twin of ``corrections_matmul``: ``E`` formed densely from its mirrored coordinates."""
    V = outside.size
    E = np.zeros((V, V))
    E[rows, scanned[cols]] = values
    mirror = outside[rows]
    E[scanned[cols[mirror]], rows[mirror]] = values[mirror]
    return E @ Z


def naive_block_sqnorms(block, outside, scanned):
    """Twin of ``block_sqnorms``: the corrections formed densely, their rows' squares summed."""
    V = block.shape[0]
    E = np.zeros((V, V))
    E[:, scanned] = block
    E[np.ix_(scanned, np.flatnonzero(outside))] = block[outside].T
    return np.sum(E * E, axis=1)


def naive_clip_block(src, dtype, outside):
    """Twin of ``clip_block``: ``(out, count, row_sums, row_sqs, col_sums, col_sqs)`` by whole-array
    operations on the clipped block as stored in ``dtype``."""
    out = np.maximum(src, 0.0).astype(dtype)
    wide = out.astype(np.float64)
    return (out, np.count_nonzero(out), wide.sum(axis=1), (wide * wide).sum(axis=1),
            wide[outside].sum(axis=0), (wide[outside] ** 2).sum(axis=0))


def naive_block_rows(block, scanned, position, outside, idx, scale):
    """Twin of ``block_rows``: the scanned columns of each row, then the mirrored columns of the
    scanned words among ``idx`` gathered from the whole block (``Corrections.rows`` until
    session 30)."""
    out = np.zeros((idx.size, outside.size))
    out[:, scanned] = block[idx]
    q = position[idx]
    mine = np.flatnonzero(q >= 0)
    if mine.size:
        others = np.flatnonzero(outside)
        out[np.ix_(mine, others)] += block[:, q[mine]][others].T
    return out * scale
