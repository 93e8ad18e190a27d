"""The published topic model: a self-describing directory, written atomically, validated on read.

Layout of a snapshot directory (format version 1)::

    manifest.json     format_version, created_at (ISO-8601 UTC), num_docs, vocab_size,
                      num_topics, n_top_words, settings, source, extra, and "files": the
                      sha256 and size of every other file
    topics.json       a list with one object per topic, in matrix row order:
                      {"id", "anchor", "prevalence", "top_words": [[word, prob], ...],
                       "quality": {name: value, ...}}
    vocab.txt         UTF-8, one word per line ("\\n"), in the column order of the matrices
    topic_word.npy    float32 (num_topics, vocab_size), each row p(w | topic) summing to 1
    topic_topic.npy   float64 (num_topics, num_topics), the topic co-occurrence A

Atomicity: :func:`write_snapshot` builds the directory under a temporary name beside the
target, fsyncs every file and the directory, then renames it into place (one ``rename(2)``,
atomic on POSIX) and fsyncs the parent. A reader therefore sees no directory or a complete
one; a failed write leaves nothing at the target name. The temporary directory is named
``.<name>.tmp-<random>``; one left behind by a writer that was killed was never visible under the
target name and is safe to delete. Snapshots are immutable: writing over an existing path is
refused.

The matrices are stored as ``.npy`` (read with ``allow_pickle=False``) rather than in a
container format: numpy's own format is what every consumer already has, is memory-mappable,
and a checksum per file makes corruption detectable without extra machinery.

The code: :mod:`~anchorstream.snapshot.layout` (format constants and :class:`Snapshot`),
:mod:`~anchorstream.snapshot.write` and :mod:`~anchorstream.snapshot.read`. Import the public
names from ``anchorstream.snapshot``.
"""

from __future__ import annotations

from anchorstream.snapshot.layout import FORMAT_VERSION, Snapshot
from anchorstream.snapshot.read import format_topics, read_snapshot
from anchorstream.snapshot.write import write_snapshot

__all__ = [
    "FORMAT_VERSION",
    "Snapshot",
    "format_topics",
    "read_snapshot",
    "write_snapshot",
]
