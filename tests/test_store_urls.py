"""Store locations: local paths and fsspec-style URLs mapped onto Icechunk storage.

The parsing and option checks are unit tests; the end-to-end test runs a real S3-compatible
server (moto's, in this process, on an ephemeral port) and checks that a store written there
reads back like the same store on local disk.
"""

from __future__ import annotations

import os
import uuid

import icechunk
import numpy as np
import pytest

from anchorstream.errors import InputError, StoreError
from anchorstream.store.location import (
    SCHEMES,
    STORAGE_OPTIONS,
    StoreURL,
    check_storage_options,
    icechunk_storage,
    parse_store_url,
)
from anchorstream.store import CooccurrenceStore, open_committed, read_committed, store_info


def test_module_doctests():
    import doctest

    import anchorstream.store.location

    assert doctest.testmod(anchorstream.store.location).failed == 0


@pytest.mark.parametrize("url, expected", [
    ("store", StoreURL("local", path=os.path.abspath("store"))),
    ("/data/s", StoreURL("local", path="/data/s")),
    ("file:///data/s", StoreURL("local", path="/data/s")),
    ("s3://b/p/q", StoreURL("s3", "b", "p/q")),
    ("s3a://b/p/", StoreURL("s3", "b", "p")),
    ("S3://b", StoreURL("s3", "b")),
    ("gs://b/p", StoreURL("gcs", "b", "p")),
    ("gcs://b", StoreURL("gcs", "b")),
    ("az://c/p", StoreURL("azure", "c", "p")),
    ("azure://c/p", StoreURL("azure", "c", "p")),
    ("abfs://c@acct.dfs.core.windows.net/p/q", StoreURL("azure", "c", "p/q", "acct")),
    ("abfss://c@acct.dfs.core.windows.net", StoreURL("azure", "c", None, "acct")),
    ("memory://x", StoreURL("memory", "x")),
])
def test_urls_map_onto_storage_kinds(url, expected):
    assert parse_store_url(url) == expected


@pytest.mark.parametrize("url, message", [
    ("ftp://host/x", "unsupported store URL 'ftp://host/x': scheme 'ftp' is not one of"),
    ("hdfs://nn/p", "s3://, s3a://, gs://, gcs://, az://, abfs://"),
    ("s3:///prefix", "has no bucket: write s3://BUCKET/PREFIX"),
    ("file://", "has no path"),
    ("", "non-empty path or URL"),
])
def test_bad_urls_are_refused_with_the_supported_schemes(url, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace("?", r"\?")):
        parse_store_url(url)


def test_every_scheme_has_its_options():
    assert set(SCHEMES.values()) == set(STORAGE_OPTIONS)
    # Every option is a keyword of the Icechunk constructor it goes to.
    import inspect
    makers = {"s3": icechunk.s3_storage, "gcs": icechunk.gcs_storage,
              "azure": icechunk.azure_storage}
    for kind, make in makers.items():
        assert set(STORAGE_OPTIONS[kind]) <= set(inspect.signature(make).parameters), kind


@pytest.mark.parametrize("url, options, message", [
    ("store", {"region": "x"}, "'region' is not accepted for a local store"),
    ("s3://b/p", {"regoin": "x"}, "'regoin' is not accepted for a s3 store .* allowed: "
                                  "access_key_id, allow_http, anonymous"),
    ("s3://b/p", {"allow_http": "yes"}, "'allow_http': got 'yes'; allowed: true or false"),
    ("s3://b/p", {"region": ""}, "'region': got ''; allowed: a non-empty string"),
    ("s3://b/p", {"network_stream_timeout_seconds": -1}, "an integer >= 0"),
    ("s3://b/p", {"secret_access_key": 5}, "got <redacted>"),
    ("gs://b/p", {"config": {"a": 1}}, "a mapping of strings"),
    ("az://c/p", {}, "needs its storage account"),
    ("abfs://c@one.dfs.core.windows.net/p", {"account": "two"}, "names account 'one'"),
])
def test_bad_storage_options_name_the_option_and_what_is_allowed(url, options, message):
    with pytest.raises(InputError, match=message):
        check_storage_options(url, options)


