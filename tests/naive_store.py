"""Slow, obviously-correct references for the store: kernel twins, a vocabulary, a model.

Everything here is loops over Python objects, written for clarity and nothing else. The tests
hold the numba kernels (``anchorstream/_kernels/store.py``), the streaming vocabulary and the
on-disk store against these.
"""

from __future__ import annotations

import numpy as np

from tests.naive_csr import csr_of_rows

# ------------------------------------------------------------------------- kernel twins


def naive_unique_counts(indptr, slots, n_slots):
    """Twin of ``store_unique_counts``: distinct slots per document in first-seen order."""
    uindptr = [0]
    uslots: list[int] = []
    ucounts: list[float] = []
    for d in range(len(indptr) - 1):
        seen: dict[int, float] = {}
        for k in range(indptr[d], indptr[d + 1]):
            s = int(slots[k])
            seen[s] = seen.get(s, 0.0) + 1.0
        uslots.extend(seen)
        ucounts.extend(seen.values())
        uindptr.append(len(uslots))
    return (
        np.asarray(uindptr, dtype=np.int64),
        np.asarray(uslots, dtype=np.int32),
        np.asarray(ucounts, dtype=np.float64),
    )


def naive_pair_delta(uindptr, uslots, ucounts, doc_scale, n_slots, dense, prev=None):
    """Twin of ``store_pair_delta``: rows ``< H`` added into ``dense``, the rest as CSR.

    CSR structure: every ``(i, j)``, ``H <= i <= j``, that occur together in a counted
    document (including ``(i, i)`` even when its value is 0) or in ``prev``, as the kernel
    emits it.
    """
    H = dense.shape[0]
    entries: dict[tuple[int, int], float] = {}
    if prev is not None:
        p_indptr, p_indices, p_data = prev
        for i in range(n_slots):
            for p in range(p_indptr[i], p_indptr[i + 1]):
                key = (i, int(p_indices[p]))
                entries[key] = entries.get(key, 0.0) + float(p_data[p])
    for d in range(len(uindptr) - 1):
        if doc_scale[d] == 0.0:
            continue
        items = [
            (int(uslots[k]), float(ucounts[k]))
            for k in range(uindptr[d], uindptr[d + 1])
            if uslots[k] >= 0
        ]
        for i, hi in items:
            for j, hj in items:
                if j < i:
                    continue
                value = doc_scale[d] * hi * ((hi - 1.0) if i == j else hj)
                if i < H:
                    dense[i, j] += value
                else:
                    entries[(i, j)] = entries.get((i, j), 0.0) + value
    keys = sorted(entries)
    indptr = np.zeros(n_slots + 1, dtype=np.int64)
    for i, _ in keys:
        indptr[i + 1] += 1
    indptr = np.cumsum(indptr)
    indices = np.asarray([j for _, j in keys], dtype=np.int32)
    data = np.asarray([entries[k] for k in keys], dtype=np.float64)
    return indptr, indices, data


def naive_add_doc_freq(df, indptr, slots, weights, skip):
    """Twin of ``store_add_doc_freq``."""
    for d in range(len(indptr) - 1):
        if not skip[d]:
            for s in set(slots[indptr[d] : indptr[d + 1]].tolist()):
                df[s] += weights[d]


def naive_scatter_symmetric(out, row_map, col_map, rows, cols, vals):
    """Twin of ``store_scatter_symmetric``."""
    for i, j, v in zip(rows.tolist(), cols.tolist(), vals.tolist()):
        if row_map[i] >= 0 and col_map[j] >= 0:
            out[row_map[i], col_map[j]] += v
        if i != j and row_map[j] >= 0 and col_map[i] >= 0:
            out[row_map[j], col_map[i]] += v


# ------------------------------------------------------------------------- estimator


def naive_cooccurrence(token_lists, vocabulary, weights=None, length_cap=2):
    """Dense weighted estimator over ``vocabulary``: (counts, unigram, doc_freq, docs, tokens).

    Document ``d`` counts only its in-vocabulary tokens, ``n_d`` of them, and contributes
    ``w_d (h hᵀ − diag h) / (n_d (n_d − 1))`` when ``n_d >= 2``, times
    ``min(n_d (n_d − 1), m (m − 1)) / (m (m − 1))`` with ``m = length_cap`` (1 for the default
    2; ``n_d (n_d - 1) / 2`` for None).
    """
    index = {w: i for i, w in enumerate(vocabulary)}
    V = len(index)
    Q, uni, df = np.zeros((V, V)), np.zeros(V), np.zeros(V)
    docs = tokens = 0.0
    for d, toks in enumerate(token_lists):
        w = 1.0 if weights is None else float(weights[d])
        h = np.zeros(V)
        for t in toks:
            if t in index:
                h[index[t]] += 1
        n = h.sum()
        if n < 2:
            continue
        pairs = n * (n - 1)
        share = pairs / 2 if length_cap is None else (
            min(pairs, length_cap * (length_cap - 1)) / (length_cap * (length_cap - 1)))
        Q += w * share * (np.outer(h, h) - np.diag(h)) / pairs
        uni += w * h
        df += w * (h > 0)
        docs += w
        tokens += w * n
    return Q, uni, df, docs, tokens


