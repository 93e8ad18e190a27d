"""Every numba kernel of anchorstream, in one private place.

One module per stage keeps each file small: ``cooc`` (co-occurrence estimator), ``store``
(streaming accumulation), ``recover`` (per-word simplex solvers), ``admm`` (the ADMM recovery),
``rectify`` (the fused projection pass), ``pairs`` (the pair-likelihood refinement), ``align``
(the overlap of every pair of topics), ``sketch`` (random projections of the documents, their
directions drawn in place), ``tiles`` (where each row of a CSR crosses into each tile of
columns), ``csr`` (sums and moves of CSR matrices at their exact size), ``words`` (packed
UTF-8 words looked up by their bytes), ``rank`` (each topic's top words by two keys),
``sorting`` (sorts as plain loops, which compile in a fraction of NumPy's sorts). Kernels
take arrays and scalars only (sparse matrices as ``indptr, indices, data``); the public
wrappers in the stage modules check dtype, shape and contiguity. Each kernel has a slow twin in ``tests/naive_<stage>.py`` and a test in
``tests/test_kernels_<stage>.py`` that also runs with ``NUMBA_DISABLE_JIT=1``.
"""
