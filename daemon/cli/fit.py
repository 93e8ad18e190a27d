"""``anchorstream fit``: the whole pipeline over files (or a store), written as one snapshot."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

import numpy as np

from anchorstream.text.decode import FORMATS
from anchorstream.errors import InputError
from anchorstream.model.background import (BACKGROUND_SPREAD, LABEL_WORDS,
                                            SHORT_DOCUMENTS)
from anchorstream.model.methods import fit_topics
from anchorstream.model.registry import (ANCHOR_METHODS, METHODS, RECOVER_WEIGHTS,
                                         RECTIFY_METHODS, rectify_method_for)
from anchorstream.model.pipeline import RECOVER_METHODS, ModelSettings
from anchorstream.model.refine import (REFINE_AUTO_MAX_LENGTH, REFINE_METHODS,
                                       refine_method_for)
from anchorstream.snapshot import write_snapshot
from anchorstream.snapshot.layout import MANIFEST
from anchorstream.text.links import LINK_CHOICES
from anchorstream.text.windows import AUTO, auto_rule
from daemon.cli import FIRST_RUN, kernels_cached
from daemon.cli.fit_counts import Counts, counts_from_input, counts_from_store
from daemon.cli.options import (DUPLICATE_MEMORY, LENGTH_CAP, LINKS_HELP, MAX_DF, MIN_DF,
                                 STOPWORDS, STOPWORDS_HELP, VOCAB_SIZE, HelpFormatter,
                                 admission_argument, anchor_arguments, anchorfree_arguments,
                                 duplicate_memory_help, length_cap_arg, length_cap_help,
                                 int_arg, nonnegative_int_arg, positive_int_arg,
                                 refine_window_argument, spread_arg)
from daemon.ingest.records import MAX_BYTES, MAX_TOKENS

log = logging.getLogger("anchorstream.fit")

#: Options that only apply to ``--input`` (reading and tokenizing files, choosing the
#: vocabulary), with their defaults. They default to "not given" so that ``--store`` can
#: refuse them (see :func:`_input_options`).
_INPUT_ONLY = {
    "format": ("--format", "json"),
    "text_field": ("--text-field", "text"),
    "max_bytes": ("--max-bytes", MAX_BYTES),
    "max_tokens": ("--max-tokens", MAX_TOKENS),
    "vocab_size": ("--vocab-size", VOCAB_SIZE),
    "min_df": ("--min-df", MIN_DF),
    "max_df": ("--max-df", MAX_DF),
    "stopwords": ("--stopwords", STOPWORDS),
    "links": ("--links", "auto"),
    "length_cap": ("--length-cap", LENGTH_CAP),
    "refine_window": ("--refine-window", AUTO),
    "duplicate_memory": ("--duplicate-memory", DUPLICATE_MEMORY),
}


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
    p.add_argument("--topics", "-k", type=positive_int_arg, required=True,
                   help="number of topics K")
    # SUPPRESS: an option not given leaves no attribute, which tells "not given" from "given
    # the default" (and keeps the help free of "default: None"); defaults are in _INPUT_ONLY.
    d = {dest: default for dest, (_, default) in _INPUT_ONLY.items()}
    p.add_argument("--format", choices=FORMATS, default=argparse.SUPPRESS,
                   help=f"input record format (--input only; default {d['format']})")
    p.add_argument("--text-field", default=argparse.SUPPRESS,
                   help=f"JSON field holding the text (--input only; default {d['text_field']})")
    p.add_argument("--max-bytes", type=positive_int_arg, default=argparse.SUPPRESS,
                   help=f"longer lines are rejected as oversized, as the daemon and ingest do "
                        f"(--input only; default {d['max_bytes']}, message.max_bytes)")
    p.add_argument("--max-tokens", type=positive_int_arg, default=argparse.SUPPRESS,
                   help=f"tokens counted per document at most, as the daemon and ingest count "
                        f"(--input only; default {d['max_tokens']}, message.max_tokens)")
    p.add_argument("--vocab-size", type=positive_int_arg, default=argparse.SUPPRESS,
                   help=f"vocabulary size cap V (--input only; default {d['vocab_size']})")
    p.add_argument("--min-df", type=positive_int_arg, default=argparse.SUPPRESS,
                   help=f"minimum document frequency of a word (--input only; default "
                        f"{d['min_df']})")
    p.add_argument("--max-df", type=float, default=argparse.SUPPRESS,
                   help=f"maximum document frequency of a word, as a ratio of documents "
                        f"(--input only; default {d['max_df']})")
    p.add_argument("--stopwords", default=argparse.SUPPRESS,
                   help=f"{STOPWORDS_HELP} (--input only; default {d['stopwords']})")
    p.add_argument("--links", choices=LINK_CHOICES, default=argparse.SUPPRESS,
                   help=f"{LINKS_HELP} (--input only; a store has its own; default "
                        f"{d['links']})")
    p.add_argument("--length-cap", type=length_cap_arg, default=argparse.SUPPRESS,
                   metavar="TOKENS",
                   help=length_cap_help(f" (the papers' estimator), 'none' = every pair "
                                        f"(--input only; a store has its own; default "
                                        f"{d['length_cap']:g})"))
    p.add_argument("--duplicate-memory", type=nonnegative_int_arg, default=argparse.SUPPRESS,
                   metavar="N",
                   help=duplicate_memory_help(f" (--input only: a store skipped its repeats "
                                              f"as it counted; default "
                                              f"{d['duplicate_memory']})"))
    _model_options(p)
    refine_window_argument(
        p, help="count the refinement's word pairs in windows of this many consecutive "
                "tokens of each document instead of whole documents (--refine auto "
                "then refines when the windows are short); for long documents that "
                "move from subject to subject: manuals, mail; 'none' = whole documents; "
                f"default auto = {auto_rule('--topics')} (with --store: the windows the "
                "store kept, ingest --refine-window)")
    admission_argument(p)
    p.add_argument("--seed", type=nonnegative_int_arg, default=0, help="random seed, >= 0")
    p.add_argument("--top-words", type=int_arg(20), default=20, help="top words stored per topic")
    p.add_argument("--background-spread", type=spread_arg, default=BACKGROUND_SPREAD,
                   metavar="FRACTION",
                   help="background words: a word's background level is the probability it "
                        "has in at least this fraction of the topics (two at least); top words "
                        "are ranked by what a topic adds above it (on documents under "
                        f"{SHORT_DOCUMENTS:g} tokens only as far as the labels need to tell "
                        "the topics apart), and the words it explains are reported "
                        "(default %(default)s; 'none': rank by probability)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bars")
    # Icechunk's logging is set up (and Icechunk imported) only for a fit on a store.
    # One fit and its synced snapshot: nothing to tear down (daemon.cli.entry).
    p.set_defaults(func=run, uses_store=lambda args: args.store is not None, quick_exit=True)


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
    p.add_argument("--recover-weights", choices=RECOVER_WEIGHTS,
                   default=ModelSettings.recover_weights,
                   help="--recover admm: chi2 = each column of the loss divided by its word's "
                        "probability (chi-square metric), none = JSMF's unweighted loss")
    p.add_argument("--no-rectify", dest="rectify", action="store_false",
                   help="skip alternating-projection rectification")
    p.add_argument("--rectify-method", choices=RECTIFY_METHODS, default=ModelSettings.rectify_method,
                   help="lowrank = alternating projection on a V x K factor plus corrections, "
                        "never a V x V array (memory O(V K)); ap = dense (JSMF Algorithm 1, "
                        "16 V² bytes); auto = lowrank, or ap with --recover kl")
    p.add_argument("--rectify-rows", type=positive_int_arg, default=None, metavar="N",
                   help="lowrank: words whose rows and columns are checked for negative entries "
                        "each iteration (default 10 K + 1000)")
    p.add_argument("--rectify-iters", type=positive_int_arg, default=150,
                   help="rectification iteration cap")
    p.add_argument("--rectify-dtype", choices=("float64", "float32"), default="float32",
                   help="working precision of rectification: float32 halves its memory and "
                        "is ~1.8x faster, at ~2e-5 relative deviation of the iterate")
    p.add_argument("--rectify-tol", type=float, default=ModelSettings.rectify_tol,
                   help="stop rectifying when an iteration changes the matrix by less than this "
                        "(relative, default %(default)g); 1e-4 is ~1.5x slower and gives more "
                        "distinct topics (benchmarks/README.md)")
    p.add_argument("--rectify-anderson", type=nonnegative_int_arg, default=5, metavar="M",
                   help="history length of the Anderson acceleration of rectification; "
                        "0 = plain alternating projection (JSMF Algorithm 1 as published)")
    p.add_argument("--refine", choices=REFINE_METHODS, default=ModelSettings.refine,
                   help="after recovery, EM on the raw word pairs' likelihood from the anchor "
                        "model: joint = its pair distribution B R Bᵀ, pairs = the biterm "
                        "mixture (Yan 2013), auto = joint on short documents (mean < "
                        f"{REFINE_AUTO_MAX_LENGTH:g} tokens); default %(default)s")
    p.add_argument("--refine-iters", type=positive_int_arg,
                   default=ModelSettings.refine_max_iter,
                   metavar="N", help="most EM passes of --refine, SQUAREM-accelerated (default "
                   "%(default)s; it stops earlier once a pass gains < 1e-5 relative)")
    p.add_argument("--supertopics", type=nonnegative_int_arg, default=0, metavar="N",
                   help="also factorize the topic-topic matrix into N supertopics (JSMF §4) "
                        "and store the hierarchy in the snapshot; 0 = off")


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
    # --refine-window applies to both: a store cuts the windows as documents arrive.
    given = [dest for dest in _INPUT_ONLY if hasattr(args, dest) and dest != "refine_window"]
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
    if not kernels_cached():
        print(f"note: {FIRST_RUN}", file=sys.stderr)
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
        counts = counts_from_store(args)
        clock.mark("read")
    else:
        counts = counts_from_input(args, opts, t_start, clock)
    short = counts.short_documents
    print(f"{counts.cooc.num_docs} documents, {len(counts.vocabulary)} words, fitting "
          f"{args.topics} topics ({time.perf_counter() - t_start:.1f} s)"
          + (f"; {short} more had fewer than 2 words of the vocabulary, so no word pair"
             if short else ""), file=sys.stderr)
    _warn_unrefined_windows(args, counts)
    fitted = _fit(args, counts, clock)
    path = _write(args, fitted, counts, clock.seconds)
    clock.mark("write")
    _print_background(path)
    print(f"wrote {path} in {time.perf_counter() - t_start:.1f} s", file=sys.stderr)
    if not args.quiet:
        print("CPU seconds: " + ", ".join(f"{k} {v:.2f}" for k, v in clock.seconds.items()),
              file=sys.stderr)
    return 0


def _warn_unrefined_windows(args, counts: Counts) -> None:
    """``--refine-window`` whose windows are too long for ``--refine auto`` to refine: the
    windows were counted for nothing, which the user should hear before the fit."""
    windows = counts.refine_cooc
    if (windows is None or getattr(args, "refine_window", AUTO) == AUTO
            or refine_method_for(args.refine, windows.num_docs, windows.num_tokens) != "none"):
        return
    mean = windows.num_tokens / max(windows.num_docs, 1)
    print(f"warning: --refine-window {args.refine_window}: the windows hold {mean:.1f} words "
          f"of the vocabulary on average, not under {REFINE_AUTO_MAX_LENGTH:g}, so --refine "
          "auto does not refine; choose a shorter window or --refine joint", file=sys.stderr)


def _print_background(path: Path, shown: int = 20) -> None:
    """The background words the snapshot reports (its ``extra["background_words"]``), from
    its manifest alone: the snapshot was just written, so nothing else is read back."""
    manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    found = (manifest.get("extra") or {}).get("background_words")
    if not found:
        return
    words = " ".join(entry[0] for entry in found["words"][:shown])
    more = found["count"] - min(shown, len(found["words"]))
    ranking = "top words ranked above that level"
    if found.get("label_cap") is not None:  # short documents
        ranking = (f"top words ranked above {found['level_weight']:g} x that level, each "
                   f"in the top {LABEL_WORDS} of {found['label_cap']} topics at most")
    print(f"background words ({found['count']}, in at least {found['spread']:g} of the "
          f"topics; {ranking}): {words or '-'}"
          + (f" ... and {more} more" if more > 0 else ""), file=sys.stderr)


def _fit(args, counts: Counts, clock: _CpuClock):
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
        recover_weights=args.recover_weights,
        refine=args.refine,
        refine_max_iter=args.refine_iters,
        refine_cooc=counts.refine_cooc,
    )


def _write(args, fitted, counts: Counts, cpu_seconds: dict[str, float]) -> Path:
    """Write the fit's snapshot to ``args.out``; returns its path."""
    model = fitted.model
    vocabulary = counts.vocabulary
    settings = {
        **(model.get_params() if model is not None else {
            "n_topics": args.topics, "rectify": args.rectify, "anchor_method": args.anchors,
            "anchor_min_df": args.anchor_min_df, "random_state": args.seed,
            "refine": args.refine, "refine_max_iter": args.refine_iters,
            **({"anchorfree_words": args.anchorfree_words,
                "anchorfree_slack": args.anchorfree_slack} if args.method == "anchorfree" else {}),
            # DDP's, RP's and TSVD's word groups are rectified and recovered as the pipeline is.
            **({"rectify_method": args.rectify_method, "recover_method": args.recover,
                "recover_weights": args.recover_weights}
               if args.method == "tsvd" or args.anchors in ("ddp", "rp") else {}),
        }),
        "method": args.method,
        **counts.vocabulary_settings,
    }
    hierarchy = None
    if args.supertopics:
        from anchorstream.model.correlations import hierarchy as build_hierarchy

        hierarchy = build_hierarchy(fitted.topic_topic, args.supertopics,
                                    random_state=args.seed)
    quality = {"refine": fitted.refine,
               **({"refine_iterations": fitted.refine_passes} if fitted.refine != "none"
                  else {}),
               **({} if fitted.estimate is None else {"estimate": fitted.estimate})}
    if model is not None:
        quality.update({
            "rectify_iterations": model.n_iter_.get("rectify", 0),
            "rectify_residual": model.rectify_residual_,
            **({} if model.refine_loglik_ is None else {
                "refine_loglik": list(model.refine_loglik_)}),
        })
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
        mean_doc_length=counts.cooc.num_tokens / max(counts.cooc.num_docs, 1),
    )