def test_storage_constructors_get_the_options():
    storage, local = icechunk_storage("s3://bucket/prefix", {
        "region": "eu-west-1", "endpoint_url": "http://127.0.0.1:1", "allow_http": True,
        "anonymous": True, "force_path_style": True})
    assert isinstance(storage, icechunk.Storage) and local is None
    assert isinstance(icechunk_storage("gs://b/p", {"anonymous": True})[0], icechunk.Storage)
    storage, _ = icechunk_storage("az://c/p", {"account": "acct", "from_env": True})
    assert isinstance(storage, icechunk.Storage)
    # Icechunk's own refusal (anonymous together with keys) comes back as an InputError that
    # names the options but not the secret.
    with pytest.raises(InputError, match="cannot build s3 storage") as info:
        icechunk_storage("s3://b/p", {"anonymous": True, "access_key_id": "AK",
                                      "secret_access_key": "very-secret"})
    assert "very-secret" not in str(info.value)
    registry: dict = {}
    first, _ = icechunk_storage("memory://m", memory=registry)
    assert icechunk_storage("memory://m", memory=registry)[0] is first


def _service_account(tmp_path) -> tuple[str, str]:
    """A service-account key file for Google Cloud Storage (a fresh RSA key; it signs nothing
    here): its path and its text."""
    import json

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()).decode()
    text = json.dumps({"type": "service_account", "client_email": "a@p.iam.gserviceaccount.com",
                       "private_key": key, "private_key_id": "1", "project_id": "p",
                       "token_uri": "https://oauth2.googleapis.com/token"})
    path = tmp_path / "key.json"
    path.write_text(text)
    return str(path), text


def test_storage_options_reach_the_object_store_client_that_clears_debris(tmp_path):
    """The store's options, renamed for obstore (anchorstream.store.debris), for every kind of
    object store: what lists and removes an interrupted creation's objects must reach the same
    bucket, prefix and credentials as Icechunk does. Building a client reaches no server."""
    from anchorstream.store.debris import object_store

    key_file, key_text = _service_account(tmp_path)
    cases = [
        ("s3://b/p/q", {"region": "eu-west-1", "endpoint_url": "http://127.0.0.1:9",
                        "access_key_id": "id", "secret_access_key": "secret",
                        "force_path_style": True, "allow_http": True},
         {"bucket": "b", "region": "eu-west-1", "endpoint": "http://127.0.0.1:9",
          "access_key_id": "id", "secret_access_key": "secret",
          "virtual_hosted_style_request": "false"}, "p/q"),
        ("s3://b/p", {"anonymous": True}, {"bucket": "b", "skip_signature": "true"}, "p"),
        ("gs://bucket/some/prefix", {"service_account_file": key_file},
         {"bucket": "bucket", "service_account": key_file}, "some/prefix"),
        ("gcs://bucket/x", {"service_account_key": key_text},
         {"bucket": "bucket", "service_account_key": key_text}, "x"),
        ("gs://bucket/x", {"application_credentials": key_file},
         {"bucket": "bucket", "application_credentials": key_file}, "x"),
        ("gs://bucket/x", {"anonymous": True}, {"bucket": "bucket", "skip_signature": "true"},
         "x"),
        ("az://container/pre/fix", {"account": "acct", "access_key": "a2V5"},
         {"container_name": "container", "account_name": "acct", "account_key": "a2V5"},
         "pre/fix"),
        ("abfs://container@acct.dfs.core.windows.net/pre", {"sas_token": "sv=1&sig=x"},
         {"container_name": "container", "account_name": "acct", "sas_key": "sv=1&sig=x"},
         "pre"),
    ]
    for url, options, expected, prefix in cases:
        store = object_store(url, options)
        assert store is not None, url
        assert {k: store.config.get(k) for k in expected} == expected, (url, store.config)
        assert str(store.prefix) == prefix
    assert object_store(tmp_path / "local", None) is None
    # Options obstore cannot use: no client, so the caller names the prefix to clear instead.
    assert object_store("gs://bucket/x", {"service_account_file": str(tmp_path / "no")}) is None


def test_local_urls_and_options_reach_the_store(tmp_path):
    url = f"file://{tmp_path}/s"
    s = CooccurrenceStore.create(url, capacity=4, seed=["a"])
    assert (tmp_path / "s").is_dir() and read_committed(url)[1] == ["a"]
    assert CooccurrenceStore.open(str(tmp_path / "s")).version == s.version
    with pytest.raises(InputError, match="not accepted for a local store"):
        CooccurrenceStore.open(url, storage_options={"region": "x"})
    with pytest.raises(InputError, match="not accepted for a local store"):
        open_committed(url, storage_options={"anonymous": True})


