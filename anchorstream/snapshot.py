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
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import io
import json
import math
import numbers
import os
import secrets
import shutil
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from anchorstream.fsutil import fsync_dir
from anchorstream.errors import InputError, SnapshotError, SnapshotNotFoundError
from anchorstream.evaluate import top_words as _top_words

__all__ = [
    "FORMAT_VERSION",
    "Snapshot",
    "format_topics",
    "read_snapshot",
    "write_snapshot",
]

FORMAT_VERSION = 1

MANIFEST = "manifest.json"
TOPICS = "topics.json"
VOCAB = "vocab.txt"
TOPIC_WORD = "topic_word.npy"
TOPIC_TOPIC = "topic_topic.npy"
_DATA_FILES = (TOPICS, VOCAB, TOPIC_WORD, TOPIC_TOPIC)

# float32 rows normalized in float64 and then rounded sum to 1 within V * 2**-24 in the worst
# case; anything further off was not written by write_snapshot.
_ROW_SUM_TOL = 1e-4
# topics.json lists at least this many top words per topic (all of them for a smaller vocabulary).
_MIN_TOP_WORDS = 20


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
        return _parse_time(self.manifest["created_at"])

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


# --------------------------------------------------------------------------------------------
# writing


def write_snapshot(
    path: str | os.PathLike,
    *,
    vocabulary: Sequence[str],
    topic_word: np.ndarray,
    topic_topic: np.ndarray,
    anchors: Sequence[str | int | None] | None,
    topic_ids: Sequence[int] | None = None,
    prevalence: np.ndarray | None = None,
    num_docs: int,
    settings: Mapping[str, Any],
    source: Mapping[str, Any],
    quality: Mapping[str, Sequence[float | None]] | None = None,
    extra: Mapping[str, Any] | None = None,
    n_top_words: int = 20,
    created_at: _dt.datetime | None = None,
) -> Path:
    """Write a snapshot directory atomically.

    Parameters
    ----------
    path : str or PathLike
        Directory to create; must not exist. Missing parent directories are created.
    vocabulary : sequence of str, length vocab_size
        Distinct, non-empty words without line breaks.
    topic_word : array_like of shape (num_topics, vocab_size)
        Row k is topic k's word distribution (a model's ``topic_word_.T``); non-negative, each
        row with positive mass. Stored as float32 with rows re-normalized to sum to 1.
    topic_topic : array_like of shape (num_topics, num_topics)
    anchors : sequence of length num_topics, or None
        Each topic's anchor word (a word, or its column index, or None for a topic without
        one); None for a model without anchor words.
    topic_ids : sequence of int, optional
        Stable ids of the topics (distinct, >= 0); default ``0..num_topics-1``.
    prevalence : array_like of shape (num_topics,), optional
        ``p(z)``; default the row sums of ``topic_topic``.
    num_docs : int
        Documents the model was fitted on.
    settings : mapping
        Every setting that produced the model (JSON-serializable; numpy scalars and arrays and
        paths are converted).
    source : mapping
        Where the data came from (input files, store version, offsets, ...).
    quality : mapping of str to sequence of length num_topics, optional
        Per-topic figures (e.g. ``diagnostics(...)["per_topic"]``); non-finite values are
        stored as null.
    extra : mapping, optional
        Anything else to keep in the manifest (e.g. a topic hierarchy).
    n_top_words : int, default 20
        Top words listed per topic in ``topics.json``: at least 20 (all words when the
        vocabulary is smaller).
    created_at : datetime, optional
        Timezone-aware; default now. Stored in UTC.

    Returns
    -------
    pathlib.Path
        The snapshot directory.

    Raises
    ------
    InputError
        On inconsistent shapes, bad values or settings that cannot be stored as JSON; nothing
        is written.
    SnapshotError
        When ``path`` already exists.
    OSError
        When the file system fails; the temporary directory is removed and nothing appears at
        ``path``.
    """
    target = Path(path)
    words = _check_vocabulary(vocabulary)
    V = len(words)
    tw = np.asarray(topic_word, dtype=np.float64)
    if tw.ndim != 2 or tw.shape[0] < 1 or tw.shape[1] != V:
        raise InputError(
            f"topic_word must be of shape (num_topics, vocab_size) = (K, {V}), got shape "
            f"{tw.shape}; a model's topic_word_ is (vocab_size, num_topics): pass its transpose"
        )
    K = tw.shape[0]
    if not np.all(np.isfinite(tw)) or tw.min() < 0:
        raise InputError("topic_word must be finite and non-negative")
    row_mass = tw.sum(axis=1)
    if np.any(row_mass <= 0):
        raise InputError(f"topic_word row(s) {np.flatnonzero(row_mass <= 0).tolist()} are all zero")
    # Normalize in float64, then round: each entry is off by at most half a float32 ulp, so the
    # stored rows sum to 1 far inside what the reader accepts.
    tw32 = (tw / row_mass[:, None]).astype(np.float32)

    tt = np.asarray(topic_topic, dtype=np.float64)
    if tt.shape != (K, K) or not np.all(np.isfinite(tt)):
        raise InputError(f"topic_topic must be finite and of shape ({K}, {K}), got {tt.shape}")
    prev = tt.sum(axis=1) if prevalence is None else np.asarray(prevalence, dtype=np.float64)
    if prev.shape != (K,) or not np.all(np.isfinite(prev)):
        raise InputError(f"prevalence must be finite and of shape ({K},), got {prev.shape}")
    ids = _check_ids(topic_ids, K)
    anchor_words = _check_anchors(anchors, K, words)
    if isinstance(num_docs, bool) or not isinstance(num_docs, numbers.Integral) or num_docs < 0:
        raise InputError(f"num_docs must be an integer >= 0, got {num_docs!r}")
    if (
        isinstance(n_top_words, bool)
        or not isinstance(n_top_words, numbers.Integral)
        or n_top_words < _MIN_TOP_WORDS
    ):
        raise InputError(
            f"n_top_words must be an integer >= {_MIN_TOP_WORDS} (the format lists at least "
            f"{_MIN_TOP_WORDS} words per topic), got {n_top_words!r}"
        )
    n_top = min(int(n_top_words), V)
    stamp = _utc_stamp(created_at)
    quality_rows = _check_quality(quality, K)

    top = _top_words(tw32.T, n_top)
    topics = []
    for k in range(K):
        entry: dict[str, Any] = {
            "id": ids[k],
            "anchor": anchor_words[k],
            "prevalence": float(prev[k]),
            # str() of a float32 is the shortest decimal that reads back as the same float32,
            # so topics.json agrees exactly with topic_word.npy.
            "top_words": [[words[i], float(str(tw32[k, i]))] for i in top[k]],
        }
        if quality_rows is not None:
            entry["quality"] = quality_rows[k]
        topics.append(entry)

    payload = {
        TOPICS: _json_lines_bytes(topics, "topics"),
        VOCAB: ("\n".join(words) + "\n").encode("utf-8"),
        TOPIC_WORD: _npy_bytes(tw32),
        TOPIC_TOPIC: _npy_bytes(tt),
    }
    manifest = {
        "format_version": FORMAT_VERSION,
        "created_at": stamp,
        "num_docs": int(num_docs),
        "vocab_size": V,
        "num_topics": K,
        "n_top_words": n_top,
        "settings": _to_json(settings, "settings", require_mapping=True),
        "source": _to_json(source, "source", require_mapping=True),
        "extra": None if extra is None else _to_json(extra, "extra", require_mapping=True),
        "files": {
            name: {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
            for name, data in payload.items()
        },
    }
    payload[MANIFEST] = _json_bytes(manifest, "manifest")

    if target.exists() or target.is_symlink():
        raise SnapshotError(f"{target} already exists; snapshots are immutable, choose a new path")
    target.parent.mkdir(parents=True, exist_ok=True)
    # Not tempfile.mkdtemp: its 0700 mode would survive the rename and hide the published
    # snapshot from readers running as another user; mkdir applies the umask as usual.
    tmp = target.parent / f".{target.name}.tmp-{secrets.token_hex(8)}"
    tmp.mkdir()
    try:
        for name, data in payload.items():
            _write_file(tmp / name, data)
        fsync_dir(tmp)
        try:
            # rename(2) replaces an *empty* directory silently; the exists() check above covers
            # all but a racing writer creating an empty one in between.
            os.rename(tmp, target)
        except OSError as exc:
            if target.exists():
                raise SnapshotError(
                    f"{target} already exists; snapshots are immutable, choose a new path"
                ) from exc
            raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    fsync_dir(target.parent)
    return target


def _write_file(path: Path, data: bytes) -> None:
    with open(path, "xb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _npy_bytes(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
    return buf.getvalue()


def _json_bytes(obj: Any, what: str) -> bytes:
    try:
        text = json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:  # only plain, finite values should arrive here
        raise InputError(f"{what} cannot be written as JSON: {exc}") from None
    return (text + "\n").encode("utf-8")


def _json_lines_bytes(items: list, what: str) -> bytes:
    """A JSON list with one compact item per line: small, yet readable and diffable by line."""
    try:
        lines = [json.dumps(x, ensure_ascii=False, allow_nan=False) for x in items]
    except (TypeError, ValueError) as exc:
        raise InputError(f"{what} cannot be written as JSON: {exc}") from None
    return ("[\n" + ",\n".join(lines) + "\n]\n").encode("utf-8")


def _to_json(obj: Any, where: str, *, require_mapping: bool = False) -> Any:
    """A copy of ``obj`` made of plain JSON types; InputError naming the first bad value."""
    if require_mapping and not isinstance(obj, Mapping):
        raise InputError(f"{where} must be a mapping, got {type(obj).__name__}")
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, numbers.Integral):
        return int(obj)
    if isinstance(obj, numbers.Real):
        value = float(obj)
        if not math.isfinite(value):
            raise InputError(f"{where} is {value}, which JSON cannot hold; use null or a string")
        return value
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, Mapping):
        out = {}
        for key, value in obj.items():
            if not isinstance(key, str):
                raise InputError(
                    f"{where} has a key {key!r} of type {type(key).__name__}; "
                    "JSON keys must be str"
                )
            out[key] = _to_json(value, f"{where}.{key}")
        return out
    if isinstance(obj, np.ndarray):
        return [_to_json(v, f"{where}[{i}]") for i, v in enumerate(obj.tolist())]
    if isinstance(obj, (list, tuple)):
        return [_to_json(v, f"{where}[{i}]") for i, v in enumerate(obj)]
    raise InputError(
        f"{where} is a {type(obj).__name__}, which cannot be stored in a snapshot; use numbers, "
        "strings, booleans, None, lists or dicts"
    )