# ------------------------------------------------------------------------- vocabulary


class NaiveVocabulary:
    """The streaming vocabulary's rules, spelled out with lists (see anchorstream.text.vocabulary).

    ``sketch`` is a list of ``[word, count, error]`` in table order.
    """

    def __init__(
        self, capacity, *, admit_threshold=5.0, sketch_size=None, max_df=None,
        max_df_min_docs=1000, maintain_every=1000, stopwords=(), seed=(), pin_seed=True,
    ):
        self.V = capacity
        self.thr = admit_threshold
        self.m = sketch_size if sketch_size is not None else 2 * capacity
        self.max_df, self.max_df_min_docs, self.every = max_df, max_df_min_docs, maintain_every
        self.stop = set(stopwords)
        self.words: list = [None] * capacity
        self.df = [0.0] * capacity
        self.pinned = [False] * capacity
        for s, w in enumerate(seed):
            self.words[s] = w
            self.pinned[s] = pin_seed
        self.sketch: list[list] = []
        self.floor = 0.0
        self.blocked: dict[str, float] = {}
        self.total = 0.0
        self.n = 0

    def slot(self, t):
        return self.words.index(t) if t in self.words else -1

    def _find(self, t):
        for e in self.sketch:
            if e[0] == t:
                return e
        return None

    def _prune(self):
        if len(self.sketch) <= 2 * self.m:
            return
        order = sorted(range(len(self.sketch)), key=lambda k: -self.sketch[k][1])  # stable
        keep = sorted(order[: self.m])
        dropped = [self.sketch[k][1] for k in range(len(self.sketch)) if k not in set(keep)]
        if dropped:
            self.floor = max(self.floor, max(dropped))
        self.sketch = [self.sketch[k] for k in keep]

    def _release(self, s, evicted, to_sketch):
        t, df = self.words[s], self.df[s]
        self.words[s], self.df[s], self.pinned[s] = None, 0.0, False
        evicted.append(s)
        if to_sketch:
            self.sketch.append([t, df, 0.0])
            self._prune()
        return t, df

    def _admit(self, t, lb, evicted):
        free = [s for s in range(self.V) if self.words[s] is None]
        if free:
            slot = min(free)
        else:
            cands = [s for s in range(self.V) if not self.pinned[s]]
            if not cands:
                return
            weakest = min(cands, key=lambda s: (self.df[s], s))
            if lb <= self.df[weakest]:
                return
            self.sketch = [e for e in self.sketch if e[0] != t]
            self._release(weakest, evicted, True)
            slot = weakest
        self.sketch = [e for e in self.sketch if e[0] != t]
        self.words[slot], self.df[slot], self.pinned[slot] = t, lb, False

    def _maintain(self, evicted):
        if self.max_df is None or self.n < self.max_df_min_docs:
            return
        limit = self.max_df * self.total
        for s in range(self.V):
            if self.words[s] is not None and not self.pinned[s] and self.df[s] > limit:
                t, df = self._release(s, evicted, False)
                self.blocked[t] = df
        for t in list(self.blocked):
            if self.blocked[t] <= limit:
                self.sketch.append([t, self.blocked.pop(t), 0.0])
        self._prune()

    def observe(self, tokens, w=1.0):
        evicted: list[int] = []
        if self.n and self.n % self.every == 0:
            self._maintain(evicted)
        self.n += 1
        self.total += w
        known = [t for t in tokens if t in self.words]
        for s in {self.slot(t) for t in known}:
            self.df[s] += w
        unknown = []
        for t in tokens:
            if t not in self.words and t not in unknown:
                unknown.append(t)
        for t in unknown:
            if t in self.stop:
                continue
            if t in self.blocked:
                self.blocked[t] += w
                continue
            e = self._find(t)
            if e is None:
                self.sketch.append([t, self.floor + w, self.floor])
                self._prune()
                e = self._find(t)
                if e is None:
                    continue
            else:
                e[1] += w
            lb = e[1] - e[2]
            if lb >= self.thr * w:
                self._admit(t, lb, evicted)
        return [self.slot(t) for t in tokens if t in self.words], evicted


# ------------------------------------------------------------------------- store model


