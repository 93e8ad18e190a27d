"""The partitioned layout: one store per Kafka partition under a root, summed when read.

Scaled out, each Kafka partition's counts live in a store of their own,
``<root>/partitions/<topic>/<partition>`` (:func:`partition_url`), written by whichever ingest
instance the consumer group gives the partition to, with that partition's offset in the same
commit. A partition's state is a function of its own record sequence only (its own streaming
vocabulary, its own checkpoints), so the instances never coordinate: the stores share nothing
but the root. Why one repository per partition, and the fence between an old and a new owner,
are in ``docs/store.md`` ("Partitioned layout").

Reading (:func:`read_partitions`) pins the branch head of every partition store
(:func:`pin_partitions`), then sums the pinned versions over the union of their vocabularies,
aligned by word: the co-occurrence estimator is a sum over documents, so the sum equals the
counts of one store fed every partition's documents whenever each partition's vocabulary
holds every word it saw (``admit_threshold`` 1, capacity not reached); with a binding
vocabulary rule the rule applies per partition. At most ``max_words`` words are kept (by
summed document frequency, then by word), chosen from the vocabularies alone before any
matrix is read, and the matrices are read one partition at a time, so the memory is the
union's matrix plus one partition's. With ``sparse`` (the low-rank refresh's read) each
partition is read shard by shard and the upper triangles are summed as CSR, remapped into the
union's positions: no ``V × V`` array at all.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import scipy.sparse as sp
import zarr

from anchorstream.errors import InputError
from anchorstream.stats.accumulator import Forgetting
from anchorstream.stats.cooccurrence import Cooccurrence
from anchorstream.stats.sparse import SparseCooccurrence, csr_add, upper_csr
from anchorstream.store.format import BRANCH, META, StoreState, check_format
from anchorstream.store.reading import read_version
from anchorstream.store.repository import open_repo, pass_through, repo_exists, storage, wrap
from anchorstream.store.sparseread import read_version_sparse
from anchorstream.zarrio import get, get_words

__all__ = ["PARTITIONS_DIR", "PartitionSum", "PartitionedState", "add_by_rows", "check_summable",
           "committed_docs", "common_time", "keep_words", "partition_key", "partition_url", "pin_partitions",
           "partition_entries", "partition_entry", "read_partitions", "read_vocabulary",
           "remap_upper", "stored_pairs"]

#: Directory (prefix) under the root holding one store per partition.
PARTITIONS_DIR = "partitions"


def partition_url(root, topic: str, partition: int) -> str:
    """The store of ``topic``'s partition ``partition`` under ``root`` (a path or URL).

    >>> partition_url("s3://bucket/anchorstream/", "news", 3)
    's3://bucket/anchorstream/partitions/news/3'
    """
    if not topic or "/" in topic or topic in (".", ".."):
        raise InputError(f"topic {topic!r} cannot name a directory of the partitioned store")
    return f"{os.fspath(root).rstrip('/')}/{PARTITIONS_DIR}/{topic}/{int(partition)}"


def stored_pairs(st) -> int | None:
    """The word pairs a sparse read ``st`` holds: its counts' stored entries (upper triangle)
    and its waiting documents'; None for a dense read."""
    c = st.cooccurrence
    if not hasattr(c, "upper"):
        return None
    waiting = getattr(st, "waiting", None)
    return int(c.upper.nnz) + (0 if waiting is None else int(waiting.upper.nnz))


def partition_entries(partitions: Iterable[tuple[str, int]], sparse: bool) -> dict:
    """:attr:`PartitionedState.partitions` before any read: every partition without a store
    (fill in each read one with :func:`partition_entry`)."""
    return {partition_key(t, p): {"version": None, "offset": None, "n_docs_added": 0,
                                  "n_words": 0, "n_pairs": 0 if sparse else None}
            for t, p in partitions}


