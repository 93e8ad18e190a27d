"""``anchorstream ingest``: backfill JSON-lines or text files into a co-occurrence store.

The files go through the daemon's own ingest loop (:class:`daemon.ingest.loop.IngestLoop` over a
:class:`daemon.ingest.files.FileSource`): the same decoding, checks, limits (``--max-bytes``,
``--max-tokens``, the daemon's ``message.max_bytes`` and ``message.max_tokens``), tokenization
and checkpoints, so a line is accepted or rejected for the same reason as the same Kafka
message.

Exactly once across crashes: each checkpoint commits, with the counts, the byte offset just
past the last line it includes, per file (key ``file:<absolute path>``). Running the same
command again after a crash starts every file at its committed offset, so the documents of the
lost, uncommitted tail are counted once and nothing is counted twice. No line stops the
command: a malformed one (bad UTF-8 or JSON, missing or wrongly typed field, bad timestamp,
oversized, a token the store cannot hold, ...) is counted by reason, skipped, and still
advances the offset; the reasons are printed at the end. Only a store that cannot commit
stops it.

Vocabulary. A store created by this command takes, by default, the vocabulary ``fit --input``
would choose from the same files (``--vocabulary first-pass``): the files are read once
before anything is counted, and the ``--capacity`` words in the most documents (at least
``--admit-threshold`` and at most ``--max-df`` of them) become its pinned seed. The words it
leaves out for ``--max-df`` are blocked from the start, and the store's own ``--max-df`` check
begins after the files' documents, so that a vocabulary that leaves slots free (a small
corpus) does not admit them meanwhile. Every document is then counted over the whole
vocabulary, so the store holds what ``fit --input`` counts. ``--vocabulary stream`` admits
words as they arrive instead, the daemon's rule: a word admitted late misses its earlier
documents and a word evicted loses its counts (benchmarks/README.md, "Streaming equals batch",
measures what that costs the topics). A seed list (``--seed-vocabulary``) or forgetting
(``--half-life``, ``--window``: a store that follows the present should not pin the whole
backfill's words) implies ``stream``.
"""

from __future__ import annotations

import collections
import json
import logging
import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from tqdm import tqdm

from anchorstream.stats.accumulator import Forgetting
from anchorstream.store.delay import AUTO as COUNT_DELAY_AUTO
from anchorstream.store.delay import (AUTO_DELAY, COUNT_DELAY_PAIRS, defaulted_settings,
                                     resolve_count_delay)
from anchorstream.text.decode import FORMATS
from anchorstream.text.duplicates import DuplicateFilter
from anchorstream.text.links import LINK_CHOICES, LINKS
from anchorstream.text.tokenize import Tokenizer
from anchorstream.errors import InputError
from anchorstream.text.bags import vocabulary_by_df
from anchorstream.text.vocabulary import MAX_DF_MIN_DOCS, read_seed_vocabulary
from anchorstream.text.windows import AUTO, WINDOWS_AUTO_SIZE
from daemon.cli.options import (
    HelpFormatter,
    ADMIT_THRESHOLD,
    CAPACITY,
    DUPLICATE_MEMORY,
    LENGTH_CAP,
    LINKS_HELP,
    MAX_DF,
    STOPWORDS,
    STOPWORDS_HELP,
    check_input_files,
    duplicate_memory_help,
    length_cap_arg,
    length_cap_help,
    max_df_arg,
    count_delay_arg,
    count_delay_pairs_arg,
    nonnegative_int_arg,
    positive_float_arg,
    positive_int_arg,
    resolve_tokenizing,
    stopwords_tokenizer,
    refine_window_argument,
    warn_json_as_text,
)
from daemon.settings import MessageConfig
from daemon.ingest.files import FileSource, file_key, iter_lines
from daemon.ingest.loop import IngestLoop
from daemon.ingest.records import MAX_BYTES, MAX_TOKENS, record_tokens

if TYPE_CHECKING:
    from anchorstream.store import CooccurrenceStore

log = logging.getLogger("anchorstream.ingest")

__all__ = ["VOCABULARY_RULES", "FirstPass", "file_key", "first_pass",
           "first_pass_store_settings", "ingest_files", "register", "run"]