class NaiveStoreModel:
    """A dense numpy model of the store's logical content, keyed by slot.

    ``add`` applies each document's evictions (zero row, column and vectors), then adds its
    contribution over the slots its in-vocabulary tokens map to.
    """

    def __init__(self, vocab: NaiveVocabulary):
        V = vocab.V
        self.vocab = vocab
        self.Q, self.uni, self.df = np.zeros((V, V)), np.zeros(V), np.zeros(V)
        self.docs = self.tokens = 0.0

    def evict_slot(self, s):
        self.Q[s, :] = 0.0
        self.Q[:, s] = 0.0
        self.uni[s] = 0.0
        self.df[s] = 0.0

    def add(self, tokens, w=1.0):
        slots, evicted = self.vocab.observe(tokens, w)
        for s in evicted:
            self.evict_slot(s)
        self.count(slots, w)

    def lookup(self, tokens):
        """Slots of the tokens in the vocabulary now (no statistics change)."""
        slot = {word: s for s, word in enumerate(self.vocab.words) if word is not None}
        return [slot[t] for t in tokens if t in slot]

    def count(self, slots, w=1.0):
        """Add a document given as the slots of its in-vocabulary tokens."""
        n = len(slots)
        if n < 2:
            return
        h = np.zeros(self.vocab.V)
        for s in slots:
            h[s] += 1
        self.Q += w * (np.outer(h, h) - np.diag(h)) / (n * (n - 1))
        self.uni += w * h
        self.df += w * (h > 0)
        self.docs += w
        self.tokens += w * n

    def by_word(self):
        """``{word: index}`` of active words and the matching dense matrix and vectors."""
        active = [s for s in range(self.vocab.V) if self.vocab.words[s] is not None]
        words = [self.vocab.words[s] for s in active]
        ix = np.ix_(active, active)
        return words, self.Q[ix], self.uni[active], self.df[active]

    def copy(self):
        import copy

        return copy.deepcopy(self)


def align(words_a, M_a, words_b):
    """Reorder a square matrix (or vector) indexed by ``words_a`` into the order ``words_b``."""
    pos = [words_a.index(w) for w in words_b]
    M_a = np.asarray(M_a)
    if M_a.ndim == 1:
        return M_a[pos]
    return M_a[np.ix_(pos, pos)]


# ------------------------------------------------------------------------- scripted histories


def scripted_history(store, docs, cuts, evict_after, compact_after):
    """Drive ``store`` through ``docs`` in batches split at ``cuts``, each batch checkpointed
    (offset ``{"n": end}``); after batch ``k``, evict the first present word when ``k`` is in
    ``evict_after`` (before the checkpoint) and compact when ``k`` is in ``compact_after``.
    Yields each batch's end after its checkpoint (and compaction)."""
    bounds = sorted({0, len(docs), *cuts})
    for k, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
        store.add(docs[a:b])
        present = [w for w in store.vocabulary.words if w]
        if k in evict_after and present:
            store.evict(present[0])
        store.checkpoint({"n": b})
        if k in compact_after:
            store.compact()
        yield b


def naive_folded_mask(rows, cols, shard_size, n_shards, done):
    """Twin of ``store_folded_mask``: the shard pairs' row-major index by NumPy."""
    a = np.asarray(rows, dtype=np.int64) // shard_size
    b = np.asarray(cols, dtype=np.int64) // shard_size
    return a * n_shards - a * (a - 1) // 2 + (b - a) < done


def naive_block_to_csr(block, rloc, cloc, rpos, cpos, n_rows, row_offset, diagonal):
    """Twin of ``store_block_to_csr``: (indptr, indices, data) from a dict of rows."""
    rows = {p: [] for p in range(n_rows)}
    for r, p in zip(rloc.tolist(), rpos.tolist()):
        for c, q in zip(cloc.tolist(), cpos.tolist()):
            v = block[r, c]
            if v != 0.0 and not (diagonal and q < p + row_offset):
                rows[p].append((q, v))
    return csr_of_rows(rows, n_rows)


def naive_entries_to_upper_csr(rows, cols, vals, seq, reset_seq, skip, pos, n, factor):
    """Twin of ``store_entries_to_upper_csr``: the valid entries summed into a dict of rows."""
    out = {i: {} for i in range(n)}
    for k in range(len(rows)):
        r, c = int(rows[k]), int(cols[k])
        if reset_seq[r] > seq or reset_seq[c] > seq or (len(skip) and skip[k]):
            continue
        a, b = int(pos[r]), int(pos[c])
        if a < 0 or b < 0:
            continue
        lo, hi = min(a, b), max(a, b)
        out[lo][hi] = out[lo].get(hi, 0.0) + float(vals[k]) * factor
    return csr_of_rows({i: sorted((j, v) for j, v in row.items() if v != 0.0)
                         for i, row in out.items()}, n)


def naive_symmetric_matvec(rows, cols, vals, z, out):
    """Twin of ``store_symmetric_matvec``: ``S z`` added into ``out`` by a dense ``S``."""
    S = np.zeros((out.shape[0], out.shape[0]))
    for r, c, v in zip(rows, cols, vals):
        S[r, c] += v
        if r != c:
            S[c, r] += v
    out += S @ z