def partition_entry(st, key: str) -> dict:
    """The entry of :attr:`PartitionedState.partitions` of partition ``key``'s read ``st``."""
    return {"version": st.version, "offset": st.offsets.get(key),
            "n_docs_added": st.n_docs_added, "n_words": len(st.words),
            "n_pairs": stored_pairs(st)}


def partition_key(topic: str, partition: int) -> str:
    """``kafka:<topic>:<partition>``: the partition's offsets key (as the ingest loop's)."""
    return f"kafka:{topic}:{int(partition)}"


@dataclass(frozen=True)
class PartitionedState:
    """The sum of pinned versions of every partition store (like
    :class:`anchorstream.store.CommittedState`, which the refresher also reads).

    Attributes
    ----------
    cooccurrence : Cooccurrence
        Over ``words``, summed over the partitions.
    words : list of str
        The union vocabulary kept (each word once).
    slots : None
        Partitions have slots of their own; there is no common slot.
    offsets : dict
        Every partition's committed offsets (``kafka:<topic>:<p>``) and ``kafka:topic_ids``.
    version : str
        ``"p"`` + a digest of every partition's pinned version: the same versions give the
        same id, any new commit a new one.
    clock : float
        The latest partition clock.
    n_docs_added : int
        Documents ever added, summed over the partitions.
    partitions : dict
        ``{key: {"version", "offset", "n_docs_added", "n_words", "n_pairs"}}`` per partition
        (``version`` None for a partition that has no store yet; ``n_pairs``: the stored word
        pairs of a sparse read, :func:`stored_pairs`, None for a dense read).
    admission : None
        Not combined over the partitions yet: the sum is read uncorrected (see
        :mod:`anchorstream.stats.admission`, which takes several sources, and docs/store.md).
    waiting : SparseCooccurrence or None
        The documents the partitions' delay lines hold back, each partition's counted over
        its own words (as its :class:`~anchorstream.store.CommittedState`'s) and summed over
        ``words`` like the counts; ``cooccurrence`` leaves them out
        (:mod:`anchorstream.store.delay`).
    """

    cooccurrence: Any
    words: list
    slots: None
    offsets: dict
    version: str
    clock: float
    n_docs_added: int
    dense: None = None
    partitions: dict = field(default_factory=dict)
    admission: None = None
    waiting: Any = None


def _head(root, topic: str, p: int, storage_options) -> tuple[Any, str, Any] | None:
    """``(repo, head version, root attributes)`` of a partition's store, or None when it has
    none yet (or its creation, on an object store, has not committed its layout yet)."""
    url = partition_url(root, topic, p)
    store, _ = storage(url, storage_options)
    if not repo_exists(store, url):
        return None
    repo, _ = open_repo(url, storage_options)
    try:
        version = repo.lookup_branch(BRANCH)
        session = repo.readonly_session(snapshot_id=version)
        try:
            attrs = dict(zarr.open_group(session.store, mode="r").attrs)
        except FileNotFoundError:  # zarr's GroupNotFoundError: not initialized yet
            return None
    except BaseException as exc:
        pass_through(exc)
        raise wrap(exc, f"cannot read the head of {url!r}") from exc
    if META not in attrs:
        return None
    return repo, version, attrs


def pin_partitions(root, partitions: Iterable[tuple[str, int]], *,
                   storage_options: Mapping[str, Any] | None = None) -> dict[str, str | None]:
    """The branch head of each partition's store, ``{key: version}`` (None: no store yet)."""
    out: dict[str, str | None] = {}
    for topic, p in sorted(set(partitions)):
        head = _head(root, topic, p, storage_options)
        out[partition_key(topic, p)] = None if head is None else head[1]
    return out


def committed_docs(root, partitions: Iterable[tuple[str, int]], *,
                   storage_options: Mapping[str, Any] | None = None) -> int:
    """Documents committed to every partition's store, summed (cheap: no array is read)."""
    total = 0
    for topic, p in sorted(set(partitions)):
        head = _head(root, topic, p, storage_options)
        if head is not None:
            total += int(StoreState.from_json(head[2]["state"]).n_docs_added)
    return total


