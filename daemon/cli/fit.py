"""``anchorstream fit``: the whole pipeline over files (or a store), written as one snapshot."""

from __future__ import annotations

import argparse
import collections
import json
import logging
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from anchorstream.stats.admission import MIN_SHARE, correct_admission
from anchorstream.stats.cooccurrence import cooccurrence
from anchorstream.text.decode import FORMATS, DecodeError
from anchorstream.errors import InputError
from anchorstream.model.background import BACKGROUND_SPREAD
from anchorstream.model.methods import fit_topics
from anchorstream.model.registry import (ANCHOR_METHODS, METHODS, RECTIFY_METHODS, method_spec,
                                         rectify_method_for)
from anchorstream.model.lowrank import DocumentCooccurrence
from anchorstream.model.pipeline import RECOVER_METHODS, ModelSettings
from anchorstream.model.refine import REFINE_AUTO_MAX_LENGTH, REFINE_METHODS
from anchorstream.snapshot import write_snapshot
from anchorstream.snapshot.layout import MANIFEST
from anchorstream.text.tokenize import count_matrix, select_vocabulary
from daemon.cli.options import (LENGTH_CAP, MAX_DF, MIN_DF, STOPWORDS, STOPWORDS_HELP,
                                 VOCAB_SIZE, HelpFormatter, admission_argument, anchor_arguments,
                                 anchorfree_arguments, length_cap_arg, length_cap_help,
                                 spread_arg, stopwords_tokenizer)
from daemon.ingest.files import iter_lines
from daemon.ingest.records import record_tokens

log = logging.getLogger("anchorstream.fit")

#: Most memory :class:`_Prefault` may prepare before the vocabulary is known: its buffers are
#: sized for ``--vocab-size`` words, which a small corpus may not reach.
_PREFAULT_MAX_BYTES = 2 << 30

#: Options that only apply to ``--input`` (reading and tokenizing files, choosing the
#: vocabulary), with their defaults. They default to "not given" so that ``--store`` can
#: refuse them (see :func:`_input_options`).
_INPUT_ONLY = {
    "format": ("--format", "json"),
    "text_field": ("--text-field", "text"),
    "vocab_size": ("--vocab-size", VOCAB_SIZE),
    "min_df": ("--min-df", MIN_DF),
    "max_df": ("--max-df", MAX_DF),
    "stopwords": ("--stopwords", STOPWORDS),
    "length_cap": ("--length-cap", LENGTH_CAP),
}


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


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "fit",
        help="fit topics on files (or a store) and write a snapshot",
        description=(
            "Read documents, build the co-occurrence matrix, run rectification, anchor finding "
            "and recovery, and write a snapshot directory. Bad lines are counted and skipped."
        ),
        formatter_class=HelpFormatter,
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--input", nargs="+", type=Path, metavar="FILE",
                     help="JSON-lines or text files (.gz allowed)")
    # A str, not a Path: Path("s3://bucket/prefix") collapses the "//" into "s3:/bucket/prefix".
    src.add_argument("--store", metavar="DIR|URL",
                     help="fit on the last committed state of a co-occurrence store (a local "
                          "path, file://, s3://, gs://); its vocabulary is the store's active "
                          "words, so the --input-only options below are refused; the root "
                          "of a partitioned store (store.layout: partitioned) sums its "
                          "partitions by word")
    p.add_argument("--partitions", action="append", default=[], metavar="TOPIC:N",
                   help="--store is a partitioned root with partitions 0..N-1 of TOPIC "
                        "(repeatable; needed on an object store, which cannot be listed; "
                        "a local root's partitions are found)")
    p.add_argument("--out", type=Path, required=True, help="snapshot directory to create")
    p.add_argument("--topics", "-k", type=int, required=True, help="number of topics K")
    # SUPPRESS: an option not given leaves no attribute, which tells "not given" from "given
    # the default" (and keeps the help free of "default: None"); defaults are in _INPUT_ONLY.
    d = {dest: default for dest, (_, default) in _INPUT_ONLY.items()}
    p.add_argument("--format", choices=FORMATS, default=argparse.SUPPRESS,
                   help=f"input record format (--input only; default {d['format']})")
    p.add_argument("--text-field", default=argparse.SUPPRESS,
                   help=f"JSON field holding the text (--input only; default {d['text_field']})")
    p.add_argument("--vocab-size", type=int, default=argparse.SUPPRESS,
                   help=f"vocabulary size cap V (--input only; default {d['vocab_size']})")
    p.add_argument("--min-df", type=int, default=argparse.SUPPRESS,
                   help=f"minimum document frequency of a word (--input only; default "
                        f"{d['min_df']})")
    p.add_argument("--max-df", type=float, default=argparse.SUPPRESS,
                   help=f"maximum document frequency of a word, as a ratio of documents "
                        f"(--input only; default {d['max_df']})")
    p.add_argument("--stopwords", default=argparse.SUPPRESS,
                   help=f"{STOPWORDS_HELP} (--input only; default {d['stopwords']})")
    p.add_argument("--length-cap", type=length_cap_arg, default=argparse.SUPPRESS,
                   metavar="TOKENS",
                   help=length_cap_help(f" (the papers' estimator), 'none' = every pair "
                                        f"(--input only; a store has its own; default "
                                        f"{d['length_cap']:g})"))
    _model_options(p)
    admission_argument(p)
    p.add_argument("--seed", type=int, default=0, help="random seed")
    p.add_argument("--top-words", type=int, default=20, help="top words stored per topic")
    p.add_argument("--background-spread", type=spread_arg, default=BACKGROUND_SPREAD,
                   metavar="FRACTION",
                   help="background words: a word's background level is the probability it "
                        "has in at least this fraction of the topics; top words are ranked by "
                        "what a topic adds above it, and the words it explains are reported "
                        "(default %(default)s; 'none': rank by probability)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bars")
    # Icechunk's logging is set up (and Icechunk imported) only for a fit on a store.
    p.set_defaults(func=run, uses_store=lambda args: args.store is not None)