#: How a new store's vocabulary is chosen (``--vocabulary``).
VOCABULARY_RULES = ("first-pass", "stream")


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
        formatter_class=HelpFormatter,
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
    p.add_argument("--max-bytes", type=int, default=MAX_BYTES,
                   help="longer lines are rejected as oversized (the daemon's message.max_bytes)")
    p.add_argument("--max-tokens", type=int, default=MAX_TOKENS,
                   help="tokens counted per document at most (the daemon's message.max_tokens)")
    p.add_argument("--checkpoint-every", type=int, default=10_000,
                   help="lines (documents and rejected lines) between checkpoints")
    p.add_argument("--stopwords", default=STOPWORDS,
                   help=STOPWORDS_HELP + "; the store records its list when it is created, and "
                   "auto keeps that list for more files")
    p.add_argument("--links", choices=LINK_CHOICES, default=None,
                   help=LINKS_HELP + "; the store records it when it is created, and more "
                   "files are tokenized as it records (default auto, which keeps the store's "
                   "for more files)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    new = p.add_argument_group("store settings (used when the store is created)")
    new.add_argument("--capacity", type=positive_int_arg, default=CAPACITY,
                     help="vocabulary capacity V")
    new.add_argument("--admit-threshold", type=positive_float_arg, default=ADMIT_THRESHOLD,
                     help="document frequency at which a new word is admitted")
    new.add_argument("--seed-vocabulary", type=Path, default=None,
                     help="file of initial words, one per line, most frequent first")
    new.add_argument("--vocabulary", choices=VOCABULARY_RULES, default=None,
                     help="first-pass: read the files once before counting and take the "
                          "vocabulary fit --input would (the --capacity words in the most "
                          "documents, in at least --admit-threshold and at most --max-df of "
                          "them), pinned, so every document is counted over it; stream: admit "
                          "words as they arrive (the daemon's rule; a word admitted late "
                          "misses its earlier documents); default first-pass, stream with "
                          "--seed-vocabulary, --half-life or --window")
    new.add_argument("--max-df", type=max_df_arg, default=MAX_DF,
                     help="block words in more than this fraction of documents (checked every "
                          "1000 documents from the 1000th, with first-pass from the first "
                          "after the files; the default is fit --max-df's); 'none' = off")
    new.add_argument("--half-life", type=positive_float_arg, default=None,
                     help="exponential decay half-life, in --time-unit")
    new.add_argument("--window", type=positive_float_arg, default=None,
                     help="tumbling window length, in --time-unit")
    new.add_argument("--n-windows", type=positive_int_arg, default=1, help="windows summed")
    new.add_argument("--time-unit", choices=("documents", "seconds"), default="documents")
    new.add_argument("--length-cap", type=length_cap_arg, default=LENGTH_CAP, metavar="TOKENS",
                     help=length_cap_help(", 'none' = every pair (as fit --length-cap)"))
    new.add_argument("--duplicate-memory", type=nonnegative_int_arg, default=DUPLICATE_MEMORY,
                     metavar="N",
                     help=duplicate_memory_help(" (as fit --duplicate-memory; the store keeps "
                                                "its memory with the counts)"))
    new.add_argument("--count-delay", type=count_delay_arg, default=COUNT_DELAY_AUTO,
                     metavar="N",
                     help="count each document N documents after it arrived, over the words "
                          "admitted by then (store.count_delay in the daemon): on a stream in "
                          "time order, 1000 win back what --vocabulary stream's late "
                          "admissions cost; the documents still waiting at the end of the "
                          "files are counted then; 0 = on arrival; auto = "
                          f"{AUTO_DELAY} with --vocabulary stream and no --window, else 0 "
                          "(a first pass admits nothing late; an existing store keeps its own)")
    new.add_argument("--count-delay-pairs", type=count_delay_pairs_arg,
                     default=COUNT_DELAY_PAIRS, metavar="N",
                     help="with --count-delay: the most word pairs, n (n - 1) / 2 of a "
                          "document's n tokens, the documents held back hold together "
                          "(store.count_delay_pairs in the daemon); a long document pushes out "
                          "as many of the oldest as it takes; 'none' = no bound")
    refine_window_argument(
        p, help="keep the word pairs of windows of this many consecutive tokens of each "
                "document beside the counts, for fit --store's refinement "
                "(model.refine_window in the daemon); counted from the documents "
                "ingested from then on; 'none' = stop keeping them; default auto = "
                f"windows of {WINDOWS_AUTO_SIZE} for a new store (what fit --refine-window "
                "auto refines in), as an existing store keeps")
    new.add_argument("--chunk-size", type=positive_int_arg, default=256,
                     help="matrix chunk edge")
    new.add_argument("--shard-size", type=positive_int_arg, default=None,
                     help="matrix shard edge (default 8 chunks)")
    p.set_defaults(func=run)


class FirstPass(NamedTuple):
    """What a first pass over the files found (:func:`first_pass`)."""

    vocabulary: list[str]
    too_frequent: list[str]
    n_docs: int


def first_pass(paths, *, tokenizer, capacity: int, min_df: float, max_df: float | None,
               format: str = "json", text_field: str = "text", max_bytes: int = MAX_BYTES,
               max_tokens: int = MAX_TOKENS,
               duplicate_memory: int = DUPLICATE_MEMORY) -> FirstPass:
    """The vocabulary ``fit --input`` would choose from ``paths`` by the store's settings, the
    words in at least ``min_df`` documents that it leaves out for being in more than
    ``max_df`` of them, and the number of documents.

    Every line is read by the ingest loop's rule (:func:`daemon.ingest.records.record_tokens`,
    the same limits); a line it rejects counts for nothing, and so does a repeat of a
    document (:class:`~anchorstream.text.duplicates.DuplicateFilter` with the new store's
    ``duplicate_memory``, which will skip the same ones). The vocabulary: the words in at
    least ``min_df`` and at most ``max_df`` of the documents, most document-frequent first, at
    most ``capacity`` (:func:`anchorstream.text.bags.vocabulary_by_df`, ``fit``'s rule). Only
    the document frequencies are held, not the documents. ``ingest`` blocks the too frequent
    words from the start and lets the store's own ``max_df`` check begin after these
    documents (:func:`first_pass_store_settings`), so that the store counts what ``fit
    --input`` counts.
    """
    def documents():
        for path in paths:
            for _, raw in iter_lines(path):
                try:
                    _, tokens = record_tokens(raw, tokenizer, format=format,
                                              text_field=text_field, max_bytes=max_bytes,
                                              max_tokens=max_tokens)
                except Exception:  # noqa: BLE001 - the loop rejects it (malformed, ...)
                    continue
                if tokens:
                    yield tokens

    df: collections.Counter[str] = collections.Counter()
    n_docs = 0
    for tokens in DuplicateFilter(duplicate_memory).distinct(documents()):
        df.update(set(tokens))
        n_docs += 1
    limit = 1.0 if max_df is None else max_df
    too_frequent = sorted(w for w, c in df.items() if c >= min_df and c > limit * n_docs)
    return FirstPass(vocabulary_by_df(df, n_docs, min_df=min_df, max_df=limit,
                                      max_size=capacity), too_frequent, n_docs)


def first_pass_store_settings(found: FirstPass) -> dict:
    """The store settings that make ``ingest`` of the first pass's files count what ``fit
    --input`` counts: the vocabulary as the seed, the too frequent words blocked, and the
    store's ``max_df`` check (every ``maintain_every`` documents from ``max_df_min_docs`` on)
    starting only after the files' documents, which the first pass has checked already.
    Without the last two, where the vocabulary leaves slots free (a small corpus), the
    streaming rule admits the too frequent words until its first check, and their tokens count
    in the documents' lengths (benchmarks/README.md, "Small corpora: the words a first pass
    leaves free slots for").
    """
    return {"seed": found.vocabulary, "blocked": found.too_frequent,
            "max_df_min_docs": max(MAX_DF_MIN_DOCS, found.n_docs)}


def _check_counts(named: dict) -> None:
    for name, value in named.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"{name} must be an integer >= 1, got {value!r}")