def _check_vocabulary(vocabulary) -> list[str]:
    if isinstance(vocabulary, (str, bytes)):
        raise InputError("vocabulary must be a sequence of words, not one string")
    words = list(vocabulary)
    if not words:
        raise InputError("vocabulary is empty")
    for i, w in enumerate(words):
        if not isinstance(w, str) or not w:
            raise InputError(f"vocabulary[{i}] = {w!r} is not a non-empty string")
        # Every line boundary str.splitlines knows, so no reader can split a word in two.
        if w.splitlines() != [w]:
            raise InputError(f"vocabulary[{i}] = {w!r} contains a line break")
    if len(set(words)) != len(words):
        seen: set[str] = set()
        dup = next(w for w in words if w in seen or seen.add(w))
        raise InputError(f"vocabulary has the word {dup!r} more than once")
    return words


def _check_ids(topic_ids, K: int) -> list[int]:
    if topic_ids is None:
        return list(range(K))
    ids = list(topic_ids)
    if len(ids) != K or any(
        isinstance(i, bool) or not isinstance(i, numbers.Integral) or i < 0 for i in ids
    ):
        raise InputError(f"topic_ids must be {K} integers >= 0, got {ids!r}")
    ids = [int(i) for i in ids]
    if len(set(ids)) != K:
        raise InputError(f"topic_ids must be distinct, got {ids}")
    return ids


