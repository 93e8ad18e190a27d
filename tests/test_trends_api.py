"""``GET /v1/trends`` and the batch form of ``POST /v1/infer``, on a real server over a real
snapshot directory whose prevalences are planted."""

from __future__ import annotations

import numpy as np
import pytest

from daemon.http.api import ApiServer
from daemon.publish import Publisher
from tests.test_api import request

V, K = 50, 4
VOCAB = [f"word{i:02d}" for i in range(V)]


def publish(pub: Publisher, ids: list[int], prevalence: list[float], blocks=(0, 1, 2, 3)):
    """Topic k puts its mass on the words of block ``blocks[k]`` (10 words each): topics of
    different blocks share no top word."""
    rng = np.random.default_rng(sum(ids))
    B = np.full((K, V), 1e-4)
    for k, b in enumerate(blocks):
        B[k, 10 * b:10 * b + 10] = rng.dirichlet(np.ones(10)) + 0.05
    B /= B.sum(axis=1, keepdims=True)
    p = np.asarray(prevalence, dtype=np.float64)
    return pub.publish(
        vocabulary=VOCAB, topic_word=B, topic_topic=np.eye(K) / K,
        anchors=[VOCAB[10 * b] for b in blocks], topic_ids=ids, prevalence=p / p.sum(),
        num_docs=1000, settings={"num_topics": K}, source={"offsets": {}})


@pytest.fixture
def pub(tmp_path):
    p = Publisher(tmp_path / "snapshots", keep=3)
    yield p
    p.close()


def stream(pub: Publisher) -> None:
    """Ten snapshots: topic 0 steady, 1 falling, 2 steady until it dies at version 8 (5, on the
    same words, takes its place: a re-cut, never new), and 9 born at version 4 on words no
    topic had, growing 40 % a snapshot (3 dies then)."""
    rng = np.random.default_rng(0)
    for v in range(1, 11):
        noise = np.exp(0.02 * rng.standard_normal(4))
        steady, falling = 0.3 * noise[0], 0.4 * 0.8 ** v * noise[1]
        third = (2, 0.2 * noise[2]) if v < 8 else (5, 0.2 * noise[2])
        fourth = (3, 0.05) if v < 4 else (9, 0.01 * 1.4 ** (v - 4) * noise[3])
        publish(pub, [0, 1, third[0], fourth[0]], [steady, falling, third[1], fourth[1]],
                blocks=(0, 1, 2, 3 if v < 4 else 4))


def test_trends_name_the_new_rising_topic_and_the_gone_ones(pub):
    stream(pub)
    with ApiServer(pub) as srv:
        status, headers, body = request(srv, "GET", "/v1/trends")
    assert status == 200 and headers["Cache-Control"] == "no-cache"
    assert body["version"] == 10
    assert body["window"] == {"snapshots": 10, "from_version": 1, "to_version": 10,
                              "from_created_at": body["window"]["from_created_at"],
                              "to_created_at": body["created_at"]}
    assert [t["id"] for t in body["new"]] == [9]
    new = body["new"][0]
    assert new["born_version"] == 4 and new["direction"] == "rising" and new["new"] is True
    assert [p["version"] for p in new["series"]] == list(range(4, 11))
    assert len(new["top_words"]) == 10 and new["anchor"] in VOCAB
    assert body["rising"][0]["id"] == 9
    assert [t["id"] for t in body["falling"]] == [1]
    # 2 died at 8 (gone, last seen at 7), 3 at 4; both still named though pruned (keep=3).
    assert [t["id"] for t in body["gone"]] == [2, 3]
    gone = body["gone"][0]
    assert gone["series"][-1]["version"] == 7 and gone["prevalence"] == gone["series"][-1][
        "prevalence"] and len(gone["top_words"]) == 10
    scores = [t["score"] for t in body["rising"]]
    assert scores == sorted(scores, reverse=True) and min(scores) >= 3.0
    assert body["settings"]["window"] == 10 and body["settings"]["min_score"] == 3.0


def test_window_and_limit(pub):
    stream(pub)
    with ApiServer(pub) as srv:
        _, _, short = request(srv, "GET", "/v1/trends?window=3&limit=1")
        assert short["window"]["snapshots"] == 3 and short["window"]["from_version"] == 8
        assert all(len(short[k]) <= 1 for k in ("rising", "falling", "new", "gone"))
        assert short["gone"] == []  # 2 and 3 died before version 8
        _, _, loose = request(srv, "GET", "/v1/trends?min_score=0.01&limit=100")
        _, _, strict = request(srv, "GET", "/v1/trends?limit=100")
        assert loose["settings"]["min_score"] == 0.01
        assert {t["id"] for t in loose["rising"]} >= {t["id"] for t in strict["rising"]}
        assert all(t["score"] >= 0.01 for t in loose["rising"])
        for query in ("limit=0", "limit=x", "window=1", "limit=100000", "min_score=0",
                      "min_score=-1", "min_score=x"):
            status, _, err = request(srv, "GET", f"/v1/trends?{query}")
            assert status == 400 and err["error"] == "bad_request", query
            assert query.split("=")[0] in err["message"]