def _model_options(p) -> None:
    """The options of the model (method, anchors, recovery, rectification, refinement)."""
    p.add_argument("--method", choices=METHODS, default="anchor",
                   help="anchor = anchor words + recovery (JSMF/Arora); anchorfree = "
                        "determinant maximization (Huang 2016); tsvd = thresholded SVD "
                        "(Bansal 2014, needs --input)")
    p.add_argument("--anchors", choices=ANCHOR_METHODS, default="qr",
                   help="anchor finder: qr = sparse implicit pivoted QR (JSMF), "
                        "fast = FastAnchorWords (Arora 2013), ddp/rp = data-dependent / random "
                        "projections (Ding 2014, need --input)")
    anchor_arguments(p)
    anchorfree_arguments(p, ModelSettings)
    p.add_argument("--recover", choices=RECOVER_METHODS, default="admm",
                   help="recovery: admm (JSMF), l2/kl (exponentiated gradient), inverse (baseline)")
    p.add_argument("--no-rectify", dest="rectify", action="store_false",
                   help="skip alternating-projection rectification")
    p.add_argument("--rectify-method", choices=RECTIFY_METHODS, default=ModelSettings.rectify_method,
                   help="lowrank = alternating projection on a V x K factor plus corrections, "
                        "never a V x V array (memory O(V K)); ap = dense (JSMF Algorithm 1, "
                        "16 V² bytes); auto = lowrank, or ap with --recover kl")
    p.add_argument("--rectify-rows", type=int, default=None, metavar="N",
                   help="lowrank: words whose rows and columns are checked for negative entries "
                        "each iteration (default 10 K + 1000)")
    p.add_argument("--rectify-iters", type=int, default=150, help="rectification iteration cap")
    p.add_argument("--rectify-dtype", choices=("float64", "float32"), default="float32",
                   help="working precision of rectification: float32 halves its memory and "
                        "is ~1.8x faster, at ~2e-5 relative deviation of the iterate")
    p.add_argument("--rectify-tol", type=float, default=ModelSettings.rectify_tol,
                   help="stop rectifying when an iteration changes the matrix by less than this "
                        "(relative, default %(default)g); 1e-4 is ~1.5x slower and gives more "
                        "distinct topics (benchmarks/README.md)")
    p.add_argument("--rectify-anderson", type=int, default=5, metavar="M",
                   help="history length of the Anderson acceleration of rectification; "
                        "0 = plain alternating projection (JSMF Algorithm 1 as published)")
    p.add_argument("--refine", choices=REFINE_METHODS, default=ModelSettings.refine,
                   help="after recovery, EM on the raw word pairs' likelihood from the anchor "
                        "model: joint = its pair distribution B R Bᵀ, pairs = the biterm "
                        "mixture (Yan 2013), auto = joint on short documents (mean < "
                        f"{REFINE_AUTO_MAX_LENGTH:g} tokens); default %(default)s")
    p.add_argument("--refine-iters", type=int, default=ModelSettings.refine_max_iter,
                   metavar="N", help="most EM iterations of --refine (default %(default)s)")
    p.add_argument("--supertopics", type=int, default=0, metavar="N",
                   help="also factorize the topic-topic matrix into N supertopics (JSMF §4) "
                        "and store the hierarchy in the snapshot; 0 = off")


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


