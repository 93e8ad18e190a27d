"""The part of a read of one store version that is not its counts.

A store version holds its vocabulary, its vectors (unigram counts, document frequencies, the
document and token totals, each a ring of windows that forgetting ages), the delay line's
waiting documents and when each word was admitted, beside its counts. The dense read
(:func:`~anchorstream.store.reading.read_version`) and the sparse one
(:func:`~anchorstream.store.sparseread.read_version_sparse`) read the counts their own way
and everything else here, the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import icechunk
import numpy as np
import zarr

from anchorstream.stats.accumulator import Forgetting
from anchorstream.store.delay import waiting_arrays, waiting_of_arrays
from anchorstream.store.format import BRANCH, StoreState, check_format, read_admission
from anchorstream.store.settings import length_cap
from anchorstream.zarrio import decode_words, get_all

__all__ = ["VersionHead", "read_head"]


@dataclass(frozen=True)
class VersionHead:
    """What a read of one version takes besides its counts:
    :func:`~anchorstream.store.reading.read_version` (dense) and
    :func:`~anchorstream.store.sparseread.read_version_sparse` (sparse) alike.

    ``unigram`` and ``doc_freq`` are over the active slots, and they, ``num_docs`` and
    ``num_tokens`` are true (decayed) values: floats with decay, whole numbers without.
    ``words`` are the active slots' words; ``admission`` and ``waiting`` as in
    :class:`~anchorstream.store.reading.CommittedState`.
    """

    root: Any
    snapshot_id: str
    meta: dict
    state: StoreState
    offsets: dict
    forgetting: Forgetting
    reset_seq: np.ndarray
    active: np.ndarray
    words: list
    unigram: np.ndarray
    doc_freq: np.ndarray
    num_docs: float
    num_tokens: float
    admission: Any
    waiting: Any


def read_head(repo: icechunk.Repository, where: str, version: str | None) -> VersionHead:
    """The :class:`VersionHead` of version ``version`` (the branch head for None) of the store
    in ``repo`` (``where`` names it in errors); raises what zarr and Icechunk raise (the
    callers wrap it with :func:`~anchorstream.store.repository.storage_errors`)."""
    session = (repo.readonly_session(branch=BRANCH) if version is None
               else repo.readonly_session(snapshot_id=version))
    root = zarr.open_group(session.store, mode="r")
    meta = check_format(root.attrs, where)
    state = StoreState.from_json(root.attrs["state"])
    # Six small arrays and the delay line's in one trip (get_all): each array costs the trip
    # ~1.5 ms whatever its size, and two trips ~2.5 ms more than one (planted store, V = 5000).
    names = ["vocab/slot_words_utf8", "vocab/slot_words_offsets", "reset_seq", "unigram",
             "doc_freq", "totals"]
    line = waiting_arrays(meta["config"])
    try:
        arrays = get_all(root, names + (line or []))
    except KeyError:
        if line is None:
            raise
        line, arrays = None, get_all(root, names)  # no line committed yet
    utf8, word_offsets, reset_seq, *vectors = arrays[:len(names)]
    words_all = decode_words(utf8, word_offsets)
    active = np.asarray([s for s, w in enumerate(words_all) if w], dtype=np.int64)
    forgetting = Forgetting.from_dict(meta["config"]["forgetting"])
    R = forgetting.ring
    live = np.asarray([w >= 0 and state.live(w, R) for w in state.vec_window])
    unigram, doc_freq, totals = (v[live].sum(axis=0) for v in vectors)
    unigram, doc_freq = unigram[active], doc_freq[active]
    # Vectors are stored in the units of t_ref; the counts are converted as they are read.
    factor = forgetting.readout(state.clock, state.t_ref)
    if factor != 1.0:
        unigram, doc_freq, totals = unigram * factor, doc_freq * factor, totals * factor
    num_docs, num_tokens = float(totals[0]), float(totals[1])
    if not forgetting.decays:
        num_docs, num_tokens = int(totals[0]), int(round(totals[1]))
    words = [words_all[s] for s in active]
    waiting = None if line is None else waiting_of_arrays(
        arrays[len(names):], meta["config"], words=words, clock=state.clock,
        length_cap=length_cap(meta["config"]))
    return VersionHead(root, session.snapshot_id, meta, state, dict(root.attrs["offsets"]),
                       forgetting, reset_seq, active, words, unigram, doc_freq, num_docs,
                       num_tokens, read_admission(root, meta, state, active), waiting)
