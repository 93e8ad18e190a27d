"""The HTTP API against a real server on an ephemeral port and a real snapshot directory."""

from __future__ import annotations

import http.client
import json
import threading
import time

import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

from anchorstream.synthetic import planted_model
from daemon.http.api import ApiServer
from daemon.settings import Secret
from daemon.metrics import Metrics
from daemon.publish import Publisher

V, K = 40, 4
VOCAB = [f"word{i:02d}" for i in range(V)]


def model_kwargs(seed: int, ids) -> dict:
    m = planted_model(V, K, random_state=seed)
    return dict(
        vocabulary=VOCAB, topic_word=m.topic_word.T, topic_topic=m.topic_topic,
        anchors=[VOCAB[a] for a in m.anchors], topic_ids=ids, num_docs=1000 + seed,
        settings={"num_topics": K}, source={"offsets": {}},
    )


def request(server, method, path, body=None, headers=None):
    """(status, headers, parsed JSON or raw bytes) of one request."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            headers = {"Content-Type": "application/json", **(headers or {})}
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        data = resp.read()
        ctype = resp.getheader("Content-Type", "")
        if ctype.startswith("application/json") and data:
            data = json.loads(data)
        return resp.status, dict(resp.getheaders()), data
    finally:
        conn.close()


def wait_until_waiting(server, n: int = 1) -> None:
    """Until ``n`` long polls wait on ``server``: a publication after this is one they
    wait for, not one they find when they arrive (which a slow thread start could make)."""
    deadline = time.monotonic() + 60
    while server.waiting < n:
        assert time.monotonic() < deadline, f"{server.waiting} of {n} long polls waiting"
        time.sleep(0.01)


@pytest.fixture
def publisher(tmp_path):
    pub = Publisher(tmp_path / "snapshots")
    yield pub
    pub.close()


@pytest.fixture
def server(publisher):
    metrics = Metrics()
    metrics.bind_publisher(publisher)
    with ApiServer(publisher, metrics=metrics, max_wait_seconds=30) as srv:
        yield srv


@pytest.fixture
def published(publisher):
    publisher.publish(**model_kwargs(0, [0, 1, 2, 3]))
    publisher.publish(**model_kwargs(1, [0, 1, 2, 7]))
    return publisher


def test_latest_with_etag_and_304(server, published):
    status, headers, body = request(server, "GET", "/v1/snapshots/latest")
    assert status == 200 and headers["ETag"] == '"2"'
    assert body["version"] == 2 and body["num_docs"] == 1001 and body["num_topics"] == K
    assert [t["id"] for t in body["topics"]] == [0, 1, 2, 7]
    topic = body["topics"][0]
    assert {"id", "anchor", "prevalence", "top_words"} <= set(topic)
    assert "files" not in body

    status, headers, body = request(server, "GET", "/v1/snapshots/latest",
                                    headers={"If-None-Match": '"2"'})
    assert status == 304 and body == b"" and headers["ETag"] == '"2"'
    status, _, _ = request(server, "GET", "/v1/snapshots/latest",
                           headers={"If-None-Match": 'W/"1", "2"'})
    assert status == 304
    status, _, body = request(server, "GET", "/v1/snapshots/latest",
                              headers={"If-None-Match": '"1"'})
    assert status == 200 and body["version"] == 2


def test_long_poll_returns_the_next_version(server, published):
    result = {}

    def poll():
        result["r"] = request(server, "GET", "/v1/snapshots/latest?wait=30",
                              headers={"If-None-Match": '"2"'})

    t = threading.Thread(target=poll)
    t.start()
    wait_until_waiting(server)
    published.publish(**model_kwargs(2, [0, 1, 2, 9]))
    t.join(60)
    status, headers, body = result["r"]
    assert status == 200 and headers["ETag"] == '"3"' and body["version"] == 3
    # ?after= is the header-free form of the same question.
    status, _, body = request(server, "GET", "/v1/snapshots/latest?after=2&wait=5")
    assert status == 200 and body["version"] == 3


def test_long_poll_times_out_with_304(server, published):
    status, headers, _ = request(server, "GET", "/v1/snapshots/latest?wait=0.2",
                                 headers={"If-None-Match": '"2"'})
    assert status == 304 and headers["ETag"] == '"2"'


def test_no_snapshot_yet(server, publisher):
    status, _, body = request(server, "GET", "/v1/snapshots/latest")
    assert status == 404 and body["error"] == "no_snapshot"
    status, _, body = request(server, "GET", "/v1/snapshots/latest?wait=0.1")
    assert status == 404
    result = {}
    t = threading.Thread(target=lambda: result.update(
        r=request(server, "GET", "/v1/snapshots/latest?wait=30")))
    t.start()
    wait_until_waiting(server)
    publisher.publish(**model_kwargs(0, [0, 1, 2, 3]))
    t.join(60)
    assert result["r"][0] == 200 and result["r"][2]["version"] == 1


def test_listing_and_versions(server, published):
    status, _, body = request(server, "GET", "/v1/snapshots")
    assert status == 200 and body["latest"] == 2
    assert [s["version"] for s in body["snapshots"]] == [1, 2]
    assert set(body["snapshots"][0]) == {"version", "created_at", "num_docs", "num_topics",
                                         "vocab_size"}
    status, headers, body = request(server, "GET", "/v1/snapshots/1")
    assert status == 200 and body["version"] == 1 and headers["ETag"] == '"1"'
    assert "immutable" in headers["Cache-Control"]
    status, _, _ = request(server, "GET", "/v1/snapshots/1", headers={"If-None-Match": '"1"'})
    assert status == 304
    status, _, body = request(server, "GET", "/v1/snapshots/99")
    assert status == 404 and body["error"] == "not_found"


def test_pruned_versions_are_gone_from_the_api(tmp_path):
    pub = Publisher(tmp_path / "snaps", keep=1)
    with ApiServer(pub) as srv:
        pub.publish(**model_kwargs(0, [0, 1, 2, 3]))
        assert request(srv, "GET", "/v1/snapshots/1")[0] == 200  # now cached by the API
        pub.publish(**model_kwargs(1, [0, 1, 2, 3]))
        assert request(srv, "GET", "/v1/snapshots/1")[0] == 404
        assert request(srv, "GET", "/v1/snapshots/2")[0] == 200


def test_topic_with_history(server, published):
    status, _, body = request(server, "GET", "/v1/topics/0")
    assert status == 200 and body["alive"] and body["topic"]["id"] == 0
    assert [h["version"] for h in body["history"]] == [1, 2]
    status, _, body = request(server, "GET", "/v1/topics/3")  # died in version 2
    assert status == 200 and not body["alive"] and body["topic"] is None
    assert [h["version"] for h in body["history"]] == [1]
    status, _, body = request(server, "GET", "/v1/topics/42")
    assert status == 404


def test_topic_lists_the_topics_it_shares_documents_with(tmp_path):
    """``related``: the topics whose lift in the latest topic-topic matrix is above 1."""
    pub = Publisher(tmp_path / "snaps", keep=3)
    kwargs = model_kwargs(0, [10, 11, 12, 13])
    p = np.asarray(kwargs["topic_topic"], dtype=np.float64).sum(axis=1)
    A = 0.5 * np.diag(p) + 0.5 * np.outer(p, p)  # every pair below chance (lift 0.5) ...
    c = p[1] * p[2]
    A[1, 2] += c  # ... except topics 11 and 12 (lift 1.5), row sums unchanged
    A[2, 1] += c
    A[1, 1] -= c
    A[2, 2] -= c
    pub.publish(**{**kwargs, "topic_topic": A})
    with ApiServer(pub) as srv:
        _, _, body = request(srv, "GET", "/v1/topics/11")
        assert [(r["id"], r["anchor"]) for r in body["related"]] == \
            [(12, kwargs["anchors"][2])]
        assert body["related"][0]["lift"] == pytest.approx(1.5)
        assert request(srv, "GET", "/v1/topics/10")[2]["related"] == []
    pub.close()


def test_infer_puts_mass_on_the_documents_topic(server, published):
    snap = published.get(2)
    k = 2
    top = [w for w, _ in snap.topics[k]["top_words"][:8]]
    status, _, body = request(server, "POST", "/v1/infer", {"text": " ".join(top * 3)})
    assert status == 200 and body["version"] == 2
    assert body["num_known_tokens"] == 24
    assert body["topics"][0]["id"] == snap.topics[k]["id"]
    weights = [t["weight"] for t in body["topics"]]
    assert weights == sorted(weights, reverse=True)
    assert min(weights) >= 0.01  # the default min_weight: no tail of 1e-77 weights
    assert sum(weights) + body["omitted_weight"] == pytest.approx(1.0)
    status, _, every = request(server, "POST", "/v1/infer",
                               {"text": " ".join(top * 3), "min_weight": 0})
    assert len(every["topics"]) == len(snap.topics) and every["omitted_weight"] < 1e-9
    assert sum(t["weight"] for t in every["topics"]) == pytest.approx(1.0)
    assert every["topics"][:len(weights)] == body["topics"]

    status, _, body2 = request(server, "POST", "/v1/infer", {"tokens": top * 3, "top": 1})
    assert status == 200 and len(body2["topics"]) == 1
    assert body2["topics"][0]["id"] == body["topics"][0]["id"]
    status, _, body3 = request(server, "POST", "/v1/infer", {"tokens": top, "version": 1})
    assert status == 200 and body3["version"] == 1
    # Topics under min_weight are left out and counted in omitted_weight.
    np.testing.assert_allclose(sum(t["weight"] for t in body3["topics"])
                               + body3["omitted_weight"], 1.0)


@pytest.mark.parametrize(
    "body, headers, status, code",
    [
        (b"{not json", {"Content-Type": "application/json"}, 400, "invalid_json"),
        ({"text": 5}, None, 400, "bad_request"),
        ({"tokens": ["a", 1]}, None, 400, "bad_request"),
        ({"text": "a", "tokens": ["a"]}, None, 400, "bad_request"),
        ({}, None, 400, "bad_request"),
        ({"text": "a", "colour": "red"}, None, 400, "bad_request"),
        ([1, 2], None, 400, "bad_request"),
        ({"text": "unknown vocabulary only"}, None, 422, "no_known_words"),
        ({"text": "word01", "version": 77}, None, 404, "not_found"),
        ({"text": "word01", "top": 0}, None, 400, "bad_request"),
        ({"text": "word01", "min_weight": 1.5}, None, 400, "bad_request"),
        ({"text": "word01", "min_weight": "0.1"}, None, 400, "bad_request"),
        (b'{"text": "x"}', {"Content-Type": "text/plain"}, 415, "unsupported_media_type"),
    ],
)
def test_infer_rejects_malformed_requests(server, published, body, headers, status, code):
    got, _, data = request(server, "POST", "/v1/infer", body, headers)
    assert (got, data["error"]) == (status, code)
    assert isinstance(data["message"], str) and data["message"]


def test_oversized_body_is_413(publisher, published):
    with ApiServer(publisher, max_body_bytes=100) as srv:
        status, _, data = request(srv, "POST", "/v1/infer", {"text": "word01 " * 50})
    assert status == 413 and data["error"] == "payload_too_large"


def test_unknown_paths_and_methods(server, published):
    status, _, body = request(server, "GET", "/v2/nothing")
    assert status == 404 and body["error"] == "not_found"
    status, headers, body = request(server, "GET", "/v1/infer")
    assert status == 405 and headers["Allow"] == "POST" and body["error"] == "method_not_allowed"
    status, _, _ = request(server, "DELETE", "/v1/snapshots/1")
    assert status == 405
    status, _, body = request(server, "GET", "/v1/snapshots/latest?wait=soon")
    assert status == 400


def test_bearer_token(publisher, published):
    with ApiServer(publisher, bearer_token=Secret("s3cret"), metrics=Metrics()) as srv:
        for path in ("/v1/snapshots/latest", "/v1/snapshots", "/metrics"):
            status, headers, body = request(srv, "GET", path)
            assert status == 401 and body["error"] == "unauthorized"
            assert headers["WWW-Authenticate"].startswith("Bearer")
        status, _, _ = request(srv, "GET", "/v1/snapshots", headers={"Authorization": "Bearer no"})
        assert status == 401
        status, _, _ = request(srv, "GET", "/v1/snapshots",
                               headers={"Authorization": "Bearer s3cret"})
        assert status == 200
        # Probes stay open.
        assert request(srv, "GET", "/healthz")[0] == 200
        assert request(srv, "GET", "/readyz")[0] == 200


def test_health_and_readiness(publisher):
    state = {"ok": True}
    with ApiServer(publisher, ready=lambda: (state["ok"], "kafka unreachable")) as srv:
        assert request(srv, "GET", "/healthz")[::2] == (200, {"status": "ok"})
        status, _, body = request(srv, "GET", "/readyz")
        assert status == 503 and body["reason"] == "no snapshot has been published yet"
        publisher.publish(**model_kwargs(0, [0, 1, 2, 3]))
        status, _, body = request(srv, "GET", "/readyz")
        assert status == 200 and body["ready"] and body["version"] == 1
        state["ok"] = False
        status, _, body = request(srv, "GET", "/readyz")
        assert status == 503 and body == {"ready": False, "version": 1,
                                          "reason": "kafka unreachable"}
    with ApiServer(publisher, ready=lambda: 1 / 0) as srv:
        status, _, body = request(srv, "GET", "/readyz")
        assert status == 503 and "readiness check failed" in body["reason"]


def test_metrics_endpoint_parses_and_counts_requests(server, published):
    request(server, "GET", "/v1/snapshots/latest")
    request(server, "GET", "/v2/nothing")
    status, headers, body = request(server, "GET", "/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    assert families["anchorstream_snapshot_version"].samples[0].value == 2
    counts = {(s.labels["route"], s.labels["code"]): s.value
              for s in families["anchorstream_http_requests"].samples
              if s.name.endswith("_total")}
    assert counts[("/v1/snapshots/latest", "200")] == 1
    assert counts[("unmatched", "404")] == 1


def test_static_index(publisher, tmp_path):
    with ApiServer(publisher, static_dir=tmp_path / "none") as srv:
        status, _, body = request(srv, "GET", "/")
        assert status == 404 and body["error"] == "not_found"
    static = tmp_path / "static"
    static.mkdir()
    (static / "index.html").write_text("<h1>topics</h1>")
    (tmp_path / "secret.txt").write_text("do not serve")
    with ApiServer(publisher, static_dir=static) as srv:
        status, headers, body = request(srv, "GET", "/")
        assert status == 200 and body == b"<h1>topics</h1>"
        assert headers["Content-Type"].startswith("text/html")
        for path in ("/static/..%2Fsecret.txt", "/static/../secret.txt", "/static/.hidden"):
            assert request(srv, "GET", path)[0] == 404


def test_binds_loopback_by_default(publisher):
    with ApiServer(publisher) as srv:
        assert srv.url.startswith("http://127.0.0.1:") and srv.port > 0


def test_keep_alive_survives_rejected_bodies(publisher, published):
    """An error answered before the body was read must not corrupt the next request."""
    with ApiServer(publisher, bearer_token="t") as srv:
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
        try:
            body = json.dumps({"text": "word01 " * 100}).encode()
            conn.request("POST", "/v1/infer", body=body,
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            assert resp.status == 401
            resp.read()
            # http.client reconnects transparently when the server closed the connection.
            conn.request("GET", "/healthz")
            resp = conn.getresponse()
            assert resp.status == 200 and json.loads(resp.read()) == {"status": "ok"}
        finally:
            conn.close()
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
        try:
            conn.request("POST", "/v1/infer", body=body, headers={
                "Content-Type": "application/json", "Authorization": "Bearer t"})
            resp = conn.getresponse()
            assert resp.status == 200 and resp.getheader("Connection") is None
            resp.read()
            conn.request("GET", "/healthz")  # same connection, kept alive
            assert conn.getresponse().status == 200
        finally:
            conn.close()