def read_documents(paths, *, format, text_field, tokenizer, progress=True):
    """Read and tokenize every record of ``paths``.

    Returns
    -------
    docs : list of list of str
    stats : dict with ``lines``, ``documents`` and ``rejected`` (a reason -> count mapping)
    """
    docs: list[list[str]] = []
    rejected: collections.Counter[str] = collections.Counter()
    lines = 0
    bar = _progress_bar(progress)
    for path in paths:
        if not Path(path).is_file():
            raise InputError(f"input file {str(path)!r} does not exist")
        for _, raw in iter_lines(path):
            lines += 1
            try:
                # The daemon's and `ingest`'s rule (no size or token limits here).
                _, tokens = record_tokens(raw, tokenizer, format=format, text_field=text_field)
            except DecodeError as exc:
                rejected[exc.reason] += 1
                continue
            except Exception:  # noqa: BLE001 - as the ingest loop: one line never stops a fit
                log.error("rejected line %d of %s as unprocessable", lines, path, exc_info=True)
                rejected["unprocessable"] += 1
                continue
            if not tokens:
                rejected["no_tokens"] += 1
                continue
            docs.append(tokens)
            bar.update()
    bar.close()
    return docs, {"lines": lines, "documents": len(docs), "rejected": dict(rejected)}


def _input_options(args) -> dict:
    """The ``--input``-only options (:data:`_INPUT_ONLY`), defaults filled in.

    With ``--store`` any of them given is refused rather than applied to the store's
    vocabulary. The store's matrix is the estimator over its own active words, each document
    weighted by its number of in-vocabulary tokens (``--length-cap``): keeping the words that
    pass ``--min-df``/``--max-df``/``--vocab-size`` would cut a sub-matrix out of it, which is
    not the estimator over the smaller vocabulary (what ``fit --input`` with the same options
    computes), and with forgetting the store's document frequencies are decayed sums rather
    than counts. The file options (``--format``, ``--text-field``, ``--stopwords``) and the
    document weighting (``--length-cap``) were applied when the store was ingested. So a store's vocabulary is chosen at ingestion
    (``anchorstream ingest --capacity --admit-threshold --max-df``); ignoring the options
    silently would leave the snapshot recording settings that had no effect.

    Raises
    ------
    InputError
        With ``--store``, naming every ``--input``-only option given.
    """
    given = [dest for dest in _INPUT_ONLY if hasattr(args, dest)]
    if args.store is not None and given:
        flags = ", ".join(_INPUT_ONLY[dest][0] for dest in given)
        raise InputError(
            f"{flags} only appl{'ies' if len(given) == 1 else 'y'} to --input: with --store "
            "the vocabulary is the store's active words, chosen when it was ingested "
            "(anchorstream ingest --capacity, --admit-threshold, --max-df, --stopwords); "
            f"drop {flags}"
        )
    return {dest: getattr(args, dest, default) for dest, (_, default) in _INPUT_ONLY.items()}


class _CpuClock:
    """CPU seconds of this process (every thread) per phase of the fit, for the manifest's
    ``extra.cpu_seconds`` and the benchmarks' breakdown.

    ``start`` is what the process spent before :func:`run`: interpreter start, imports and
    argument parsing. Each :meth:`mark` charges the CPU time since the previous mark to a
    phase; the model's stages are charged through :meth:`on_stage`.
    """

    def __init__(self):
        self.last = time.process_time()
        self.seconds: dict[str, float] = {"start": self.last}

    def mark(self, name: str) -> None:
        now = time.process_time()
        self.seconds[name] = self.seconds.get(name, 0.0) + now - self.last
        self.last = now

    def on_stage(self, name: str, seconds: float | None) -> None:
        """The model's stage hook: its start closes the phase before, its end charges it."""
        self.mark("between" if seconds is None else name)


