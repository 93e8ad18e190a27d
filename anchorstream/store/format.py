"""The store's layout: format version, attribute names and the typed writer state.

The state is committed as the root attribute ``state`` (JSON); :class:`StoreState` reads and
writes exactly the JSON the store has always written, so older stores open unchanged. See
``docs/store.md`` for the layout and why it is so.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import zarr

from anchorstream.errors import StoreConflictError, StoreFormatError
from anchorstream.stats.accumulator import Forgetting
from anchorstream.stats.admission import Admission
from anchorstream.stats.documents import DocStatsSettings, DocumentStatistics
from anchorstream.stats.windows import is_live
from anchorstream.store.delay import count_delay
from anchorstream.text.vocabulary import StreamingVocabulary
from anchorstream.zarrio import get, get_words, put_many, words_items, zstd

__all__ = [
    "BRANCH",
    "FORMAT_VERSION",
    "META",
    "READABLE_FORMATS",
    "FoldProgress",
    "Segment",
    "StoreState",
    "check_format",
    "holds_store",
    "initialize",
    "load_arrays",
    "read_admission",
    "vocab_items",
]

FORMAT_VERSION = 2
# Version 2 added the state's "folding" (a compaction in steps, see Compacting._fold_step). A
# version 1 store reads the same (it has no fold in progress); it is marked version 2 by its
# first folding step, so an older anchorstream refuses it instead of adding folded entries twice.
READABLE_FORMATS = (1, 2)
#: The one Icechunk branch the store commits to.
BRANCH = "main"
#: Root attribute holding the format version and the settings.
META = "anchorstream_store"
#: The vocabulary settings recorded in the store's config, as StreamingVocabulary keywords.
VOCAB_SETTINGS = ("admit_threshold", "sketch_size", "max_df", "max_df_min_docs",
                  "maintain_every", "stopwords", "pin_seed")


@dataclass(frozen=True)
class Segment:
    """One committed delta segment (``segments/<name>``): upper-triangle entries of one
    checkpoint and window, in the units of ``t_ref``."""

    name: str
    seq: int
    window: int
    nnz: int
    t_ref: float

    def to_json(self) -> dict:
        return {"name": self.name, "seq": self.seq, "window": self.window, "nnz": self.nnz,
                "t_ref": self.t_ref}

    @classmethod
    def from_json(cls, d: Mapping) -> Segment:
        return cls(d["name"], d["seq"], d["window"], d["nnz"], d["t_ref"])


@dataclass(frozen=True)
class FoldProgress:
    """A compaction in steps (state ``folding``): the segments of its generation, the
    generation's last checkpoint and how many upper shard pairs it has folded."""

    segments: tuple
    seq: int
    done: int

    def to_json(self) -> dict:
        return {"segments": list(self.segments), "seq": self.seq, "done": self.done}

    @classmethod
    def from_json(cls, d: Mapping) -> FoldProgress:
        return cls(tuple(d["segments"]), d["seq"], d["done"])


@dataclass(frozen=True)
class StoreState:
    """The writer's position, committed as the root attribute ``state``.

    ``seq`` is the next checkpoint's sequence number; ``base_*`` describe the dense base
    (the last compaction's checkpoint, reference time and the window of each ring slot);
    ``vec_window`` the window of each ring slot of the vectors. ``folding`` is a compaction in
    steps in progress; ``records_folding`` whether the JSON has the key at all (stores that
    never folded in steps do not, and keep not having it).
    """

    seq: int
    base_seq: int
    clock: float
    t_ref: float
    base_t_ref: float
    n_docs_added: int
    current_window: int
    base_window: tuple
    vec_window: tuple
    segments: tuple = ()
    folding: FoldProgress | None = None
    records_folding: bool = False

    @classmethod
    def initial(cls, ring: int) -> StoreState:
        """The state of a new store with ``ring`` windows."""
        windows = (0,) + (-1,) * (ring - 1)
        return cls(seq=1, base_seq=0, clock=0.0, t_ref=0.0, base_t_ref=0.0, n_docs_added=0,
                   current_window=0, base_window=windows, vec_window=windows)

    def to_json(self) -> dict:
        out = {
            "seq": self.seq,
            "base_seq": self.base_seq,
            "clock": self.clock,
            "t_ref": self.t_ref,
            "base_t_ref": self.base_t_ref,
            "n_docs_added": self.n_docs_added,
            "current_window": self.current_window,
            "base_window": list(self.base_window),
            "vec_window": list(self.vec_window),
            "segments": [s.to_json() for s in self.segments],
        }
        if self.records_folding:
            out["folding"] = None if self.folding is None else self.folding.to_json()
        return out

    @classmethod
    def from_json(cls, d: Mapping) -> StoreState:
        folding = d.get("folding")
        return cls(
            seq=d["seq"], base_seq=d["base_seq"], clock=d["clock"], t_ref=d["t_ref"],
            base_t_ref=d["base_t_ref"], n_docs_added=d["n_docs_added"],
            current_window=d["current_window"], base_window=tuple(d["base_window"]),
            vec_window=tuple(d["vec_window"]),
            segments=tuple(Segment.from_json(s) for s in d["segments"]),
            folding=FoldProgress.from_json(folding) if folding else None,
            records_folding="folding" in d,
        )

    def replace(self, **changes) -> StoreState:
        """A copy with ``changes``; setting ``folding`` records the key from then on."""
        if "folding" in changes:
            changes["records_folding"] = True
        return dataclasses.replace(self, **changes)

    def live(self, window: int, ring: int) -> bool:
        """Whether ``window`` is kept (see :func:`anchorstream.stats.windows.is_live`)."""
        return is_live(window, self.current_window, ring)

    def live_segments(self, ring: int) -> list[Segment]:
        return [s for s in self.segments if self.live(s.window, ring)]