def test_a_stationary_stream_has_nothing_new_or_rising(pub):
    rng = np.random.default_rng(1)
    for _ in range(12):
        publish(pub, [0, 1, 2, 3], list(np.exp(0.1 * rng.standard_normal(4))))
    with ApiServer(pub) as srv:
        _, _, body = request(srv, "GET", "/v1/trends")
    assert body["new"] == [] and body["rising"] == [] and body["gone"] == []


def test_trends_404_before_the_first_snapshot(pub):
    with ApiServer(pub) as srv:
        status, _, body = request(srv, "GET", "/v1/trends")
    assert status == 404 and body["error"] == "not_found"


def test_trends_survive_a_restart(pub, tmp_path):
    stream(pub)
    again = Publisher(tmp_path / "snapshots", keep=3)
    assert [t.id for t in again.trends().new] == [9]
    assert [e.version for e in again.history.entries()] == list(range(1, 11))


def test_infer_batch_answers_each_document_as_alone(pub):
    publish(pub, [0, 1, 2, 3], [1, 1, 1, 1])
    snap = pub.get(1)
    docs = [{"text": " ".join(w for w, _ in snap.topics[k]["top_words"][:8])} for k in range(3)]
    docs.append({"tokens": ["nothing", "known"]})
    with ApiServer(pub, max_infer_documents=4) as srv:
        status, _, batch = request(srv, "POST", "/v1/infer", {"documents": docs, "top": 2})
        assert status == 200 and batch["version"] == 1 and len(batch["results"]) == 4
        for doc, got in zip(docs[:3], batch["results"]):
            _, _, alone = request(srv, "POST", "/v1/infer", {**doc, "top": 2})
            assert got["topics"] == alone["topics"]
            assert got["omitted_weight"] == pytest.approx(alone["omitted_weight"])
        assert batch["results"][3]["error"] == "no_known_words"
        for body, needle in (
                ({"documents": docs + docs}, "at most 4"),
                ({"documents": []}, "non-empty"),
                ({"documents": [{"text": "a"}, {"text": 3}]}, "documents[1]"),
                ({"documents": [{"text": "a"}, "a"]}, "documents[1]"),
                ({"documents": [{"text": "a", "tokens": []}]}, "documents[0]"),
                ({"documents": [{"text": "a"}], "text": "a"}, "not both")):
            status, _, err = request(srv, "POST", "/v1/infer", body)
            assert status == 400 and err["error"] == "bad_request", body
            assert needle in err["message"], err


def test_metrics_export_the_trends(pub):
    from prometheus_client.parser import text_string_to_metric_families

    from daemon.metrics import Metrics

    stream(pub)
    metrics = Metrics()
    metrics.bind_publisher(pub)
    with ApiServer(pub, metrics=metrics) as srv:
        status, _, text = request(srv, "GET", "/metrics")
    families = {f.name: f for f in text_string_to_metric_families(text.decode())}
    kinds = {s.labels["kind"]: s.value for s in families["anchorstream_trend_topics"].samples}
    trends = pub.trends()
    assert kinds == {"rising": len(trends.rising), "falling": 1.0, "new": 1.0, "gone": 2.0}
    top = families["anchorstream_trend_top_score"].samples[0].value
    assert top == pytest.approx(trends.rising[0].score) and top >= 3.0


def test_infer_min_weight_default_is_configurable(pub):
    publish(pub, [0, 1, 2, 3], [1, 1, 1, 1])
    text = " ".join(VOCAB[:40])  # words of four topics: every weight well above 0.01
    with ApiServer(pub) as srv:
        _, _, default = request(srv, "POST", "/v1/infer", {"text": text})
    with ApiServer(pub, infer_min_weight=0.99) as srv:
        _, _, strict = request(srv, "POST", "/v1/infer", {"text": text})
        _, _, asked = request(srv, "POST", "/v1/infer", {"text": text, "min_weight": 0})
    assert len(default["topics"]) == 4 and len(strict["topics"]) == 1
    assert strict["omitted_weight"] > 0.5 and len(asked["topics"]) == 4
