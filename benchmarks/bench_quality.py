#!/usr/bin/env python
"""Quality benchmark (issue 16): anchorstream's candidate settings and three peers on every corpus.

A quality benchmark that cannot be tuned to one corpus: short, medium, technical and long real
text with held-out documents nobody tuned to, and semi-synthetic corpora drawn from a known LDA
model at three document lengths and three sizes. Every method is scored the same way from its
top words as strings (:mod:`benchmarks.quality.metrics`).

Methods: each entry of :data:`CANDIDATES` (``anchorstream fit`` with those extra arguments),
anchortopics (OTFR defaults), gensim online LDA and tomotopy Gibbs LDA
(:mod:`benchmarks.quality.peers`). Defaults should be chosen from the summary table, never from
one row.

Run (from the repository root, in the benchmark environment)::

    benchmarks/.cache/venv/bin/python benchmarks/bench_quality.py --markdown
    benchmarks/.cache/venv/bin/python benchmarks/bench_quality.py --quick
    ... --corpora tech,synth30-30k --candidates default --peers tomotopy
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))  # `benchmarks.quality` and this checkout's `anchorstream`

import numpy as np  # noqa: E402

from benchmarks.quality import report  # noqa: E402
from benchmarks.quality.corpora import (  # noqa: E402
    NAMES, cache_root, load, parse_repeated, parse_sample, parse_synth)
from benchmarks.quality.metrics import evaluate  # noqa: E402
from benchmarks.quality.peers import PEERS, fit_peer  # noqa: E402
from benchmarks.quality.run import heldout_index, run, warm_up  # noqa: E402

#: anchorstream's candidate configurations: name -> extra `anchorstream fit` arguments.
#: Add a line to compare a new option on every corpus.
CANDIDATES: dict[str, list[str]] = {
    "default": [],
    "lowrank": ["--rectify-method", "lowrank"],  # the default since session 18
    "ap": ["--rectify-method", "ap"],  # dense alternating projection (the default before)
    "estimator": ["--length-cap", "2"],  # every document the same: the papers' (old) default
    "copies": ["--duplicate-memory", "0"],  # every repeated document counted (before session 55)
    "mdf10": ["--anchor-min-df", "10"],  # the old anchor threshold
    "nocap": ["--anchor-candidates", "0"],  # every word in anchor_min_df documents (before 40 K)
    "cap30": ["--anchor-candidates", "30"],
    # Each candidate's sampling noise taken off its distance (anchors.row_noise): 0 / 1 / 2 times.
    "noise0": ["--anchor-noise", "0"],
    "noise1": ["--anchor-noise", "1"],
    "noise2": ["--anchor-noise", "2"],
    "anchorfree": ["--method", "anchorfree"],  # AnchorFree (Huang 2016) with its defaults
    # The seed methods with and without the pair refinement they get on short documents.
    "ddp": ["--anchors", "ddp"],
    "rp": ["--anchors", "rp"],
    "tsvd": ["--method", "tsvd"],
    "ddp-none": ["--anchors", "ddp", "--refine", "none"],
    "rp-none": ["--anchors", "rp", "--refine", "none"],
    "tsvd-none": ["--method", "tsvd", "--refine", "none"],
    "anchorfree-none": ["--method", "anchorfree", "--refine", "none"],
    # AnchorFree without the noise slack (C >= 0 exactly, as the paper), with 10 K or 20 K
    # constraint words instead of 6 K, and both (benchmarks/README.md, "AnchorFree").
    "af-exact": ["--method", "anchorfree", "--anchorfree-slack", "0"],
    "af-w20": ["--method", "anchorfree", "--anchorfree-words", "20"],
    "af-w10": ["--method", "anchorfree", "--anchorfree-words", "10"],
    "af-w20-exact": ["--method", "anchorfree", "--anchorfree-words", "20",
                     "--anchorfree-slack", "0"],
    # Background words (benchmarks/README.md, "Background words"): top words by probability
    # (the old default), and the background level taken in a half / a quarter of the topics.
    "nobg": ["--background-spread", "none"],
    "bg50": ["--background-spread", "0.5"],
    "bg25": ["--background-spread", "0.25"],
    # Pair refinement (benchmarks/README.md, "Pair refinement"): EM on the raw pairs after
    # recovery, the anchor model's own B R Bᵀ (joint) or the biterm mixture (pairs).
    "refine-none": ["--refine", "none"],
    "refine-joint": ["--refine", "joint"],
    "refine-pairs": ["--refine", "pairs"],
    "refine-joint60": ["--refine", "joint", "--refine-iters", "60"],
    "iters20": ["--refine-iters", "20"],
    "iters40": ["--refine-iters", "40"],
    # The refinement's pairs counted in windows of 24 / 12 tokens of each document (auto then
    # refines every corpus; benchmarks/README.md, "The refinement's pairs in windows").
    "window24": ["--refine-window", "24"],
    # The default before session 48 (whole documents at every length).
    "whole": ["--refine-window", "none"],
    # Links removed before the split (session 89: posts whose links fill the topics).
    "links": ["--links", "drop"],
    "window12": ["--refine-window", "12"],
}
QUICK_CORPORA = ("medium", "synth8-10k")
QUICK_TOMOTOPY_ITERATIONS = 100
TAG = "bench_quality"


def _is_corpus(name: str) -> bool:
    return (name in NAMES or parse_synth(name) is not None or parse_sample(name) is not None
            or parse_repeated(name) is not None)


def _csv(choices):
    def parse(text: str) -> list[str]:
        items = [x.strip() for x in text.split(",") if x.strip()]
        known = _is_corpus if choices is NAMES else choices.__contains__
        bad = [x for x in items if not known(x)]
        if bad:
            also = (", synth{L}-{N}k[-a{alpha}] or {real corpus}@{N}" if choices is NAMES
                    else "")
            raise argparse.ArgumentTypeError(
                f"unknown {bad}; choose from {', '.join(choices)}{also}")
        return items
    return parse


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--corpora", type=_csv(NAMES), default=None,
                   help="comma-separated corpora (default: all; --quick: "
                        + ",".join(QUICK_CORPORA) + ")")
    p.add_argument("--candidates", type=_csv(tuple(CANDIDATES)), default=list(CANDIDATES),
                   help="comma-separated anchorstream candidates: " + ", ".join(CANDIDATES))
    p.add_argument("--peers", type=_csv(PEERS), default=list(PEERS),
                   help="comma-separated peers ('' for none)")
    p.add_argument("--quick", action="store_true",
                   help=f"smoke run in minutes: {', '.join(QUICK_CORPORA)}, tomotopy at most "
                        f"{QUICK_TOMOTOPY_ITERATIONS} iterations")
    p.add_argument("--tomotopy-max-iterations", type=int, default=None,
                   help="cap on tomotopy's Gibbs iterations (default 1000; see peers.py)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--topics", "-k", type=int, default=None,
                   help="K for every corpus and method (default: each corpus's own)")
    p.add_argument("--vocab-size", "-V", type=int, default=None,
                   help="V, the vocabulary cap, for every corpus and method (default: each "
                        "corpus's own)")
    p.add_argument("--markdown", action="store_true",
                   help="write the output into benchmarks/README.md")
    p.add_argument("--render", type=Path, default=None, metavar="RESULTS_JSON",
                   help="only render a saved run (benchmarks/.cache/quality/results/*.json)")
    args = p.parse_args(argv)
    if args.corpora is None:
        args.corpora = list(QUICK_CORPORA if args.quick else NAMES)
    if args.tomotopy_max_iterations is None:
        args.tomotopy_max_iterations = QUICK_TOMOTOPY_ITERATIONS if args.quick else 1000
    return args


def fit_all(args, name: str) -> list[dict]:
    """Every candidate and peer on one corpus; one row each, scored."""
    corpus = load(name)
    index = heldout_index(name)
    K = args.topics or corpus.n_topics
    V = args.vocab_size or corpus.vocab_size
    rows = []
    for cand in args.candidates:
        print(f"  anchorstream {cand} ...", flush=True)
        row = run(name, CANDIDATES[cand], seed=args.seed, topics=K, vocab_size=V)
        row.update(method=f"anchorstream {cand}",
                   settings="`anchorstream fit`" + (f" `{' '.join(CANDIDATES[cand])}`"
                                                    if CANDIDATES[cand] else " defaults"))
        chosen = row.get("stopwords")
        told = "--stopwords" in CANDIDATES[cand]
        if chosen is not None and chosen != corpus.stopwords and not told:
            print(f"    note: --stopwords auto chose {chosen!r}; the peers get the corpus's "
                  f"{corpus.stopwords!r}", flush=True)
        rows.append(row)
    for peer in args.peers:
        print(f"  {peer} ...", flush=True)
        work = Path(tempfile.mkdtemp(prefix=f"{peer}-", dir=cache_root()))
        try:
            r = fit_peer(peer, corpus.train_path, work / "out", topics=K,
                         vocab_size=V, seed=args.seed,
                         tomotopy_max_iterations=args.tomotopy_max_iterations,
                         stopwords=corpus.stopwords)
        except Exception as exc:  # a peer failing must not end the benchmark
            r = {"status": f"failed: {type(exc).__name__}: {exc}", "settings": ""}
        finally:
            shutil.rmtree(work, ignore_errors=True)
        row = {"method": peer, "corpus": name, "status": r["status"],
               "settings": r["settings"], "n_topics": K, "vocab_size": V}
        if r["status"] == "ok":
            row.update(seconds=r["seconds"], cpu_seconds=r["cpu_seconds"], info=r["info"])
            row.update(evaluate(r["vocabulary"], r["topic_word"], r["prevalence"], index,
                                corpus.truth,
                                mean_length=corpus.description.get("mean_tokens_anchorstream")))
        rows.append(row)
    for row in rows:
        print("   ", _line(row), flush=True)
    return rows


def _line(row) -> str:
    if row.get("status") != "ok":
        return f"{row['method']}: {row.get('status')}"
    l1 = "" if not np.isfinite(row["l1"]) else f", l1 {row['l1']:.3f}"
    return (f"{row['method']}: NPMI {row['npmi']:+.4f}, unique {row['unique']:.3f}, dead "
            f"{row['dead']}/{row['n_topics']}{l1}, {row['seconds']:.1f} s "
            f"({row['cpu_seconds']:.1f} CPU s)")


def _f(x, spec):
    return "–" if x is None or not np.isfinite(x) else format(x, spec)


def corpus_table(name: str, rows: list[dict]) -> list[str]:
    d = load(name, verbose=False)
    desc = d.description
    synth = d.truth is not None
    lines = [
        f"#### {name}: {desc['n_train']:,} training / {desc['n_heldout']:,} held-out documents, "
        f"{desc['mean_tokens']:.1f} tokens per document ({desc['mean_tokens_anchorstream']:.1f} "
        f"after anchorstream's tokenizer), K = {rows[0]['n_topics'] if rows else d.n_topics}, "
        f"V = {rows[0].get('vocab_size', d.vocab_size) if rows else d.vocab_size}",
        "",
        "| method | seconds | CPU seconds | held-out NPMI@10 | unique@10 | dead topics "
        + ("| ℓ1 error " if synth else "") + "| settings |",
        "|---|---:|---:|---:|---:|---:|" + ("---:|" if synth else "") + "---|",
    ]
    for r in rows:
        if r.get("status") != "ok":
            status = str(r.get("status")).replace("|", "/")
            lines.append(f"| {r['method']} | {status} | | | | |" + (" |" if synth else "")
                         + f" {r.get('settings', '')} |")
            continue
        lines.append(
            f"| {r['method']} | {r['seconds']:.1f} | {r['cpu_seconds']:.1f} | "
            f"{r['npmi']:+.4f} | {r['unique']:.3f} | {r['dead']} / {r['n_topics']} | "
            + (f"{_f(r['l1'], '.3f')} | " if synth else "") + f"{r.get('settings', '')} |")
    return lines


def summary_tables(results: dict[str, list[dict]]) -> list[str]:
    names = list(results)
    methods = list(dict.fromkeys(r["method"] for rows in results.values() for r in rows))

    def cell(name, method, fmt):
        r = next((r for r in results[name] if r["method"] == method), None)
        return "–" if r is None or r.get("status") != "ok" else fmt(r)

    def table(title, cols, fmt):
        out = [title, "", "| method | " + " | ".join(cols) + " |",
               "|---|" + "---:|" * len(cols)]
        for m in methods:
            out.append(f"| {m} | " + " | ".join(cell(n, m, fmt) for n in cols) + " |")
        return out + [""]

    synth = [n for n in names if parse_synth(n)]
    lines = table("**Held-out NPMI@10 / unique@10** (every corpus):", names,
                  lambda r: f"{r['npmi']:+.3f} / {r['unique']:.2f}")
    lines += table("**Held-out NPMI@10 of each model's topics ranked two ways**: every topic's "
                   "10 most probable words / the 10 an anchorstream snapshot would label it with "
                   "(`metrics.labels_top_words`; for anchorstream the second is what it "
                   "publishes, scored above): the model apart from its ranking", names,
                   lambda r: (f"{_f(r.get('npmi_probability'), '+.3f')} / "
                              f"{_f(r.get('npmi_labels'), '+.3f')}"))
    lines += table("**Dead topics** (prevalence < 0.001, of K):", names,
                   lambda r: f"{r['dead']}")
    if synth:
        lines += table("**ℓ1 error per topic** (semi-synthetic; 0 = exact, 2 = disjoint):",
                       synth, lambda r: _f(r["l1"], ".3f"))
    lines += table("**CPU seconds**:", names, lambda r: f"{r['cpu_seconds']:.0f}")
    return lines


def render(args, results, info) -> str:
    lines = [
        f"Command: `{info['command']}`  ",
        f"Date: {info['date']}  ",
        f"Machine: {info['machine']}; 1-minute load average {info['load']} (start → end; above "
        "the core count means other processes competed for the CPU, so compare CPU seconds)  ",
        f"Versions: {info['versions']}  ",
        f"Whole run: {info['total_seconds'] / 60:.1f} minutes.",
        "",
        "### Summary",
        "",
    ]
    lines += summary_tables(results)
    lines += ["### Per corpus", ""]
    for name, rows in results.items():
        lines += corpus_table(name, rows) + [""]
    lines += ["Every method's top-10 words of every topic are in the JSON results "
              f"(`{info['results_file']}`, not in git)."]
    return "\n".join(lines).rstrip() + "\n"


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.render:
        # Re-render a saved run (e.g. one that was interrupted): no fitting.
        saved = json.loads(args.render.read_text(encoding="utf-8"))
        return publish(args, saved["results"], saved["info"])
    t_all = time.perf_counter()
    stamp = dt.datetime.now(dt.timezone.utc)
    out_dir = cache_root() / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    # The process id too: two runs started in the same second wrote one file (session 51).
    results_file = out_dir / f"bench_quality-{stamp:%Y%m%d-%H%M%S}-{os.getpid()}.json"
    info = {
        "command": "python benchmarks/bench_quality.py" + "".join(
            " " + shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv)),
        "date": stamp.strftime("%Y-%m-%d %H:%M UTC"),
        "machine": report.machine(),
        "versions": report.versions(),
        "results_file": str(results_file.relative_to(REPO)
                            if results_file.is_relative_to(REPO) else results_file),
    }
    load_start = report.load_average()
    print("building corpora (cached after the first run) ...", flush=True)
    for name in args.corpora:
        c = load(name)
        heldout_index(name)
        print(f"  {name}: {c.description['n_train']} train / {c.description['n_heldout']} "
              "held-out", flush=True)
    if args.candidates:
        warm_up([CANDIDATES[c] for c in args.candidates])  # no timed fit compiles
    results: dict[str, list[dict]] = {}
    for name in args.corpora:
        print(f"{name}:", flush=True)
        results[name] = fit_all(args, name)
        # Saved after every corpus, so an interrupted run can still be rendered (--render).
        info["load"] = f"{load_start:.1f} → {report.load_average():.1f}"
        info["total_seconds"] = time.perf_counter() - t_all
        results_file.write_text(json.dumps({"info": info, "results": results}, default=float,
                                           ensure_ascii=False))
    return publish(args, results, info)


def publish(args, results, info) -> int:
    text = render(args, results, info)
    print()
    print(text)
    if args.markdown:
        report.write_section(text, TAG, "## Latest quality benchmark")
        print(f"written to {report.README}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
