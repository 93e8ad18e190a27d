"""Compile the numba kernels a fit uses before the first real fit needs them.

numba compiles a kernel on its first call and caches the machine code on disk (``cache=True``),
so only the first run of a fresh install pays for it: about 10-30 s on a small machine for the
kernels of one refresh. :func:`warm_fit_kernels` pays it early, on a small planted problem, with
the settings of the real fit, so that the kernels it compiles are the ones (same types) that the
real fit then loads from the cache. ``anchorstream demo`` runs it in a separate process while
the broker starts and the first documents are ingested (``python -m anchorstream.model.warmup
'<model kwargs as JSON>'``), which on two cores takes the compilation off the first snapshot's
path.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from anchorstream.model.pipeline import AnchorModel
from anchorstream.stats.cooccurrence import Cooccurrence
from anchorstream.synthetic import planted_model, population_cooccurrence

__all__ = ["warm_fit_kernels"]


def warm_fit_kernels(model_kwargs: Mapping[str, Any], *, n_words: int = 1000,
                     num_docs: int = 5000, density: float = 0.03) -> float:
    """Fit planted co-occurrences three times as a stream's refreshes would; return seconds.

    A cold fit, a warm one on the same data (the first-order rectification update) and a warm
    one on changed data (a cold rectification started from the last eigenvectors), each with
    buffers laid out as the daemon's refresher lays them out (float32 workspace and state, a
    size with more than one block of rows, a sparse co-occurrence), so that the kernels compile
    with the argument types (dtypes and memory layouts) that the daemon's refreshes then find
    in numba's cache.

    Parameters
    ----------
    model_kwargs : mapping
        :class:`~anchorstream.model.pipeline.AnchorModel` arguments, ``n_topics`` included.
    n_words : int
        Size of the planted vocabulary (at least ``4 n_topics``; 1000 words make two blocks of
        rows in rectification's fused passes, whose views then have the layouts of a real one).
    num_docs : int
        Scale of the counts (every word is frequent enough to be an anchor).
    density : float
        Share of nonzero co-occurrences (text is sparse; the sparse eigensolver path needs it).

    Returns
    -------
    float
        Seconds the fits took (mostly compilation when the cache was cold).
    """
    start = time.perf_counter()
    kw = dict(model_kwargs)
    k = int(kw["n_topics"])
    n_words = max(int(n_words), 4 * k)
    words = [f"w{i}" for i in range(n_words)]
    model = None
    for seed in (0, 0, 1):
        planted = planted_model(n_words, k, random_state=seed)
        counts = population_cooccurrence(planted.topic_word, planted.topic_topic)
        # Keep the largest entries: a sparse, text-like matrix.
        counts = np.where(counts >= np.quantile(counts, 1.0 - density), counts, 0.0)
        counts *= num_docs / counts.sum()
        unigram = counts.sum(axis=1) * 2.0
        cooc = Cooccurrence(counts, unigram, np.full(n_words, num_docs / 2.0), num_docs,
                            int(unigram.sum()))
        fresh = AnchorModel(**kw)
        s = fresh.settings
        f32 = s.rectify and np.dtype(s.rectify_dtype) == np.float32
        # Flat buffers with headroom, as the refresher keeps them.
        size = int(n_words * n_words * 1.1) + 1
        workspace = np.empty(size, np.float32) if f32 else None
        data_out = np.empty(size, np.float32) if s.rectify else None
        init = None if model is None else model.remapped(words, words)
        fresh.fit(cooc, init=init, overwrite_cooc=True, rectify_workspace=workspace,
                  rectify_data_out=data_out)
        model = fresh
    return time.perf_counter() - start


if __name__ == "__main__":  # pragma: no cover - run by `anchorstream demo` in a subprocess
    seconds = warm_fit_kernels(json.loads(sys.argv[1]))
    print(f"{seconds:.1f}", flush=True)