def check_format(attrs: Mapping, where: str) -> dict:
    """The store metadata of a root group's attributes; refuses other formats."""
    meta = attrs.get(META)
    if meta is None:
        raise StoreFormatError(
            f"{where} is an Icechunk repository but not an anchorstream store (no {META!r} "
            "attributes); if its creation was interrupted, create it again"
        )
    version = meta.get("format_version")
    if version not in READABLE_FORMATS:
        raise StoreFormatError(
            f"{where} was written with store format version {version!r}; this anchorstream "
            f"reads format versions {', '.join(map(str, READABLE_FORMATS))}. Use a matching "
            "anchorstream version or rebuild the store (e.g. `anchorstream ingest` from the "
            "sources)."
        )
    return meta


def vocab_items(g: zarr.Group, vs: dict) -> list:
    """Arrays of the vocabulary state for :func:`~anchorstream.zarrio.put_many`; sets the
    scalar attributes."""
    items = words_items(g, "slot_words", vs["slot_words"])
    items += words_items(g, "sketch_words", vs["sketch_words"])
    items += words_items(g, "blocked_words", vs["blocked_words"])
    items += [
        (g, "slot_df", np.asarray(vs["slot_df"], dtype=np.float64)),
        (g, "slot_admitted", np.asarray(vs["slot_admitted"], dtype=np.float64)),
        (g, "pinned", np.asarray(vs["pinned"], dtype=bool)),
        (g, "sketch_counts", np.asarray(vs["sketch_counts"], dtype=np.float64)),
        (g, "sketch_errors", np.asarray(vs["sketch_errors"], dtype=np.float64)),
        (g, "blocked_df", np.asarray(vs["blocked_df"], dtype=np.float64)),
    ]
    g.attrs["scalars"] = {
        "floor": float(vs["floor"]),
        "total_weight": float(vs["total_weight"]),
        "n_docs_seen": int(vs["n_docs_seen"]),
    }
    return items


def read_admission(root: zarr.Group, meta: Mapping, state: StoreState,
                   active: np.ndarray) -> Admission | None:
    """When each active slot's counting began and what it had missed by then
    (:class:`~anchorstream.stats.admission.Admission`, in true units), or None where it is not
    known: a store written before admissions were recorded, one with tumbling windows
    (expired windows took documents of every word alike; admissions are not kept per window),
    or one with a delay line (the documents waiting when a word was admitted counted it,
    though the recorded misses include them)."""
    forgetting = Forgetting.from_dict(meta["config"]["forgetting"])
    # The settings first: two trips to Zarr's event loop (3 ms of a warm read) only where
    # they allow an answer.
    if forgetting.window is not None or count_delay(meta["config"]) > 0:
        return None
    vg = root["vocab"]
    if "slot_admitted" not in vg:
        return None
    admitted = get(vg, "slot_admitted")[np.asarray(active, dtype=np.int64)]
    return Admission(admitted[:, 0], admitted[:, 1] * forgetting.readout(state.clock,
                                                                          state.t_ref))