def ingest_files(
    store: CooccurrenceStore,
    paths,
    *,
    tokenizer,
    format: str = "json",
    text_field: str = "text",
    timestamp_field: str | None = None,
    max_bytes: int = MAX_BYTES,
    max_tokens: int = MAX_TOKENS,
    checkpoint_every: int = 10_000,
    batch_size: int = 1000,
    progress: bool = False,
) -> dict:
    """Add the records of ``paths`` to ``store`` from its committed offsets on.

    Parameters
    ----------
    store : CooccurrenceStore
    paths : sequence of str or Path
        JSON-lines or text files (``.gz`` allowed), read in order; each at most once.
    tokenizer : callable ``str | list[str] -> list[str]``
    format, text_field, timestamp_field, max_bytes, max_tokens
        As the daemon's ``message`` settings.
    checkpoint_every : int
        Lines (documents and rejected lines) between checkpoints.
    batch_size : int
        Lines read and added to the store at a time.
    progress : bool
        Show a progress bar (bytes) on stderr.

    Returns
    -------
    dict
        ``documents`` (added this run), ``duplicates`` (repeats the store skipped),
        ``rejected`` (reason → count), ``checkpoints``, ``version`` (last commit),
        ``held_back`` (documents a delay line held back, counted at the end).

    Raises
    ------
    InputError
        For bad arguments or files (missing, listed twice, shorter than the stored offset),
        before anything is added; never for a line.
    daemon.ingest.loop.LoopError
        When a checkpoint fails (from the store's ``StoreError``): what the last successful
        checkpoint holds stays, and the same call resumes from there.
    """
    _check_counts({"--checkpoint-every": checkpoint_every, "--max-bytes": max_bytes,
                   "--max-tokens": max_tokens, "batch_size": batch_size})
    paths = list(paths)
    check_input_files(paths)
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
    if store.forgetting.unit == "seconds" and not timestamp_field:
        raise InputError("this store measures time in seconds: pass --timestamp-field")
    message = MessageConfig(format=format, text_field=text_field,
                            timestamp_field=timestamp_field, max_bytes=max_bytes,
                            max_tokens=max_tokens)
    bar = tqdm(total=total, unit="B", unit_scale=True, desc="ingest", disable=not progress,
               file=sys.stderr)
    source = FileSource(paths, starts, on_bytes=bar.update)
    checkpoints = []
    # Checkpoints by count only (no timer: a run's commits do not depend on the machine's
    # speed), and a poll never crosses one; a failed commit stops the command at once (the
    # daemon retries, but a rerun of this command is the retry here).
    loop = IngestLoop(store, source, tokenizer=tokenizer, message=message, name="ingest",
                      report_rejections=False,
                      checkpoint_every_docs=checkpoint_every,
                      checkpoint_every_seconds=math.inf,
                      max_poll_records=min(batch_size, checkpoint_every),
                      on_checkpoint=checkpoints.append, max_checkpoint_failures=1)
    try:
        while loop.step():
            pass
        # The files end here: the documents of a delay line are counted with the vocabulary
        # of now (a rerun after a crash restores the committed line and counts it again).
        held_back = store.flush_delayed()
        loop.checkpoint()  # the rest (a no-op commit when nothing is left)
    finally:
        source.close()
        bar.close()
    return {
        "documents": loop.documents,
        "duplicates": loop.duplicates,
        "at_max_tokens": loop.documents_at_max_tokens,
        "long_document_token_share": (loop.tokens_in_long_documents / loop.tokens
                                      if loop.tokens else 0.0),
        "rejected": dict(loop.rejected),
        "checkpoints": len(checkpoints),
        "version": store.version,
        "held_back": held_back,
    }


