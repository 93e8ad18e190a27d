"""The snapshot format: its version, file names and limits, and :class:`Snapshot`, the record a
read returns. Shared by the writer (:mod:`~anchorstream.snapshot.write`) and the reader
(:mod:`~anchorstream.snapshot.read`), so neither depends on the other.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from functools import cached_property
from pathlib import Path

import numpy as np

__all__ = [
    "DATA_FILES",
    "FORMAT_VERSION",
    "MANIFEST",
    "MIN_TOP_WORDS",
    "ROW_SUM_TOL",
    "Snapshot",
    "TOPICS",
    "TOPIC_TOPIC",
    "TOPIC_WORD",
    "VOCAB",
    "parse_time",
]

FORMAT_VERSION = 1

MANIFEST = "manifest.json"
TOPICS = "topics.json"
VOCAB = "vocab.txt"
TOPIC_WORD = "topic_word.npy"
TOPIC_TOPIC = "topic_topic.npy"
DATA_FILES = (TOPICS, VOCAB, TOPIC_WORD, TOPIC_TOPIC)

# float32 rows normalized in float64 and then rounded sum to 1 within V * 2**-24 in the worst
# case; anything further off was not written by write_snapshot.
ROW_SUM_TOL = 1e-4
# topics.json lists at least this many top words per topic (all of them for a smaller vocabulary).
MIN_TOP_WORDS = 20


@dataclasses.dataclass(frozen=True, eq=False)
class Snapshot:
    """A snapshot read from disk. Arrays are read-only.

    Attributes
    ----------
    path : pathlib.Path
    manifest : dict
        The parsed ``manifest.json``.
    topics : list of dict
        The parsed ``topics.json``, in matrix row order.
    vocabulary : tuple of str
        Word of each column of ``topic_word``.
    topic_word : ndarray of float32, shape (num_topics, vocab_size)
        Row k is ``p(w | topic k)``. (The library's functions take ``(n_words, n_topics)``:
        pass ``snapshot.topic_word.T``.)
    topic_topic : ndarray of shape (num_topics, num_topics)
    """

    path: Path
    manifest: dict
    topics: list
    vocabulary: tuple
    topic_word: np.ndarray
    topic_topic: np.ndarray

    @property
    def format_version(self) -> int:
        """The file-format version (:data:`FORMAT_VERSION` for what this code writes)."""
        return int(self.manifest["format_version"])

    @property
    def version(self) -> int:
        """Alias of :attr:`format_version` (a publisher's version id is ``path.name``)."""
        return self.format_version

    @property
    def num_topics(self) -> int:
        return int(self.manifest["num_topics"])

    @property
    def vocab_size(self) -> int:
        return int(self.manifest["vocab_size"])

    @property
    def num_docs(self) -> int:
        return int(self.manifest["num_docs"])

    @property
    def created_at(self) -> _dt.datetime:
        return parse_time(self.manifest["created_at"])

    @property
    def settings(self) -> dict:
        return self.manifest["settings"]

    @property
    def source(self) -> dict:
        return self.manifest["source"]

    @property
    def extra(self) -> dict | None:
        return self.manifest.get("extra")

    @property
    def topic_ids(self) -> list[int]:
        return [t["id"] for t in self.topics]

    @property
    def anchors(self) -> list[str | None]:
        return [t["anchor"] for t in self.topics]

    @property
    def prevalence(self) -> np.ndarray:
        return np.array([t["prevalence"] for t in self.topics], dtype=np.float64)

    @cached_property
    def word_index(self) -> dict[str, int]:
        """Column of each word, for turning tokens into counts."""
        return {w: i for i, w in enumerate(self.vocabulary)}


def parse_time(text: str) -> _dt.datetime:
    return _dt.datetime.fromisoformat(text)