# ------------------------------------------------------------------- a real S3 server


@pytest.fixture(scope="module")
def s3_server():
    """An S3-compatible HTTP server (moto) on an ephemeral port, with a bucket."""
    server_mod = pytest.importorskip(
        "moto.server", reason="moto (S3 server) is not installed: pip install -e .[dev]")
    boto3 = pytest.importorskip("boto3")
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    keys = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", **keys).create_bucket(
        Bucket="anchorstream")
    yield endpoint
    server.stop()


def test_a_store_on_an_s3_server_equals_one_on_local_disk(s3_server, tmp_path, rng):
    options = {"endpoint_url": s3_server, "allow_http": True, "region": "us-east-1",
               "force_path_style": True, "access_key_id": "testing",
               "secret_access_key": "testing"}
    url = f"s3://anchorstream/stores/{uuid.uuid4().hex}"
    local = str(tmp_path / "local")
    words = [f"w{i}" for i in range(30)]
    docs = [[str(w) for w in rng.choice(words, size=rng.integers(2, 10))] for _ in range(300)]
    kw = {"capacity": 40, "admit_threshold": 1.0, "chunk_size": 8, "max_segments": 2}
    for target, extra in ((url, {"storage_options": options}), (local, {})):
        s = CooccurrenceStore.open_or_create(target, **kw, **extra)
        for k in range(0, 300, 100):
            s.add(docs[k:k + 100])
            s.checkpoint({"n": k + 100})
        # A writer reopening the store (a restart) goes on from the last commit.
        s = CooccurrenceStore.open(target, **extra)
        assert s.offsets == {"n": 300}
        s.collect_garbage()
    remote_state = open_committed(url, storage_options=options)
    local_state = open_committed(local)
    assert remote_state.words == local_state.words and remote_state.offsets == {"n": 300}
    np.testing.assert_array_equal(remote_state.cooccurrence.counts,
                                  local_state.cooccurrence.counts)
    np.testing.assert_array_equal(remote_state.cooccurrence.unigram,
                                  local_state.cooccurrence.unigram)
    info = store_info(url, storage_options=options)
    assert info["fingerprint"] == store_info(local)["fingerprint"]
    assert info["num_docs"] == 300 and info["bytes_on_disk"] > 0
    assert read_committed(url, storage_options=options)[1] == local_state.words


S3_OPTIONS = {"allow_http": True, "region": "us-east-1", "force_path_style": True,
              "access_key_id": "testing", "secret_access_key": "testing"}


def test_processes_creating_one_store_on_s3_at_once_all_open_it(s3_server):
    """Two instances given one partition create its store at the same moment: an object
    store has no rename, so Icechunk creates in place and the later creation finds the prefix
    written. It waits for the other's repository and opens it; exactly one creation counts."""
    import threading

    options = {"endpoint_url": s3_server, **S3_OPTIONS}
    for _ in range(4):
        url = f"s3://anchorstream/race/{uuid.uuid4().hex}"
        barrier = threading.Barrier(3)
        got, errors = [], []

        def create():
            barrier.wait()
            try:
                got.append(CooccurrenceStore.open_or_create(
                    url, capacity=20, admit_threshold=1, storage_options=options))
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=create) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert errors == [] and len(got) == 3
        assert len({s.version for s in got}) == 1  # one store, at its first commit
        got[0].add([["a", "b"]])
        got[0].checkpoint({"n": 1})
        assert open_committed(url, storage_options=options).offsets == {"n": 1}


