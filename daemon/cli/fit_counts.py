"""Where ``anchorstream fit``'s counts come from: files read, tokenized and counted (with the
dense workspace prefaulted meanwhile), or a store's committed state. The command itself is
:mod:`daemon.cli.fit`."""

from __future__ import annotations

import collections
import logging
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from anchorstream.errors import InputError
from anchorstream.model.lowrank import DocumentCooccurrence
from anchorstream.model.registry import method_spec
from anchorstream.stats.admission import MIN_SHARE, correct_admission
from anchorstream.stats.cooccurrence import cooccurrence
from anchorstream.stats.windowpairs import window_cooccurrence
from anchorstream.text.bags import TokenIdDocuments
from anchorstream.text.decode import DecodeError
from anchorstream.text.duplicates import DuplicateFilter
from anchorstream.text.language import StopwordCheck
from anchorstream.text.links import LinkCheck
from anchorstream.text.windows import (AUTO, WINDOWS_AUTO_SIZE, WINDOWS_LATE_SHARE, auto_rule,
                                       long_token_share, refine_window_for)
from daemon.cli.options import (DUPLICATE_MEMORY, check_input_files, resolve_tokenizing,
                                 stopwords_tokenizer, warn_json_as_text)
from daemon.ingest.files import iter_lines
from daemon.ingest.records import MAX_BYTES, MAX_TOKENS, record_tokens

__all__ = ["Counts", "counts_from_input", "counts_from_store", "read_documents"]

log = logging.getLogger("anchorstream.fit")

#: Most memory :class:`_Prefault` may prepare before the vocabulary is known: its buffers are
#: sized for ``--vocab-size`` words, which a small corpus may not reach.
_PREFAULT_MAX_BYTES = 2 << 30