def run(args) -> int:
    t_start = time.perf_counter()
    clock = _CpuClock()
    opts = _input_options(args)
    args.rectify_method = rectify_method_for(args.rectify_method, args.recover)  # "auto", once
    if args.out.exists():
        # Checked again when the snapshot is written; here so that a fit is not wasted.
        raise InputError(f"{args.out} already exists; snapshots are immutable, "
                         "choose a new path")
    if args.partitions and args.store is None:
        raise InputError("--partitions names the partitions of a partitioned --store; "
                         "drop it with --input")
    if args.admission_min_share is not None and args.store is None:
        raise InputError("--admission-min-share corrects a streaming --store's counts; "
                         "--input counts every document: drop it with --input")
    if args.store is not None:
        counts = _counts_from_store(args)
        clock.mark("read")
    else:
        counts = _counts_from_input(args, opts, t_start, clock)
    short = counts.short_documents
    print(f"{counts.cooc.num_docs} documents, {len(counts.vocabulary)} words, fitting "
          f"{args.topics} topics ({time.perf_counter() - t_start:.1f} s)"
          + (f"; {short} more had fewer than 2 words of the vocabulary, so no word pair"
             if short else ""), file=sys.stderr)
    fitted = _fit(args, counts, clock)
    path = _write(args, fitted, counts, clock.seconds)
    clock.mark("write")
    _print_background(path)
    print(f"wrote {path} in {time.perf_counter() - t_start:.1f} s", file=sys.stderr)
    if not args.quiet:
        print("CPU seconds: " + ", ".join(f"{k} {v:.2f}" for k, v in clock.seconds.items()),
              file=sys.stderr)
    return 0


def _print_background(path: Path, shown: int = 20) -> None:
    """The background words the snapshot reports (its ``extra["background_words"]``), from
    its manifest alone: the snapshot was just written, so nothing else is read back."""
    manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    found = (manifest.get("extra") or {}).get("background_words")
    if not found:
        return
    words = " ".join(entry[0] for entry in found["words"][:shown])
    more = found["count"] - min(shown, len(found["words"]))
    print(f"background words ({found['count']}, in at least {found['spread']:g} of the "
          f"topics; kept out of the top words): {words or '-'}"
          + (f" ... and {more} more" if more > 0 else ""), file=sys.stderr)


@dataclass
class _Counts:
    """What a fit starts from: the co-occurrences over a vocabulary, and where they came from."""

    cooc: Any
    vocabulary: Any
    documents: Any = None      # the document-term matrix (--input), else None
    iterate: Any = None        # a prefaulted rectification workspace, or None
    source: dict = field(default_factory=dict)
    #: What chose the vocabulary, for the snapshot's settings: only what was used.
    vocabulary_settings: dict = field(default_factory=dict)

    @property
    def short_documents(self) -> int:
        """Documents (--input) with fewer than 2 words of the vocabulary: no word pair."""
        if self.documents is None:
            return 0
        return int(np.count_nonzero(np.asarray(self.documents.sum(axis=1)).ravel() < 2))


def _counts_from_store(args) -> _Counts:
    from anchorstream.store import (
        find_partitions,
        open_committed,
        open_committed_sparse,
        read_partitions,
    )

    # The low-rank rectifier reads the counts sparse, shard by shard: no V x V array.
    anchor_words = args.method == "anchor" and method_spec("anchor", args.anchors).anchor_words
    implicit = anchor_words and args.rectify and args.rectify_method == "lowrank"
    parts = find_partitions(args.store, named=args.partitions)
    if parts is not None:
        # A partitioned root: every partition's head summed by word, as the refresher does.
        st = read_partitions(args.store, parts, sparse=implicit)
    else:
        st = (open_committed_sparse if implicit else open_committed)(args.store)
    # The daemon's refresher applies the same correction (daemon/refresh.py).
    share = MIN_SHARE if args.admission_min_share is None else args.admission_min_share
    cooc = correct_admission(st.cooccurrence, st.admission, min_share=share)
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
    return _Counts(cooc, vocabulary, source=source)


def _counts_from_input(args, opts: dict, t_start: float, clock: _CpuClock) -> _Counts:
    progress = not args.quiet and sys.stderr.isatty()
    tokenizer = stopwords_tokenizer(opts["stopwords"])
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
        tokenizer=tokenizer, progress=progress,
    )
    clock.mark("read")
    bad = sum(stats["rejected"].values())
    print(
        f"read {stats['lines']} lines: {stats['documents']} documents, {bad} rejected"
        + (f" {stats['rejected']}" if bad else "")
        + f" ({time.perf_counter() - t_start:.1f} s)",
        file=sys.stderr,
    )
    if not docs:
        raise InputError("no usable documents in the input" + _no_documents_hint(stats, opts))
    vocabulary = select_vocabulary(
        docs, min_df=opts["min_df"], max_df=opts["max_df"], max_size=opts["vocab_size"]
    )
    if len(vocabulary) <= args.topics:
        raise InputError(
            f"the vocabulary has {len(vocabulary)} words (min_df={opts['min_df']}, "
            f"max_df={opts['max_df']}), need more than --topics={args.topics}; "
            "lower --min-df or add documents"
        )
    clock.mark("vocabulary")
    X = count_matrix(docs, vocabulary)
    del docs  # token lists of the whole corpus: by far the largest Python object here
    counts, iterate = prefault.take(len(vocabulary))
    cap = opts["length_cap"]
    cooc = (DocumentCooccurrence(X, length_cap=cap) if implicit
            else cooccurrence(X, out=counts, length_cap=cap))
    clock.mark("count")
    source = {
        "input": [str(p) for p in args.input],
        "format": opts["format"],
        "text_field": opts["text_field"],
        **stats,
    }
    vocabulary_settings = {
        "vocab_size": opts["vocab_size"],
        "min_df": opts["min_df"],
        "max_df": opts["max_df"],
        "stopwords": opts["stopwords"],
        "length_cap": opts["length_cap"],
        "tokenizer": (tokenizer.describe() if hasattr(tokenizer, "describe")
                      else repr(tokenizer)),
    }
    return _Counts(cooc, vocabulary, X, iterate, source, vocabulary_settings)


