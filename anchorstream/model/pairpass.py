"""One E-step pass of the pair refinement (:mod:`anchorstream.model.refine`) over the word
pairs: the log-likelihood at ``(B, R)`` and ``M = W B``, ``W = C / (B R Bᵀ)`` on the pairs;
and the same pass for the log-likelihood alone.

The pass runs in float32 on topics padded to a multiple of 8 columns, a block of pairs at a
time: the kernel (``_kernels/pairs.pairs_em_scatter``) adds the block into ``M`` and leaves
each pair's probability in a buffer, whose logarithms NumPy then takes at once. Within a
block it visits the pairs by tiles of columns whose rows fit in a core's cache
(:mod:`anchorstream.stats.tiles`). Where float32 cannot hold some pair's probability the same
pass reruns in float64.
"""

from __future__ import annotations

import numpy as np

from anchorstream._kernels.pairs import pairs_em_scatter, pairs_probabilities

__all__ = ["PAIR_BLOCK", "em_pass", "loglik_pass"]

#: The E-step's pass runs on float32 topics padded to a multiple of this many columns (one
#: AVX2 register of float32).
_LANES = 8
#: ... where a pair whose probability is at most this falls back to the float64 pass: ``w = c / p``
#: and the sums of ``M`` then stay below 1e30 and 1e36, under float32's 3.4e38.
_P_MIN_FLOAT32 = 1e-30
#: Entries of ``B`` and ``G`` below this are flushed to 0 in the float32 pass: the square root of
#: float32's smallest normal number (1.1e-19), so that no product of two entries, and no
#: weight times an entry, is subnormal. Subnormal arithmetic is ~100x slower on x86, and such
#: products arose: flushing below the smallest normal number only, the pass was 15% slower on
#: one fit than on another of nearly the same topics (``mail`` from a store, 1.17 against 1.02
#: ms a call), and all passes there 0.2-0.6 CPU s faster with this bound. A word's probability
#: under 1e-19 in a topic changes no pair's probability (the least observed is ~1e-11).
_FLUSH = float(np.sqrt(np.finfo(np.float32).tiny))
#: Pairs per block of the float32 pass: their probabilities (512 KB) stay in cache until their
#: logarithms are taken. Taking them so, a pass over the npm summaries' 0.8M pairs fell from
#: 62 to 56 ms at K = 100, 44 to 38 ms at K = 50 (one thread, session 30).
PAIR_BLOCK = 1 << 16


def em_pass(pairs, B: np.ndarray, R: np.ndarray, *, block: int = PAIR_BLOCK):
    """``(loglik, M = W B)`` at ``(B, R)`` for :class:`~anchorstream.model.refine.PairCounts`.

    The pass runs in float32 (the log-likelihood summed in float64): 1.2-1.8x faster than in
    float64, since every pair reads two random rows of ``B`` and writes one of ``M``, and a
    relative error near 1e-7 is far below what the EM resolves (it stops at gains of 1e-5 per
    pass). Entries below :data:`_FLUSH` are flushed to 0 (a subnormal operand or product is
    slow and means nothing here). The logarithms are taken a ``block`` of pairs at
    a time by NumPy, not one by one in the kernel (:data:`PAIR_BLOCK`). Where some observed
    pair's float32 probability is at most :data:`_P_MIN_FLOAT32` (none on the benchmark's
    corpora, where the least is ~1e-11) the pass reruns in float64, so ``-inf`` still means
    what :func:`~anchorstream.model.refine.pair_loglik` means.
    """
    return _pass(pairs, B, R, int(block), scatter=True)


def loglik_pass(pairs, B: np.ndarray, R: np.ndarray, *, block: int = PAIR_BLOCK) -> float:
    """The log-likelihood of :func:`em_pass` at ``(B, R)`` without ``M``: the same float32
    probabilities (float64 where float32 cannot hold one), so the two agree at the same point.
    It replaced a float64 pass with a logarithm per pair, taking 0.5-0.65x its time (60,000
    npm summaries' 0.4M pairs, one thread: 9.0 → 4.8 ms at K = 50, 13.4 → 8.6 at K = 100; the
    values within 2e-10 of each other)."""
    return _pass(pairs, B, R, int(block), scatter=False)[0]