def read_vocabulary(repo, url: str, version: str
                    ) -> tuple[dict, list[str], np.ndarray, float]:
    """``(config, active words, their document frequencies, clock)`` of one version, no
    matrix; with decay the frequencies are those at the version's clock."""
    try:
        session = repo.readonly_session(snapshot_id=version)
        root = zarr.open_group(session.store, mode="r")
        meta = check_format(root.attrs, url)
        state = StoreState.from_json(root.attrs["state"])
        forgetting = Forgetting.from_dict(meta["config"]["forgetting"])
        R = forgetting.ring
        words_all = get_words(root["vocab"], "slot_words")
        live = np.asarray([w >= 0 and state.live(w, R) for w in state.vec_window])
        doc_freq = get(root, "doc_freq")[live].sum(axis=0)
    except BaseException as exc:
        pass_through(exc)
        raise wrap(exc, f"cannot read the vocabulary of {url!r}") from exc
    active = [s for s, w in enumerate(words_all) if w]
    factor = forgetting.readout(state.clock, state.t_ref)
    return (meta["config"], [words_all[s] for s in active], doc_freq[active] * factor,
            float(state.clock))


def keep_words(vocabularies: list[tuple[list[str], np.ndarray]], max_words: int | None
                ) -> dict[str, int]:
    """``{word: row}`` of the union: every word, or the ``max_words`` of largest summed
    document frequency (ties by word), in first-seen order."""
    df: dict[str, float] = {}
    for words, freq in vocabularies:
        for w, f in zip(words, freq.tolist()):
            df[w] = df.get(w, 0.0) + f
    order = list(df)
    if max_words is not None and len(order) > max_words:
        kept = set(sorted(order, key=lambda w: (-df[w], w))[:max_words])
        order = [w for w in order if w in kept]
    return {w: i for i, w in enumerate(order)}


#: Rows gathered at a time when a partition's matrix is added in the union's order.
BLOCK_ROWS = 256


def add_by_rows(out: np.ndarray, part: np.ndarray, rows: np.ndarray, *,
                subtract: bool = False, scale: float = 1.0) -> None:
    """``out[rows[i], rows[j]] += scale * part[i, j]`` for every ``i, j`` with ``rows >= 0``
    (``-=`` with ``subtract``).

    ``rows`` are distinct. A partition's matrix is gathered into the union's order a block of
    rows at a time (scattering with ``np.ix_`` on both axes was 5× slower than the read at
    V = 5000); when its words fill the union's first rows, as they usually do, the block is
    added into a plain slice.
    """
    have = np.flatnonzero(rows >= 0)
    if have.size == 0:
        return
    order = np.argsort(rows[have], kind="stable")
    have, dst = have[order], rows[have][order]
    k = dst.size
    prefix = bool(dst[-1] == k - 1)  # sorted and distinct: dst == arange(k)
    add = np.subtract if subtract else np.add
    if prefix and np.array_equal(have, np.arange(k)):
        add(out[:k, :k], part[:k, :k] if scale == 1.0 else scale * part[:k, :k],
            out=out[:k, :k])
        return
    for b in range(0, k, BLOCK_ROWS):
        src_rows = have[b:b + BLOCK_ROWS]
        block = part[src_rows][:, have]
        if scale != 1.0:
            block *= scale
        if prefix:
            target = out[b:b + src_rows.size, :k]
            add(target, block, out=target)
        else:
            at = np.ix_(dst[b:b + BLOCK_ROWS], dst)
            out[at] = add(out[at], block)