#: The array of a store's duplicate filter (its ring of document keys), and its chunk length.
DUPLICATES = "duplicates"
_DUPLICATES_CHUNK = 1 << 16


def create_duplicates(root: zarr.Group, memory: int) -> None:
    """The empty ring of a new store's duplicate filter (no chunk is written until a
    checkpoint fills one); none where the store counts every copy."""
    if memory > 0:
        root.create_array(DUPLICATES, shape=(memory,), dtype="u8",
                          chunks=(min(memory, _DUPLICATES_CHUNK),), fill_value=0,
                          compressors=None)  # hashes: nothing to compress


def load_arrays(root: zarr.Group, version: str) -> dict:
    """The vectors, ``reset_seq``, vocabulary state and duplicate filter's ring (None
    where the store has none) a writer starts from."""
    vg = root["vocab"]
    return {
        "duplicates": get(root, DUPLICATES) if DUPLICATES in root else None,
        "unigram": get(root, "unigram"),
        "doc_freq": get(root, "doc_freq"),
        "totals": get(root, "totals"),
        "reset_seq": get(root, "reset_seq"),
        "version": version,
        "vocab": {
            "slot_words": get_words(vg, "slot_words"),
            "slot_df": get(vg, "slot_df"),
            # Absent in stores written before admission points were recorded (None: zeros).
            "slot_admitted": get(vg, "slot_admitted") if "slot_admitted" in vg else None,
            "pinned": get(vg, "pinned"),
            "sketch_words": get_words(vg, "sketch_words"),
            "sketch_counts": get(vg, "sketch_counts"),
            "sketch_errors": get(vg, "sketch_errors"),
            "blocked_words": get_words(vg, "blocked_words"),
            "blocked_df": get(vg, "blocked_df"),
            **vg.attrs["scalars"],
        },
    }


def holds_store(store) -> bool:
    """Whether a Zarr store (an Icechunk session's) holds an anchorstream store: a root group
    with its metadata. False for an empty repository (no root group yet)."""
    try:
        return META in zarr.open_group(store, mode="r").attrs
    except Exception:  # noqa: BLE001 - no root group, or not a group: no store
        return False


def initialize(repo, meta, vocab: StreamingVocabulary, forgetting: Forgetting,
               document_stats: DocStatsSettings | None = None) -> str:
    """Commit the empty layout of a new store (its first anchorstream commit).

    Raises
    ------
    StoreConflictError
        If the branch holds a store already: another process initialized the repository
        since the caller found it empty (two instances creating one store on an object
        store). Writing the layout again would replace that store; a commit racing that
        process's is refused by Icechunk the same way.
    """
    cfg = meta["config"]
    V, R = cfg["capacity"], forgetting.ring
    session = repo.writable_session(BRANCH)
    if holds_store(session.store):
        raise StoreConflictError("the store was initialized by another process meanwhile")
    root = zarr.open_group(session.store, mode="w")
    counts = root.create_group("counts")
    for r in range(R):
        counts.create_array(
            str(r), shape=(V, V), dtype="f8", chunks=(cfg["chunk_size"],) * 2,
            shards=(cfg["shard_size"],) * 2, compressors=zstd(), fill_value=0.0,
        )
    root.create_group("segments")
    create_duplicates(root, int(cfg.get("duplicate_memory", 0)))
    put_many(
        [
            (root, "unigram", np.zeros((R, V))),
            (root, "doc_freq", np.zeros((R, V))),
            (root, "totals", np.zeros((R, 2))),
            (root, "reset_seq", np.zeros(V, dtype=np.int64)),
        ]
        + vocab_items(root.create_group("vocab"), vocab.get_state())
    )
    if document_stats is not None and document_stats.enabled:
        # Recorded from the first commit on, so that a writer reopening the store after a
        # crash before its first checkpoint keeps them.
        DocumentStatistics(document_stats, V, forgetting).prepare(
            root, seq=0, t_ref=0.0, current_window=0, reset_seq=np.zeros(V, dtype=np.int64))
    # A new store counts as collected now (see CooccurrenceStore, gc_interval_seconds).
    maintenance = {"last_gc": _dt.datetime.now(_dt.UTC).timestamp()}
    root.attrs.update({META: meta, "state": StoreState.initial(R).to_json(), "offsets": {},
                       "maintenance": maintenance})
    return session.commit("create anchorstream store", metadata={"kind": "create", "seq": 0})