def _check_anchors(anchors, K: int, words: list[str]) -> list[str | None]:
    if anchors is None:
        return [None] * K
    items = list(anchors)
    if len(items) != K:
        raise InputError(f"anchors must list {K} entries (one per topic), got {len(items)}")
    known = set(words)
    out: list[str | None] = []
    for k, a in enumerate(items):
        if a is None:
            out.append(None)
        elif isinstance(a, str):
            if a not in known:
                raise InputError(f"anchors[{k}] = {a!r} is not in the vocabulary")
            out.append(a)
        elif isinstance(a, numbers.Integral) and not isinstance(a, bool):
            if not 0 <= a < len(words):
                raise InputError(f"anchors[{k}] = {a} is not a column index in 0..{len(words) - 1}")
            out.append(words[int(a)])
        else:
            raise InputError(f"anchors[{k}] = {a!r} must be a word, a column index or None")
    return out


def _check_quality(quality, K: int) -> list[dict[str, float | None]] | None:
    if quality is None:
        return None
    if not isinstance(quality, Mapping):
        raise InputError(
            f"quality must be a mapping of name to {K} values, got {type(quality).__name__}"
        )
    rows: list[dict[str, float | None]] = [{} for _ in range(K)]
    for name, values in quality.items():
        if not isinstance(name, str):
            raise InputError(f"quality has a key {name!r}; keys must be str")
        try:
            arr = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InputError(f"quality[{name!r}] must be {K} numbers: {exc}") from None
        if arr.shape != (K,):
            raise InputError(f"quality[{name!r}] must have {K} values, got shape {arr.shape}")
        for k, v in enumerate(arr.tolist()):
            rows[k][name] = v if math.isfinite(v) else None
    return rows


def _utc_stamp(created_at: _dt.datetime | None) -> str:
    if created_at is None:
        created_at = _dt.datetime.now(_dt.timezone.utc)
    if not isinstance(created_at, _dt.datetime) or created_at.utcoffset() is None:
        raise InputError(f"created_at must be a timezone-aware datetime, got {created_at!r}")
    utc = created_at.astimezone(_dt.timezone.utc)
    return utc.isoformat(timespec="microseconds").replace("+00:00", "Z")


def _parse_time(text: str) -> _dt.datetime:
    return _dt.datetime.fromisoformat(text)


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
    manifest = _read_json(root, MANIFEST)
    _check_manifest(root, manifest)
    K, V = manifest["num_topics"], manifest["vocab_size"]

    blobs: dict[str, bytes] = {}
    for name in _DATA_FILES:
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
    bad = np.flatnonzero(np.abs(sums - 1.0) > _ROW_SUM_TOL)
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
    _check_topics(root / TOPICS, topics, K, set(vocabulary), min(_MIN_TOP_WORDS, V))

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
        stamp = _parse_time(created)
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
    if extra_words:
        top = _top_words(snapshot.topic_word.T, n_words)
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
