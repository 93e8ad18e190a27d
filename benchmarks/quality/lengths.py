"""How long each corpus's documents are, as the rules of ``--refine-window auto`` see them.

``python -m benchmarks.quality.lengths [CORPUS ...]`` prints, per corpus (default: all), the
share of the tokenizer's tokens in documents of more than 100 tokens
(:func:`anchorstream.text.windows.long_token_share`), the mean number of tokens of the
vocabulary ``fit --input`` chooses (V of the corpus, documents of at least two such tokens:
what :func:`anchorstream.text.windows.refine_window_for` reads from the counts), windows of 24
tokens per document, and whether ``auto`` refines in windows at the corpus's K
(benchmarks/README.md, "Windows by default where documents are long").
"""

from __future__ import annotations

import sys

import numpy as np

from anchorstream.text.windows import WINDOWS_AUTO_SIZE, refine_window_for
from benchmarks.quality.corpora import NAMES, load
from daemon.cli.fit_counts import read_documents
from daemon.cli.options import MAX_DF, MIN_DF, stopwords_tokenizer


def lengths(name: str) -> dict:
    """The row of corpus ``name``."""
    corpus = load(name)
    docs, stats = read_documents([corpus.train_path], format="json", text_field="text",
                                 tokenizer=stopwords_tokenizer(corpus.stopwords),
                                 progress=False)
    vocabulary = docs.select_vocabulary(min_df=MIN_DF, max_df=MAX_DF,
                                        max_size=corpus.vocab_size)
    n = np.asarray(docs.count_matrix(vocabulary).sum(axis=1)).ravel()
    w = np.asarray(docs.window_count_matrix(vocabulary, WINDOWS_AUTO_SIZE).sum(axis=1)).ravel()
    paired = n >= 2
    n_docs, n_tokens = int(paired.sum()), float(n[paired].sum())
    window = refine_window_for("auto", n_docs, n_tokens, corpus.n_topics)
    return {"corpus": name, "K": corpus.n_topics,
            "share": stats["long_document_token_share"],
            "mean": n_tokens / max(n_docs, 1),
            "windows_per_document": int((w >= 2).sum()) / max(n_docs, 1),
            "auto": "windows" if window else "whole"}


def main(argv: list[str]) -> int:
    names = argv or list(NAMES)
    print("| corpus | K | share of tokens in documents > 100 tokens | mean tokens in the "
          "vocabulary | windows of 24 per document | `auto` refines |")
    print("|---|---:|---:|---:|---:|---|")
    for name in names:
        r = lengths(name)
        print(f"| {r['corpus']} | {r['K']} | {r['share']:.3f} | {r['mean']:.1f} | "
              f"{r['windows_per_document']:.1f} | {r['auto']} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
