"""Writing a snapshot: validate every input, build each file's bytes and the manifest with their
checksums, then publish the directory atomically (see :mod:`anchorstream.snapshot`).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import io
import json
import math
import numbers
import os
import secrets
import shutil
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from anchorstream.errors import InputError, SnapshotError
from anchorstream.model.background import (
    background,
    check_spread,
    ranked_top_words,
    top_words_for_length,
)
from anchorstream.fsutil import fsync_dir
from anchorstream.snapshot.layout import (
    FORMAT_VERSION,
    MANIFEST,
    MIN_TOP_WORDS,
    TOPICS,
    TOPIC_TOPIC,
    TOPIC_WORD,
    VOCAB,
)

__all__ = ["write_snapshot"]


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
    background_spread: float | None = None,
    mean_doc_length: float | None = None,
    previous_level_weight: float | None = None,
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
    background_spread : float in (0, 1], optional
        Find the background words (:mod:`anchorstream.model.background`): a word's background
        level is the probability it has in at least this fraction of the topics. The top words
        in ``topics.json`` are then ranked by what each topic adds above that level (on short
        documents only as far as the labels need to tell the topics apart: ``mean_doc_length``),
        and ``extra["background_words"]`` reports the words the background explains and the
        ranking's share of the level and cap. None: top words by
        probability, no report. ``topic_word.npy`` is the same either way.
    mean_doc_length : float, optional
        Tokens per document in the counts the model was fitted on. Under
        :data:`~anchorstream.model.background.SHORT_DOCUMENTS` the background is taken out of
        the ranking only as far as the labels need (above); otherwise (or None) top words
        rank above the whole level.
    previous_level_weight : float, optional
        The share of the level the previous snapshot of the same stream ranked by (its
        ``extra["background_words"]["level_weight"]``): kept unless the labels clear the bound
        by a margin (:func:`~anchorstream.model.background.distinct_top_words`). The daemon's
        publisher passes it; a one-off fit has none.
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
    tw32 = _normalized_topic_word(topic_word, V)
    K = tw32.shape[0]
    tt, prev = _check_topic_topic(topic_topic, prevalence, K)
    ids = _check_ids(topic_ids, K)
    anchor_words = _check_anchors(anchors, K, words)
    n_top = _check_counts(num_docs, n_top_words, V)
    stamp = _utc_stamp(created_at)
    quality_rows = _check_quality(quality, K)
    spread = check_spread(background_spread)
    length = _optional_number("mean_doc_length", mean_doc_length, math.inf)
    previous = _optional_number("previous_level_weight", previous_level_weight, 1.0)
    if spread is None:
        top = ranked_top_words(tw32, n_top)
    else:
        found = background(tw32, prev, spread, n_top)
        ranking = top_words_for_length(tw32, n_top, found.level, length, previous)
        top = ranking.top
        report = {**found.report(words), "level_weight": ranking.weight,
                  "label_cap": ranking.cap}
        extra = {**(extra or {}), "background_words": report}
    topics = _topic_entries(words, tw32, top, ids, anchor_words, prev, quality_rows)

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
    _publish(target, payload)
    return target


def _optional_number(name: str, value, hi: float) -> float | None:
    """``value`` as a float in ``[0, hi]``, or None; else InputError naming ``name``."""
    if value is None:
        return None
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
            or not 0 <= value <= hi):
        raise InputError(f"{name} must be a number in [0, {hi:g}] or None, got {value!r}")
    return float(value)


def _normalized_topic_word(topic_word, V: int) -> np.ndarray:
    """``topic_word`` checked and its rows normalized to sum to 1, as float32."""
    tw = np.asarray(topic_word, dtype=np.float64)
    if tw.ndim != 2 or tw.shape[0] < 1 or tw.shape[1] != V:
        raise InputError(
            f"topic_word must be of shape (num_topics, vocab_size) = (K, {V}), got shape "
            f"{tw.shape}; a model's topic_word_ is (vocab_size, num_topics): pass its transpose"
        )
    if not np.all(np.isfinite(tw)) or tw.min() < 0:
        raise InputError("topic_word must be finite and non-negative")
    row_mass = tw.sum(axis=1)
    if np.any(row_mass <= 0):
        raise InputError(f"topic_word row(s) {np.flatnonzero(row_mass <= 0).tolist()} are all zero")
    # Normalize in float64, then round: each entry is off by at most half a float32 ulp, so the
    # stored rows sum to 1 far inside what the reader accepts.
    return (tw / row_mass[:, None]).astype(np.float32)


def _check_topic_topic(topic_topic, prevalence, K: int) -> tuple[np.ndarray, np.ndarray]:
    """``(topic_topic, prevalence)`` as float64, the prevalence defaulting to the row sums."""
    tt = np.asarray(topic_topic, dtype=np.float64)
    if tt.shape != (K, K) or not np.all(np.isfinite(tt)):
        raise InputError(f"topic_topic must be finite and of shape ({K}, {K}), got {tt.shape}")
    prev = tt.sum(axis=1) if prevalence is None else np.asarray(prevalence, dtype=np.float64)
    if prev.shape != (K,) or not np.all(np.isfinite(prev)):
        raise InputError(f"prevalence must be finite and of shape ({K},), got {prev.shape}")
    return tt, prev


def _check_counts(num_docs, n_top_words, V: int) -> int:
    """Check ``num_docs`` and ``n_top_words``; the number of top words to list per topic."""
    if isinstance(num_docs, bool) or not isinstance(num_docs, numbers.Integral) or num_docs < 0:
        raise InputError(f"num_docs must be an integer >= 0, got {num_docs!r}")
    if (
        isinstance(n_top_words, bool)
        or not isinstance(n_top_words, numbers.Integral)
        or n_top_words < MIN_TOP_WORDS
    ):
        raise InputError(
            f"n_top_words must be an integer >= {MIN_TOP_WORDS} (the format lists at least "
            f"{MIN_TOP_WORDS} words per topic), got {n_top_words!r}"
        )
    return min(int(n_top_words), V)


def _topic_entries(words, tw32, top, ids, anchor_words, prev, quality_rows) -> list[dict]:
    """The objects of ``topics.json``, one per topic in matrix row order."""
    topics = []
    for k in range(tw32.shape[0]):
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
    return topics


def _publish(target: Path, payload: dict[str, bytes]) -> None:
    """Write ``payload`` (file name -> bytes) under a temporary name, then rename it to ``target``.

    Either the whole directory appears at ``target`` or nothing does.
    """
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
    if _plain_words(words):
        return words
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


def _plain_words(words: list) -> bool:
    """Whether every word is a non-empty string without a line break and none repeats, in a
    few passes over the joined words (a snapshot's 5,000 words one at a time took 5 ms); False
    sends :func:`_check_vocabulary` word by word, to name the first offender."""
    try:
        joined = "".join(words)
    except TypeError:  # a word that is not a string
        return False
    # A line boundary anywhere splits the joined words or, at the very end, is dropped.
    return (all(words) and joined.splitlines() == [joined]
            and len(set(words)) == len(words))


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
