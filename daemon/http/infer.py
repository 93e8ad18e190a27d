"""``POST /v1/infer``: topic proportions of one document or of a batch, as JSON.

One document::

    {"text": "..."} or {"tokens": ["...", ...]}, optional "version", "top", "min_weight"
    -> {"version", "num_tokens", "num_known_tokens", "topics": [{"id", "weight"}, ...],
        "omitted_weight", "seconds"}

A batch (at most ``http.max_infer_documents`` documents, default 256)::

    {"documents": [{"text": "..."} | {"tokens": [...]}, ...], optional "version", "top",
     "min_weight"}
    -> {"version", "results": [one document's fields without "version" and "seconds", ...],
        "seconds"}

``topics`` lists the strongest topic, then every other of weight at least ``min_weight``
(default ``http.infer_min_weight``, :data:`INFER_MIN_WEIGHT` = 0.01: a document's proportions
trail off to 1e-77, which is no information), at most ``top`` in all; ``omitted_weight`` is what the rest sum to. A
document with no word in the model's vocabulary is a 422 alone; in a batch its result is
``{"error": "no_known_words", "message": ...}`` and the others are answered. Every request
error is a 400 naming the field (``documents[3]: ...`` for a batch entry).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp

from anchorstream.errors import InputError, SnapshotNotFoundError
from anchorstream.model.infer import infer_topics
from daemon.http.server import HttpError

__all__ = ["INFER_MIN_WEIGHT", "MAX_INFER_DOCUMENTS", "infer_request"]

#: ``POST /v1/infer`` lists topics of at least this weight unless the request says otherwise.
INFER_MIN_WEIGHT = 0.01
#: Default cap on a batch's documents (``http.max_infer_documents``).
MAX_INFER_DOCUMENTS = 256

_FIELDS = ("text", "tokens", "documents", "version", "top", "min_weight")


def _bad(message: str) -> HttpError:
    return HttpError(400, "bad_request", message)


def _document(doc: Any, where: str) -> str | list[str]:
    """The text or tokens of one document object (``where`` names it in errors)."""
    if not isinstance(doc, dict):
        raise _bad(f'{where} must be a JSON object: {{"text": "..."}} or {{"tokens": [...]}}')
    if ("text" in doc) == ("tokens" in doc):
        raise _bad(f'{where}: send exactly one of "text" and "tokens"')
    if "text" in doc:
        if not isinstance(doc["text"], str):
            raise _bad(f'{where}: "text" must be a string')
        return doc["text"]
    if not (isinstance(doc["tokens"], list) and all(isinstance(t, str) for t in doc["tokens"])):
        raise _bad(f'{where}: "tokens" must be a list of strings')
    return doc["tokens"]


def _options(req: dict, default_min_weight: float) -> tuple[int | None, float, int | None]:
    top = req.get("top")
    if top is not None and (not isinstance(top, int) or isinstance(top, bool) or top < 1):
        raise _bad('"top" must be an integer >= 1')
    min_weight = req.get("min_weight", default_min_weight)
    if (not isinstance(min_weight, (int, float)) or isinstance(min_weight, bool)
            or not 0 <= min_weight <= 1):
        raise _bad('"min_weight" must be a number in [0, 1]')
    version = req.get("version")
    if version is not None and (not isinstance(version, int) or isinstance(version, bool)):
        raise _bad('"version" must be an integer')
    return top, float(min_weight), version


def _parse(req: Any, max_documents: int) -> tuple[list, bool]:
    """``(documents, batch)`` of a request body."""
    if not isinstance(req, dict):
        raise _bad('the body must be a JSON object: {"text": "..."}, {"tokens": ["...", ...]} '
                   'or {"documents": [...]}')
    unknown = set(req) - set(_FIELDS)
    if unknown:
        raise _bad(f"unknown field(s) {sorted(unknown)}; allowed: {', '.join(_FIELDS)}")
    if "documents" not in req:
        return [_document({k: req[k] for k in ("text", "tokens") if k in req}, "the body")], \
            False
    if "text" in req or "tokens" in req:
        raise _bad('send "documents" or one document\'s "text"/"tokens", not both')
    docs = req["documents"]
    if not isinstance(docs, list) or not docs:
        raise _bad('"documents" must be a non-empty list of {"text": ...} or {"tokens": [...]}')
    if len(docs) > max_documents:
        raise _bad(f'"documents" has {len(docs)} entries; at most {max_documents} per request '
                   "(http.max_infer_documents)")
    return [_document(d, f"documents[{i}]") for i, d in enumerate(docs)], True


def _snapshot(publisher, version: int | None):
    if version is None:
        latest = publisher.latest()
        if latest is None:
            raise HttpError(404, "no_snapshot", "no snapshot has been published yet")
        return latest
    try:
        return version, publisher.get(version)
    except SnapshotNotFoundError:
        raise HttpError(404, "not_found", f"snapshot {version} is not retained") from None


def _result(theta: np.ndarray, ids, n_tokens: int, n_known: int, top: int | None,
            min_weight: float) -> dict[str, Any]:
    order = np.argsort(-theta, kind="stable")
    # The strongest topic always; the others down to min_weight, at most `top` in all.
    order = order[:1 + int(np.count_nonzero(theta[order[1:]] >= min_weight))]
    if top is not None:
        order = order[:top]
    return {"num_tokens": n_tokens, "num_known_tokens": n_known,
            "topics": [{"id": ids[k], "weight": float(theta[k])} for k in order],
            "omitted_weight": float(max(0.0, 1.0 - theta[order].sum()))}


def infer_request(req: Any, publisher, tokenizer, *, max_documents: int = MAX_INFER_DOCUMENTS,
                  min_weight: float = INFER_MIN_WEIGHT) -> tuple[int, dict[str, Any]]:
    """``(status, body)`` of a ``POST /v1/infer`` request body (parsed JSON).

    Raises
    ------
    daemon.http.server.HttpError
        400 for a malformed request, 404 without the snapshot, 422 for one document with no
        known word.
    """
    docs, batch = _parse(req, int(max_documents))
    top, min_weight, version = _options(req, float(min_weight))
    version, snap = _snapshot(publisher, version)
    index, rows, n_tokens = snap.word_index, [], []
    for i, doc in enumerate(docs):
        try:
            tokens = tokenizer(doc)
        except InputError as exc:
            raise _bad(f"documents[{i}]: {exc}" if batch else str(exc)) from None
        n_tokens.append(len(tokens))
        rows.append([index[t] for t in tokens if t in index])
    if not batch and not rows[0]:
        raise HttpError(422, "no_known_words",
                        f"none of the document's {n_tokens[0]} token(s) is in the model's "
                        "vocabulary, so it has no topic proportions")
    start = time.perf_counter()
    indptr = np.cumsum([0] + [len(r) for r in rows])
    cols = np.fromiter((c for r in rows for c in r), dtype=np.int64, count=int(indptr[-1]))
    counts = sp.csr_matrix((np.ones(cols.size), cols, indptr),
                           shape=(len(rows), len(snap.vocabulary)))
    counts.sum_duplicates()
    theta = np.atleast_2d(infer_topics(snap.topic_word.T, counts))
    results = []
    for i, r in enumerate(rows):
        if not r:
            results.append({"error": "no_known_words", "num_tokens": n_tokens[i],
                            "message": f"none of the document's {n_tokens[i]} token(s) is in "
                                       "the model's vocabulary"})
            continue
        results.append(_result(theta[i], snap.topic_ids, n_tokens[i], len(r), top, min_weight))
    seconds = round(time.perf_counter() - start, 6)
    if batch:
        return 200, {"version": version, "results": results, "seconds": seconds}
    return 200, {"version": version, **results[0], "seconds": seconds}