def test_what_an_interrupted_creation_left_on_s3_is_removed_or_named(s3_server, monkeypatch,
                                                                     caplog):
    """A creation killed between Icechunk's first snapshot and its branch leaves objects and
    no repository, and Icechunk creates only in a clean prefix. Once those objects are older
    than a creation takes (CREATION_WAIT_SECONDS, 1 s here), they are removed and the store
    created; what cannot be debris (a branch or tag under refs/) is left, and the error says
    what to do."""
    import boto3

    from anchorstream.store import repository

    client = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1",
                          aws_access_key_id="testing", aws_secret_access_key="testing")
    monkeypatch.setattr(repository, "CREATION_WAIT_SECONDS", 1.0)
    options = {"endpoint_url": s3_server, **S3_OPTIONS}
    killed = f"debris/{uuid.uuid4().hex}"
    client.put_object(Bucket="anchorstream", Key=f"{killed}/snapshots/1CECHNKREP0F1RSTCMT0",
                      Body=b"x")
    store = CooccurrenceStore.open_or_create(f"s3://anchorstream/{killed}", capacity=20,
                                             admit_threshold=1, storage_options=options)
    store.add([["a", "b"]])
    store.checkpoint({"n": 1})
    assert open_committed(f"s3://anchorstream/{killed}", storage_options=options).offsets == {
        "n": 1}
    assert "removed 1 objects that a store creation interrupted" in caplog.text

    odd = f"debris/{uuid.uuid4().hex}"
    client.put_object(Bucket="anchorstream", Key=f"{odd}/refs/branch.other/ref.json", Body=b"x")
    with pytest.raises(StoreError, match="holds objects but no repository") as err:
        CooccurrenceStore.open_or_create(f"s3://anchorstream/{odd}", capacity=20,
                                         storage_options=options)
    assert "remove every object" in str(err.value)
    listed = client.list_objects_v2(Bucket="anchorstream", Prefix=odd)["Contents"]
    assert [o["Key"] for o in listed] == [f"{odd}/refs/branch.other/ref.json"]


# ------------------------------------------------------------------- configuration


def test_storage_options_in_the_configuration():
    from daemon.settings import ConfigError, parse_config

    env = {"ANCHORSTREAM_STORE__PATH": "s3://bucket/prefix",
           "ANCHORSTREAM_STORE__STORAGE_OPTIONS":
               '{endpoint_url: "http://minio:9000", allow_http: true, secret_access_key: s3cr3t,'
               ' access_key_id: AK}'}
    cfg = parse_config(None, env)
    assert cfg.store.storage_kwargs() == {"endpoint_url": "http://minio:9000",
                                          "allow_http": True, "secret_access_key": "s3cr3t",
                                          "access_key_id": "AK"}
    # Credentials never reach logs or manifests.
    assert cfg.to_dict()["store"]["storage_options"]["secret_access_key"] == "***"
    assert "s3cr3t" not in repr(cfg) and hash(cfg) == hash(parse_config(None, env))
    assert parse_config(None, {}).store.storage_kwargs() is None

    def error(store):
        with pytest.raises(ConfigError) as info:
            parse_config({"store": store}, {})
        return str(info.value)

    assert error({"path": "hdfs://nn/x"}).startswith(
        "store.path: unsupported store URL 'hdfs://nn/x': scheme 'hdfs' is not one of")
    msg = error({"path": "gs://b/p", "storage_options": {"region": "x"}})
    assert msg.startswith("store.storage_options (with store.path 'gs://b/p'): storage option "
                          "'region' is not accepted for a gcs store")
    assert "allowed: anonymous, application_credentials" in msg
    assert "allowed: none" in error({"storage_options": {"endpoint_url": "http://x"}})
    assert error({"path": "s3://b", "storage_options": [1]}).startswith(
        "store.storage_options: got [1]; allowed: a mapping of option names")
    assert "<redacted>" in error({"path": "s3://b", "storage_options": {"session_token": 7}})
    assert "needs its storage account" in error({"path": "az://c/p"})


def test_the_refresher_publishes_from_a_store_on_an_s3_server(s3_server, tmp_path):
    # The daemon's reader needs the storage options too (endpoint, credentials).
    from daemon.publish import Publisher
    from daemon.refresh import Refresher
    from tests.test_refresher import K, planted_docs

    options = {"endpoint_url": s3_server, "allow_http": True, "region": "us-east-1",
               "force_path_style": True, "access_key_id": "testing",
               "secret_access_key": "testing"}
    url = f"s3://anchorstream/stores/{uuid.uuid4().hex}"
    store = CooccurrenceStore.create(url, capacity=400, admit_threshold=2,
                                     storage_options=options)
    store.add(planted_docs(1500, seed=1))
    version = store.checkpoint({"n": 1500})
    publisher = Publisher(tmp_path / "snaps", keep=2)
    refresher = Refresher(url, publisher, model_kwargs={"n_topics": K, "anchor_min_df": 5},
                          min_new_docs=1, min_df=2, storage_options=options)
    outcome = refresher.refresh_once()
    assert outcome["store_version"] == version
    _, snap = publisher.latest()
    assert snap.num_docs == 1500 and snap.num_topics == K
