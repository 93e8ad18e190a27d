"""Reading a snapshot: every file is checked (presence, checksum, structure, shapes, dtypes, row
sums) and each failure names the file and the problem; :func:`format_topics` renders one as
text.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import numbers
import os
from pathlib import Path
from typing import Any

import numpy as np

from anchorstream.errors import InputError, SnapshotError, SnapshotNotFoundError
from anchorstream.fsutil import STORE, kind_of_directory
from anchorstream.model.background import background_level, ranked_top_words
from anchorstream.snapshot.layout import (
    DATA_FILES,
    FORMAT_VERSION,
    MANIFEST,
    MIN_TOP_WORDS,
    ROW_SUM_TOL,
    Snapshot,
    TOPICS,
    TOPIC_TOPIC,
    TOPIC_WORD,
    VOCAB,
    parse_time,
)

__all__ = ["format_topics", "read_snapshot"]


# --------------------------------------------------------------------------------------------
# reading


def read_snapshot(path: str | os.PathLike, *, verify: bool = True) -> Snapshot:
    """Read and validate a snapshot directory.

    Parameters
    ----------
    path : str or PathLike
    verify : bool, default True
        Check every file's sha256 against the manifest. Structure, shapes, dtypes and row sums
        are checked either way.

    Returns
    -------
    Snapshot

    Raises
    ------
    SnapshotNotFoundError
        The directory or one of its files is missing (the message names it).
    SnapshotError
        A file is corrupt or inconsistent with the manifest, or the format version is unknown
        (the message names the file and the problem).
    """
    root = Path(path)
    if not root.exists():
        raise SnapshotNotFoundError(f"snapshot directory {root} does not exist")
    if not root.is_dir():
        raise SnapshotNotFoundError(f"{root} is a file, not a snapshot directory")
    if kind_of_directory(root) == STORE:
        raise SnapshotNotFoundError(f"{root} is a co-occurrence store (an Icechunk repository), "
                                    "not a snapshot directory")
    manifest = _read_json(root, MANIFEST)
    _check_manifest(root, manifest)
    K, V = manifest["num_topics"], manifest["vocab_size"]

    blobs: dict[str, bytes] = {}
    for name in DATA_FILES:
        file = root / name
        try:
            blobs[name] = file.read_bytes()
        except FileNotFoundError:
            raise SnapshotNotFoundError(f"{file} is missing from the snapshot") from None
        except OSError as exc:
            raise SnapshotError(f"{file} cannot be read: {exc}") from exc
        entry = manifest["files"].get(name)
        if not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str):
            raise SnapshotError(f"{root / MANIFEST}: no checksum recorded for {name}")
        if verify and hashlib.sha256(blobs[name]).hexdigest() != entry["sha256"]:
            raise SnapshotError(
                f"{file}: checksum mismatch (sha256 differs from the manifest); the file was "
                "modified or truncated after the snapshot was written"
            )

    vocabulary = _parse_vocab(root / VOCAB, blobs[VOCAB], V)
    topic_word = _parse_npy(root / TOPIC_WORD, blobs[TOPIC_WORD], (K, V), np.float32)
    sums = topic_word.sum(axis=1, dtype=np.float64)
    if not np.all(np.isfinite(topic_word)) or topic_word.min() < 0:
        raise SnapshotError(f"{root / TOPIC_WORD}: entries must be finite and non-negative")
    bad = np.flatnonzero(np.abs(sums - 1.0) > ROW_SUM_TOL)
    if bad.size:
        raise SnapshotError(
            f"{root / TOPIC_WORD}: row {int(bad[0])} sums to {sums[bad[0]]:.6g}, not 1 "
            f"({bad.size} row(s) off)"
        )
    topic_topic = _parse_npy(root / TOPIC_TOPIC, blobs[TOPIC_TOPIC], (K, K), None)
    if not np.all(np.isfinite(topic_topic)):
        raise SnapshotError(f"{root / TOPIC_TOPIC}: entries must be finite")
    try:
        topics = json.loads(blobs[TOPICS].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SnapshotError(f"{root / TOPICS}: not valid UTF-8 JSON ({exc})") from None
    _check_topics(root / TOPICS, topics, K, set(vocabulary), min(MIN_TOP_WORDS, V))

    topic_word.flags.writeable = False
    topic_topic.flags.writeable = False
    return Snapshot(
        path=root,
        manifest=manifest,
        topics=topics,
        vocabulary=tuple(vocabulary),
        topic_word=topic_word,
        topic_topic=topic_topic,
    )


def _read_json(root: Path, name: str) -> Any:
    file = root / name
    try:
        text = file.read_bytes().decode("utf-8")
        return json.loads(text)
    except FileNotFoundError:
        raise SnapshotNotFoundError(f"{file} is missing from the snapshot") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SnapshotError(f"{file}: not valid UTF-8 JSON ({exc})") from None
    except OSError as exc:
        raise SnapshotError(f"{file} cannot be read: {exc}") from exc


def _check_manifest(root: Path, manifest: Any) -> None:
    file = root / MANIFEST
    if not isinstance(manifest, dict):
        raise SnapshotError(f"{file}: expected a JSON object, got {type(manifest).__name__}")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION or isinstance(version, bool):
        raise SnapshotError(
            f"{file}: format_version {version!r} is not supported (this anchorstream reads "
            f"version {FORMAT_VERSION}); upgrade anchorstream or rewrite the snapshot"
        )
    for key in ("num_docs", "vocab_size", "num_topics"):
        value = manifest.get(key)
        least = 0 if key == "num_docs" else 1
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise SnapshotError(f"{file}: {key} must be an integer >= {least}, got {value!r}")
    for key in ("settings", "source", "files"):
        if not isinstance(manifest.get(key), dict):
            raise SnapshotError(f"{file}: {key} must be a JSON object, got {manifest.get(key)!r}")
    created = manifest.get("created_at")
    try:
        stamp = parse_time(created)
    except (TypeError, ValueError):
        raise SnapshotError(f"{file}: created_at {created!r} is not an ISO-8601 time") from None
    if stamp.utcoffset() is None:
        raise SnapshotError(f"{file}: created_at {created!r} has no timezone")


def _parse_vocab(file: Path, data: bytes, V: int) -> list[str]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SnapshotError(f"{file}: not valid UTF-8 ({exc})") from None
    if not text.endswith("\n"):
        raise SnapshotError(f"{file}: truncated (no newline after the last word)")
    words = text[:-1].split("\n")
    if len(words) != V:
        raise SnapshotError(f"{file}: {len(words)} words, but the manifest says vocab_size={V}")
    if len(set(words)) != V or "" in words:
        raise SnapshotError(f"{file}: words must be distinct and non-empty")
    return words


def _parse_npy(file: Path, data: bytes, shape: tuple[int, int], dtype) -> np.ndarray:
    try:
        array = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, EOFError, OSError) as exc:
        raise SnapshotError(f"{file}: not a readable .npy array ({exc})") from None
    if not isinstance(array, np.ndarray) or array.shape != shape:
        got = getattr(array, "shape", None)
        raise SnapshotError(f"{file}: shape {got}, but the manifest says {shape}")
    if dtype is not None and array.dtype != dtype:
        raise SnapshotError(f"{file}: dtype {array.dtype}, expected {np.dtype(dtype)}")
    if dtype is None and not np.issubdtype(array.dtype, np.floating):
        raise SnapshotError(f"{file}: dtype {array.dtype}, expected a float type")
    return array


def _check_topics(file: Path, topics: Any, K: int, vocab: set[str], min_top: int) -> None:
    if not isinstance(topics, list) or len(topics) != K:
        got = len(topics) if isinstance(topics, list) else type(topics).__name__
        raise SnapshotError(f"{file}: expected a list of {K} topics, got {got}")
    ids = []
    for k, t in enumerate(topics):
        where = f"{file}: topic {k}"
        if not isinstance(t, dict):
            raise SnapshotError(f"{where} is not a JSON object")
        missing = {"id", "anchor", "prevalence", "top_words"} - t.keys()
        if missing:
            raise SnapshotError(f"{where} lacks {sorted(missing)}")
        if isinstance(t["id"], bool) or not isinstance(t["id"], int) or t["id"] < 0:
            raise SnapshotError(f"{where}: id {t['id']!r} is not an integer >= 0")
        ids.append(t["id"])
        if t["anchor"] is not None and t["anchor"] not in vocab:
            raise SnapshotError(f"{where}: anchor {t['anchor']!r} is not in the vocabulary")
        if not _is_number(t["prevalence"]):
            raise SnapshotError(f"{where}: prevalence {t['prevalence']!r} is not a number")
        top = t["top_words"]
        if not isinstance(top, list) or len(top) < min_top:
            raise SnapshotError(f"{where}: top_words must list at least {min_top} words")
        for pair in top:
            if (
                not isinstance(pair, list)
                or len(pair) != 2
                or pair[0] not in vocab
                or not _is_number(pair[1])
            ):
                raise SnapshotError(f"{where}: top_words entry {pair!r} is not [word, probability]")
    if len(set(ids)) != K:
        raise SnapshotError(f"{file}: topic ids are not distinct: {ids}")


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


# --------------------------------------------------------------------------------------------
# display


def format_topics(snapshot: Snapshot, n_words: int = 10) -> str:
    """The snapshot's topics as readable text, one per line, most prevalent first.

    Parameters
    ----------
    snapshot : Snapshot
    n_words : int, default 10
        Top words per topic.

    Returns
    -------
    str
        A header line, then ``id  prevalence  [anchor]  word word ...`` per topic.
    """
    if isinstance(n_words, bool) or not isinstance(n_words, numbers.Integral) or n_words < 1:
        raise InputError(f"n_words must be an integer >= 1, got {n_words!r}")
    m = snapshot.manifest
    lines = [
        f"{snapshot.path}: {m['num_topics']} topics, {m['vocab_size']} words, "
        f"{m['num_docs']} documents, created {m['created_at']} (format {m['format_version']})"
    ]
    stored = min(len(t["top_words"]) for t in snapshot.topics)
    extra_words = n_words > stored
    if extra_words:  # ranked as the writer ranked them (above the background, if any)
        found = (m.get("extra") or {}).get("background_words") or {}
        if found.get("spread") is None:
            top = ranked_top_words(snapshot.topic_word, n_words)
        else:  # without label_cap and level_weight (before session 61): the whole level
            level = background_level(snapshot.topic_word, found["spread"])
            top = ranked_top_words(snapshot.topic_word, n_words, level,
                                   found.get("label_cap"), found.get("level_weight", 1.0))
    width = max(len(str(i)) for i in snapshot.topic_ids)
    anchor_width = max(len(a or "-") for a in snapshot.anchors) + 2
    order = sorted(range(len(snapshot.topics)), key=lambda k: -snapshot.topics[k]["prevalence"])
    for k in order:
        t = snapshot.topics[k]
        if extra_words:
            words = [snapshot.vocabulary[i] for i in top[k]]
        else:
            words = [w for w, _ in t["top_words"][:n_words]]
        anchor = f"[{t['anchor'] or '-'}]"
        lines.append(
            f"{t['id']:>{width}}  {t['prevalence']:6.2%}  {anchor:<{anchor_width}}  "
            f"{' '.join(words)}"
        )
    return "\n".join(lines)
