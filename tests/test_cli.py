"""`anchorstream fit` and `inspect` end to end on files and stores: real files in (or a real
store written by `anchorstream ingest`), a real snapshot out."""

import itertools
import json
import logging
import re
import uuid

import numpy as np
import pytest

from anchorstream.evaluate import recovery_error
from anchorstream.snapshot import read_snapshot
from anchorstream.store import open_committed, store_info, stored_tokenizing
from anchorstream.synthetic import planted_model, sample_documents
from daemon.cli import CommandFormatter, build_parser, main

V, K = 150, 5


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A JSON-lines file of documents drawn from a planted model, plus some bad lines."""
    truth = planted_model(V, K, anchor_mass=0.08, random_state=7)
    X, _ = sample_documents(truth, 3000, doc_length=40, random_state=7)
    words = [f"word{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(V)]
    path = tmp_path_factory.mktemp("corpus") / "docs.jsonl"
    with open(path, "w") as fh:
        for d in range(X.shape[0]):
            row = X.getrow(d)
            tokens = [words[i] for i, c in zip(row.indices, row.data) for _ in range(int(c))]
            fh.write(json.dumps({"text": " ".join(tokens)}) + "\n")
        fh.write("{not json\n")
        fh.write(json.dumps({"text": 42}) + "\n")
        fh.write(json.dumps({"body": "no text field"}) + "\n")
    return path, truth, words


def fitted_error(out, truth, words):
    snap = read_snapshot(out)
    index = {w: i for i, w in enumerate(words)}
    B = np.zeros((V, snap.num_topics))
    for j, w in enumerate(snap.vocabulary):
        B[index[w]] = snap.topic_word[:, j]
    return snap, recovery_error(truth.topic_word, B / B.sum(axis=0))[0]


@pytest.mark.parametrize(
    "flags, tolerance",
    [
        ([], 0.15),
        (["--anchors", "fast", "--recover", "l2"], 0.15),
        (["--recover", "inverse"], 0.15),
        (["--no-rectify", "--recover", "kl"], 0.3),
        (["--anchors", "ddp"], 0.2),
        # RP picks rare words as novel without a document-frequency floor (0.9 at 5 here).
        (["--anchors", "rp", "--anchor-min-df", "50"], 0.25),
        (["--method", "anchorfree"], 0.3),
        (["--method", "tsvd"], 0.2),
        (["--rectify-anderson", "0", "--rectify-tol", "1e-5"], 0.15),
    ],
)
def test_fit_writes_a_valid_snapshot(corpus, tmp_path, capsys, flags, tolerance):
    path, truth, words = corpus
    out = tmp_path / "snap"
    code = main(["fit", "--input", str(path), "--topics", str(K), "--vocab-size", "500",
                 "--min-df", "2", "--anchor-min-df", "5", "--out", str(out), "--quiet", *flags])
    # (a later --anchor-min-df in flags overrides the 5)
    assert code == 0
    err = capsys.readouterr().err
    assert "3 rejected" in err  # bad lines are counted and reported, never fatal
    snap, error = fitted_error(out, truth, words)
    assert snap.num_topics == K and len(snap.topics[0]["top_words"]) >= 20
    assert snap.manifest["source"]["rejected"] == {"invalid_json": 1, "wrong_type": 1,
                                                   "missing_field": 1}
    assert error < tolerance, error
    # A method with two estimates of its topics says which it kept, and the groups' settings.
    if "tsvd" in flags or "ddp" in flags or "rp" in flags:
        assert snap.manifest["extra"]["fit"]["estimate"] in ("recover", "documents")
        assert snap.manifest["settings"]["recover_weights"] == "chi2"
    else:
        assert "estimate" not in snap.manifest["extra"]["fit"]


def write_planted(path, X, words, rng=None) -> None:
    """Documents ``X`` (a document-term matrix) as lines of words, each document's tokens in
    a random order from ``rng`` (a planted document's words are exchangeable), else grouped."""
    with open(path, "w") as fh:
        for d in range(X.shape[0]):
            row = X.getrow(d)
            tokens = np.repeat(row.indices, row.data.astype(np.int64))
            if rng is not None:
                tokens = rng.permutation(tokens)
            fh.write(" ".join(words[i] for i in tokens) + "\n")


@pytest.mark.parametrize("flags", [[], ["--method", "anchorfree"], ["--method", "tsvd"]])
def test_fit_refines_on_windows_of_the_documents(tmp_path, capsys, flags):
    # 40-token documents, their words in random order (a planted document's words are
    # exchangeable): whole, auto leaves them unrefined; in windows of 8 tokens it refines.
    truth = planted_model(V, K, anchor_mass=0.08, random_state=8)
    X, _ = sample_documents(truth, 3000, doc_length=40, random_state=8)
    words = [f"w{i:03d}" for i in range(V)]
    path = tmp_path / "docs.txt"
    write_planted(path, X, words, np.random.default_rng(8))
    base = ["fit", "--input", str(path), "--format", "text", "--stopwords", "none", "-k",
            str(K), "--min-df", "2", "--max-df", "1", "--anchor-min-df", "5", "--quiet", *flags]
    assert main([*base, "--out", str(tmp_path / "whole")]) == 0
    assert main([*base, "--out", str(tmp_path / "win"), "--refine-window", "8"]) == 0
    assert "warning: --refine-window" not in capsys.readouterr().err
    whole, whole_error = fitted_error(tmp_path / "whole", truth, words)
    win, error = fitted_error(tmp_path / "win", truth, words)
    assert whole.manifest["settings"]["refine_window"] is None
    assert whole.manifest["extra"]["fit"]["refine"] == "none"
    assert win.manifest["settings"]["refine_window"] == 8
    assert win.manifest["extra"]["fit"]["refine"] == "joint"
    # The windows' pairs are a planted document's pairs too: as near the truth (0.04-0.07
    # here, unrefined 0.04-0.09).
    assert error < min(whole_error + 0.01, 0.1), (whole_error, error)
    if not flags:  # no refinement: the windows are not counted, and the topics are the whole's
        assert main([*base, "--out", str(tmp_path / "none"), "--refine-window", "8",
                     "--refine", "none"]) == 0
        none = read_snapshot(tmp_path / "none")
        assert none.manifest["extra"]["fit"]["refine"] == "none"
        np.testing.assert_array_equal(none.topic_word, whole.topic_word)
        # Windows as long as the documents: auto does not refine, and says so.
        assert main([*base, "--out", str(tmp_path / "long"), "--refine-window", "40"]) == 0
        err = capsys.readouterr().err
        assert "warning: --refine-window 40: the windows hold 40.0 words" in err
        assert "--refine auto does not refine" in err
        assert read_snapshot(tmp_path / "long").manifest["extra"]["fit"]["refine"] == "none"


@pytest.mark.parametrize("length, k, docs, flags, window", [
    (150, 50, 400, [], 24),                            # long documents, many topics: auto
    (150, 30, 400, [], 24),                            # the rule's least K
    (150, 10, 1100, [], None),                         # few topics, 110 documents each
    (40, 10, 1100, [], None),                          # documents not long
    (40, 10, 400, [], 24),                             # but only 40 documents per topic
    (150, 50, 400, ["--refine-window", "none"], None),  # whole documents asked for
    (150, 50, 400, ["--refine", "none"], None),        # no refinement asked for
    (150, 50, 400, ["--refine-window", "12"], 12),     # windows asked for
])
def test_fit_refines_long_documents_in_windows_by_default(tmp_path, capsys, length, k, docs,
                                                          flags, window):
    truth = planted_model(V, K, anchor_mass=0.08, random_state=9)
    X, _ = sample_documents(truth, docs, doc_length=length, random_state=9)
    path = tmp_path / "docs.txt"
    write_planted(path, X, [f"w{i:03d}" for i in range(V)])
    out = tmp_path / "snap"
    assert main(["fit", "--input", str(path), "--format", "text", "--stopwords", "none", "-k",
                 str(k), "--min-df", "2", "--max-df", "1", "--anchor-min-df", "5", "--quiet",
                 "--out", str(out), *flags]) == 0
    err = capsys.readouterr().err
    auto = window is not None and not flags
    assert ("note: refining in windows of 24 tokens (--refine-window auto: the documents "
            f"average {length} words" in err) == auto
    assert (f"{docs / k:,.0f} documents per topic" in err) == auto
    manifest = read_snapshot(out).manifest
    assert manifest["settings"]["refine_window"] == window
    # Windows of 24 or 12 are short: auto refines them; whole documents of 40 or 150 not.
    refine = "none" if "none" in flags or window is None else "joint"
    assert manifest["extra"]["fit"]["refine"] == refine
    # The snapshot records the share of tokens in long documents in any case.
    share = manifest["source"]["long_document_token_share"]
    assert share == (1.0 if length > 100 else 0.0)


def test_refine_window_is_checked_and_needs_documents(tmp_path, capsys):
    docs = tmp_path / "docs.txt"
    docs.write_text("alpha beta gamma\nbeta gamma alpha\ngamma alpha beta\n", encoding="utf-8")
    for bad in ("1", "2.5", "many"):
        with pytest.raises(SystemExit) as exit_:
            main(["fit", "--input", str(docs), "-k", "2", "--out", str(tmp_path / "x"),
                  "--refine-window", bad])
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert "--refine-window" in err and repr(bad) in err and "'auto' or 'none'" in err
    store = str(tmp_path / "store")
    # --max-df none: each of the three words is in every document.
    assert main(["ingest", str(docs), "--store", store, "--format", "text",
                 "--admit-threshold", "1", "--stopwords", "none", "--refine-window", "none",
                 "--max-df", "none", "-q"]) == 0
    capsys.readouterr()
    assert main(["fit", "--store", store, "-k", "2", "--out", str(tmp_path / "snap"),
                 "--refine-window", "12"]) == 1
    err = capsys.readouterr().err
    assert "--refine-window 12" in err and "keeps no windows' pairs" in err
    assert "ingest with --refine-window 12" in err
    assert not (tmp_path / "snap").exists()
    # A store that keeps windows of another length (from the documents ingested since) says
    # which.
    more = tmp_path / "more.txt"
    more.write_text("gamma beta alpha beta\nalpha alpha gamma\n", encoding="utf-8")
    assert main(["ingest", str(more), "--store", store, "--format", "text",
                 "--refine-window", "4", "--stopwords", "none", "-q"]) == 0
    capsys.readouterr()
    assert main(["fit", "--store", store, "-k", "2", "--out", str(tmp_path / "snap"),
                 "--refine-window", "12"]) == 1
    assert "keeps the pairs of windows of 4 tokens" in capsys.readouterr().err


def test_supertopics_hierarchy_and_inspect(corpus, tmp_path, capsys):
    path, _, _ = corpus
    out = tmp_path / "snap"
    assert main(["fit", "--input", str(path), "-k", str(K), "--min-df", "2", "--anchor-min-df",
                 "5", "--supertopics", "2", "--out", str(out), "--quiet"]) == 0
    hierarchy = read_snapshot(out).manifest["extra"]["hierarchy"]["supertopics"]
    assert len(hierarchy) == 2
    assert {k for s in hierarchy for k, _ in s["topics"]} <= set(range(K))
    capsys.readouterr()
    assert main(["inspect", str(out), "--words", "5"]) == 0
    listing = capsys.readouterr().out
    assert listing.count("\n") >= K


def test_errors_are_one_line_not_tracebacks(tmp_path, capsys):
    assert main(["fit", "--input", str(tmp_path / "missing.jsonl"), "-k", "3",
                 "--out", str(tmp_path / "o")]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert main(["inspect", str(tmp_path / "nothing")]) == 1
    assert "error" in capsys.readouterr().err


def test_fit_says_why_no_line_became_a_document_and_what_to_pass(tmp_path, capsys):
    text = tmp_path / "plain.txt"
    text.write_text("".join(f"alpha beta gamma {i % 7}\n" for i in range(50)))
    assert main(["fit", "--input", str(text), "-k", "2", "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "none of the 50 lines is JSON" in err and "--format text" in err
    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_text("".join(json.dumps({"body": "alpha beta"}) + "\n" for _ in range(5)))
    assert main(["fit", "--input", str(jsonl), "-k", "2", "--out", str(tmp_path / "o")]) == 1
    assert "no line has the field 'text'" in capsys.readouterr().err
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("caf\xe9 cr\xe8me br\xfbl\xe9e\n".encode("latin-1") * 30)
    assert main(["fit", "--input", str(latin1), "--format", "text", "-k", "2",
                 "--out", str(tmp_path / "o")]) == 1
    assert "30 of the 30 lines are not UTF-8" in capsys.readouterr().err


def test_a_store_a_snapshot_and_a_file_given_for_one_another_are_named(corpus, tmp_path,
                                                                       capsys):
    path, _, _ = corpus
    store, snap = str(tmp_path / "store"), str(tmp_path / "snap")
    assert main(["ingest", str(path), "--store", store, "-q"]) == 0
    assert main(["fit", "--store", store, "-k", "3", "--out", snap, "-q"]) == 0
    capsys.readouterr()
    cases = [
        (["fit", "--input", store, "-k", "3", "--out", str(tmp_path / "o")],
         f"input file {store!r} is a co-occurrence store, not a file of documents"),
        (["ingest", snap, "--store", str(tmp_path / "s2")],
         f"input file {snap!r} is a topic-model snapshot, not a file of documents"),
        (["inspect", store], f"{store} is a co-occurrence store (an Icechunk repository), not "
                             "a snapshot directory"),
        (["store-info", snap], "not an Icechunk repository (it holds a topic-model snapshot)"),
        (["store-info", str(path)], f"{str(path)!r} is a file, not a store directory"),
        (["fit", "--store", str(path), "-k", "3", "--out", str(tmp_path / "o")],
         "is a file, not a store directory"),
        # Partitions named for a plain store: it was "has 0 active words".
        (["fit", "--store", store, "--partitions", "docs:2", "-k", "3", "--out",
          str(tmp_path / "o")], "no partition store under " + repr(store) + " has a commit "
         "yet (partitions ['docs:0', 'docs:1']); it is one store, not a partitioned root"),
        (["store-info", store, "--partitions", "docs:1"], "drop --partitions"),
        # Refused before the first pass reads the files (which would take long on a backfill).
        (["ingest", str(path), "--store", snap],
         f"cannot create a store at {snap!r}: it exists and is not empty (it holds a "
         "topic-model snapshot)"),
    ]
    for args, message in cases:
        assert main(args) == 1, args
        err = capsys.readouterr().err
        assert message in err, (args, err)
        assert "first pass" not in err and "Traceback" not in err
    assert not (tmp_path / "o").exists() and not (tmp_path / "s2").exists()


def test_fit_refuses_a_file_listed_twice_as_ingest_does(corpus, tmp_path, capsys):
    path, _, _ = corpus
    link = tmp_path / "link.jsonl"
    link.symlink_to(path)
    assert main(["fit", "--input", str(path), str(link), "-k", "3",
                 "--out", str(tmp_path / "o")]) == 1
    assert "are the same file: its documents would be counted twice" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("args, flag, low", [
    (["fit", "-k", "0"], "--topics/-k", 1),
    (["fit", "-k", "2", "--refine-iters", "0"], "--refine-iters", 1),  # refine_max_iter
    (["fit", "-k", "2", "--top-words", "10"], "--top-words", 20),      # n_top_words
    (["fit", "-k", "2", "--supertopics", "-1"], "--supertopics", 0),   # n_super
    (["fit", "-k", "2", "--seed", "-1"], "--seed", 0),
    (["ingest", "--capacity", "0"], "--capacity", 1),
    (["ingest", "--chunk-size", "x"], "--chunk-size", 1),
    (["run", "--embedded-partitions", "0"], "--embedded-partitions", 1),  # was taken as 1
    (["ingest", "--admit-threshold", "0"], "--admit-threshold", None),  # admit_threshold
    (["ingest", "--half-life", "-1"], "--half-life", None),
])
def test_numeric_flags_are_refused_by_their_own_name(tmp_path, capsys, args, flag, low):
    # The library's errors name its parameters (refine_max_iter for --refine-iters): the
    # flags are checked first, under the names a user typed.
    docs = tmp_path / "d.txt"
    docs.write_text("alpha beta\n")
    where = {"fit": ["--input", str(docs), "--out", str(tmp_path / "o")],
             "ingest": [str(docs), "--store", str(tmp_path / "s")], "run": []}[args[0]]
    with pytest.raises(SystemExit) as exit_:
        main([args[0], *where, *args[1:]])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    bound = "a number > 0" if low is None else f"an integer >= {low}"
    assert f"argument {flag}: expected {bound}, got " in err, err
    assert not (tmp_path / "o").exists() and not (tmp_path / "s").exists()


def test_fit_counts_the_documents_too_short_for_a_word_pair(tmp_path, capsys):
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(30)]
    lines = [" ".join(rng.choice(words, size=12)) for _ in range(300)] + ["w1"] * 40
    path = tmp_path / "docs.txt"
    path.write_text("\n".join(lines) + "\n")
    assert main(["fit", "--input", str(path), "--format", "text", "-k", "3", "--min-df", "1",
                 "--anchor-min-df", "1", "--stopwords", "none", "-q",
                 "--out", str(tmp_path / "snap")]) == 0
    err = capsys.readouterr().err
    assert "300 documents" in err
    assert "40 more had fewer than 2 words of the vocabulary, so no word pair" in err


def test_fit_names_the_rule_that_left_too_few_words(tmp_path, capsys):
    # The same few words in every document: --max-df drops them all, and the error says so
    # (it used to advise lowering --min-df, which they all passed).
    same = tmp_path / "same.txt"
    same.write_text("quick brown fox jumps lazy dog\n" * 200)
    out = tmp_path / "snap"
    # By default the copies are one document, and the error says why there is one.
    assert main(["fit", "--input", str(same), "--format", "text", "-k", "3",
                 "--stopwords", "none", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "199 repeated documents skipped" in err
    assert "199 documents repeated others and were skipped, leaving 1" in err
    assert "--duplicate-memory 0" in err
    assert main(["fit", "--input", str(same), "--format", "text", "-k", "3",
                 "--stopwords", "none", "--duplicate-memory", "0", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "the vocabulary has 0 words, need more than --topics=3" in err
    assert "6 of those in more than --max-df 0.5" in err and "raise --max-df" in err
    # Too few documents for --min-df.
    rng = np.random.default_rng(0)
    few = tmp_path / "few.txt"
    few.write_text("".join(" ".join(rng.choice([f"w{i}" for i in range(1000)], 8,
                                               replace=False)) + "\n" for _ in range(20)))
    assert main(["fit", "--input", str(few), "--format", "text", "-k", "3",
                 "--stopwords", "none", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "0 are in at least --min-df 5 documents: lower --min-df" in err
    assert not out.exists()


def test_fit_records_the_rectification_settings(corpus, tmp_path):
    path, _, _ = corpus
    out = tmp_path / "snap"
    assert main(["fit", "--input", str(path), "-k", str(K), "--min-df", "2", "--out", str(out),
                 "--quiet", "--rectify-anderson", "0", "--rectify-tol", "1e-5"]) == 0
    settings = read_snapshot(out).manifest["settings"]
    assert settings["rectify_anderson"] == 0 and settings["rectify_tol"] == 1e-5


def test_fit_refuses_an_existing_output_before_working(corpus, tmp_path, capsys):
    path, _, _ = corpus
    out = tmp_path / "taken"
    out.mkdir()
    assert main(["fit", "--input", str(path), "-k", str(K), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "already exists" in err and "read " not in err  # no document was read


def test_fit_prepares_its_arrays_in_the_background_within_a_memory_bound(monkeypatch):
    import daemon.cli.fit_counts as cmd_fit

    pre = cmd_fit._Prefault(30, np.float32)
    assert pre.enabled
    pre.start()
    counts, iterate = pre.take(20)  # a vocabulary smaller than the cap: leading views
    assert counts.shape == (20, 20) and counts.flags.c_contiguous and not counts.any()
    assert iterate.dtype == np.float32 and iterate.size == 400
    assert np.shares_memory(counts, pre.counts)
    assert pre.take(31) == (None, None)  # larger than prepared: the fit allocates its own
    only_counts = cmd_fit._Prefault(10)
    only_counts.start()
    assert only_counts.take(10)[1] is None
    monkeypatch.setattr(cmd_fit, "_PREFAULT_MAX_BYTES", 30 * 30 * 12 - 1)
    big = cmd_fit._Prefault(30, np.float32)
    assert not big.enabled
    big.start()
    assert big.take(30) == (None, None)


@pytest.mark.parametrize("where, rectify", [("path", "ap"), ("url", "ap"),
                                             ("path", "lowrank")])
def test_fit_on_a_store_written_by_ingest(corpus, tmp_path, where, rectify):
    # `ingest` then `fit --store`: the snapshot's vocabulary is the store's active words, its
    # source names the store version and offsets, and the topics are as good as from files.
    # A memory:// URL reaches the store as given (a Path would make it "memory:/..."). The
    # low-rank rectifier reads the store sparse (open_committed_sparse): the same checks hold.
    path, truth, words = corpus
    store = str(tmp_path / "store") if where == "path" else f"memory://fit-{uuid.uuid4().hex}"
    assert main(["ingest", str(path), "--store", store, "--capacity", "400",
                 "--admit-threshold", "2", "--checkpoint-every", "1000", "-q"]) == 0
    out = tmp_path / "snap"
    assert main(["fit", "--store", store, "-k", str(K), "--anchor-min-df", "5",
                 "--rectify-method", rectify, "--out", str(out), "--quiet"]) == 0
    committed = open_committed(store)
    assert set(committed.words) <= set(words) and len(committed.words) > 0.9 * V
    snap, error = fitted_error(out, truth, words)
    assert list(snap.vocabulary) == committed.words
    source = snap.manifest["source"]
    assert source["store"] == store and source["store_version"] == committed.version
    assert source["offsets"] == committed.offsets
    # Only what chose this fit goes into the settings: no file-reading or vocabulary options.
    settings = snap.manifest["settings"]
    assert not {"vocab_size", "min_df", "max_df", "stopwords", "tokenizer"} & set(settings)
    assert settings["n_topics"] == K and settings["method"] == "anchor"
    assert settings["rectify_method"] == rectify
    assert error < 0.15, error


def _same_topics(out_a, out_b) -> float:
    """Mean matched ℓ1 between two snapshots' topics (Hungarian on 1 - total variation)."""
    from scipy.optimize import linear_sum_assignment

    from anchorstream.model.align import topic_similarity

    a, b = read_snapshot(out_a), read_snapshot(out_b)
    S = topic_similarity(a.topic_word.T, a.vocabulary, b.topic_word.T, b.vocabulary)
    rows, cols = linear_sum_assignment(S, maximize=True)
    return float((2.0 * (1.0 - S[rows, cols])).mean())


def test_ingest_then_fit_store_equals_fit_input_on_the_same_documents(corpus, tmp_path):
    # Streaming equals batch (issue 16 item 5): `ingest` (its default first pass) then
    # `fit --store` gives fit --input's vocabulary, its co-occurrence and its topics, with a
    # capacity below the corpus's words so that the choice of words matters. The daemon's
    # streaming rule (--vocabulary stream) misses every word's documents before its admission:
    # the reason for the first pass, checked so that this test would notice if it stopped
    # mattering.
    from anchorstream.stats.cooccurrence import cooccurrence
    from anchorstream.text.tokenize import Tokenizer, count_matrix

    path, _, _ = corpus
    n_words = 100  # of the corpus's 150
    batch, windowed = tmp_path / "batch", tmp_path / "batch-windows"
    assert main(["fit", "--input", str(path), "-k", str(K), "--vocab-size", str(n_words),
                 "--anchor-min-df", "5", "--out", str(batch), "-q"]) == 0
    # The refinement's pairs in windows of 6 tokens: the store cuts the same windows.
    assert main(["fit", "--input", str(path), "-k", str(K), "--vocab-size", str(n_words),
                 "--anchor-min-df", "5", "--refine-window", "6", "--out", str(windowed),
                 "-q"]) == 0
    assert read_snapshot(windowed).manifest["extra"]["fit"]["refine"] == "joint"
    assert _same_topics(windowed, batch) > 0.01  # the windows do change the topics
    docs = [Tokenizer()(json.loads(line)["text"]) for line in path.read_text().splitlines()
            if line.startswith('{"text": "')]
    for rule in ("first-pass", "stream"):
        store = str(tmp_path / rule)
        assert main(["ingest", str(path), "--store", store, "--capacity", str(n_words),
                     "--vocabulary", rule, "--checkpoint-every", "700", "--refine-window", "6",
                     "-q"]) == 0
        committed = open_committed(store)
        c = committed.cooccurrence
        exact = cooccurrence(count_matrix(docs, committed.words), length_cap=c.length_cap)
        if rule == "stream":
            assert c.doc_freq.sum() < exact.doc_freq.sum()
            continue
        assert committed.words == list(read_snapshot(batch).vocabulary)
        np.testing.assert_allclose(c.counts, exact.counts, rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(c.doc_freq, exact.doc_freq)
        out = tmp_path / "snap"
        assert main(["fit", "--store", store, "-k", str(K), "--anchor-min-df", "5",
                     "--out", str(out), "-q"]) == 0
        assert _same_topics(out, batch) < 1e-4
        assert main(["fit", "--store", store, "-k", str(K), "--anchor-min-df", "5",
                     "--refine-window", "6", "--out", str(tmp_path / "snap-windows"),
                     "-q"]) == 0
        assert _same_topics(tmp_path / "snap-windows", windowed) < 1e-4


def test_fit_input_and_a_store_skip_the_same_repeated_documents(corpus, tmp_path, capsys):
    # A template posted many times: fit --input, and ingest (its first pass, then the store's
    # own filter across checkpoints) then fit --store, count each text once, so the store
    # holds the batch estimator over the distinct documents and both fits agree.
    from anchorstream.stats.cooccurrence import cooccurrence
    from anchorstream.text.duplicates import DEFAULT_MEMORY, DuplicateFilter
    from anchorstream.text.tokenize import Tokenizer, count_matrix

    src, _, _ = corpus
    lines = [line for line in src.read_text().splitlines() if line.startswith('{"text": "')]
    rng = np.random.default_rng(3)
    for i in rng.integers(0, 300, size=6):  # six documents, 60 copies each, anywhere
        for at in rng.integers(int(i) + 1, len(lines), size=60):
            lines.insert(int(at), lines[i])
    path = tmp_path / "repeats.jsonl"
    path.write_text("\n".join(lines) + "\n")
    tok = Tokenizer()
    docs = [tok(json.loads(line)["text"]) for line in lines]
    keep = DuplicateFilter(DEFAULT_MEMORY).keep(docs)
    distinct = [d for d, k in zip(docs, keep) if k]
    assert len(docs) - len(distinct) >= 300
    batch = tmp_path / "batch"
    assert main(["fit", "--input", str(path), "-k", str(K), "--anchor-min-df", "5",
                 "--out", str(batch), "-q"]) == 0
    source = read_snapshot(batch).manifest["source"]
    assert source["documents"] == len(distinct)
    assert source["duplicates"] == len(docs) - len(distinct)
    capsys.readouterr()
    store = str(tmp_path / "store")
    assert main(["ingest", str(path), "--store", store, "--checkpoint-every", "500",
                 "-q"]) == 0
    assert f"{len(docs) - len(distinct)} repeated documents skipped" in capsys.readouterr().err
    committed = open_committed(store)
    c = committed.cooccurrence
    exact = cooccurrence(count_matrix(distinct, committed.words), length_cap=c.length_cap)
    assert committed.words == list(read_snapshot(batch).vocabulary)
    np.testing.assert_allclose(c.counts, exact.counts, rtol=1e-12, atol=1e-15)
    out = tmp_path / "snap"
    assert main(["fit", "--store", store, "-k", str(K), "--anchor-min-df", "5",
                 "--out", str(out), "-q"]) == 0
    assert _same_topics(out, batch) < 1e-4


@pytest.mark.parametrize("n_docs", [600, 1500])
def test_a_first_pass_with_free_slots_counts_what_fit_input_counts(corpus, tmp_path, capsys,
                                                                   n_docs):
    """Streaming equals batch where the vocabulary leaves slots free (a small corpus): the
    words fit --input leaves out for being in more than --max-df of the documents are not
    admitted into the free slots while the files are ingested (blocked from the start, the
    store's max_df check after them), so neither the store's words nor its documents' lengths
    hold them; before or after the store's first max_df check (1,000 documents)."""
    from anchorstream.stats.cooccurrence import cooccurrence
    from anchorstream.text.tokenize import Tokenizer, count_matrix

    src, _, _ = corpus
    lines = [line for line in src.read_text().splitlines() if line.startswith('{"text": "')]
    rng = np.random.default_rng(1)
    path = tmp_path / "docs.jsonl"
    # "quokka" in 70 % of the documents: over fit's --max-df 0.5.
    path.write_text("".join(
        json.dumps({"text": json.loads(line)["text"] + (" quokka" if rng.random() < 0.7 else
                                                          "")}) + "\n"
        for line in lines[:n_docs]))
    batch = tmp_path / "batch"
    assert main(["fit", "--input", str(path), "-k", str(K), "--anchor-min-df", "5",
                 "--out", str(batch), "-q"]) == 0
    assert "quokka" not in read_snapshot(batch).vocabulary
    store = str(tmp_path / "store")
    assert main(["ingest", str(path), "--store", store, "--capacity", "1000", "-q"]) == 0
    err = capsys.readouterr().err
    committed = open_committed(store)
    assert committed.words == list(read_snapshot(batch).vocabulary)
    assert len(committed.words) < 1000  # slots were free
    c = committed.cooccurrence
    docs = [Tokenizer()(json.loads(line)["text"]) for line in path.read_text().splitlines()]
    exact = cooccurrence(count_matrix(docs, committed.words), length_cap=c.length_cap)
    assert c.num_tokens == exact.num_tokens
    np.testing.assert_allclose(c.counts, exact.counts, rtol=1e-12, atol=1e-15)
    out = tmp_path / "snap"
    assert main(["fit", "--store", store, "-k", str(K), "--anchor-min-df", "5",
                 "--out", str(out), "-q"]) == 0
    assert _same_topics(out, batch) < 1e-4
    assert "first pass: " in err and "; 1 in more than --max-df of the documents blocked" in err


def test_auto_windows_from_a_store_are_fit_inputs_on_the_same_documents(tmp_path, capsys):
    """--refine-window auto, the default everywhere: on long documents and 30 topics `ingest`
    keeps the windows' pairs of 24 tokens, and `fit --store` decides as `fit --input` does and
    gives its topics; a store that keeps no windows is fitted on whole documents, said so."""
    truth = planted_model(200, 30, anchor_mass=0.08, random_state=4)
    X, _ = sample_documents(truth, 600, doc_length=120, random_state=4)
    path = tmp_path / "docs.txt"
    write_planted(path, X, [f"w{i:03d}" for i in range(200)], np.random.default_rng(4))
    common = ["-k", "30", "--anchor-min-df", "5", "-q"]
    batch = tmp_path / "batch"
    assert main(["fit", "--input", str(path), "--format", "text", "--stopwords", "none",
                 *common, "--out", str(batch)]) == 0
    assert "note: refining in windows of 24 tokens" in capsys.readouterr().err
    assert read_snapshot(batch).manifest["settings"]["refine_window"] == 24
    for flags, window in (([], 24), (["--refine-window", "none"], None)):
        store = str(tmp_path / f"store{window}")
        assert main(["ingest", str(path), "--store", store, "--format", "text", "--stopwords",
                     "none", "--capacity", "200", "-q", *flags]) == 0
        capsys.readouterr()
        out = tmp_path / f"snap{window}"
        assert main(["fit", "--store", store, *common, "--out", str(out)]) == 0
        err = capsys.readouterr().err
        assert read_snapshot(out).manifest["settings"]["refine_window"] == window
        if window:
            assert "note: refining in windows of 24 tokens" in err
            assert _same_topics(out, batch) < 1e-4
        else:
            assert "keeps no windows' pairs: refining whole documents" in err


def test_ingest_vocabulary_rule_is_checked(corpus, tmp_path, capsys):
    path, _, words = corpus
    seed = tmp_path / "seed.txt"
    seed.write_text("\n".join(words[:10]), encoding="utf-8")
    store = str(tmp_path / "s")
    assert main(["ingest", str(path), "--store", store, "--vocabulary", "first-pass",
                 "--seed-vocabulary", str(seed), "-q"]) == 1
    assert "drop --seed-vocabulary" in capsys.readouterr().err
    # A seed vocabulary alone means the streaming rule from it (as before the first pass).
    assert main(["ingest", str(path), "--store", store, "--seed-vocabulary", str(seed),
                 "--capacity", "10", "-q"]) == 0
    assert open_committed(store).words == words[:10]
    # Forgetting implies the streaming rule too: a store that follows the present does not pin
    # the backfill's words (here the first words seen, not the most frequent ones).
    from anchorstream.text.tokenize import Tokenizer
    from daemon.cli.ingest import first_pass

    forgetting = str(tmp_path / "f")
    assert main(["ingest", str(path), "--store", forgetting, "--capacity", "10",
                 "--half-life", "5000", "--admit-threshold", "1", "-q"]) == 0
    first = first_pass([path], tokenizer=Tokenizer(), capacity=10, min_df=1,
                       max_df=0.5).vocabulary
    assert len(first) == 10 and set(open_committed(forgetting).words) != set(first)


def test_fit_on_a_store_refuses_what_it_cannot_honour(tmp_path, capsys):
    docs = tmp_path / "docs.txt"
    docs.write_text("alpha beta gamma\nbeta gamma alpha\ngamma alpha beta\n", encoding="utf-8")
    store = str(tmp_path / "store")
    assert main(["ingest", str(docs), "--store", store, "--format", "text",
                 "--admit-threshold", "1", "--stopwords", "none", "--max-df", "none",
                 "-q"]) == 0
    capsys.readouterr()
    out = tmp_path / "snap"
    # Options that choose the vocabulary from files are refused by name, before any work.
    for flag, value in (("--min-df", "2"), ("--vocab-size", "10"), ("--max-df", "0.9"),
                        ("--stopwords", "none"), ("--format", "text"), ("--text-field", "body"),
                        ("--length-cap", "10")):
        assert main(["fit", "--store", store, "-k", "2", "--out", str(out), flag, value]) == 1
        err = capsys.readouterr().err
        assert f"error: {flag} only applies to --input" in err and f"drop {flag}" in err
    assert main(["fit", "--store", store, "-k", "2", "--out", str(out), "--min-df", "2",
                 "--max-df", "0.9"]) == 1
    assert "--min-df, --max-df only apply to --input" in capsys.readouterr().err
    # A store needs more active words than topics.
    assert main(["fit", "--store", store, "-k", "3", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "has 3 active words" in err and "need more than --topics=3" in err
    assert main(["fit", "--store", str(tmp_path / "nothing"), "-k", "2", "--out", str(out)]) == 1
    assert "no store at" in capsys.readouterr().err
    assert not out.exists()
    # URLs are kept as they are (type=Path turned "s3://b/p" into "s3:/b/p").
    args = build_parser().parse_args(["fit", "--store", "s3://bucket/prefix", "-k", "2",
                                      "--out", "o"])
    assert args.store == "s3://bucket/prefix"


def test_length_cap_and_max_df_options_take_none_and_name_bad_values(tmp_path, capsys):
    docs = tmp_path / "docs.txt"
    docs.write_text("alpha beta gamma delta\nbeta gamma alpha\ngamma alpha beta delta\n",
                    encoding="utf-8")
    for flag, bad in (("--length-cap", "1"), ("--length-cap", "many"), ("--max-df", "0"),
                      ("--max-df", "2")):
        command = (["fit", "--input", str(docs), "-k", "2", "--out", str(tmp_path / "x")]
                   if flag == "--length-cap" else
                   ["ingest", str(docs), "--store", str(tmp_path / "s"), "-q"])
        with pytest.raises(SystemExit) as exit_:
            main([*command, flag, bad])
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert flag in err and repr(bad) in err and "'none'" in err
    store = str(tmp_path / "store")
    assert main(["ingest", str(docs), "--store", store, "--format", "text", "--stopwords",
                 "none", "--admit-threshold", "1", "--length-cap", "none", "--max-df", "none",
                 "-q"]) == 0
    from anchorstream.store import open_committed
    committed = open_committed(store)
    assert committed.cooccurrence.length_cap is None
    assert committed.cooccurrence.normalized().sum() == pytest.approx(1.0)


def test_fit_reads_records_by_the_ingest_loops_rule_and_never_aborts(tmp_path):
    # The same record rule as the ingest loop (daemon.ingest.loop.record_tokens): bad lines are
    # rejected by reason, and a line whose processing raises what no check foresaw is rejected
    # as unprocessable, as the loop does, instead of stopping the fit.
    from anchorstream.text.tokenize import Tokenizer
    from daemon.cli.fit_counts import read_documents

    path = tmp_path / "docs.jsonl"
    path.write_bytes(b'{"text": "apple banana"}\n\xff\n{"text": "boom here"}\n'
                     b'{"text": ["a\\nb"]}\n{"text": "cherry date"}\n')
    plain = Tokenizer(stopwords=None)

    def tokenizer(content):
        if "boom" in content:
            raise RuntimeError("a tokenizer bug")
        return plain(content)

    docs, stats = read_documents([path], format="json", text_field="text", tokenizer=tokenizer,
                                 progress=False)
    assert list(docs) == [["apple", "banana"], ["cherry", "date"]]
    assert stats == {"lines": 5, "documents": 2, "duplicates": 0, "at_max_tokens": 0,
                     "rejected": {"invalid_utf8": 1, "unprocessable": 1, "invalid_token": 1},
        "long_document_token_share": 0.0}


def test_fit_reads_records_with_the_ingest_loops_limits(tmp_path):
    # A line over max_bytes is rejected as oversized and a document's tokens past max_tokens
    # are not counted, as the loop does; the documents that reached the limit are counted.
    from anchorstream.text.tokenize import Tokenizer
    from daemon.cli.fit_counts import read_documents

    path = tmp_path / "docs.jsonl"
    path.write_text('{"text": "aa bb cc dd ee"}\n{"text": "ff gg hh"}\n{"text": "ii jj"}\n'
                    '{"text": "%s"}\n' % ("xx " * 40))
    docs, stats = read_documents([path], format="json", text_field="text",
                                 tokenizer=Tokenizer(stopwords=None), progress=False,
                                 max_bytes=100, max_tokens=3)
    assert list(docs) == [["aa", "bb", "cc"], ["ff", "gg", "hh"], ["ii", "jj"]]
    assert stats["rejected"] == {"oversized": 1}
    assert stats["at_max_tokens"] == 2


def test_fit_input_and_ingest_count_the_same_tokens_of_long_documents(corpus, tmp_path, capsys):
    # Streaming equals batch for documents over the token limit: `fit --input` cuts them where
    # `ingest` (and the daemon) do, so a first-pass store holds fit's vocabulary. The corpus's
    # tokens are in word order, so a cut at 20 of 40 takes documents from the later words.
    path, _, _ = corpus
    n_words = 100
    vocab = {}
    for limit in ("20", None):
        out = tmp_path / f"fit-{limit}"
        extra = ["--max-tokens", limit] if limit else []
        assert main(["fit", "--input", str(path), "-k", str(K), "--vocab-size", str(n_words),
                     "--anchor-min-df", "5", "--out", str(out), "-q", *extra]) == 0
        vocab[limit] = list(read_snapshot(out).vocabulary)
        source = read_snapshot(out).manifest["source"]
        assert source["max_tokens"] == (20 if limit else 10_000)
        assert (source["at_max_tokens"] > 0) == bool(limit)
        if limit:
            assert "at --max-tokens 20 (tokens past it not counted)" in capsys.readouterr().err
    assert vocab["20"] != vocab[None]  # the cut changes what is counted
    store = str(tmp_path / "store")
    assert main(["ingest", str(path), "--store", store, "--capacity", str(n_words),
                 "--max-tokens", "20", "-q"]) == 0
    assert "at --max-tokens 20, tokens past it not counted" in capsys.readouterr().err
    assert open_committed(store).words == vocab["20"]
    assert main(["fit", "--store", store, "-k", str(K), "--max-tokens", "20",
                 "--out", str(tmp_path / "refused"), "-q"]) == 1
    assert "--max-tokens only applies to --input" in capsys.readouterr().err


def test_fit_and_ingest_read_html_references_as_the_characters_they_stand_for(corpus,
                                                                              tmp_path):
    # Scraped text: the same documents, a quarter of them with their first words joined by
    # &amp; and &nbsp; (split as words, `amp` and `nbsp` would be in 25 % of the documents,
    # among the most frequent), count as the plain ones, in `fit --input` and in a store's
    # first pass (`ingest`).
    path, _, _ = corpus
    escaped = tmp_path / "escaped.jsonl"
    with open(path) as src, open(escaped, "w") as fh:
        for n, line in enumerate(src):
            try:
                record = json.loads(line)
            except ValueError:
                fh.write(line)
                continue
            if isinstance(record.get("text"), str) and n % 4 == 0:
                first, second, *rest = record["text"].split()
                record["text"] = " ".join([f"{first}&amp;{second}&nbsp;", *rest])
            fh.write(json.dumps(record) + "\n")
    snaps = {}
    for name, source in (("plain", path), ("escaped", escaped)):
        assert main(["fit", "--input", str(source), "-k", str(K), "--vocab-size", "100",
                     "--anchor-min-df", "5", "--out", str(tmp_path / name), "-q"]) == 0
        snaps[name] = read_snapshot(tmp_path / name)
    assert "amp" not in snaps["escaped"].vocabulary and "nbsp" not in snaps["escaped"].vocabulary
    assert list(snaps["escaped"].vocabulary) == list(snaps["plain"].vocabulary)
    np.testing.assert_array_equal(snaps["escaped"].topic_word, snaps["plain"].topic_word)
    store = str(tmp_path / "store")
    assert main(["ingest", str(escaped), "--store", store, "--capacity", "100", "-q"]) == 0
    assert open_committed(store).words == list(snaps["plain"].vocabulary)


@pytest.mark.parametrize("command", ["fit", "ingest", "replay", "run", "demo"])
def test_help_says_each_default_once_and_only_where_it_informs(command, capsys):
    from daemon.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for noise in ("(default: None)", "(default: True)", "(default: False)"):
        assert noise not in text
    # One option per entry: no help text names its default twice.
    entries = re.split(r"\s(?=--?[a-z][\w-]*[ ,])", text)
    assert [e for e in entries if len(re.findall(r"\bdefault\b", e)) > 1] == []


def test_demo_takes_rectify_iters_as_fit_spells_it_and_the_old_spelling():
    from daemon.cli import build_parser

    for flag in ("--rectify-iters", "--rectify-iter"):
        assert build_parser().parse_args(["demo", flag, "7"]).rectify_iter == 7


def test_the_demo_knows_whether_numba_must_compile_first(tmp_path, monkeypatch):
    from daemon.cli import kernels_cached

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert not kernels_cached()  # the demo then says the first snapshot waits for compilation
    (tmp_path / "anchorstream" / "_kernels").mkdir(parents=True)
    (tmp_path / "anchorstream" / "_kernels" / "cooc.cooccurrence_rows-40.py311.nbi").touch()
    assert kernels_cached()


def test_fit_says_when_numba_must_compile_first(corpus, tmp_path, capsys, monkeypatch):
    path, _, _ = corpus
    args = ["fit", "--input", str(path), "--topics", str(K), "--vocab-size", "500", "--min-df",
            "2", "--anchor-min-df", "5", "--quiet"]
    # (This process's kernels are compiled already: the empty directory is only looked at.)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "empty"))
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    assert "note: numba's cache of the kernels is empty" in capsys.readouterr().err
    (tmp_path / "filled").mkdir()
    (tmp_path / "filled" / "cooc.cooccurrence_rows-40.py311.nbi").touch()
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "filled"))
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    err = capsys.readouterr().err
    assert "cache of the kernels" not in err, err


def test_run_refuses_a_role_the_store_layout_cannot_serve(tmp_path, capsys, monkeypatch):
    """--role ingest|refresh need store.layout partitioned: refused before anything starts."""
    import logging

    monkeypatch.chdir(tmp_path)
    # `run` sets the root logger's and kafka-python's levels: put them back afterwards.
    levels = {name: logging.getLogger(name).level for name in ("", "kafka")}
    try:
        assert main(["run", "--role", "ingest"]) != 0
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
    err = capsys.readouterr().err
    assert "--role ingest: needs store.layout partitioned" in err
    assert "embedded Kafka broker" not in err and not (tmp_path / "store").exists()


def test_run_logs_when_numba_must_compile_first(tmp_path, caplog, monkeypatch):
    """The daemon says at start why its first refresh takes half a minute on a new machine
    (stopped there by a role its store cannot serve, before anything starts)."""
    import logging

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "empty"))
    levels = {name: logging.getLogger(name).level for name in ("", "kafka")}
    try:
        with caplog.at_level(logging.INFO, logger="anchorstream.run"):
            assert main(["run", "--role", "ingest"]) != 0
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
    assert "numba's cache of the kernels is empty" in caplog.text


def _partitioned(corpus, root, n_parts=3, document_stats=None):
    """The corpus's documents spread over ``n_parts`` partition stores under ``root`` (each
    with its Kafka offset), and one store fed them all (same vocabulary rule, not binding)."""
    from anchorstream.store import CooccurrenceStore, partition_url

    path, _, _ = corpus
    docs = [json.loads(line)["text"].split() for line in path.read_text().splitlines()[:3000]]
    for p in range(n_parts):
        s = CooccurrenceStore.create(partition_url(root, "docs", p), capacity=400,
                                     admit_threshold=1, document_stats=document_stats)
        s.add(docs[p::n_parts])
        s.checkpoint({f"kafka:docs:{p}": len(docs[p::n_parts])})
    single = CooccurrenceStore.create(f"{root}-single", capacity=400, admit_threshold=1,
                                      document_stats=document_stats)
    single.add(docs)
    single.checkpoint()
    return docs, f"{root}-single"


def test_fit_on_a_partitioned_root_refines_on_the_partitions_windows(corpus, tmp_path, capsys):
    # The windows' pairs each partition kept, summed by word as the daemon's refresh sums them:
    # the topics of one store fed every document. A root whose partitions keep none says so.
    from anchorstream.stats.documents import DocStatsSettings
    from anchorstream.store import read_document_state, read_partitions
    from anchorstream.store.partdocs import read_partition_documents

    root = str(tmp_path / "root")
    _, single = _partitioned(corpus, root, document_stats=DocStatsSettings(pair_window=6))
    # The summed windows' pairs are the single store's, word by word.
    summed = read_partitions(root, [("docs", p) for p in range(3)])
    one = open_committed(single)
    a = read_partition_documents(root, summed, None).window_pairs
    b = read_document_state(single, one.version, one.slots).window_pairs
    def full(upper):
        u = upper.toarray()
        return u + u.T - np.diag(np.diag(u))

    order = [summed.words.index(w) for w in one.words]
    np.testing.assert_allclose(full(a.upper)[np.ix_(order, order)], full(b.upper),
                               rtol=1e-12, atol=1e-9)
    assert (a.num_docs, a.num_tokens) == (b.num_docs, b.num_tokens)
    fit = ["-k", str(K), "--anchor-min-df", "5", "--refine-window", "6", "--quiet"]
    for store, out in ((root, tmp_path / "parts"), (single, tmp_path / "single")):
        assert main(["fit", "--store", store, *fit, "--out", str(out)]) == 0
        assert read_snapshot(out).manifest["settings"]["refine_window"] == 6
    # The words in another order move the float32 EM's sums in their last bits: 3e-4 here
    # (1e-5 refining whole documents); the windows against whole documents move them by 1.07.
    assert _same_topics(tmp_path / "parts", tmp_path / "single") < 1e-3
    bare = str(tmp_path / "bare")
    _partitioned(corpus, bare)
    capsys.readouterr()
    assert main(["fit", "--store", bare, *fit, "--out", str(tmp_path / "bare-snap")]) == 1
    assert "keeps no windows' pairs" in capsys.readouterr().err


def test_store_info_on_a_partitioned_root_reports_each_partition_and_the_sum(
        corpus, tmp_path, capsys):
    # A local root is recognised by its partitions/<topic>/<p> directories; the sum is what
    # one store fed every document holds (documents, tokens, words, fingerprint).
    root = str(tmp_path / "root")
    docs, single = _partitioned(corpus, root)
    assert main(["store-info", single, "--json"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert main(["store-info", root, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["layout"] == "partitioned"
    assert (info["num_docs"], info["num_tokens"], info["vocab_size"], info["n_docs_added"]) == (
        one["num_docs"], one["num_tokens"], one["vocab_size"], len(docs))
    assert info["fingerprint"] == pytest.approx(one["fingerprint"], rel=1e-9)
    parts = info["partitions"]
    assert sorted(parts) == [f"kafka:docs:{p}" for p in range(3)]
    for p in range(3):
        entry = parts[f"kafka:docs:{p}"]
        assert entry["offset"] == entry["n_docs_added"] == len(docs[p::3])
        assert entry["version"] and entry["bytes_on_disk"] > 0
        assert info["offsets"][f"kafka:docs:{p}"] == len(docs[p::3])
    assert info["bytes_on_disk"] == sum(e["bytes_on_disk"] for e in parts.values())
    # The plain listing shows the sum and a line per partition.
    assert main(["store-info", root]) == 0
    text = capsys.readouterr().out
    assert re.search(r"^layout\s+partitioned$", text, re.M)
    assert all(re.search(rf"^kafka:docs:{p}  .*n_docs_added {len(docs[p::3])}", text, re.M)
               for p in range(3))
    assert main(["store-info", root, "--version", parts["kafka:docs:0"]["version"]]) == 1
    assert "--version names one store's commit" in capsys.readouterr().err


@pytest.mark.parametrize("where, rectify", [("path", "ap"), ("path", "lowrank"),
                                             ("url", "lowrank")])
def test_fit_on_a_partitioned_root_sums_the_partitions(corpus, tmp_path, where, rectify):
    # fit --store on a partitioned root sums every partition by word, as the refresher does
    # (sparse for the low-rank rectifier): the single store's vocabulary, the planted topics,
    # and every partition's version and offset in the snapshot's source. An object store (here
    # memory://) cannot be listed: its partitions are named with --partitions.
    from anchorstream.store import read_partitions

    path, truth, words = corpus
    root = str(tmp_path / "root") if where == "path" else f"memory://parts-{uuid.uuid4().hex}"
    docs, single = _partitioned(corpus, root)
    out = tmp_path / "snap"
    named = ["--partitions", "docs:3"] if where == "url" else []
    assert main(["fit", "--store", root, *named, "-k", str(K), "--anchor-min-df", "5",
                 "--rectify-method", rectify, "--out", str(out), "--quiet"]) == 0
    snap, error = fitted_error(out, truth, words)
    summed = read_partitions(root, [("docs", p) for p in range(3)])
    assert list(snap.vocabulary) == summed.words
    assert set(summed.words) == set(open_committed(single).words)
    source = snap.manifest["source"]
    assert source["store"] == root and source["store_version"] == summed.version
    assert {k: v["offset"] for k, v in source["partitions"].items()} == {
        f"kafka:docs:{p}": len(docs[p::3]) for p in range(3)}
    assert error < 0.15, error


def test_partitions_options_are_checked(corpus, tmp_path, capsys):
    path, _, _ = corpus
    assert main(["fit", "--input", str(path), "--partitions", "docs:3", "-k", "3",
                 "--out", str(tmp_path / "a")]) == 1
    assert "drop it with --input" in capsys.readouterr().err
    assert main(["fit", "--store", str(tmp_path), "--partitions", "docs", "-k", "3",
                 "--out", str(tmp_path / "b")]) == 1
    assert "--partitions 'docs': expected TOPIC:N" in capsys.readouterr().err
    assert main(["store-info", str(tmp_path / "none"), "--partitions", "docs:2"]) == 1
    assert "no partition store under" in capsys.readouterr().err


@pytest.mark.parametrize("length", [30, 15])
def test_fit_reports_background_words_and_keeps_them_out_of_the_top_words(tmp_path, capsys,
                                                                          length):
    from anchorstream.synthetic import add_background

    # Five words at 2% each: in 45% of the documents (of 30 tokens), under fit's --max-df.
    n_words, n_topics = 400, 15
    truth = add_background(planted_model(n_words, n_topics, anchor_mass=0.08,
                                         word_concentration=0.05, random_state=7),
                           5, 0.1, random_state=7)
    X, _ = sample_documents(truth, 4000 * 30 // length, doc_length=length, random_state=7)
    words = [f"word{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(n_words)]
    words += ["provides", "contains", "supports", "using", "based"]
    path = tmp_path / "docs.jsonl"
    with open(path, "w") as fh:
        for d in range(X.shape[0]):
            row = X.getrow(d)
            fh.write(json.dumps({"text": " ".join(
                words[i] for i, c in zip(row.indices, row.data) for _ in range(int(c)))}) + "\n")
    args = ["fit", "--input", str(path), "--topics", str(n_topics), "--vocab-size", "500",
            "--min-df", "2", "--anchor-min-df", "5", "--quiet"]
    assert main([*args, "--out", str(tmp_path / "bg")]) == 0
    line = [x for x in capsys.readouterr().err.splitlines() if x.startswith("background words")]
    snap = read_snapshot(tmp_path / "bg")
    reported = [w for w, *_ in snap.extra["background_words"]["words"]]
    assert len(line) == 1 and line[0].split(": ")[1].split()[:len(reported)] == reported[:20]
    # Under 25 tokens the labels are capped (and the line says so), else not.
    short = length < 25
    assert (snap.extra["background_words"]["label_cap"] is not None) == short
    assert ("topics at most" in line[0]) == short
    # The planted words are found first (highest level); words the fitted topics happen to
    # share may follow.
    assert set(reported[:5]) == set(words[n_words:]), reported
    assert not set(words[n_words:]) & {w for t in snap.topics for w, _ in t["top_words"][:10]}

    assert main([*args, "--out", str(tmp_path / "plain"), "--background-spread", "none"]) == 0
    assert "background words" not in capsys.readouterr().err
    plain = read_snapshot(tmp_path / "plain")
    assert "background_words" not in plain.extra
    assert set(words[n_words:]) & {w for t in plain.topics for w, _ in t["top_words"][:10]}
    with pytest.raises(SystemExit) as exit_:
        main([*args, "--out", str(tmp_path / "bad"), "--background-spread", "2"])
    assert exit_.value.code == 2
    assert "--background-spread" in (err := capsys.readouterr().err) and "'2'" in err


def test_fit_store_corrects_the_counts_of_words_a_streaming_store_admitted_late(
        corpus, tmp_path, capsys):
    # --admission-min-share (anchorstream.stats.admission): `fit --store` on a store of the
    # streaming rule fits the counts divided by each pair's later word's observed share; 1
    # (or none) fits the store's counts as they are; --input has nothing to correct.
    from anchorstream.stats.admission import MIN_SHARE

    path, _, _ = corpus
    store = str(tmp_path / "stream")
    assert main(["ingest", str(path), "--store", store, "--capacity", "100",
                 "--vocabulary", "stream", "--count-delay", "0", "--checkpoint-every", "700",
                 "-q"]) == 0
    assert open_committed(store).admission.missed.any()  # words were admitted late
    outs = {}
    for share in (None, "none", "0.5"):
        outs[share] = out = tmp_path / f"snap-{share}"
        flags = [] if share is None else ["--admission-min-share", share]
        assert main(["fit", "--store", store, "-k", str(K), "--anchor-min-df", "5",
                     "--out", str(out), "-q", *flags]) == 0
    got = {k: read_snapshot(o).manifest["source"]["admission_min_share"]
           for k, o in outs.items()}
    assert got == {None: MIN_SHARE, "none": 1.0, "0.5": 0.5}
    assert _same_topics(outs["none"], outs["0.5"]) > 1e-3  # the correction moved the topics
    assert main(["fit", "--input", str(path), "-k", str(K), "--admission-min-share", "0.5",
                 "--out", str(tmp_path / "in")]) == 1
    assert "drop it with --input" in capsys.readouterr().err
    for bad in ("0", "1.5", "half"):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["fit", "--store", store, "-k", "2", "--out", "o",
                                       "--admission-min-share", bad])
        assert "expected a share in (0, 1] or 'none'" in capsys.readouterr().err


def test_fit_chooses_the_documents_stopword_list_and_warns_when_given_one_that_misfits(
        tmp_path, capsys):
    # German text: --stopwords auto (the default) takes the German list; the English list,
    # named, would leave its function words to fill the topics, and the fit says so.
    german = ["der Hund und die Katze sind im Garten", "die Sonne scheint und der Wind weht",
              "ich habe das Buch nicht gelesen", "wir sind mit dem Zug nach Berlin gefahren"]
    english = ["the dog and the cat are in the garden", "the sun shines and the wind blows",
               "i have not read the book", "we went to berlin by train with them"]
    for name, lines in (("de", german), ("en", english)):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps({"text": f"{lines[i % 4]} {w}{i % 50}"}) + "\n"
                                for i, w in zip(range(400), itertools.cycle("abc"))))
        out = tmp_path / f"snap-{name}"
        assert main(["fit", "--input", str(path), "-k", "3", "--min-df", "1",
                     "--out", str(out), "-q"]) == 0
        err = capsys.readouterr().err
        snap = read_snapshot(out)
        share = snap.manifest["source"]["stopword_share"]
        chosen = snap.manifest["settings"]
        assert chosen["stopwords_auto"] is True and "stopword list" not in err
        if name == "de":
            assert "--stopwords auto chose 'german'" in err and chosen["stopwords"] == "german"
            assert share > 0.3 and "und" not in snap.vocabulary and "hund" in snap.vocabulary
            # ingest chooses as fit does, so the store counts fit --input's words.
            store = str(tmp_path / "store-de")
            assert main(["ingest", str(path), "--store", store, "--admit-threshold", "1",
                         "--max-df", "none", "-q"]) == 0
            assert "--stopwords auto chose 'german'" in capsys.readouterr().err
            words = open_committed(store).words
            assert "und" not in words and "hund" in words
            # The store records the list: more files (English ones, here) keep it.
            recorded, links = stored_tokenizing(store)
            assert "und" in recorded and "the" not in recorded and links == "keep"
            assert store_info(store)["stopwords"] == "german"
            more = tmp_path / "more.jsonl"
            more.write_text("".join(json.dumps({"text": f"{english[i % 4]} und"}) + "\n"
                                    for i in range(40)))
            assert main(["ingest", str(more), "--store", store, "-q"]) == 0
            assert "auto chose" not in capsys.readouterr().err
            words = open_committed(store).words
            assert "und" not in words and "the" in words
            # Told the English list, the fit keeps it and warns, naming the list that fits.
            out = tmp_path / "snap-de-english"
            assert main(["fit", "--input", str(path), "-k", "3", "--min-df", "1",
                         "--stopwords", "english", "--out", str(out), "-q"]) == 0
            err = capsys.readouterr().err
            assert "auto chose" not in err
            assert "warning: only" in err and "'english' stopword list" in err
            assert "--stopwords german" in err
            snap = read_snapshot(out)
            assert snap.manifest["source"]["stopword_share"] < 0.08
            assert "und" in snap.vocabulary
            assert "stopwords_auto" not in snap.manifest["settings"]
        else:
            assert "auto chose" not in err and chosen["stopwords"] == "english" and share > 0.3


def test_fit_store_counts_the_documents_a_delay_line_holds_back(tmp_path):
    """A store with ``count_delay`` commits documents it has not counted yet; ``fit --store``
    counts them with the committed vocabulary, as the store will when they leave the line."""
    from anchorstream.store import CooccurrenceStore

    truth = planted_model(60, 3, random_state=2)
    X, _ = sample_documents(truth, 400, doc_length=20, random_state=3)
    docs = [[f"w{j}" for j, c in zip(X.getrow(d).indices, X.getrow(d).data)
             for _ in range(int(c))] for d in range(X.shape[0])]
    fits = {}
    for name, flush in (("waiting", False), ("flushed", True)):
        store = CooccurrenceStore.create(tmp_path / name, capacity=60, admit_threshold=2,
                                         count_delay=150)
        store.add(docs)
        if flush:
            store.flush_delayed()
        store.checkpoint()
        assert open_committed(store.url).cooccurrence.num_docs == (400 if flush else 250)
        out = tmp_path / f"{name}.snap"
        assert main(["fit", "--store", str(tmp_path / name), "--topics", "3", "--seed", "0",
                     "--out", str(out), "--quiet"]) == 0
        fits[name] = read_snapshot(out)
    assert fits["waiting"].manifest["num_docs"] == fits["flushed"].manifest["num_docs"] == 400
    assert fits["waiting"].vocabulary == fits["flushed"].vocabulary
    np.testing.assert_allclose(fits["waiting"].topic_word, fits["flushed"].topic_word,
                               atol=1e-6)


def test_links_dropped_by_fit_and_ingest_and_recorded_by_the_store(tmp_path, capsys, caplog):
    # Posts whose links would be words: "http", "ow", "ly" and the shortener's hash.
    lines = ["storm floods coast rain wind", "court judge ruling appeal law",
             "vaccine flu virus outbreak cases", "market stocks shares prices trade"]
    path = tmp_path / "posts.jsonl"
    path.write_text("".join(json.dumps({"text": f"{lines[i % 4]} w{i} http://ow.ly/K{i % 9}x"
                                        if i % 3 == 0 else f"{lines[i % 4]} w{i}"}) + "\n"
                            for i in range(300)))
    links = ("http", "ow", "ly")
    for given, kept in ((["--links", "drop"], False), ([], True)):
        out = tmp_path / f"snap{len(given)}"
        assert main(["fit", "--input", str(path), "-k", "2", "--min-df", "1", *given,
                     "--out", str(out), "-q"]) == 0
        assert "--links drop" not in capsys.readouterr().err  # a third hold a link: no note
        snap = read_snapshot(out)
        assert all((w in snap.vocabulary) == kept for w in links)
        assert snap.manifest["settings"]["tokenizer"]["links"] == ("keep" if kept else "drop")
    store = str(tmp_path / "store")
    assert main(["fit", "--store", store, "-k", "2", "--links", "drop",
                 "--out", str(tmp_path / "s"), "-q"]) == 1
    assert "--links only applies to --input" in capsys.readouterr().err
    # ingest records it, and more files are tokenized as the store records.
    assert main(["ingest", str(path), "--store", store, "--admit-threshold", "1",
                 "--max-df", "none", "--links", "drop", "-q"]) == 0
    assert store_info(store)["links"] == "drop"
    more = [tmp_path / f"more{n}.jsonl" for n in range(2)]
    for n, file in enumerate(more):  # new lines: a store skips the lines it has counted
        file.write_text("".join(json.dumps({"text": f"{lines[i % 4]} v{n}x{i} "
                                                    f"http://ow.ly/K{i % 9}x"}) + "\n"
                                for i in range(40)))
    assert main(["ingest", str(more[0]), "--store", store, "-q"]) == 0
    assert not set(links) & set(open_committed(store).words)
    # Told otherwise, it tokenizes as told and warns that the counts mix the two.
    with caplog.at_level("WARNING", logger="anchorstream.store"):
        assert main(["ingest", str(more[1]), "--store", store, "--links", "keep", "-q"]) == 0
    assert "was counted with links 'drop'" in caplog.text + capsys.readouterr().err
    assert set(links) <= set(open_committed(store).words)


def test_posts_full_of_links_lose_them_by_default_or_are_told_of_links_drop(tmp_path, capsys,
                                                                            caplog):
    lines = ["storm floods coast rain wind", "court judge ruling appeal law",
             "vaccine flu virus outbreak cases", "market stocks shares prices trade"]
    path = tmp_path / "posts.jsonl"
    path.write_text("".join(json.dumps({"text": f"{lines[i % 4]} w{i} http://ow.ly/K{i}"})
                            + "\n" for i in range(1200)))
    links = {"http", "ow", "ly"}
    # --links auto, the default: the first documents are posts full of links, so they go.
    assert main(["fit", "--input", str(path), "-k", "2", "--min-df", "1",
                 "--out", str(tmp_path / "auto"), "-q"]) == 0
    err = capsys.readouterr().err
    assert "note: --links auto chose drop: 100% of the first 1000 documents" in err
    snap = read_snapshot(tmp_path / "auto")
    assert snap.manifest["settings"]["tokenizer"]["links"] == "drop"
    assert not links & set(snap.vocabulary)
    # Kept as words, as asked: the read notes that --links drop exists.
    assert main(["fit", "--input", str(path), "-k", "2", "--min-df", "1", "--links", "keep",
                 "--max-df", "1", "--out", str(tmp_path / "keep"), "-q"]) == 0
    err = capsys.readouterr().err
    assert "note: 100% of the first 1000 documents hold a link" in err and "--links drop" in err
    assert links <= set(read_snapshot(tmp_path / "keep").vocabulary)
    # ingest chooses the same for a new store and records it; more files keep the store's.
    assert main(["ingest", str(path), "--store", str(tmp_path / "store"), "-q"]) == 0
    assert "--links auto chose drop" in capsys.readouterr().err
    assert store_info(str(tmp_path / "store"))["links"] == "drop"
    # Told to keep them, it runs the daemon's loop, which logs the note from the first documents.
    with caplog.at_level("WARNING", logger="anchorstream.loop"):
        assert main(["ingest", str(path), "--store", str(tmp_path / "kept"), "--links", "keep",
                     "-q"]) == 0
    assert "100% of the first 1000 documents hold" in caplog.text + capsys.readouterr().err
    assert store_info(str(tmp_path / "kept"))["links"] == "keep"


@pytest.mark.parametrize("level, line", [
    (logging.DEBUG, "debug: anchorstream.x: 3 words"),
    (logging.INFO, "note: 3 words"),
    (logging.WARNING, "warning: 3 words"),
    (logging.ERROR, "error: 3 words"),
    (logging.CRITICAL, "critical: 3 words"),
])
def test_a_one_shot_commands_records_read_as_its_own_lines(level, line):
    record = logging.LogRecord("anchorstream.x", level, __file__, 1, "%d words", (3,), None)
    assert CommandFormatter("%(message)s").format(record) == line