def _store_exists(url) -> bool:
    """Whether a store is at ``url`` already (then its vocabulary is the stored one); where
    not, StoreError if one cannot be created there, before the first pass reads the files."""
    from anchorstream.store.repository import check_creatable, repo_exists, storage

    store, local = storage(url)
    if repo_exists(store, url):
        return True
    check_creatable(local)
    return False


def run(args) -> int:
    seed = read_seed_vocabulary(args.seed_vocabulary) if args.seed_vocabulary else ()
    forgetting = Forgetting(
        half_life=args.half_life, window=args.window, n_windows=args.n_windows,
        unit=args.time_unit,
    )
    # icechunk and zarr: only for this command
    from anchorstream.store import CooccurrenceStore, stored_tokenizing

    # Before the store is created: bad input leaves nothing behind.
    _check_counts({"--checkpoint-every": args.checkpoint_every, "--max-bytes": args.max_bytes,
                   "--max-tokens": args.max_tokens})
    check_input_files(args.files)
    warn_json_as_text(args.files, format=args.format, text_field=args.text_field)
    exists = _store_exists(args.store)
    stored_words, stored_links = stored_tokenizing(args.store) if exists else (None, "keep")
    recorded = stored_words if args.stopwords == "auto" else None
    # --links keep or drop: it applies (and the store warns where it recorded another); auto
    # or not given: the store's, so that more files are tokenized as the first were, and for
    # a new store what the files' first documents choose.
    links = args.links if args.links in LINKS else stored_links if exists else "auto"
    # More files for a store: its own stopword list, not one chosen again from these files.
    stopwords, links = resolve_tokenizing(
        "none" if recorded else args.stopwords, links, args.files, format=args.format,
        text_field=args.text_field, max_bytes=args.max_bytes)
    tokenizer = (Tokenizer(stopwords=recorded, links=links) if recorded
                 else stopwords_tokenizer(stopwords, links=links))
    # A store that forgets tracks the present: a pinned vocabulary of the whole backfill
    # would never leave it, so forgetting (like a seed list) implies the streaming rule.
    forgets = args.half_life is not None or args.window is not None
    rule = args.vocabulary or ("stream" if args.seed_vocabulary or forgets else "first-pass")
    if rule == "first-pass" and args.seed_vocabulary:
        raise InputError("--vocabulary first-pass chooses the seed from the files: drop "
                         "--seed-vocabulary, or pass --vocabulary stream to keep it")
    vocabulary = {"seed": seed}
    if rule == "first-pass" and not exists:
        found = first_pass(
            args.files, tokenizer=tokenizer, capacity=args.capacity,
            min_df=args.admit_threshold, max_df=args.max_df, format=args.format,
            text_field=args.text_field, max_bytes=args.max_bytes, max_tokens=args.max_tokens,
            duplicate_memory=args.duplicate_memory)
        vocabulary = first_pass_store_settings(found)
        print(f"first pass: {len(found.vocabulary)} words (the vocabulary fit --input would "
              "choose)" + (f"; {len(found.too_frequent)} in more than --max-df of the "
                           "documents blocked" if found.too_frequent else ""), file=sys.stderr)
    delay = resolve_count_delay(args.count_delay, admits_words=rule == "stream",
                                tumbling=args.window is not None)
    store = CooccurrenceStore.open_or_create(
        args.store, capacity=args.capacity, admit_threshold=args.admit_threshold,
        **vocabulary, max_df=args.max_df, forgetting=forgetting, chunk_size=args.chunk_size,
        stopwords=tokenizer.stopwords or (),  # recorded: a later ingest or daemon keeps them
        links=links,
        shard_size=args.shard_size, length_cap=args.length_cap,
        duplicate_memory=args.duplicate_memory, count_delay=delay,
        count_delay_pairs=args.count_delay_pairs,
        defaulted=defaulted_settings(args.count_delay, args.count_delay_pairs),
        document_stats=_document_stats(args),
    )
    stats = ingest_files(
        store, args.files, tokenizer=tokenizer, format=args.format,
        text_field=args.text_field, timestamp_field=args.timestamp_field,
        max_bytes=args.max_bytes, max_tokens=args.max_tokens,
        checkpoint_every=args.checkpoint_every,
        progress=not args.quiet and sys.stderr.isatty(),
    )
    bad = sum(stats["rejected"].values())
    cut = stats["at_max_tokens"]
    repeats = stats["duplicates"]
    print(
        f"ingested {stats['documents']} documents ({bad} rejected"
        + (f": {json.dumps(stats['rejected'], sort_keys=True)}" if bad else "")
        + (f"; {repeats} repeated documents skipped" if repeats else "")
        + (f"; {cut} at --max-tokens {args.max_tokens}, tokens past it not counted"
           if cut else "")
        + (f"; the last {stats['held_back']} held back by --count-delay counted at the end"
           if stats["held_back"] else "")
        + f") into {args.store}, version {stats['version']}",
        file=sys.stderr,
    )
    return 0


def _document_stats(args):
    """What ``--refine-window`` asks the store to keep: given, those windows (none with
    ``none``); ``auto`` (the default), the windows ``auto`` refines in for a new store and what
    an existing store keeps (:meth:`CooccurrenceStore.open` takes the function)."""
    from anchorstream.stats.documents import DocStatsSettings

    setting = getattr(args, "refine_window", AUTO)
    if setting != AUTO:
        return DocStatsSettings(pair_window=setting or 0)

    def choose(stored):
        return DocStatsSettings(pair_window=WINDOWS_AUTO_SIZE) if stored is None else stored

    return choose