class _Prefault(threading.Thread):
    """Allocates and touches the fit's two V x V arrays on another core while the main thread
    reads and tokenizes (Python, holding the GIL; numpy's fill releases it).

    The first write to fresh memory costs a page fault per page. On the machine the
    benchmarks ran on, a virtual machine whose freed memory goes back to its host within
    seconds, that was 1-2.5 ms per MB: 0.3-0.8 s for the 200 MB counts and the 100 MB
    float32 iterate at V = 5000, paid by the fit (measured with ``anchorstream fit`` on 50k npm
    summaries; on bare metal expect ~0.05 s). Here it overlaps the reading instead.

    Buffers are sized for ``n_words`` (the vocabulary cap); the fit uses their first V² elements
    for a vocabulary of V words. Nothing is prepared when that would exceed
    :data:`_PREFAULT_MAX_BYTES` or a quarter of the available memory.
    """

    def __init__(self, n_words: int, iterate_dtype=None):
        super().__init__(name="anchorstream-prefault", daemon=True)
        self.n = int(n_words) ** 2
        self.iterate_dtype = None if iterate_dtype is None else np.dtype(iterate_dtype)
        self.counts: np.ndarray | None = None
        self.iterate: np.ndarray | None = None
        need = self.n * (8 + (0 if iterate_dtype is None else self.iterate_dtype.itemsize))
        self.enabled = need <= min(_PREFAULT_MAX_BYTES, _available_bytes() // 4)

    def run(self) -> None:
        if not self.enabled:
            return
        counts = np.empty(self.n)
        counts.fill(0.0)
        self.counts = counts
        if self.iterate_dtype is not None:
            iterate = np.empty(self.n, dtype=self.iterate_dtype)
            iterate.fill(0.0)
            self.iterate = iterate

    def take(self, V: int) -> tuple[np.ndarray | None, np.ndarray | None]:
        """``(counts (V, V), iterate (V * V,) or None)`` views, or Nones; waits for the
        thread."""
        self.join()
        if self.counts is None or V * V > self.n:
            return None, None
        counts = self.counts[: V * V].reshape(V, V)
        return counts, None if self.iterate is None else self.iterate[: V * V]


def _available_bytes() -> int:
    """MemAvailable from /proc/meminfo, else physical memory, else 0 (prefault nothing)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def _small_vocabulary_hint(docs, opts, repeats: int = 0) -> str:
    """Which of ``--min-df`` and ``--max-df`` left the vocabulary too small, and what to do
    (or that most documents were repeats, skipped)."""
    if repeats > len(docs):
        return (f"{repeats} documents repeated others and were skipped, leaving "
                f"{len(docs)}; to count every copy, pass --duplicate-memory 0")
    df = np.fromiter(docs.document_frequency().values(), dtype=np.int64)
    frequent = int(np.count_nonzero(df >= opts["min_df"]))
    common = int(np.count_nonzero(df[df >= opts["min_df"]] > opts["max_df"] * len(docs)))
    said = (f"of {df.size} distinct words in {len(docs)} documents, {frequent} are in at least "
            f"--min-df {opts['min_df']} documents")
    if common:
        said += (f" and {common} of those in more than --max-df {opts['max_df']} of them "
                 "(dropped as too common)")
    advice = ("raise --max-df (up to 1.0) or add documents that differ" if common > frequent // 2
              else "lower --min-df or add documents")
    return f"{said}: {advice}"


def _no_documents_hint(stats: dict, opts: dict) -> str:
    """Why no line became a document, when the reason is one a user can fix."""
    rejected = stats["rejected"]
    if stats["lines"] == 0:
        return ": the files are empty"
    if opts["format"] == "json" and rejected.get("invalid_json", 0) == stats["lines"]:
        return (f": none of the {stats['lines']} lines is JSON; for plain text, one document "
                "per line, pass --format text")
    if rejected.get("missing_field", 0) == stats["lines"]:
        return (f": no line has the field {opts['text_field']!r}; name the field that holds "
                "the text with --text-field")
    if rejected.get("invalid_utf8", 0) * 2 > stats["lines"]:
        return (f": {rejected['invalid_utf8']} of the {stats['lines']} lines are not UTF-8, the "
                "only encoding read; convert the files (e.g. `iconv -f latin1 -t utf-8`)")
    return f": every line was rejected ({rejected})"


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def _progress_bar(progress: bool):
    """tqdm's bar when progress is shown, else a stand-in (tqdm costs ~0.05 s to import)."""
    if not progress:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(desc="reading", unit=" docs", file=sys.stderr)


def read_documents(paths, *, format, text_field, tokenizer, progress=True,
                   max_bytes: int | None = MAX_BYTES, max_tokens: int | None = MAX_TOKENS,
                   duplicate_memory: int = DUPLICATE_MEMORY):
    """Read and tokenize every record of ``paths`` by the ingest loop's rule, with its limits
    (a line over ``max_bytes`` is rejected as oversized, a document's tokens past
    ``max_tokens`` are not counted) and the store's rule for repeated documents (one whose
    tokens repeat one of the last ``duplicate_memory`` distinct documents is skipped:
    :class:`~anchorstream.text.duplicates.DuplicateFilter`), so that ``fit --input`` and a
    store fed the same lines count the same documents and tokens.

    Returns
    -------
    docs : TokenIdDocuments
        The documents' tokens as word ids (iterating gives the token lists)
    stats : dict with ``lines``, ``documents``, ``rejected`` (a reason -> count mapping),
        ``duplicates`` (documents skipped as repeats),
        ``at_max_tokens`` (documents that reached ``max_tokens``: cut there, or exactly that
        long), ``long_document_token_share`` (the share of the tokens in documents of more
        than :data:`~anchorstream.text.windows.LONG_DOCUMENT_TOKENS` tokens) and, with a
        shipped stopword list, ``stopword_share``: the share of the first documents' words it
        removed (:class:`~anchorstream.text.language.StopwordCheck`, which also prints a
        warning when that share says the list is not the documents' language)
    """
    docs = TokenIdDocuments()
    rejected: collections.Counter[str] = collections.Counter()
    lines = at_cap = 0
    seen = DuplicateFilter(duplicate_memory)
    bar = _progress_bar(progress)
    check = StopwordCheck(tokenizer)
    links = LinkCheck(getattr(tokenizer, "links", "keep"))
    check_input_files(paths)

    def tokenized():
        nonlocal lines
        for path in paths:
            for _, raw in iter_lines(path):
                lines += 1
                try:
                    # The daemon's and `ingest`'s rule and limits.
                    doc, tokens = record_tokens(raw, tokenizer, format=format,
                                                text_field=text_field, max_bytes=max_bytes,
                                                max_tokens=max_tokens)
                except DecodeError as exc:
                    rejected[exc.reason] += 1
                    continue
                except Exception:  # noqa: BLE001 - as the ingest loop: one line never stops
                    log.error("rejected line %d of %s as unprocessable", lines, path,
                              exc_info=True)
                    rejected["unprocessable"] += 1
                    continue
                if not check.done:
                    check.observe(doc.content)  # what the tokenizer just took: cannot fail
                if not links.done:
                    links.observe(doc.content)
                if not tokens:
                    rejected["no_tokens"] += 1
                    continue
                yield tokens

    for tokens in seen.distinct(tokenized()):
        at_cap += len(tokens) == max_tokens
        docs.append(tokens)
        bar.update()
    bar.close()
    stats = {"lines": lines, "documents": len(docs), "rejected": dict(rejected),
             "duplicates": seen.skipped, "at_max_tokens": at_cap,
             "long_document_token_share": round(long_token_share(docs.lengths()), 4)}
    if check.share is not None:
        stats["stopword_share"] = round(check.share, 4)
    warning = check.warning()
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    note = links.note()
    if note:
        print(f"note: {note}", file=sys.stderr)
    return docs, stats


@dataclass
class Counts:
    """What a fit starts from: the co-occurrences over a vocabulary, and where they came from."""

    cooc: Any
    vocabulary: Any
    documents: Any = None      # the document-term matrix (--input), else None
    iterate: Any = None        # a prefaulted rectification workspace, or None
    source: dict = field(default_factory=dict)
    #: What chose the vocabulary, for the snapshot's settings: only what was used.
    vocabulary_settings: dict = field(default_factory=dict)
    #: Where the refinement counts its pairs (--refine-window: the documents' windows), or
    #: None for ``cooc``'s.
    refine_cooc: Any = None

    @property
    def short_documents(self) -> int:
        """Documents (--input) with fewer than 2 words of the vocabulary: no word pair."""
        if self.documents is None:
            return 0
        return int(np.count_nonzero(np.asarray(self.documents.sum(axis=1)).ravel() < 2))


def counts_from_store(args) -> Counts:
    from anchorstream.store.delay import add_waiting
    from anchorstream.store import (
        find_partitions,
        open_committed,
        open_committed_sparse,
        pin_committed,
        read_partitions,
    )

    # The low-rank rectifier reads the counts sparse, shard by shard: no V x V array.
    anchor_words = args.method == "anchor" and method_spec("anchor", args.anchors).anchor_words
    implicit = anchor_words and args.rectify and args.rectify_method == "lowrank"
    parts = find_partitions(args.store, named=args.partitions)
    if parts is not None:
        # A partitioned root: every partition's head summed by word, as the refresher does.
        st = read_partitions(args.store, parts, versions=pin_committed(args.store, parts),
                             sparse=implicit)
    else:
        st = (open_committed_sparse if implicit else open_committed)(args.store)
    # The daemon's refresher applies the same correction (daemon/refresh.py), and counts the
    # documents a delay line holds back (store.count_delay) as if they had left it now.
    share = MIN_SHARE if args.admission_min_share is None else args.admission_min_share
    if share < 1 and st.admission is None:
        log.warning("--admission-min-share %g: the store reports no admissions to correct "
                    "(its windows, a delay line whose waiting documents counted the words "
                    "admitted meanwhile, or its partitions' sum); its counts are fitted as "
                    "they are", share)
    cooc = correct_admission(add_waiting(st.cooccurrence, st.waiting), st.admission,
                             min_share=share)
    vocabulary, offsets, version = st.words, st.offsets, st.version
    if len(vocabulary) <= args.topics:
        raise InputError(
            f"the store {args.store!r} has {len(vocabulary)} active words (version "
            f"{version}), need more than --topics={args.topics}; ingest more documents "
            "(or lower the store's --admit-threshold) or fit fewer topics"
        )
    source = {"store": args.store, "store_version": version, "offsets": offsets,
              "length_cap": cooc.length_cap,
              "admission_min_share": share if st.admission is not None else None,
              **({"partitions": st.partitions} if parts is not None else {})}
    setting = getattr(args, "refine_window", AUTO)
    window = _chosen_window(args, setting, cooc.num_docs, cooc.num_tokens)
    refine_cooc = None
    if window is not None:
        refine_cooc, window = _stored_windows(args.store, st, cooc, window,
                                              partitioned=parts is not None,
                                              auto=setting == AUTO)
        _say_windows(setting, window, cooc.num_docs, cooc.num_tokens, args.topics)
    return Counts(cooc, vocabulary, source=source,
                  vocabulary_settings={"refine_window": window}, refine_cooc=refine_cooc)


def _chosen_window(args, setting, num_docs: float, num_tokens: float) -> int | None:
    """The windows the refinement counts its pairs in (``--refine-window``; ``auto`` by the
    documents' mean length), None for whole documents."""
    if args.refine == "none":
        return None
    return refine_window_for(setting, num_docs, num_tokens, args.topics)


def _say_windows(setting, window: int | None, num_docs: float, num_tokens: float,
                 topics: int) -> None:
    """The note of ``--refine-window auto`` where it refines in windows."""
    if setting == AUTO and window is not None:
        print(f"note: refining in windows of {window} tokens (--refine-window auto: the "
              f"documents average {num_tokens / num_docs:.0f} words of the vocabulary, "
              f"{num_docs / topics:,.0f} documents per topic, and auto = "
              f"{auto_rule('--topics')}); --refine-window none refines whole documents",
              file=sys.stderr)


def _stored_windows(url, st, cooc, window: int, *, partitioned: bool, auto: bool = False):
    """``(the windows' pairs the store kept as documents arrived, over cooc's words; their
    size)``: what ``--refine-window`` counts from files (:mod:`anchorstream.stats.windowpairs`).
    With ``auto``, the windows the store keeps, or ``(None, None)`` (whole documents, said in a
    note) where it cannot give them."""
    from anchorstream.store import read_document_state
    from anchorstream.store.partdocs import read_partition_documents

    def without(why: str) -> tuple[None, None]:
        print(f"note: {why}: refining whole documents (a store created by ingest keeps the "
              f"windows' pairs of {WINDOWS_AUTO_SIZE} tokens unless --refine-window none)",
              file=sys.stderr)
        return None, None

    # A partitioned root: every partition's windows at the versions summed, as the daemon's
    # refresh reads them (None where the partitions keep different statistics).
    docs = (read_partition_documents(url, st, None) if partitioned
            else read_document_state(url, st.version, st.slots))
    kept = 0 if docs is None or docs.window_pairs is None else docs.settings.pair_window
    if auto and (not kept or docs.since_docs > WINDOWS_LATE_SHARE * st.n_docs_added):
        return without(f"the store {url!r} keeps no windows' pairs" if not kept else
                       f"the store {url!r} keeps windows' pairs from document "
                       f"{docs.since_docs} on only")
    if auto:
        window = kept
    if kept != window:
        raise InputError(
            f"--refine-window {window}: the store {url!r} keeps "
            + (f"the pairs of windows of {kept} tokens" if kept else "no windows' pairs")
            + f"; ingest with --refine-window {window} (or model.refine_window: {window} in "
            "the daemon) to count them, or drop --refine-window")
    return window_cooccurrence(docs.window_pairs, cooc), window


def counts_from_input(args, opts: dict, t_start: float, clock) -> Counts:
    progress = not args.quiet and sys.stderr.isatty()
    check_input_files(args.input)
    warn_json_as_text(args.input, format=opts["format"], text_field=opts["text_field"])
    stopwords, links = resolve_tokenizing(
        opts["stopwords"], opts["links"], args.input, format=opts["format"],
        text_field=opts["text_field"], max_bytes=opts["max_bytes"])
    tokenizer = stopwords_tokenizer(stopwords, links=links)
    # The low-rank rectifier works from the documents: no V x V array at all. Otherwise
    # every method counts co-occurrences, and only the anchor-word model's float32 dense
    # rectification has an iterate to put in the second buffer.
    anchor_words = args.method == "anchor" and method_spec("anchor", args.anchors).anchor_words
    implicit = anchor_words and args.rectify and args.rectify_method == "lowrank"
    rectifies = anchor_words and args.rectify and args.rectify_dtype == "float32"
    prefault = _Prefault(0 if implicit else opts["vocab_size"],
                         np.float32 if rectifies else None)
    prefault.start()
    docs, stats = read_documents(
        args.input, format=opts["format"], text_field=opts["text_field"],
        tokenizer=tokenizer, progress=progress, max_bytes=opts["max_bytes"],
        max_tokens=opts["max_tokens"], duplicate_memory=opts["duplicate_memory"],
    )
    clock.mark("read")
    bad = sum(stats["rejected"].values())
    cut = stats["at_max_tokens"]
    repeats = stats["duplicates"]
    print(
        f"read {stats['lines']} lines: {stats['documents']} documents, {bad} rejected"
        + (f" {stats['rejected']}" if bad else "")
        + (f", {repeats} repeated documents skipped (--duplicate-memory)" if repeats else "")
        + (f", {cut} at --max-tokens {opts['max_tokens']} (tokens past it not counted)"
           if cut else "")
        + f" ({time.perf_counter() - t_start:.1f} s)",
        file=sys.stderr,
    )
    if not docs:
        raise InputError("no usable documents in the input" + _no_documents_hint(stats, opts))
    vocabulary = docs.select_vocabulary(
        min_df=opts["min_df"], max_df=opts["max_df"], max_size=opts["vocab_size"]
    )
    if len(vocabulary) <= args.topics:
        raise InputError(
            f"the vocabulary has {len(vocabulary)} words, need more than --topics="
            f"{args.topics}; " + _small_vocabulary_hint(docs, opts, stats["duplicates"]))
    clock.mark("vocabulary")
    X = docs.count_matrix(vocabulary)
    lengths = np.asarray(X.sum(axis=1)).ravel()
    paired = lengths >= 2  # as the counts measure documents
    n_docs, n_tokens = int(paired.sum()), float(lengths[paired].sum())
    window = _chosen_window(args, opts["refine_window"], n_docs, n_tokens)
    _say_windows(opts["refine_window"], window, n_docs, n_tokens, args.topics)
    cap = opts["length_cap"]
    # The windows' counts, from the tokens before they go: their pairs are only read (and
    # not at all with --refine none).
    refine_cooc = (None if window is None else DocumentCooccurrence(
        docs.window_count_matrix(vocabulary, window), length_cap=cap))
    del docs  # every token of the corpus: the largest object here
    counts, iterate = prefault.take(len(vocabulary))
    cooc = (DocumentCooccurrence(X, length_cap=cap) if implicit
            else cooccurrence(X, out=counts, length_cap=cap))
    clock.mark("count")
    source = {
        "input": [str(p) for p in args.input],
        "format": opts["format"],
        "text_field": opts["text_field"],
        "max_bytes": opts["max_bytes"],
        "max_tokens": opts["max_tokens"],
        "duplicate_memory": opts["duplicate_memory"],
        **stats,
    }
    vocabulary_settings = {
        "vocab_size": opts["vocab_size"],
        "min_df": opts["min_df"],
        "max_df": opts["max_df"],
        "stopwords": stopwords,
        **({"stopwords_auto": True} if opts["stopwords"] == "auto" else {}),
        "length_cap": opts["length_cap"],
        "tokenizer": (tokenizer.describe() if hasattr(tokenizer, "describe")
                      else repr(tokenizer)),
        "refine_window": window,
    }
    return Counts(cooc, vocabulary, X, iterate, source, vocabulary_settings, refine_cooc)
