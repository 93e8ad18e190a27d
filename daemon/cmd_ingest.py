"""``anchorstream ingest``: backfill JSON-lines or text files into a co-occurrence store.

Exactly once across crashes: each checkpoint commits, with the counts, the byte offset just
past the last line it includes, per file (key ``file:<absolute path>``). Running the same
command again after a crash starts every file at its committed offset, so the documents of the
lost, uncommitted tail are counted once and nothing is counted twice. Malformed lines (bad
UTF-8 or JSON, missing or wrongly typed field, bad timestamp) are counted, skipped, and still
advance the offset.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tqdm import tqdm

from anchorstream.accumulator import Forgetting
from anchorstream.decode import FORMATS, DecodeError, decode
from anchorstream.errors import InputError
from anchorstream.text import Tokenizer, load_stopwords
from anchorstream.vocabulary import read_seed_vocabulary
from daemon.files import iter_lines

if TYPE_CHECKING:
    from anchorstream.store import CooccurrenceStore

log = logging.getLogger("anchorstream.ingest")

__all__ = ["check_files", "file_key", "ingest_files", "register", "run"]


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "ingest",
        help="backfill files into a co-occurrence store (resumable)",
        description=(
            "Tokenize documents from JSON-lines or text files and add them to a co-occurrence "
            "store, checkpointing with the file positions. Rerunning the same command after a "
            "crash resumes after the last checkpoint. Store settings apply only when the store "
            "is created."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("files", nargs="+", type=Path, metavar="FILE",
                   help="JSON-lines or text files (.gz allowed), read in order")
    p.add_argument("--store", required=True, metavar="DIR", help="store path or URL")
    p.add_argument("--format", choices=FORMATS, default="json",
                   help="record format: a JSON object per line, a text line, or a JSON token list")
    p.add_argument("--text-field", default="text", help="JSON field holding the text")
    p.add_argument("--timestamp-field", default=None,
                   help="JSON field with the document time (seconds or ISO 8601), needed when "
                        "forgetting is measured in seconds")
    p.add_argument("--checkpoint-every", type=int, default=10_000,
                   help="documents between checkpoints")
    p.add_argument("--stopwords", default="english",
                   help="stopword list: a shipped list name, a file path, or 'none'")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    new = p.add_argument_group("store settings (used when the store is created)")
    new.add_argument("--capacity", type=int, default=20_000, help="vocabulary capacity V")
    new.add_argument("--admit-threshold", type=float, default=5.0,
                     help="document frequency at which a new word is admitted")
    new.add_argument("--seed-vocabulary", type=Path, default=None,
                     help="file of initial words, one per line, most frequent first")
    new.add_argument("--max-df", type=float, default=None,
                     help="block words in more than this fraction of documents")
    new.add_argument("--half-life", type=float, default=None,
                     help="exponential decay half-life, in --time-unit")
    new.add_argument("--window", type=float, default=None,
                     help="tumbling window length, in --time-unit")
    new.add_argument("--n-windows", type=int, default=1, help="windows summed")
    new.add_argument("--time-unit", choices=("documents", "seconds"), default="documents")
    new.add_argument("--chunk-size", type=int, default=256, help="matrix chunk edge")
    new.add_argument("--shard-size", type=int, default=None,
                     help="matrix shard edge (default 8 chunks)")
    p.set_defaults(func=run)


def file_key(path) -> str:
    """Offsets key of a file: its absolute path, so any working directory resumes it."""
    return f"file:{os.path.abspath(os.fspath(path))}"


def check_files(paths) -> None:
    """Refuse input files that do not exist or that are listed more than once.

    A file listed twice would be read twice in one run, its documents counted twice, while the
    store keeps one offset per file, so no rerun could tell the passes apart. It is refused
    rather than skipped with a warning: the list is most likely a mistake (overlapping globs,
    a link to a file also listed, or a typo for another file) that a warning would leave in
    the resume command, which is this same command line. Identity is the file itself (device and
    inode), so other spellings of its path and links to it count as the same file.

    Raises
    ------
    InputError
        Naming the missing file, or both names of the repeated one.
    """
    seen: dict[tuple[int, int], str] = {}
    for path in paths:
        if not Path(path).is_file():
            raise InputError(f"input file {str(path)!r} does not exist")
        st = os.stat(path)
        identity = (st.st_dev, st.st_ino)
        if identity in seen:
            raise InputError(
                f"input files {seen[identity]!r} and {str(path)!r} are the same file: its "
                "documents would be counted twice; list each file once"
            )
        seen[identity] = str(path)


def _timestamp(value) -> float:
    if isinstance(value, bool):
        raise ValueError("a boolean is not a time")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        t = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        if t.tzinfo is None:
            t = t.replace(tzinfo=dt.UTC)
        return t.timestamp()
    raise ValueError(f"expected seconds or an ISO 8601 string, got {type(value).__name__}")


def ingest_files(
    store: CooccurrenceStore,
    paths,
    *,
    tokenizer,
    format: str = "json",
    text_field: str = "text",
    timestamp_field: str | None = None,
    checkpoint_every: int = 10_000,
    batch_size: int = 1000,
    progress: bool = False,
) -> dict:
    """Add the records of ``paths`` to ``store`` from its committed offsets on.

    Returns
    -------
    dict
        ``documents`` (added this run), ``rejected`` (reason → count), ``checkpoints``,
        ``version`` (last commit).
    """
    if checkpoint_every < 1:
        raise InputError(f"--checkpoint-every must be >= 1, got {checkpoint_every}")
    paths = list(paths)
    check_files(paths)
    offsets = store.offsets
    starts = {}
    # The progress bar counts bytes of the uncompressed streams, as the offsets do (a resume
    # seeks there). A .gz file's uncompressed size is unknown without reading it through, so
    # with one among the inputs the bar shows bytes and rate without a total (the compressed
    # size would mix units: percentages past 100).
    total: int | None = 0
    for path in paths:
        key = file_key(path)
        start = int(offsets.get(key, 0))
        size = os.path.getsize(path)
        if str(path).endswith(".gz"):
            total = None
        elif start > size:
            raise InputError(
                f"the store's offset for {str(path)!r} is {start} but the file has {size} "
                "bytes: it was replaced or truncated; ingest it into a new store"
            )
        elif total is not None:
            total += size - start
        starts[key] = start
    seconds = store.forgetting.unit == "seconds"
    if seconds and not timestamp_field:
        raise InputError("this store measures time in seconds: pass --timestamp-field")
    rejected: collections.Counter[str] = collections.Counter()
    positions: dict[str, int] = {}
    batch: list[list[str]] = []
    stamps: list[float] = []
    n_docs = since = checkpoints = 0
    bar = tqdm(total=total, unit="B", unit_scale=True, desc="ingest", disable=not progress,
               file=sys.stderr)

    def flush() -> None:
        if batch:
            store.add(batch, stamps if seconds else None)
            batch.clear()
            stamps.clear()

    def commit() -> None:
        nonlocal since, checkpoints
        flush()
        store.checkpoint(positions, metadata={"ingest": {"rejected": dict(rejected)}})
        since = 0
        checkpoints += 1

    for path in paths:
        key = file_key(path)
        last = starts[key]
        for offset, raw in iter_lines(path, starts[key]):
            bar.update(offset - last)
            last = offset
            positions[key] = offset
            try:
                doc = decode(raw, format=format, text_field=text_field,
                             timestamp_field=timestamp_field)
                if seconds:
                    stamps.append(_timestamp(doc.timestamp))
            except DecodeError as exc:
                rejected[exc.reason] += 1
                continue
            except (ValueError, TypeError, OverflowError):
                rejected["bad_timestamp"] += 1
                continue
            batch.append(tokenizer(doc.content))
            n_docs += 1
            since += 1
            if len(batch) >= batch_size:
                flush()
                if store.needs_checkpoint:  # the in-memory delta reached its budget
                    commit()
            if since >= checkpoint_every:
                commit()
        positions[key] = max(positions.get(key, last), last)
    bar.close()
    commit()
    return {
        "documents": n_docs,
        "rejected": dict(rejected),
        "checkpoints": checkpoints,
        "version": store.version,
    }


def run(args) -> int:
    stopwords = None if args.stopwords == "none" else load_stopwords(args.stopwords)
    tokenizer = Tokenizer(stopwords=stopwords)
    seed = read_seed_vocabulary(args.seed_vocabulary) if args.seed_vocabulary else ()
    forgetting = Forgetting(
        half_life=args.half_life, window=args.window, n_windows=args.n_windows,
        unit=args.time_unit,
    )
    from anchorstream.store import CooccurrenceStore  # icechunk and zarr: only for this command

    check_files(args.files)  # before the store is created: bad input leaves nothing behind
    store = CooccurrenceStore.open_or_create(
        args.store, capacity=args.capacity, admit_threshold=args.admit_threshold, seed=seed,
        max_df=args.max_df, forgetting=forgetting, chunk_size=args.chunk_size,
        shard_size=args.shard_size,
    )
    stats = ingest_files(
        store, args.files, tokenizer=tokenizer, format=args.format,
        text_field=args.text_field, timestamp_field=args.timestamp_field,
        checkpoint_every=args.checkpoint_every,
        progress=not args.quiet and sys.stderr.isatty(),
    )
    bad = sum(stats["rejected"].values())
    print(
        f"ingested {stats['documents']} documents ({bad} rejected"
        + (f": {json.dumps(stats['rejected'], sort_keys=True)}" if bad else "")
        + f") into {args.store}, version {stats['version']}",
        file=sys.stderr,
    )
    return 0
