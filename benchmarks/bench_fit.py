#!/usr/bin/env python
"""Fit benchmark: anchorstream against anchortopics (OTFR) and gensim's online LdaModel.

One command, one run, one corpus and one seeded split for every peer:

* **Real text.** ``--n-train`` documents of ``--data`` (JSON lines, ``text`` field) are written
  to a training file; a disjoint ``--n-heldout`` documents are the reference corpus for
  coherence. Each peer is timed *end to end*, file in, topics out:

  - anchorstream: ``anchorstream fit`` as a subprocess on the training file (its own reading,
    tokenizing, vocabulary, co-occurrence, rectification, anchors, recovery, snapshot);
  - anchortopics and gensim (they take a bag of words, not text): reading the same file,
    anchorstream's ``Tokenizer`` and ``TokenIdDocuments`` (vocabulary and counts) with the
    same settings as ``anchorstream fit`` (so all three see the same vocabulary — checked and
    printed), then the peer's own fit.

  Metrics: seconds, mean NPMI of each topic's top-10 words on the held-out documents and the
  ratio of distinct words among all top-10 words.

* **Semi-synthetic.** Ground-truth topics learned from the real corpus (gensim's, by default:
  an LDA model is the generative story of the documents, and it is no anchor method, so no
  planted anchor words favour the anchor methods), restricted to the ``--synth-vocab`` most
  frequent words; documents drawn with θ ~ Dirichlet(``--synth-alpha``). Reports the ℓ1
  recovery error per topic after optimal (Hungarian) matching against the number of documents.

Peers that are not importable are reported as "skipped (not installed)". ``--markdown`` writes
the output into ``benchmarks/README.md`` together with the command, machine, date and versions.

Run (from the repository root, in an environment with the ``bench`` extra installed)::

    python benchmarks/bench_fit.py --markdown
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import importlib.metadata
import importlib.util
import json
import logging
import os
import platform
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
try:
    import anchorstream
except ImportError:  # running from a checkout without `pip install -e .`
    sys.path.insert(0, str(REPO))
    import anchorstream

from anchorstream.evaluate import npmi_coherence, recovery_error, unique_word_ratio
from anchorstream.synthetic import PlantedModel, dirichlet_second_moment, planted_model
from anchorstream.synthetic import sample_documents
from anchorstream.text.bags import TokenIdDocuments
from anchorstream.text.tokenize import Tokenizer, count_matrix

if str(REPO) not in sys.path:  # for benchmarks.quality, after this checkout's anchorstream
    sys.path.append(str(REPO))
from benchmarks.quality.report import machine  # noqa: E402

PEERS = ("anchorstream", "anchortopics", "gensim")
TOP_N = 10
README = HERE / "README.md"
BEGIN, END = "<!-- bench_fit:begin -->", "<!-- bench_fit:end -->"
# The vocabulary settings of `anchorstream fit`'s defaults, used for the peers' bag of words too.
MIN_DF, MAX_DF = 5, 0.5


# --------------------------------------------------------------------------------------------
# data


def read_texts(path: Path, text_field: str = "text") -> list[str]:
    """The non-empty string ``text_field`` of every JSON line of ``path`` (.gz allowed)."""
    opener = gzip.open if path.suffix == ".gz" else open
    texts = []
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            try:
                value = json.loads(line)[text_field]
            except (ValueError, KeyError, TypeError):
                continue  # a bad line is skipped, as `anchorstream fit` does
            if isinstance(value, str) and value.strip():
                texts.append(value)
    return texts


@dataclass
class BagOfWords:
    vocabulary: list[str]
    X: sp.csr_matrix  # (n_docs, V) counts
    seconds: float


def bag_of_words(path: Path, vocab_size: int) -> BagOfWords:
    """Read, tokenize and count a JSON-lines file exactly as `anchorstream fit` does.

    Documents left without tokens are dropped before the vocabulary is chosen, like the CLI
    does, so that ``max_df`` (a ratio of documents) means the same thing.
    """
    t0 = time.perf_counter()
    tokenizer = Tokenizer()
    docs = TokenIdDocuments()
    for tokens in map(tokenizer, read_texts(path)):
        if tokens:
            docs.append(tokens)
    vocabulary = docs.select_vocabulary(min_df=MIN_DF, max_df=MAX_DF, max_size=vocab_size)
    X = docs.count_matrix(vocabulary)
    return BagOfWords(vocabulary, X, time.perf_counter() - t0)


# --------------------------------------------------------------------------------------------
# peers on the real corpus


@dataclass
class Result:
    peer: str
    status: str = "ok"  # "ok", "skipped (not installed)" or "failed: ..."
    seconds: float = float("nan")
    cpu_seconds: float = float("nan")  # user + system CPU time over all threads
    prep_seconds: float | None = None  # reading + tokenizing + counting, inside `seconds`
    vocabulary: list[str] = field(default_factory=list)
    topic_word: np.ndarray | None = None  # (K, V), rows p(word | topic)
    settings: str = ""
    npmi: float = float("nan")
    unique: float = float("nan")
    same_vocab: bool | None = None
    extra: dict = field(default_factory=dict)


def peer_version(name: str) -> str | None:
    """Installed version of a distribution (anchorstream's own from the imported package)."""
    if name == "anchorstream":
        return anchorstream.__version__
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def anchorstream_command(override: str | None) -> tuple[list[str], dict]:
    """The `anchorstream` console script next to this interpreter, else ``python -m daemon``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    if override:
        return shlex.split(override), env
    script = Path(sys.executable).parent / "anchorstream"
    if script.is_file():
        return [str(script)], env
    return [sys.executable, "-m", "daemon"], env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_anchorstream(args, train: Path, work: Path) -> Result:
    res = Result("anchorstream")
    base, env = anchorstream_command(args.anchorstream_cmd)
    out = work / "anchorstream-snapshot"
    shutil.rmtree(out, ignore_errors=True)  # an earlier run's (--repeat); snapshots are immutable
    cmd = base + [
        "fit", "--input", str(train), "--text-field", "text", "--topics", str(args.topics),
        "--vocab-size", str(args.vocab_size), "--seed", str(args.seed), "--out", str(out),
        *shlex.split(args.anchorstream_args),
    ]
    res.settings = "`anchorstream fit` defaults" + (
        f" + `{args.anchorstream_args}`" if args.anchorstream_args else ""
    )
    log = work / "anchorstream-fit.log"
    cpu0 = _children_cpu()
    t0 = time.perf_counter()
    with open(log, "w") as fh:
        proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=REPO)
    if proc.returncode != 0:
        tail = log.read_text().strip().splitlines()[-8:]
        print("\n".join("    " + line for line in tail), flush=True)
        res.status = f"failed (exit {proc.returncode}): {tail[-1] if tail else ''}"
        return res
    # Reading the snapshot back is part of "topics out".
    res.topic_word = np.load(out / "topic_word.npy")
    res.vocabulary = (out / "vocab.txt").read_text(encoding="utf-8").splitlines()
    res.seconds = time.perf_counter() - t0
    res.cpu_seconds = _children_cpu() - cpu0
    manifest = json.loads((out / "manifest.json").read_text())
    res.extra["manifest"] = manifest
    shown = [{str(train): "train.jsonl", str(out): "OUT"}.get(c, c) for c in cmd]
    # The interpreter's or console script's absolute path is machine noise in a report.
    shown[0] = "python" if shown[0] == sys.executable else Path(shown[0]).name
    res.extra["command"] = " ".join(shlex.quote(c) for c in shown)
    return res


def run_anchortopics(args, train: Path) -> Result:
    res = Result("anchortopics")
    try:
        from anchortopics import OTFR
    except ImportError:
        res.status = "skipped (not installed)"
        return res
    # The package defaults (ARPACK init, ENN rectification max_iter=20, tol=1e-4, LAW).
    res.settings = "OTFR defaults (ENN rectify max_iter=20, tol=1e-4, ARPACK init; LAW)"
    cpu0, t0 = time.process_time(), time.perf_counter()
    bow = bag_of_words(train, args.vocab_size)
    model = OTFR(n_topics=args.topics, random_state=args.seed).fit(bow.X)
    res.topic_word = np.asarray(model.components_)
    res.seconds = time.perf_counter() - t0
    res.cpu_seconds = time.process_time() - cpu0
    res.prep_seconds = bow.seconds
    res.vocabulary = bow.vocabulary
    res.extra["rectify_iterations"] = model.rectification_info_["n_iter"]
    return res


def gensim_lda(X: sp.csr_matrix, vocabulary, n_topics: int, passes: int, seed: int):
    """gensim's online LdaModel on a CSR count matrix; returns topic_word (K, V)."""
    from gensim.matutils import Sparse2Corpus
    from gensim.models import LdaModel

    corpus = Sparse2Corpus(X, documents_columns=False)
    lda = LdaModel(
        corpus=corpus,
        id2word=dict(enumerate(vocabulary)),
        num_topics=n_topics,
        passes=passes,
        chunksize=2000,
        update_every=1,  # online variational Bayes (Hoffman et al. 2010)
        alpha="auto",
        eta=None,
        iterations=50,
        eval_every=None,  # perplexity logging would cost a pass over each chunk
        random_state=seed,
    )
    return lda.get_topics()


def gensim_settings(passes: int) -> str:
    return (f"LdaModel online: passes={passes}, chunksize=2000, alpha=auto, eta=1/K, "
            "iterations=50")


def run_gensim(args, train: Path) -> Result:
    res = Result("gensim")
    if importlib.util.find_spec("gensim") is None:
        res.status = "skipped (not installed)"
        return res
    res.settings = gensim_settings(args.gensim_passes)
    cpu0, t0 = time.process_time(), time.perf_counter()
    bow = bag_of_words(train, args.vocab_size)
    res.topic_word = gensim_lda(bow.X, bow.vocabulary, args.topics, args.gensim_passes, args.seed)
    res.seconds = time.perf_counter() - t0
    res.cpu_seconds = time.process_time() - cpu0
    res.prep_seconds = bow.seconds
    res.vocabulary = bow.vocabulary
    return res


def median_run(runs: list[Result]) -> Result:
    """The run of median wall time (the fits are seeded, so every run has the same topics),
    carrying every run's seconds in ``extra["all_seconds"]``; a failed run is reported."""
    failed = [r for r in runs if r.status != "ok"]
    if failed:
        return failed[0]
    ordered = sorted(runs, key=lambda r: r.seconds)
    chosen = ordered[(len(ordered) - 1) // 2]
    chosen.extra["all_seconds"] = [r.seconds for r in runs]
    return chosen


def run_isolated(peer: str, args, train: Path, work: Path) -> Result:
    """Fit a library peer in a fresh Python process, timed like ``anchorstream fit``: from
    process start (interpreter, imports) to its topics read back from disk."""
    out = work / f"{peer}-out"
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", peer,
           "--child-train", str(train), "--child-out", str(out), "--topics", str(args.topics),
           "--vocab-size", str(args.vocab_size), "--seed", str(args.seed),
           "--gensim-passes", str(args.gensim_passes)]
    log = work / f"{peer}.log"
    cpu0 = _children_cpu()
    t0 = time.perf_counter()
    with open(log, "w") as fh:
        proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        tail = log.read_text().strip().splitlines()[-8:]
        print("\n".join("    " + line for line in tail), flush=True)
        return Result(peer, status=f"failed (exit {proc.returncode}): {tail[-1] if tail else ''}")
    meta = json.loads((out / "result.json").read_text())
    res = Result(peer, status=meta["status"], settings=meta["settings"])
    if res.status == "ok":
        res.topic_word = np.load(out / "topic_word.npy")
        res.vocabulary = meta["vocabulary"]
        res.seconds = time.perf_counter() - t0
        res.cpu_seconds = _children_cpu() - cpu0
        res.prep_seconds = meta["prep_seconds"]
        res.extra = {**meta["extra"], "in_process_seconds": meta["seconds"]}
    return res


def child_main(args) -> int:
    """``--child PEER``: fit one library peer and leave its topics in ``--child-out``."""
    run = {"anchortopics": run_anchortopics, "gensim": run_gensim}[args.child]
    r = run(args, args.child_train)
    args.child_out.mkdir(parents=True)
    if r.status == "ok":
        np.save(args.child_out / "topic_word.npy", np.asarray(r.topic_word, dtype=np.float64))
    (args.child_out / "result.json").write_text(json.dumps({
        "status": r.status, "settings": r.settings, "vocabulary": r.vocabulary,
        "seconds": r.seconds, "prep_seconds": r.prep_seconds,
        "extra": {k: v for k, v in r.extra.items() if isinstance(v, (int, float, str))},
    }))
    return 0


def score(results: list[Result], heldout_texts: list[str]) -> None:
    """Held-out NPMI and unique-word ratio of each peer's top-10 words (in place)."""
    ok = [r for r in results if r.status == "ok"]
    if not ok:
        return
    tops = {}
    for r in ok:
        idx = np.argsort(-r.topic_word, axis=1, kind="stable")[:, :TOP_N]
        tops[r.peer] = [[r.vocabulary[i] for i in row] for row in idx]
    # One reference matrix over the union of all top words, so that a peer whose vocabulary
    # differed is still scored on exactly the same held-out documents.
    union = sorted({w for words in tops.values() for row in words for w in row})
    position = {w: i for i, w in enumerate(union)}
    tokenizer = Tokenizer()
    X_ref = count_matrix([tokenizer(t) for t in heldout_texts], union)
    for r in ok:
        top_idx = np.array([[position[w] for w in row] for row in tops[r.peer]])
        r.npmi = float(np.mean(npmi_coherence(top_idx, X_ref)))
        r.unique = float(unique_word_ratio(top_idx))
        r.extra["top_words"] = tops[r.peer]


# --------------------------------------------------------------------------------------------
# semi-synthetic


def synth_truth(args, results: dict[str, Result], rng) -> tuple[np.ndarray, str]:
    """Ground-truth topic_word (V_s, K): the real corpus' topics on its V_s most frequent words."""
    source = args.synth_truth
    r = results.get(source)
    if source != "planted":
        if r is None or r.status != "ok":
            print(f"semi-synthetic: no {source} topics from the real corpus, using a planted model")
        else:
            # Vocabularies are ordered by document frequency, most frequent first.
            B = np.asarray(r.topic_word, dtype=np.float64)[:, : args.synth_vocab].T.copy()
            mass = B.sum(axis=0, keepdims=True)
            if np.all(mass > 0):
                return B / mass, (f"{source}'s topics from the real corpus, "
                                  f"{B.shape[0]} most frequent words")
            print(f"semi-synthetic: a {source} topic has no mass on the {args.synth_vocab} most "
                  "frequent words, using a planted model")
    model = planted_model(args.synth_vocab, args.topics, alpha=args.synth_alpha, random_state=rng)
    return model.topic_word, "planted model (anchorstream.synthetic, separable)"


def run_synthetic(args, results: dict[str, Result], rng) -> dict:
    sizes = sorted(int(s) for s in args.synth_docs.split(","))
    K = args.topics
    B, description = synth_truth(args, results, rng)
    alpha = np.full(K, args.synth_alpha)
    truth = PlantedModel(B, np.full(K, -1), dirichlet_second_moment(alpha), alpha)
    # Draw the largest corpus once (in chunks: sample_documents builds a dense (docs, V)
    # matrix) and take prefixes, so each larger corpus contains the smaller ones.
    t0 = time.perf_counter()
    chunks = []
    left = sizes[-1]
    while left > 0:
        n = min(left, 20_000)
        chunks.append(sample_documents(truth, n, args.synth_doc_length, random_state=rng)[0])
        left -= n
    X_all = sp.vstack(chunks, format="csr")
    sample_seconds = time.perf_counter() - t0

    # The real fit's settings (from its manifest), so that the library call here runs the same
    # pipeline as `anchorstream fit`.
    settings = {"random_state": args.seed}
    real = results.get("anchorstream")
    if real is not None and real.status == "ok":
        from anchorstream.model.pipeline import ModelSettings

        recorded = real.extra["manifest"].get("settings", {})
        fields = set(ModelSettings.__dataclass_fields__) - {"n_topics", "pinned_anchors"}
        settings.update({k: v for k, v in recorded.items() if k in fields})

    peers = [p for p in args.peers if p in PEERS]
    rows = []
    for n in sizes:
        X = X_all[:n]
        row = {"docs": n}
        for peer in peers:
            t1 = time.perf_counter()
            try:
                if peer == "anchorstream":
                    from anchorstream.stats.cooccurrence import cooccurrence
                    from anchorstream.model.pipeline import AnchorModel

                    est = AnchorModel(K, **settings).fit(cooccurrence(X)).topic_word_
                elif peer == "anchortopics":
                    from anchortopics import OTFR

                    est = OTFR(n_topics=K, random_state=args.seed).fit(X).components_.T
                else:  # gensim_lda raises ImportError when gensim is missing
                    vocab = [f"w{i}" for i in range(X.shape[1])]
                    est = gensim_lda(X, vocab, K, args.gensim_passes, args.seed).T
            except ImportError:
                row[peer] = None
                continue
            except Exception as exc:  # a peer failing must not end the benchmark
                row[peer] = f"failed: {type(exc).__name__}: {exc}"
                continue
            # Clipped, in case a peer leaves round-off negatives (the metric needs distributions).
            est = np.maximum(np.asarray(est, dtype=np.float64), 0.0)
            mean_l1 = recovery_error(B, est / est.sum(axis=0, keepdims=True))[0]
            row[peer] = (float(mean_l1), time.perf_counter() - t1)
        rows.append(row)
        print("  semi-synthetic", _synth_row_text(row, peers), flush=True)
    return {"description": description, "rows": rows, "peers": peers,
            "sample_seconds": sample_seconds, "vocab": B.shape[0]}


def _synth_cell(value) -> str:
    if value is None:
        return "skipped (not installed)"
    if isinstance(value, str):
        return value
    return f"{value[0]:.3f} ({value[1]:.1f} s)"


def _synth_row_text(row, peers) -> str:
    return f"{row['docs']:>8} docs: " + ", ".join(f"{p} {_synth_cell(row[p])}" for p in peers)


# --------------------------------------------------------------------------------------------
# report


def versions() -> str:
    names = ["anchorstream", "anchortopics", "gensim", "numpy", "scipy", "numba"]
    parts = [f"Python {platform.python_version()}"]
    for name in names:
        parts.append(f"{name} {peer_version(name) or 'not installed'}")
    return ", ".join(parts)


def _fmt(x: float, spec: str) -> str:
    return "–" if x is None or not np.isfinite(x) else format(x, spec)


def report(args, results: list[Result], synth: dict | None, info: dict) -> str:
    """The whole output as Markdown (also readable as plain text)."""
    lines = [
        f"Command: `{info['command']}`  ",
        f"Date: {info['date']}  ",
        f"Machine: {info['machine']}; 1-minute load average {info['load']} (start → end; "
        "above the core count means other processes competed for the CPU)  ",
        f"Versions: {info['versions']}",
        "",
        f"### Real text: {args.data.name}, {info['n_train']} training / {info['n_heldout']} "
        f"held-out documents (seed {args.seed}), V = {args.vocab_size}, K = {args.topics}",
        "",
        "Seconds are end to end, file in, topics out, "
        + ("anchorstream as a subprocess, the others in this process (their imports excluded)"
           if args.in_process else "each peer in a fresh Python process (interpreter start and "
           "imports included, as for any command)")
        + (f"; the median of {args.repeat} runs in rotating order, every run in brackets"
           if args.repeat > 1 else "")
        + ". anchortopics and gensim read the file and build their bag of words with "
        "anchorstream's `Tokenizer` and `TokenIdDocuments`, so all peers share one tokenizer "
        "and vocabulary. NPMI: mean over topics of the mean pairwise NPMI of the top-10 words, "
        "document co-occurrence in the held-out documents (pairs never seen together score -1). "
        "Unique: distinct words among all top-10 words / (10·K).",
        "",
        "| peer | version | seconds | CPU seconds | of which bag of words | held-out NPMI@10 "
        "| unique@10 | same vocabulary | settings |",
        "|---|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in results:
        if r.status != "ok":
            status = r.status.replace("|", "/")
            lines.append(f"| {r.peer} | {peer_version(r.peer) or '–'} | {status} | | | | | | "
                         f"{r.settings} |")
            continue
        same = {True: "yes", False: "no", None: "–"}[r.same_vocab]
        prep = _fmt(r.prep_seconds, ".1f") if r.prep_seconds is not None else "(inside)"
        runs = r.extra.get("all_seconds", [r.seconds])
        spread = f" ({' / '.join(f'{x:.1f}' for x in runs)})" if len(runs) > 1 else ""
        lines.append(
            f"| {r.peer} | {peer_version(r.peer)} | {r.seconds:.1f}{spread} | "
            f"{_fmt(r.cpu_seconds, '.1f')} | "
            f"{prep} | "
            f"{_fmt(r.npmi, '.4f')} | {_fmt(r.unique, '.3f')} | {same} | {r.settings} |"
        )
    timings = next((r.extra["manifest"].get("extra", {}).get("timings_seconds")
                    for r in results if r.peer == "anchorstream" and r.status == "ok"), None)
    if timings:
        stages = ", ".join(f"{k} {v:.1f} s" for k, v in timings.items())
        lines += ["", f"anchorstream stages (from its manifest): {stages}."]
    command = next((r.extra["command"] for r in results
                    if r.peer == "anchorstream" and "command" in r.extra), None)
    if command:
        lines += ["", f"anchorstream ran as `{command}`."]
    lines += ["", "First topics of each peer (top-10 words):", ""]
    for r in results:
        if r.status == "ok" and "top_words" in r.extra:
            lines.append(f"- **{r.peer}**")
            for k, words in enumerate(r.extra["top_words"][: args.show_topics]):
                lines.append(f"  - {k}: {' '.join(words)}")
    if synth is not None:
        peers = synth["peers"]
        lines += [
            "",
            f"### Semi-synthetic: ℓ1 recovery error per topic (Hungarian matching), "
            f"truth = {synth['description']}",
            "",
            f"V = {synth['vocab']}, K = {args.topics}, θ ~ Dirichlet({args.synth_alpha}), "
            f"{args.synth_doc_length} words per document; each cell is the mean ℓ1 error over "
            "topics (0 = exact, 2 = disjoint) and the fit seconds (corpus in memory).",
            "",
            "| documents | " + " | ".join(peers) + " |",
            "|---:|" + "---:|" * len(peers),
        ]
        for row in synth["rows"]:
            lines.append(f"| {row['docs']} | "
                         + " | ".join(_synth_cell(row[p]) for p in peers) + " |")
    lines += ["", f"Whole benchmark: {info['total_seconds']:.0f} s."]
    return "\n".join(lines)


def write_markdown(text: str) -> None:
    """Replace the bench_fit section of benchmarks/README.md (create the file if missing)."""
    section = f"{BEGIN}\n{text}\n{END}"
    if README.exists():
        old = README.read_text(encoding="utf-8")
        if BEGIN in old and END in old:
            head, rest = old.split(BEGIN, 1)
            new = head + section + rest.split(END, 1)[1]
        else:
            new = old.rstrip("\n") + "\n\n## Latest fit benchmark\n\n" + section + "\n"
    else:
        new = "# Benchmarks\n\n## Latest fit benchmark\n\n" + section + "\n"
    README.write_text(new, encoding="utf-8")


# --------------------------------------------------------------------------------------------


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--data", type=Path,
                   default=REPO.parent / "shared" / "data" / "npm_summaries.jsonl.gz",
                   help="JSON lines with a 'text' field (.gz allowed)")
    p.add_argument("--n-train", type=int, default=50_000, help="training documents")
    p.add_argument("--n-heldout", type=int, default=50_000,
                   help="held-out documents (NPMI reference), disjoint from training")
    p.add_argument("--topics", "-k", type=int, default=50, help="number of topics K")
    p.add_argument("--vocab-size", type=int, default=5000, help="vocabulary size V")
    p.add_argument("--seed", type=int, default=0, help="seed of the split, peers and sampling")
    p.add_argument("--peers", default=",".join(PEERS),
                   type=lambda s: [x.strip() for x in s.split(",") if x.strip()],
                   help="comma-separated subset of " + ",".join(PEERS))
    p.add_argument("--gensim-passes", type=int, default=2, help="passes of LdaModel")
    p.add_argument("--anchorstream-cmd", default=None,
                   help="command that runs the anchorstream CLI (default: the console script "
                        "next to this Python, else `python -m daemon`)")
    p.add_argument("--anchorstream-args", default="",
                   help="extra arguments for `anchorstream fit`; write it with '=', e.g. "
                        "--anchorstream-args='--anchors fast'")
    p.add_argument("--synth-docs", default="10000,30000,100000",
                   help="comma-separated corpus sizes for the semi-synthetic run ('' = skip)")
    p.add_argument("--synth-truth", choices=("gensim", "anchorstream", "anchortopics", "planted"),
                   default="gensim", help="where the semi-synthetic ground truth comes from")
    p.add_argument("--synth-vocab", type=int, default=2000,
                   help="semi-synthetic vocabulary: the most frequent words of the real one")
    p.add_argument("--synth-alpha", type=float, default=0.03,
                   help="symmetric Dirichlet prior of the semi-synthetic documents")
    p.add_argument("--synth-doc-length", type=int, default=20,
                   help="words per semi-synthetic document")
    p.add_argument("--show-topics", type=int, default=5, help="topics listed per peer")
    p.add_argument("--markdown", action="store_true",
                   help=f"write the output into {README.relative_to(REPO)}")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    p.add_argument("--repeat", type=int, default=1,
                   help="fit every peer this many times, in rotating order, and report the "
                        "median seconds (the machine is shared: single runs vary by ~20%%)")
    p.add_argument("--in-process", action="store_true",
                   help="fit anchortopics and gensim inside this process (their imports, "
                        "interpreter start and a warm tokenizer then cost them nothing) "
                        "instead of in a fresh Python process each, as anchorstream runs")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--child-train", type=Path, default=None, help=argparse.SUPPRESS)
    p.add_argument("--child-out", type=Path, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.repeat < 1:
        p.error("--repeat must be >= 1")
    unknown = set(args.peers) - set(PEERS)
    if unknown:
        p.error(f"unknown peers {sorted(unknown)}; choose from {', '.join(PEERS)}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    if args.child:
        return child_main(args)
    t_all = time.perf_counter()
    load_start = os.getloadavg()[0]
    rng = np.random.default_rng(args.seed)
    if not args.data.is_file():
        sys.exit(f"corpus {args.data} not found; pass --data PATH (JSON lines with a 'text' field)")
    texts = read_texts(args.data)
    if args.n_train + args.n_heldout > len(texts):
        sys.exit(f"{args.data} has {len(texts)} documents, fewer than "
                 f"--n-train + --n-heldout = {args.n_train + args.n_heldout}")
    order = rng.permutation(len(texts))
    train_texts = [texts[i] for i in order[: args.n_train]]
    heldout_texts = [texts[i] for i in order[args.n_train: args.n_train + args.n_heldout]]
    del texts

    cache = HERE / ".cache"
    cache.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench_fit-", dir=cache))
    try:
        train = work / "train.jsonl"
        with open(train, "w", encoding="utf-8") as fh:
            for t in train_texts:
                fh.write(json.dumps({"text": t}, ensure_ascii=False) + "\n")
        print(f"{len(train_texts)} training / {len(heldout_texts)} held-out documents, "
              f"V={args.vocab_size}, K={args.topics}", flush=True)

        runners = {
            "anchorstream": lambda: run_anchorstream(args, train, work),
            "anchortopics": (lambda: run_anchortopics(args, train)) if args.in_process
            else (lambda: run_isolated("anchortopics", args, train, work)),
            "gensim": (lambda: run_gensim(args, train)) if args.in_process
            else (lambda: run_isolated("gensim", args, train, work)),
        }
        runs: dict[str, list[Result]] = {peer: [] for peer in args.peers}
        sys.path.insert(0, str(REPO))  # the benchmarks package, run as a script
        from benchmarks.quality.run import compile_sources

        compile_sources()  # as installed, as the peers are: no run compiles our modules
        for rep in range(args.repeat):
            # Rotating the order spreads whatever else the machine does over every peer.
            shift = rep % len(args.peers)
            for peer in args.peers[shift:] + args.peers[:shift]:
                print(f"fitting {peer}" + (f" (run {rep + 1} of {args.repeat})"
                                           if args.repeat > 1 else "") + " ...", flush=True)
                try:
                    r = runners[peer]()
                except Exception as exc:  # a peer failing must not end the benchmark
                    r = Result(peer, status=f"failed: {type(exc).__name__}: {exc}")
                print(f"  {peer}: {r.status}"
                      + (f", {r.seconds:.1f} s" if r.status == "ok" else ""), flush=True)
                runs[peer].append(r)
        results = [median_run(runs[peer]) for peer in args.peers]
        shared = next((r.vocabulary for r in results
                       if r.status == "ok" and r.peer != "anchorstream"), None)
        for r in results:
            if r.status == "ok" and shared is not None:
                r.same_vocab = r.vocabulary == shared
        score(results, heldout_texts)

        synth = None
        if args.synth_docs.strip():
            print("semi-synthetic ...", flush=True)
            synth = run_synthetic(args, {r.peer: r for r in results}, rng)
    finally:
        if args.keep:
            print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    info = {
        "command": "python benchmarks/bench_fit.py" + "".join(
            " " + shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv)),
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "load": f"{load_start:.1f} → {os.getloadavg()[0]:.1f}",
        "versions": versions(),
        "n_train": len(train_texts),
        "n_heldout": len(heldout_texts),
        "total_seconds": time.perf_counter() - t_all,
    }
    text = report(args, results, synth, info)
    print()
    print(text)
    if args.markdown:
        write_markdown(text)
        print(f"\nwritten to {README}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
