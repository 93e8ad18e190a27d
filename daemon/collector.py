"""Python's garbage collector, set for a process this project owns: the daemon's, or a batch
command's (``anchorstream fit``).

CPython's cyclic collector runs a young collection every 700 net allocations of container
objects (lists, dicts, tuples, ...) and, now and then, a full one that walks every object the
process tracks. Both processes here hold many objects for their whole life (their imports and
numba's loaded kernels: ~95,000 after the imports alone, ~180,000 in a running refresher) and
allocate many more that die young (a document's tokens, a snapshot's JSON), so the default
thresholds spend their time re-walking what never becomes garbage:

* the daemon (``anchorstream run``, the demo) freezes what it holds once assembled and again
  once its first snapshot is out (:func:`freeze_long_lived`): a full collection of
  ``bench_daemon.py``'s refresh process 0.24 s → 4 ms;
* a fit (the ``anchorstream`` command's batch, :func:`daemon.cli.entry`) freezes what its
  imports made and collects its young objects every :data:`BATCH_THRESHOLD` allocations
  (:func:`for_batch`): the collector's CPU in a fit of the State of the Union paragraphs
  0.37 → 0.08 s of ~3.4, of the npm summaries 0.26 → 0.14 s of ~22 (benchmarks/README.md,
  session 84).

Frozen objects are still freed when their last reference goes; only a cycle among them that
later becomes garbage is never collected, which is why only processes the project owns do
this and the library never does.
"""

from __future__ import annotations

import gc

__all__ = ["BATCH_THRESHOLD", "for_batch", "freeze_long_lived"]

#: Net allocations of container objects between a batch command's young collections (CPython's
#: default is 700).
BATCH_THRESHOLD = 20_000


def freeze_long_lived() -> int:
    """Collect the cyclic garbage, then move every object the collector tracks into its
    permanent generation (:func:`gc.freeze`); returns how many are frozen.

    Each full collection walked everything a running daemon holds, every dozen or so
    refreshes, inside whichever refresh or batch triggered it: in ``bench_daemon.py``'s
    refresh process ~180,000 objects, 0.10 s a full collection (240,000 and 0.23 s with the
    benchmark's own corpus held); frozen, a full collection walks only what came since (4 ms
    there, and the collector's share of a warm round 19 -> 5 ms).
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def for_batch() -> None:
    """Set the collector for one batch command's work, after its imports: what they made is
    frozen (no collection first: a batch ends soon, and a collection of the imports took
    0.04 s), and young collections come every :data:`BATCH_THRESHOLD` net allocations."""
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(BATCH_THRESHOLD, older, oldest)
