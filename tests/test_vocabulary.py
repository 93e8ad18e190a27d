"""The streaming vocabulary against its plain-list twin, plus its guarantees."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorstream.errors import InputError
from anchorstream.text.vocabulary import StreamingVocabulary, read_seed_vocabulary
from anchorstream.zarrio import decode_words, encode_words
from tests.naive_store import NaiveVocabulary

ALPHABET = [f"w{i}" for i in range(14)] + ["é", "日本"]


@st.composite
def streams(draw):
    n_docs = draw(st.integers(1, 60))
    docs = [
        draw(st.lists(st.sampled_from(ALPHABET), max_size=7)) for _ in range(n_docs)
    ]
    settings_ = {
        "capacity": draw(st.integers(1, 8)),
        "admit_threshold": draw(st.sampled_from([1.0, 2.0, 3.5])),
        "sketch_size": draw(st.sampled_from([1, 2, 3, 50])),
        "maintain_every": draw(st.sampled_from([1, 5, 1000])),
        "max_df": draw(st.sampled_from([None, 0.3, 0.6])),
        "max_df_min_docs": draw(st.sampled_from([0, 10])),
        "stopwords": draw(st.sampled_from([(), ("w0", "w1")])),
    }
    n_seed = draw(st.integers(0, min(2, settings_["capacity"])))
    settings_["seed"] = tuple(w for w in ("w5", "w6")[:n_seed])
    settings_["pin_seed"] = draw(st.booleans())
    # Growing weights, as with decay (every new document counts more in scaled units).
    growth = draw(st.sampled_from([1.0, 1.1]))
    weights = [growth**d for d in range(n_docs)]
    return docs, settings_, weights


@settings(max_examples=120, deadline=None)
@given(streams())
def test_matches_naive_twin(stream):
    docs, kw, weights = stream
    real = StreamingVocabulary(**kw)
    twin = NaiveVocabulary(**kw)
    for d, (doc, w) in enumerate(zip(docs, weights)):
        got = real.observe(doc, w)
        want = twin.observe(doc, w)
        assert got == want, f"document {d}: {doc}"
    assert real.words == twin.words
    np.testing.assert_allclose(real.doc_freq, twin.df, rtol=1e-12)
    assert [(w, c, e) for w, c, e in real.sketch_items()] == [tuple(e) for e in twin.sketch]
    assert len(real) == sum(w is not None for w in twin.words)


@settings(max_examples=60, deadline=None)
@given(streams())
def test_tallies_count_every_admission_and_eviction(stream):
    docs, kw, weights = stream
    v = StreamingVocabulary(**kw)
    seeded, evicted = len(v), 0
    for doc, w in zip(docs, weights):
        before = list(v.words)
        _, ev = v.observe(doc, w)
        evicted += len(ev)
        assert v.evicted_total == evicted
        assert len(v) == seeded + v.admitted_total - v.evicted_total
        # A slot holding a word it did not hold before was admitted into in this document.
        assert v.admitted_total >= sum(b != a and a is not None for b, a in zip(before, v.words))
    if any(w for w in v.words):
        v.evict(next(w for w in v.words if w))
        assert v.evicted_total == evicted + 1


@settings(max_examples=40, deadline=None)
@given(streams(), st.integers(0, 60))
def test_state_roundtrip_continues_identically(stream, cut):
    docs, kw, weights = stream
    cut = min(cut, len(docs))
    whole = StreamingVocabulary(**kw)
    for doc, w in zip(docs, weights):
        whole.observe(doc, w)
    first = StreamingVocabulary(**kw)
    for doc, w in zip(docs[:cut], weights[:cut]):
        first.observe(doc, w)
    state = first.get_state()
    state["slot_words"] = encode_and_back(state["slot_words"])
    resumed = StreamingVocabulary(**{k: v for k, v in kw.items() if k != "seed"})
    resumed.set_state(state)
    for doc, w in zip(docs[cut:], weights[cut:]):
        resumed.observe(doc, w)
    assert resumed.words == whole.words
    np.testing.assert_array_equal(resumed.doc_freq, whole.doc_freq)
    assert resumed.sketch_items() == whole.sketch_items()


def encode_and_back(words):
    return [w or None for w in decode_words(*encode_words(words))]


def test_threshold_one_admits_in_order_of_appearance():
    v = StreamingVocabulary(10, admit_threshold=1)
    slots, evicted = v.observe(["b", "a", "b"])
    assert slots == [0, 1, 0] and evicted == []
    assert v.observe(["c", "a"])[0] == [2, 1]
    assert v.words[:3] == ["b", "a", "c"] and len(v) == 3


def test_memory_stays_bounded_with_endless_new_tokens():
    v = StreamingVocabulary(20, admit_threshold=3, sketch_size=50)
    rng = np.random.default_rng(0)
    for d in range(3000):
        frequent = [f"f{k}" for k in rng.integers(0, 15, size=3)]
        v.observe(frequent + [f"noise{d}-{k}" for k in range(4)])
        assert len(v.sketch_items()) <= 100
    # The frequent words made it in despite 12,000 distinct noise tokens.
    assert {f"f{k}" for k in range(15)} <= set(w for w in v.words if w)


def test_frequent_words_get_low_slots():
    rng = np.random.default_rng(1)
    ranks = np.minimum(rng.zipf(1.3, size=(2000, 8)), 400)
    v = StreamingVocabulary(300, admit_threshold=3)
    for row in ranks:
        v.observe([f"r{r}" for r in row])
    slot = {w: s for s, w in enumerate(v.words) if w}
    top = [slot[f"r{r}"] for r in range(1, 11)]
    assert max(top) < 30  # of 300 slots


def test_full_vocabulary_evicts_the_weakest():
    v = StreamingVocabulary(2, admit_threshold=1)
    v.observe(["a", "b"])
    v.observe(["a"])
    # "c" needs a lower bound above b's frequency (1) to replace it.
    assert v.observe(["c"]) == ([], [])
    slots, evicted = v.observe(["c"])
    assert evicted == [1] and slots == [1] and v.words == ["a", "c"]
    # b went back to the sketch with its count and can return
    assert ("b", 1.0, 0.0) in v.sketch_items()


def test_pinned_seed_words_stay():
    v = StreamingVocabulary(2, admit_threshold=1, seed=["s1", "s2"])
    for _ in range(5):
        assert v.observe(["new"]) == ([], [])
    assert v.words == ["s1", "s2"]
    unpinned = StreamingVocabulary(2, admit_threshold=1, seed=["s1", "s2"], pin_seed=False)
    assert unpinned.observe(["new"]) == ([0], [0])


def test_stopwords_are_never_counted():
    v = StreamingVocabulary(5, admit_threshold=1, stopwords=["the"])
    assert v.observe(["the", "cat", "the"]) == ([0], [])
    assert "the" not in v and all(w != "the" for w, _, _ in v.sketch_items())


def test_max_df_blocks_and_unblocks():
    v = StreamingVocabulary(5, admit_threshold=1, max_df=0.5, max_df_min_docs=4,
                            maintain_every=4)
    for _ in range(4):
        v.observe(["common", "x"])
    # before the 5th document the check runs: both words are in every document
    slots, evicted = v.observe(["y", "z"])
    assert sorted(evicted) == [0, 1] and "common" not in v
    # a blocked word is not re-admitted while over the limit
    assert v.slot_of("common") == -1
    for _ in range(12):
        v.observe(["rare", "z"])
    v.observe(["common"])  # 17 docs, common in 5 < 0.5 * 17 -> unblocked at the check
    assert any(w == "common" for w, _, _ in v.sketch_items()) or "common" in v


def test_words_blocked_from_the_start_stay_out_until_the_first_check():
    """``blocked``: what a first pass found too frequent is neither admitted nor counted
    while free slots wait, and the max_df check then decides on the frequency counted since."""
    v = StreamingVocabulary(5, admit_threshold=1, max_df=0.5, max_df_min_docs=4,
                            maintain_every=4, blocked=["common", "fading"])
    for _ in range(4):
        assert v.observe(["common", "x"])[0] == [0]  # only x: common is not counted
    assert "common" not in v and v.words[1:] == [None] * 4
    state = v.get_state()
    assert sorted(state["blocked_words"]) == ["common", "fading"]
    resumed = StreamingVocabulary(5, admit_threshold=1, max_df=0.5, max_df_min_docs=4,
                                  maintain_every=4)
    resumed.set_state(state)
    # The check before the 5th document: common (in 4 of 4) stays blocked, fading (in 0)
    # goes back to the sketch and is admitted at its next document.
    resumed.observe(["y"])
    assert resumed.slot_of("common") == -1
    assert len(resumed.observe(["fading"])[0]) == 1 and "fading" in resumed


@pytest.mark.parametrize("blocked", [["a"], ["the"], ["", "b"], ["b", "b"], "b"])
def test_a_blocked_word_is_a_new_word(blocked):
    with pytest.raises(InputError, match="blocked"):
        StreamingVocabulary(3, seed=["a"], stopwords=["the"], blocked=blocked)


def test_manual_evict_and_lookup():
    v = StreamingVocabulary(3, admit_threshold=1, seed=["a", "b"])
    assert v.lookup(["b", "zz", "a"]) == [1, 0]
    assert v.evict("a") == 0 and v.slot_of("a") == -1
    with pytest.raises(InputError, match="not in the vocabulary"):
        v.evict("a")
    assert v.active_slots().tolist() == [1]


def test_rescale_scales_every_frequency():
    v = StreamingVocabulary(2, admit_threshold=2)
    for doc in (["a", "b"], ["a", "c"], ["a"]):
        v.observe(doc)
    before_df, before_sk = v.doc_freq, v.sketch_items()
    v.rescale(0.5)
    np.testing.assert_array_equal(v.doc_freq, before_df * 0.5)
    assert v.sketch_items() == [(w, c * 0.5, e * 0.5) for w, c, e in before_sk]


def test_words_roundtrip_through_blob():
    words = ["a", None, "日本語", "", "e\u0301"]
    assert decode_words(*encode_words(words)) == ["a", "", "日本語", "", "e\u0301"]
    blob, off = encode_words([])
    assert decode_words(blob, off) == []
    assert decode_words(*encode_words(["", None])) == ["", ""]
    assert decode_words(*encode_words(["a\x00b", "c"])) == ["a\x00b", "c"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(max_size=6)), max_size=20))
def test_words_roundtrip_through_blob_whatever_they_hold(words):
    # NUL bytes in a word (the slower path), empty words first or last, any script.
    assert decode_words(*encode_words(words)) == [w or "" for w in words]


def test_read_seed_vocabulary(tmp_path):
    p = tmp_path / "seed.txt"
    p.write_text("# most frequent first\nalpha\n\nbeta  # comment\ngamma\n", encoding="utf-8")
    assert read_seed_vocabulary(p) == ["alpha", "beta", "gamma"]
    p.write_text("a\nb\na\n", encoding="utf-8")
    with pytest.raises(InputError, match="repeats"):
        read_seed_vocabulary(p)
    with pytest.raises(InputError, match="cannot read"):
        read_seed_vocabulary(tmp_path / "missing.txt")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"capacity": 0}, "capacity"),
        ({"capacity": 2, "admit_threshold": 0}, "admit_threshold"),
        ({"capacity": 2, "max_df": 1.5}, "max_df"),
        ({"capacity": 2, "sketch_size": 0}, "sketch_size"),
        ({"capacity": 1, "seed": ["a", "b"]}, "capacity"),
        ({"capacity": 3, "seed": ["a", "a"]}, "repeats"),
        ({"capacity": 3, "seed": "ab"}, "not a str"),
        ({"capacity": 3, "seed": ["a"], "stopwords": ["a"]}, "stopword"),
    ],
)
def test_bad_settings(kwargs, match):
    with pytest.raises(InputError, match=match):
        StreamingVocabulary(**kwargs)


def test_no_dependence_on_string_hashing():
    # Two interpreters with different hash seeds must make identical decisions.
    script = textwrap.dedent(
        """
        import numpy as np
        from anchorstream.text.vocabulary import StreamingVocabulary
        rng = np.random.default_rng(3)
        v = StreamingVocabulary(6, admit_threshold=2, sketch_size=4)
        for _ in range(300):
            v.observe([f"t{k}" for k in rng.integers(0, 40, size=6)])
        print(v.words, v.sketch_items())
        """
    )
    root = Path(__file__).resolve().parents[1]
    outs = []
    for seed in ("1", "2"):
        res = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
            cwd=root, env={"PYTHONHASHSEED": seed, "PYTHONPATH": str(root), "PATH": ""},
        )
        assert res.returncode == 0, res.stderr
        outs.append(res.stdout)
    assert outs[0] == outs[1]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.sampled_from([f"w{i}" for i in range(12)] + ["the"]), max_size=15),
                max_size=25), st.integers(1, 3))
def test_observe_batch_says_where_each_counted_token_stood(docs, threshold):
    """positions=True: the same slots and evictions, and each slot's token is the token at its
    position (out-of-vocabulary and stop words take places), in order."""
    def make():
        return StreamingVocabulary(capacity=6, admit_threshold=threshold, sketch_size=20,
                                   maintain_every=7, stopwords={"the"})

    a, b = make(), make()
    indptr, slots, evictions = a.observe_batch(docs, 1.0)
    ip, sl, ev, where = b.observe_batch(docs, 1.0, positions=True)
    np.testing.assert_array_equal(ip, indptr)
    np.testing.assert_array_equal(sl, slots)
    assert ev == evictions
    assert where.dtype == np.int32 and where.size == slots.size
    # One document at a time, each slot holds the word at its position right after the call.
    c = make()
    for d, tokens in enumerate(docs):
        at = where[ip[d]:ip[d + 1]]
        assert np.all(np.diff(at) > 0)
        one_ip, one_sl, _, one_at = c.observe_batch([tokens], 1.0, positions=True)
        np.testing.assert_array_equal(one_at, at)
        assert [c.words[s] for s in one_sl] == [tokens[p] for p in one_at]