def check_summable(url: str, config: dict, seen: dict) -> None:
    """Partition states add only with one document weighting and one forgetting, and only
    forgetting whose time is the same in every partition: decay with a half-life in seconds
    (the documents' timestamps), no windows, no half-life in documents (each partition's
    document count is its own clock). ``seen`` collects ``length_cap`` and ``forgetting``."""
    forgetting = Forgetting.from_dict(config["forgetting"])
    if forgetting.ring > 1 or (forgetting.decays and forgetting.unit != "seconds"):
        raise InputError(
            f"{url!r} forgets by windows or by a half-life in documents: partition stores "
            "are summed with no forgetting or a decay in seconds only (each partition's "
            "document count is its own clock)")
    for name, value in (("length_cap", config.get("length_cap")),
                        ("forgetting", json.dumps(forgetting.to_dict(), sort_keys=True))):
        seen.setdefault(name, set()).add(value)
        if len(seen[name]) > 1:
            raise InputError(f"cannot sum partition stores whose documents are weighted "
                             f"differently ({name} {sorted(seen[name], key=str)})")


def common_time(configs_clocks) -> tuple[float, list[float]]:
    """``(T, factors)``: the latest clock of the partitions and, for each ``(config, clock)``,
    the decay factor bringing its values from its clock to ``T`` (1.0 without decay): with a
    half-life in seconds the partitions' sums are the same documents' weights at ``T`` as one
    store's."""
    pairs = list(configs_clocks)
    T = max((c for _, c in pairs), default=0.0)
    return T, [Forgetting.from_dict(cfg["forgetting"]).readout(T, c) for cfg, c in pairs]


def remap_upper(upper, rows: np.ndarray, n: int):
    """A partition's upper triangle (CSR over its own positions) moved into the union's
    positions ``rows`` (``-1``: a word not kept), ``n × n``: only its entries are touched."""
    coo = upper.tocoo()
    return upper_csr(coo.row, coo.col, coo.data, n, positions=rows)


class PartitionSum:
    """What the partitions add up to, one partition's read at a time: dense counts
    (``V × V``) or, ``sparse``, their upper triangle as CSR (``O(nnz)``). Given ``counts``
    (summed elsewhere: :class:`anchorstream.store.partread.PartitionReader`), only the
    vectors, totals and offsets are summed (``add(..., counts=False)``)."""

    def __init__(self, V: int, sparse: bool, counts=None):
        self.V, self.sparse = V, sparse
        if counts is None:
            counts = sp.csr_matrix((V, V)) if sparse else np.zeros((V, V))
        self.counts = counts
        self.decays = False  # decayed sums are not whole numbers
        self.unigram, self.doc_freq = np.zeros(V), np.zeros(V)
        self.num_docs = self.num_tokens = 0
        self.offsets: dict = {}
        self.topic_ids: dict = {}
        self.clock = 0.0
        self.n_docs = 0
        #: The sum of the partitions' waiting documents (sparse), once one has some.
        self.waiting: PartitionSum | None = None

    def add(self, st, index: dict[str, int], *, counts: bool = True,
            factor: float = 1.0) -> None:
        """Add one partition's read ``st`` over the words ``index``, its values times
        ``factor`` (decay to the common time, :func:`common_time`)."""
        rows = np.asarray([index.get(w, -1) for w in st.words], dtype=np.int64)
        keep = np.flatnonzero(rows >= 0)
        r = rows[keep]
        c = st.cooccurrence
        if counts and self.sparse:
            upper = c.upper if factor == 1.0 else c.upper * factor
            self.counts = csr_add(self.counts, remap_upper(upper, rows, self.V))
        elif counts:
            add_by_rows(self.counts, c.counts, rows, scale=factor)
        self.unigram[r] += factor * c.unigram[keep]
        self.doc_freq[r] += factor * c.doc_freq[keep]
        self.decays = self.decays or factor != 1.0 or isinstance(c.num_docs, float)
        self.num_docs += factor * c.num_docs
        self.num_tokens += factor * c.num_tokens
        offsets = dict(st.offsets)
        self.topic_ids.update(offsets.pop("kafka:topic_ids", None) or {})
        self.offsets.update(offsets)
        self.clock = max(self.clock, st.clock)
        self.n_docs += st.n_docs_added
        if getattr(st, "waiting", None) is not None:
            if self.waiting is None:
                self.waiting = PartitionSum(self.V, True)
            self.waiting.add(replace(st, cooccurrence=st.waiting, offsets={}, n_docs_added=0,
                                     waiting=None), index, factor=factor)

    def state(self, index: dict[str, int], pins: Mapping[str, str | None], info: dict,
              cap) -> PartitionedState:
        """The :class:`PartitionedState` of this sum over the words ``index`` of the pinned
        versions ``pins`` (``info``: each partition's entry)."""
        offsets = dict(self.offsets)
        if self.topic_ids:
            offsets["kafka:topic_ids"] = self.topic_ids
        digest = hashlib.sha256(
            json.dumps(sorted(pins.items()), default=str).encode()).hexdigest()
        waiting = None if self.waiting is None else self.waiting.cooccurrence(cap)
        return PartitionedState(self.cooccurrence(cap), list(index), None, offsets,
                                "p" + digest[:24], self.clock, self.n_docs, None, info,
                                waiting=waiting)

    def cooccurrence(self, cap):
        kind = SparseCooccurrence if self.sparse else Cooccurrence
        out = kind(self.counts, self.unigram, self.doc_freq, int(self.num_docs),
                   int(round(self.num_tokens)), cap)
        if self.decays:  # decayed sums are not whole numbers (the constructor wants ints)
            out.num_docs, out.num_tokens = float(self.num_docs), float(self.num_tokens)
        return out