def _pass(pairs, B: np.ndarray, R: np.ndarray, block: int, *, scatter: bool):
    """``(loglik, M or None)``: the float32 pass on padded topics, rerun in float64 where
    float32 cannot hold some pair's probability; ``M`` only with ``scatter``."""
    G = B @ R
    K = B.shape[1]
    width = -(-K // _LANES) * _LANES
    B32, G32, M32 = _buffers(pairs, B.shape[0], width)
    _pad_into(B32, B)
    _pad_into(G32, G)
    if scatter:
        M32.fill(0.0)
    else:
        M32 = None
    loglik = _blocked_pass(pairs, G32, B32, M32, block, _P_MIN_FLOAT32, give_up=True)
    if np.isfinite(loglik):
        return float(loglik), None if M32 is None else M32[:, :K].astype(np.float64)
    M = np.zeros_like(B) if scatter else None
    loglik = _blocked_pass(pairs, np.ascontiguousarray(G), np.ascontiguousarray(B), M, block,
                           0.0, give_up=False)
    return float(loglik), M


def _blocked_pass(pairs, G, B, M, block: int, p_min: float, *, give_up: bool) -> float:
    """The pass into ``M`` (None: the log-likelihood alone), ``block`` pairs (whole rows) at a
    time: the log-likelihood, or ``-inf`` where some pair's probability is at most ``p_min``;
    with ``give_up`` it returns at the first such block (the float32 pass, which is then
    rerun), else ``M`` still gets every other pair (the float64 pass's result)."""
    indptr, data, diagonal = pairs.indptr, pairs.data, pairs.diagonal
    n = indptr.size - 1
    tiles = pairs.tiles.for_rows(B.shape[1], B.dtype.itemsize)
    # float64: the kernel's float32 probabilities, their logarithms as exact as the kernel's
    # own (a float32 logarithm, twice as fast, made converged EM steps' gains noise).
    pbuf = np.empty(min(max(block, 1), max(int(indptr[-1]), 1)))
    # Their logarithms, in a buffer of their own: a fresh array per block is a fresh mapping
    # where glibc maps 512 KB blocks, with its page faults. In `fit --store`'s process on
    # mail (71 passes) this function's own time was 2.73 CPU s with them, 0.97 without.
    lbuf = np.empty_like(pbuf)
    loglik = 0.0
    impossible = False
    row0 = 0
    while row0 < n:
        # Whole rows up to `block` pairs, at least one row (a longer row gets its own buffer).
        row1 = max(int(np.searchsorted(indptr, indptr[row0] + block, side="right")) - 1,
                   row0 + 1)
        t0, t1 = int(indptr[row0]), int(indptr[row1])
        fits = t1 - t0 <= pbuf.size
        buf = pbuf[: t1 - t0] if fits else np.empty(t1 - t0)
        if (pairs_probabilities(tiles, pairs.indices, data, G, B, p_min, row0, row1, buf)
                if M is None else
                pairs_em_scatter(tiles, pairs.indices, data, G, B, M, p_min, row0, row1, buf)):
            if give_up:
                return -np.inf
            impossible = True
        logs = np.log(buf, out=lbuf[: t1 - t0] if fits else None)
        # An off-diagonal pair stands for two ordered pairs, a diagonal one for one.
        d = diagonal[np.searchsorted(diagonal, t0): np.searchsorted(diagonal, t1)]
        loglik += 2.0 * float(data[t0:t1] @ logs) - float(data[d] @ logs[d - t0])
        row0 = row1
    return -np.inf if impossible else loglik


def _buffers(pairs, n_words: int, width: int):
    """The float32 ``B``, ``G`` and ``M`` of a pass over ``pairs`` with the topics padded to
    ``width`` columns, kept with the pairs for their next pass (a refinement runs 40-100):
    three fresh ``V × width`` arrays a pass cost a fifth of the pass at V = 50,000, K = 100 on
    this virtual machine (0.18 of ~1.1 s, most of it the kernel zeroing their new pages).
    Their padding columns stay zero."""
    kept = pairs.__dict__.get("_pass_buffers")
    if kept is None or kept[0].shape != (n_words, width):
        kept = tuple(np.zeros((n_words, width), dtype=np.float32) for _ in range(3))
        pairs.__dict__["_pass_buffers"] = kept
    return kept


def _pad_into(out: np.ndarray, X: np.ndarray) -> None:
    """``X`` into the first columns of ``out`` in float32, entries under :data:`_FLUSH` as 0."""
    part = out[:, :X.shape[1]]
    part[...] = X
    part[part < _FLUSH] = 0.0
