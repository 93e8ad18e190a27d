"""How good is a topic model: coherence, recovery error, held-out likelihood, JSMF diagnostics.

Every function is pure: arrays in, numbers out. Orientation follows the rest of the library:
``topic_word`` is ``B`` of shape ``(n_words, n_topics)`` whose columns are ``p(w | z)``;
``top_idx`` is the ``(n_topics, n)`` array of word indices that :func:`top_words` returns.

The metrics, by module (all re-exported here; import them from ``anchorstream.evaluate``):

- :mod:`~anchorstream.evaluate.coherence`: :func:`top_words`, :func:`npmi_coherence` (normalized
  PMI of top-word pairs over a reference corpus, Bouma 2009), :func:`umass_coherence` (Mimno et
  al. 2011, used by Arora 2013 and JSMF), :func:`unique_word_ratio` (distinct top words over all
  top words) and :func:`topic_dissimilarity` (top words no other topic has).
- :mod:`~anchorstream.evaluate.reference`: :func:`recovery_error` (ℓ1 distance to planted topics
  after optimal matching, Arora 2013 §5) and :func:`heldout_log_likelihood` (per-token
  likelihood by document completion, Wallach et al. 2009).
- :mod:`~anchorstream.evaluate.jsmf` (Lee et al., §5.1): :func:`topic_entropy` (mean normalized
  entropy of p(z | w)), :func:`topic_sparsity` (Hoyer 2004), :func:`topic_specificity`
  (KL(p(w | z) ‖ p(w))), :func:`recovery_error_rows` (residual of each word's row as a mix of
  anchor rows), :func:`approximation_error` (‖C − B A Bᵀ‖_F), and :func:`diagnostics`, which
  bundles them for one fitted model.
"""

from __future__ import annotations

from anchorstream.evaluate.coherence import (
    npmi_coherence,
    top_words,
    topic_dissimilarity,
    umass_coherence,
    unique_word_ratio,
)
from anchorstream.evaluate.jsmf import (
    approximation_error,
    diagnostics,
    recovery_error_rows,
    topic_entropy,
    topic_sparsity,
    topic_specificity,
    word_topic_posterior,
)
from anchorstream.evaluate.reference import heldout_log_likelihood, recovery_error

__all__ = [
    "approximation_error",
    "diagnostics",
    "heldout_log_likelihood",
    "npmi_coherence",
    "recovery_error",
    "recovery_error_rows",
    "top_words",
    "topic_dissimilarity",
    "topic_entropy",
    "topic_sparsity",
    "topic_specificity",
    "umass_coherence",
    "unique_word_ratio",
    "word_topic_posterior",
]