def read_partitions(root, partitions: Iterable[tuple[str, int]], *,
                    versions: Mapping[str, str | None] | None = None,
                    max_words: int | None = None,
                    storage_options: Mapping[str, Any] | None = None,
                    sparse: bool = False) -> PartitionedState:
    """Sum pinned versions of every partition's store over the union of their words.

    Parameters
    ----------
    root : str or path-like
        The partitioned store's root (path or URL).
    partitions : iterable of (topic, partition)
        The partitions to sum (those without a store yet count as empty).
    versions : mapping, optional
        ``{key: version}`` from :func:`pin_partitions`; default: pin the heads now.
    max_words : int, optional
        Keep at most this many words (largest summed document frequency, ties by word).
    storage_options : mapping, optional
        As for :func:`anchorstream.store.open_committed`.
    sparse : bool, default False
        Read each partition shard by shard
        (:func:`~anchorstream.store.sparseread.read_version_sparse`) and sum their upper
        triangles as CSR: the ``cooccurrence`` is a
        :class:`~anchorstream.stats.sparse.SparseCooccurrence` and no ``V × V`` array is
        formed (memory ``O(nnz)`` of the union plus one partition's). What the low-rank
        refresh reads; the same sums as the dense read.

    Raises
    ------
    InputError
        For a store that forgets, or stores weighting documents differently.
    StoreError
        If a store cannot be read.
    """
    partitions = sorted(set(partitions))
    pins = dict(versions) if versions is not None else pin_partitions(
        root, partitions, storage_options=storage_options)
    found = []
    seen: dict = {}
    for topic, p in partitions:
        key, url = partition_key(topic, p), partition_url(root, topic, p)
        if pins.get(key) is None:
            continue
        repo, _ = open_repo(url, storage_options)
        config, words, freq, clock = read_vocabulary(repo, url, pins[key])
        check_summable(url, config, seen)
        found.append((key, url, repo, config, clock, words, freq))
    _, factors = common_time((config, clock) for _, _, _, config, clock, _, _ in found)
    index = keep_words([(w, f * g) for (*_, w, f), g in zip(found, factors)], max_words)
    total = PartitionSum(len(index), sparse)
    info = partition_entries(partitions, sparse)
    read = read_version_sparse if sparse else read_version
    for (key, url, repo, *_), factor in zip(found, factors):
        st = read(repo, url, pins[key])
        total.add(st, index, factor=factor)
        info[key] = partition_entry(st, key)
        del st  # one partition's matrix at a time
    return total.state(index, pins, info, seen.get("length_cap", {2}).pop())