def _fit(args, counts: _Counts, clock: _CpuClock):
    def on_stage(name, seconds):
        clock.on_stage(name, seconds)
        if seconds is not None and not args.quiet:
            print(f"  {name:<13} {seconds:7.2f} s", file=sys.stderr)

    return fit_topics(
        args.topics,
        cooc=counts.cooc,
        documents=counts.documents,
        method=args.method,
        anchor_method=args.anchors,
        random_state=args.seed,
        on_stage=on_stage,
        rectify=args.rectify,
        rectify_method=args.rectify_method,
        rectify_rows=args.rectify_rows,
        rectify_max_iter=args.rectify_iters,
        rectify_tol=args.rectify_tol,
        rectify_dtype=args.rectify_dtype,
        rectify_workspace=counts.iterate,
        rectify_anderson=args.rectify_anderson,
        overwrite_cooc=True,  # built for this fit; only num_docs is read afterwards
        warm_state=False,  # no refit follows a one-off fit
        anchor_min_df=args.anchor_min_df,
        anchor_candidates=args.anchor_candidates,
        anchor_noise=args.anchor_noise,
        anchorfree_words=args.anchorfree_words,
        anchorfree_slack=args.anchorfree_slack,
        recover_method=args.recover,
        refine=args.refine,
        refine_max_iter=args.refine_iters,
    )


def _write(args, fitted, counts: _Counts, cpu_seconds: dict[str, float]) -> Path:
    """Write the fit's snapshot to ``args.out``; returns its path."""
    model = fitted.model
    vocabulary = counts.vocabulary
    settings = {
        **(model.get_params() if model is not None else {
            "n_topics": args.topics, "rectify": args.rectify, "anchor_method": args.anchors,
            "anchor_min_df": args.anchor_min_df, "random_state": args.seed,
            **({"anchorfree_words": args.anchorfree_words,
                "anchorfree_slack": args.anchorfree_slack} if args.method == "anchorfree" else {}),
        }),
        "method": args.method,
        **counts.vocabulary_settings,
    }
    hierarchy = None
    if args.supertopics:
        from anchorstream.model.correlations import hierarchy as build_hierarchy

        hierarchy = build_hierarchy(fitted.topic_topic, args.supertopics,
                                    random_state=args.seed)
    quality = {} if model is None else {
        "rectify_iterations": model.n_iter_.get("rectify", 0),
        "rectify_residual": model.rectify_residual_,
        "refine": model.refine_,
        **({} if model.refine_loglik_ is None else {
            "refine_iterations": model.n_iter_["refine"],
            "refine_loglik": list(model.refine_loglik_)}),
    }
    return write_snapshot(
        args.out,
        vocabulary=list(vocabulary),
        topic_word=fitted.topic_word.T,
        topic_topic=fitted.topic_topic,
        anchors=[vocabulary[a] for a in fitted.anchors],
        prevalence=fitted.prevalence,
        num_docs=int(counts.cooc.num_docs),
        settings=settings,
        source=counts.source,
        extra={
            "alpha": None if model is None or model.alpha_ is None
            else np.asarray(model.alpha_).tolist(),
            "timings_seconds": fitted.timings,
            # CPU seconds (all threads) per phase up to here; writing is not in it.
            "cpu_seconds": {k: round(v, 3) for k, v in cpu_seconds.items()},
            "fit": quality,
            **({"hierarchy": hierarchy} if hierarchy else {}),
        },
        n_top_words=args.top_words,
        background_spread=args.background_spread,
    )
