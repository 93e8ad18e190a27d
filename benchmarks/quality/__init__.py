"""The quality benchmark's importable parts (issue 16): corpora, metrics and a runner.

- :mod:`benchmarks.quality.corpora`: ``load(name) -> Corpus`` (real and semi-synthetic corpora,
  fixed seeded splits, cached under ``benchmarks/.cache/quality``);
- :mod:`benchmarks.quality.metrics`: held-out NPMI@10, unique@10, dead topics, ℓ1 error;
- :mod:`benchmarks.quality.run`: ``run(corpus, args)`` fits ``anchorstream fit`` on a corpus
  and returns its metrics (``python -m benchmarks.quality.run --corpus tech --args='...'``).

``benchmarks/bench_quality.py`` runs them all against the peers.
"""
