"""Snapshot directories (anchorstream.snapshot): round trip, atomicity, every corruption."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

import anchorstream.snapshot.write as snap_write
from anchorstream.errors import InputError, SnapshotError, SnapshotNotFoundError
from anchorstream.snapshot import FORMAT_VERSION, format_topics, read_snapshot, write_snapshot

V, K = 30, 4
ALL_FILES = ["manifest.json", "topics.json", "vocab.txt", "topic_word.npy", "topic_topic.npy"]


def _model(seed=0):
    rng = np.random.default_rng(seed)
    vocabulary = [f"word{i}" for i in range(V - 2)] + ["café", "naïve"]
    topic_word = rng.dirichlet(np.full(V, 0.3), size=K) * 3.0  # not normalized on purpose
    A = rng.dirichlet(np.ones(K * K)).reshape(K, K)
    return vocabulary, topic_word, (A + A.T) / 2


def _write(path, **overrides):
    vocabulary, topic_word, A = _model()
    kwargs = dict(
        vocabulary=vocabulary,
        topic_word=topic_word,
        topic_topic=A,
        anchors=[0, "word5", None, np.int64(7)],
        topic_ids=[3, 0, 9, 4],
        num_docs=1234,
        settings={"n_topics": np.int64(K), "rectify": True, "tol": np.float64(1e-7),
                  "out": Path("/tmp/x"), "shape": np.array([1, 2])},
        source={"input": ["docs.jsonl"], "offsets": {"0": 17}},
        quality={"npmi": [0.1, np.nan, 0.3, 0.4], "sparsity": np.array([0.5, 0.6, 0.7, 0.8])},
        extra={"hierarchy": {"0": [3, 0]}},
        created_at=dt.datetime(2026, 3, 1, 13, 0, 5, tzinfo=dt.timezone(dt.timedelta(hours=2))),
    )
    kwargs.update(overrides)
    return write_snapshot(path, **kwargs)


@pytest.fixture
def written(tmp_path):
    return _write(tmp_path / "snap")


def _rewrite(path: Path, name: str, data: bytes, fix_checksum: bool = True) -> None:
    """Replace one file; optionally update its manifest checksum so deeper checks are reached."""
    (path / name).write_bytes(data)
    if fix_checksum and name != "manifest.json":
        manifest = json.loads((path / "manifest.json").read_text())
        manifest["files"][name]["sha256"] = hashlib.sha256(data).hexdigest()
        (path / "manifest.json").write_text(json.dumps(manifest))


def _npy(array) -> bytes:
    return snap_write._npy_bytes(np.asarray(array))


def _leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir())


# --- round trip -----------------------------------------------------------------------------


def test_round_trip(written):
    vocabulary, topic_word, A = _model()
    s = read_snapshot(written)
    assert sorted(os.listdir(written)) == sorted(ALL_FILES)
    assert s.path == written
    assert s.version == s.format_version == FORMAT_VERSION
    assert (s.num_topics, s.vocab_size, s.num_docs) == (K, V, 1234)
    assert s.vocabulary == tuple(vocabulary)
    assert s.word_index["café"] == V - 2
    assert s.topic_word.dtype == np.float32 and s.topic_word.shape == (K, V)
    np.testing.assert_allclose(s.topic_word.sum(axis=1, dtype=np.float64), 1.0, atol=1e-6)
    np.testing.assert_allclose(s.topic_word, topic_word / topic_word.sum(axis=1, keepdims=True),
                               rtol=1e-6)
    np.testing.assert_array_equal(s.topic_topic, A)
    assert s.topic_ids == [3, 0, 9, 4]
    assert s.anchors == ["word0", "word5", None, "word7"]
    np.testing.assert_allclose(s.prevalence, A.sum(axis=1))
    assert s.created_at == dt.datetime(2026, 3, 1, 11, 0, 5, tzinfo=dt.timezone.utc)
    assert s.manifest["created_at"] == "2026-03-01T11:00:05.000000Z"
    assert s.settings == {"n_topics": K, "rectify": True, "tol": 1e-7, "out": "/tmp/x",
                          "shape": [1, 2]}
    assert s.source == {"input": ["docs.jsonl"], "offsets": {"0": 17}}
    assert s.extra == {"hierarchy": {"0": [3, 0]}}
    assert s.topics[1]["quality"] == {"npmi": None, "sparsity": 0.6}
    with pytest.raises(ValueError):
        s.topic_word[0, 0] = 1.0  # read-only


def test_top_words_agree_with_the_matrix(written):
    s = read_snapshot(written)
    for k, topic in enumerate(s.topics):
        assert len(topic["top_words"]) == 20
        probs = [p for _, p in topic["top_words"]]
        assert probs == sorted(probs, reverse=True)
        for word, p in topic["top_words"]:
            assert np.float32(p) == s.topic_word[k, s.word_index[word]]
        assert probs[0] == pytest.approx(float(s.topic_word[k].max()))


def test_defaults_and_small_vocabulary(tmp_path):
    vocabulary, topic_word, A = _model()
    path = write_snapshot(
        tmp_path / "s",
        vocabulary=vocabulary[:12],
        topic_word=topic_word[:, :12],
        topic_topic=A,
        anchors=None,
        num_docs=0,
        settings={},
        source={},
    )
    s = read_snapshot(path)
    assert s.topic_ids == [0, 1, 2, 3]
    assert s.anchors == [None] * K
    assert all(len(t["top_words"]) == 12 for t in s.topics)  # all words when V < 20
    assert "quality" not in s.topics[0] and s.extra is None
    created = s.created_at
    assert created.tzinfo is not None
    assert abs((dt.datetime.now(dt.timezone.utc) - created).total_seconds()) < 600


def test_format_topics(written):
    s = read_snapshot(written)
    text = format_topics(s, n_words=3)
    lines = text.splitlines()
    assert len(lines) == 1 + K
    assert "4 topics" in lines[0] and "1234 documents" in lines[0]
    prevalence = [float(line.split()[1].rstrip("%")) for line in lines[1:]]
    assert prevalence == sorted(prevalence, reverse=True)
    first = s.topics[int(np.argmax(s.prevalence))]
    assert lines[1].split()[0] == str(first["id"])
    assert " ".join(w for w, _ in first["top_words"][:3]) in lines[1]
    assert "[word5]" in text and "[-]" in text
    # More words than topics.json keeps come from the matrix.
    long = format_topics(s, n_words=25).splitlines()[1]
    assert len(long.split("]", 1)[1].split()) == 25
    with pytest.raises(InputError):
        format_topics(s, n_words=0)


# --- writing: refusals and atomicity ----------------------------------------------------------


def test_refuses_to_overwrite(tmp_path, written):
    with pytest.raises(SnapshotError, match="already exists"):
        _write(written)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SnapshotError, match="already exists"):
        _write(empty)
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(SnapshotError, match="already exists"):
        _write(a_file)


def test_unserializable_setting_leaves_nothing(tmp_path):
    with pytest.raises(InputError, match=r"settings\.bad"):
        _write(tmp_path / "snap", settings={"ok": 1, "bad": object()})
    with pytest.raises(InputError, match=r"settings\.x"):
        _write(tmp_path / "snap", settings={"x": float("nan")})
    assert _leftovers(tmp_path) == []


def test_failure_midway_leaves_nothing(tmp_path, monkeypatch):
    written_files = []
    real = snap_write._write_file

    def failing(path, data):
        if len(written_files) == 2:
            raise OSError(28, "No space left on device")
        written_files.append(path.name)
        real(path, data)

    monkeypatch.setattr(snap_write, "_write_file", failing)
    with pytest.raises(OSError, match="No space"):
        _write(tmp_path / "snap")
    assert len(written_files) == 2
    assert _leftovers(tmp_path) == []


def test_failing_rename_leaves_nothing(tmp_path, monkeypatch):
    def no_rename(src, dst):
        raise OSError(5, "I/O error")

    monkeypatch.setattr(snap_write.os, "rename", no_rename)
    with pytest.raises(OSError, match="I/O error"):
        _write(tmp_path / "snap")
    assert _leftovers(tmp_path) == []


def test_creates_parent_directories(tmp_path):
    path = _write(tmp_path / "a" / "b" / "snap")
    assert read_snapshot(path).num_topics == K


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"vocabulary": [f"w{i}" for i in range(V - 1)] + ["two\nlines"]}, "line break"),
        ({"vocabulary": [f"w{i}" for i in range(V - 1)] + ["a\u2028b"]}, "line break"),
        ({"vocabulary": [f"w{i}" for i in range(V - 1)] + ["last\r"]}, "line break"),
        ({"vocabulary": ["next\x85"] + [f"w{i}" for i in range(V - 1)]}, "line break"),
        ({"vocabulary": [f"w{i}" for i in range(V - 1)] + [7]}, "non-empty string"),
        ({"vocabulary": [f"w{i}" for i in range(V - 1)] + ["w0"]}, "more than once"),
        ({"vocabulary": [f"w{i}" for i in range(V - 1)] + [""]}, "non-empty"),
        ({"topic_word": np.ones((K, V - 1))}, "shape"),
        ({"topic_word": -np.ones((K, V))}, "non-negative"),
        ({"topic_word": np.vstack([np.ones((K - 1, V)), np.zeros((1, V))])}, "all zero"),
        ({"topic_topic": np.ones((K, K + 1))}, "topic_topic"),
        ({"prevalence": np.ones(K + 1)}, "prevalence"),
        ({"anchors": ["word1"]}, "4 entries"),
        ({"anchors": ["nope", None, None, None]}, "not in the vocabulary"),
        ({"anchors": [V, None, None, None]}, "column index"),
        ({"topic_ids": [0, 0, 1, 2]}, "distinct"),
        ({"topic_ids": [0, 1, 2, -1]}, "integers >= 0"),
        ({"num_docs": 1.5}, "num_docs"),
        ({"num_docs": -1}, "num_docs"),
        ({"quality": {"npmi": [1.0, 2.0]}}, "4 values"),
        ({"settings": {1: "x"}}, "keys must be str"),
        ({"source": ["not", "a", "dict"]}, "mapping"),
        ({"n_top_words": 10}, "n_top_words"),
        ({"created_at": dt.datetime(2026, 1, 1)}, "timezone-aware"),
    ],
)
def test_bad_input_is_refused_before_writing(tmp_path, overrides, match):
    with pytest.raises(InputError, match=match):
        _write(tmp_path / "snap", **overrides)
    assert _leftovers(tmp_path) == []


# --- reading: every corruption ----------------------------------------------------------------


def test_missing_directory(tmp_path):
    with pytest.raises(SnapshotNotFoundError, match="does not exist"):
        read_snapshot(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError):  # the builtin a caller would catch
        read_snapshot(tmp_path / "nowhere")
    (tmp_path / "file").write_text("x")
    with pytest.raises(SnapshotNotFoundError, match="not a snapshot directory"):
        read_snapshot(tmp_path / "file")


@pytest.mark.parametrize("name", ALL_FILES)
def test_missing_file_is_named(written, name):
    (written / name).unlink()
    with pytest.raises(SnapshotNotFoundError, match=name.replace(".", r"\.")):
        read_snapshot(written)


@pytest.mark.parametrize("name", ["topic_word.npy", "topic_topic.npy", "vocab.txt", "topics.json"])
@pytest.mark.parametrize("verify", [True, False])
def test_truncated_file_is_named(written, name, verify):
    data = (written / name).read_bytes()
    (written / name).write_bytes(data[: len(data) // 2])
    with pytest.raises(SnapshotError, match=name.replace(".", r"\.")):
        read_snapshot(written, verify=verify)


def test_edited_json_fails_the_checksum(written):
    topics = json.loads((written / "topics.json").read_text())
    topics[0]["prevalence"] = 0.99
    (written / "topics.json").write_text(json.dumps(topics))
    with pytest.raises(SnapshotError, match=r"topics\.json.*checksum"):
        read_snapshot(written)
    assert read_snapshot(written, verify=False).topics[0]["prevalence"] == 0.99


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda t: t[:-1], "list of 4 topics"),
        (lambda t: [{**t[0], "id": t[1]["id"]}] + t[1:], "not distinct"),
        (lambda t: [{k: v for k, v in t[0].items() if k != "anchor"}] + t[1:], "lacks"),
        (lambda t: [{**t[0], "anchor": "zzz"}] + t[1:], "anchor"),
        (lambda t: [{**t[0], "top_words": [["zzz", 0.1]] * 20}] + t[1:], "top_words"),
        (lambda t: [{**t[0], "top_words": t[0]["top_words"][:5]}] + t[1:], "at least 20"),
        (lambda t: [{**t[0], "prevalence": "high"}] + t[1:], "prevalence"),
        (lambda t: {"topics": t}, "list of 4 topics"),
    ],
)
def test_invalid_topics_json(written, edit, match):
    topics = json.loads((written / "topics.json").read_text())
    _rewrite(written, "topics.json", json.dumps(edit(topics)).encode())
    with pytest.raises(SnapshotError, match=r"topics\.json.*" + match):
        read_snapshot(written)


def test_bad_json(written):
    _rewrite(written, "topics.json", b"[{not json")
    with pytest.raises(SnapshotError, match=r"topics\.json: not valid"):
        read_snapshot(written)
    (written / "manifest.json").write_bytes(b"{")
    with pytest.raises(SnapshotError, match=r"manifest\.json: not valid"):
        read_snapshot(written)


def test_wrong_shape(written):
    tw = np.load(written / "topic_word.npy")
    _rewrite(written, "topic_word.npy", _npy(tw[:, :-1]))
    with pytest.raises(SnapshotError, match=r"topic_word\.npy: shape \(4, 29\)"):
        read_snapshot(written)


def test_wrong_dtype(written):
    tw = np.load(written / "topic_word.npy")
    _rewrite(written, "topic_word.npy", _npy(tw.astype(np.float64)))
    with pytest.raises(SnapshotError, match=r"topic_word\.npy: dtype float64"):
        read_snapshot(written)


def test_rows_not_summing_to_one(written):
    tw = np.load(written / "topic_word.npy")
    tw[2] *= 1.01
    _rewrite(written, "topic_word.npy", _npy(tw))
    with pytest.raises(SnapshotError, match=r"topic_word\.npy: row 2 sums to 1\.01"):
        read_snapshot(written)


def test_negative_or_nan_entries(written):
    tw = np.load(written / "topic_word.npy")
    tw[0, 0] = np.nan
    _rewrite(written, "topic_word.npy", _npy(tw))
    with pytest.raises(SnapshotError, match="finite"):
        read_snapshot(written)


def test_pickled_npy_is_refused(written):
    _rewrite(written, "topic_topic.npy", _pickled_object_array())
    with pytest.raises(SnapshotError, match=r"topic_topic\.npy"):
        read_snapshot(written)


def _pickled_object_array() -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    return buf.getvalue()


def test_vocabulary_size_mismatch(written):
    words = (written / "vocab.txt").read_text(encoding="utf-8").splitlines()
    _rewrite(written, "vocab.txt", ("\n".join(words[:-1]) + "\n").encode())
    with pytest.raises(SnapshotError, match=r"vocab\.txt: 29 words.*vocab_size=30"):
        read_snapshot(written)


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("format_version", 2, "format_version 2 is not supported"),
        ("format_version", None, "format_version None"),
        ("num_topics", 5, r"topic_word\.npy: shape"),
        ("vocab_size", 31, r"vocab\.txt: 30 words"),
        ("num_topics", "4", "num_topics must be"),
        ("created_at", "yesterday", "created_at"),
        ("settings", [], "settings must be"),
    ],
)
def test_edited_manifest(written, key, value, match):
    manifest = json.loads((written / "manifest.json").read_text())
    manifest[key] = value
    _rewrite(written, "manifest.json", json.dumps(manifest).encode())
    with pytest.raises(SnapshotError, match=match):
        read_snapshot(written)


def test_manifest_without_checksum_entry(written):
    manifest = json.loads((written / "manifest.json").read_text())
    del manifest["files"]["vocab.txt"]
    _rewrite(written, "manifest.json", json.dumps(manifest).encode())
    with pytest.raises(SnapshotError, match=r"no checksum recorded for vocab\.txt"):
        read_snapshot(written)
