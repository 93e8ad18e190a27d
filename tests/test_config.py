"""Configuration: the shipped file, environment overrides, validation messages, secrets."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from anchorstream.model import pipeline
from anchorstream.model.registry import COUNT_ANCHORS, DOCUMENT_ANCHORS, METHODS
from anchorstream.stats.accumulator import Forgetting
from anchorstream.stats.documents import DocStatsSettings
from daemon.settings import (
    Config,
    ConfigError,
    Secret,
    describe_keys,
    load_config,
    parse_config,
)

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "config.yaml"


def error_of(data=None, env=None) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(data, env or {})
    return str(info.value)


def test_shipped_config_lists_every_key_with_its_default():
    text = SHIPPED.read_text()
    data = yaml.safe_load(text)
    assert {s: set(v) for s, v in data.items()} == {
        s: set(keys) for s, keys in describe_keys().items()}
    assert load_config(SHIPPED, env={}) == Config()
    # Every key is explained: the line before each key (or its section) is a comment.
    assert text.count("#") > len([k for keys in describe_keys().values() for k in keys]) // 2


def test_anchorfree_settings_reach_the_model():
    model = parse_config({"model": {"anchorfree_words": 10, "anchorfree_slack": 0.01}}, {}).model
    assert model.model_kwargs()["anchorfree_words"] == 10
    assert model.model_kwargs()["anchorfree_slack"] == 0.01
    defaults = Config().model.model_kwargs()
    assert (defaults["anchorfree_words"], defaults["anchorfree_slack"]) == (
        pipeline.ModelSettings.anchorfree_words, pipeline.ModelSettings.anchorfree_slack)
    assert "anchorfree_slack" in error_of({"model": {"anchorfree_slack": -1}})
    assert "anchorfree_words" in error_of({"model": {"anchorfree_words": -1}})


def test_defaults_and_frozen():
    cfg = load_config(None, env={})
    assert cfg == Config()
    assert cfg.http.host == "127.0.0.1" and cfg.metrics.port == 0
    assert cfg.kafka.bootstrap_servers == ("embedded",) and cfg.kafka.embedded
    assert cfg.kafka.allow_plaintext_sasl is False
    with pytest.raises(ValidationError, match="frozen"):
        cfg.model.num_topics = 3
    # Written out in the numba-free settings, the library's defaults.
    from anchorstream.stats.cooccurrence import LENGTH_CAP
    from anchorstream.text.duplicates import DEFAULT_MEMORY

    assert cfg.store.duplicate_memory == DEFAULT_MEMORY and cfg.store.length_cap == LENGTH_CAP


def test_file_values_are_normalized(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        "kafka:\n"
        "  bootstrap_servers: 'a:9092, b:9093'\n"
        "  topics: news\n"
        "logging:\n"
        "  level: debug\n"
        "store:\n"
        "  checkpoint_every_seconds: 5\n"
    )
    cfg = load_config(path, env={})
    assert cfg.kafka.bootstrap_servers == ("a:9092", "b:9093")
    assert cfg.kafka.topics == ("news",)
    assert cfg.logging.level == "DEBUG"
    assert cfg.store.checkpoint_every_seconds == 5.0
    assert isinstance(cfg.store.checkpoint_every_seconds, float)
    embedded = load_config(path, env={"ANCHORSTREAM_KAFKA__BOOTSTRAP_SERVERS": "embedded"})
    assert embedded.kafka.embedded


def test_environment_overrides_are_yaml_scalars():
    env = {
        "ANCHORSTREAM_MODEL__NUM_TOPICS": "30",
        "ANCHORSTREAM_MODEL__RECTIFY": "false",
        "ANCHORSTREAM_KAFKA__TOPICS": "[news, posts]",
        "ANCHORSTREAM_SNAPSHOTS__KEEP_SECONDS": "86400",
        "ANCHORSTREAM_MESSAGE__ID_FIELD": "null",
        "ANCHORSTREAM_HTTP__BEARER_TOKEN": "123456",     # read as text, not the number
        "ANCHORSTREAM_KAFKA__GROUP_ID": "2024",
        "ANCHORSTREAM_CONFIG": "/etc/anchorstream.yaml",  # not an override: no "__"
        "OTHER__THING": "x",
    }
    cfg = parse_config({"model": {"num_topics": 10}, "message": {"id_field": "id"}}, env)
    assert cfg.model.num_topics == 30 and cfg.model.rectify is False
    assert cfg.kafka.topics == ("news", "posts")
    assert cfg.snapshots.keep_seconds == 86400.0
    assert cfg.message.id_field is None
    assert cfg.http.bearer_token.reveal() == "123456"
    assert cfg.kafka.group_id == "2024"


def test_unknown_keys_name_the_key_and_suggest():
    msg = error_of({"kafka": {"bootstrap_server": "x:1"}})
    assert "unknown key 'kafka.bootstrap_server'" in msg
    assert "did you mean 'bootstrap_servers'" in msg
    msg = error_of({"kafkaa": {}})
    assert "unknown section 'kafkaa'" in msg and "did you mean 'kafka'" in msg
    msg = error_of(env={"ANCHORSTREAM_MODEL__NUM_TOPIC": "5"})
    assert "unknown key 'model.num_topic'" in msg
    assert "ANCHORSTREAM_MODEL__NUM_TOPIC" in msg
    msg = error_of(env={"ANCHORSTREAM_NOPE__X": "5"})
    assert "ANCHORSTREAM_NOPE__X" in msg and "unknown section 'nope'" in msg


@pytest.mark.parametrize(
    "section, key, value, allowed",
    [
        ("kafka", "security_protocol", "SASL", "one of 'PLAINTEXT', 'SSL'"),
        ("kafka", "bootstrap_servers", "localhost", "HOST:PORT"),
        ("kafka", "bootstrap_servers", ["a:1", "b:99999"], "HOST:PORT"),
        ("kafka", "topics", [], "non-empty list"),
        ("kafka", "topics", ["a", "a"], "distinct"),
        ("kafka", "dead_letter_topic", "bad topic!", "Kafka topic name"),
        ("kafka", "sasl_mechanism", "GSSAPI", "'PLAIN', 'SCRAM-SHA-256'"),
        ("kafka", "fetch_max_bytes", 10, "an integer >= 1024"),
        ("kafka", "request_timeout_ms", 600000, "<= 300000"),
        ("message", "format", "xml", "one of 'json', 'text', 'tokens'"),
        ("message", "max_bytes", "1MB", "an integer >= 1"),
        ("model", "num_topics", 0, "an integer >= 1"),
        ("model", "num_topics", True, "an integer >= 1"),
        ("model", "recover_method", "svd", "'admm', 'l2', 'kl', 'inverse'"),
        ("model", "recover_weights", "tfidf", "one of 'chi2', 'none'"),
        ("model", "method", "lda", "one of 'anchor', 'anchorfree', 'tsvd'"),
        ("model", "anchor_method", "spa", "one of 'qr', 'fast', 'ddp', 'rp'"),
        ("model", "rp_projections", 0, "an integer >= 1 or null"),
        ("model", "tsvd_documents", 1, "an integer >= 2"),
        ("model", "refine_window", 1, "'auto', an integer >= 2 (tokens) or null"),
        ("model", "refine_window", "on", "'auto', an integer >= 2 (tokens) or null"),
        ("vocab", "max_df_ratio", 1.5, "<= 1"),
        ("vocab", "max_df_ratio", 0, "> 0"),
        ("vocab", "seed_file", "/no/such/file.txt", "existing file"),
        ("vocab", "stopwords", "", "'auto', a shipped list ('danish', "),
        ("vocab", "stopwords", "klingon", "'auto', a shipped list ('danish', "),
        ("vocab", "stopwords", "/no/such/stopwords.txt", "cannot read stopword file"),
        ("vocab", "admission_min_share", 0, "> 0"),
        ("vocab", "admission_min_share", 1.5, "<= 1"),
        ("refresh", "interval_seconds", -1, "> 0"),
        ("refresh", "interval_seconds", float("nan"), "finite"),
        ("snapshots", "keep", 0, ">= 1"),
        ("snapshots", "n_top_words", 10, ">= 20"),
        ("http", "port", 70000, "<= 65535"),
        ("http", "host", "", "non-empty string"),
        ("logging", "level", "LOUD", "'DEBUG', 'INFO'"),
        ("store", "window_docs", 2.5, "an integer >= 1 or null"),
        ("kafka", "max_batch_bytes", 10, "an integer >= 1024 or null"),
        ("kafka", "compression_type", "brotli", "'gzip', 'snappy', 'lz4', 'zstd'"),
        ("health", "stall_seconds", 0, "> 0"),
        ("health", "broker_probe_seconds", -1, "> 0"),
        ("logging", "kafka_repeat_seconds", -5, ">= 0"),
    ],
)
def test_bad_values_name_key_value_and_allowed(section, key, value, allowed):
    msg = error_of({section: {key: value}})
    assert msg.startswith(f"{section}.{key}: got {value!r}"), msg
    assert "allowed:" in msg and allowed in msg


def test_every_problem_is_reported_at_once():
    msg = error_of({"kafka": {"security_protocol": "SASL"}, "model": {"num_topics": 0},
                    "http": {"bearer_token": ["hunter2"]}, "vocab": {"capacity": "many"}},
                   env={"ANCHORSTREAM_STORE__KEEP_VERSION": "3"})
    lines = msg.splitlines()
    assert lines[0] == "5 problems in the configuration:", msg
    assert lines[1:] == [
        "  kafka.security_protocol: got 'SASL'; allowed: one of 'PLAINTEXT', 'SSL', "
        "'SASL_PLAINTEXT', 'SASL_SSL'",
        lines[2],
        "  vocab.capacity: got 'many'; allowed: an integer >= 2",
        "  model.num_topics: got 0; allowed: an integer >= 1",
        "  http.bearer_token: got <a list>; allowed: a non-empty string or null",
    ], msg
    assert lines[2].startswith("  unknown key 'store.keep_version' (from environment variable "
                               "ANCHORSTREAM_STORE__KEEP_VERSION) (did you mean 'keep_versions'?)")
    assert "hunter2" not in msg


def test_rules_between_keys_join_the_report():
    msg = error_of({"kafka": {"heartbeat_interval_ms": 6000, "reconnect_backoff_ms": 500,
                              "reconnect_backoff_max_ms": 100},
                    "store": {"half_life_docs": 1e5, "half_life_seconds": 3600},
                    "model": {"num_topics": 0}})
    assert msg.splitlines()[1:] == [
        "  kafka.heartbeat_interval_ms: got 6000; allowed: less than kafka.session_timeout_ms "
        "(6000)",
        "  kafka.reconnect_backoff_max_ms: got 100; allowed: at least kafka.reconnect_backoff_ms "
        "(500)",
        "  store.half_life_seconds: got 3600.0 while store.half_life_docs is 100000.0; allowed: "
        "at most one of the two",
        "  model.num_topics: got 0; allowed: an integer >= 1",
    ], msg


def test_bad_environment_value_names_the_variable():
    msg = error_of(env={"ANCHORSTREAM_HTTP__PORT": "eighty"})
    assert msg.startswith("http.port (from environment variable ANCHORSTREAM_HTTP__PORT): "
                          "got 'eighty'")


@pytest.mark.parametrize(
    "data, key",
    [
        ({"kafka": {"security_protocol": "SASL_SSL", "sasl_plain_username": "u",
                    "sasl_plain_password": "p"}}, "kafka.sasl_mechanism"),
        ({"kafka": {"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN",
                    "sasl_plain_username": "u"}}, "kafka.sasl_plain_password"),
        ({"kafka": {"topics": ["a", "dlq"], "dead_letter_topic": "dlq"}},
         "kafka.dead_letter_topic"),
        ({"kafka": {"topics": ["a"], "model_updates_topic": "a"}}, "kafka.model_updates_topic"),
        ({"kafka": {"heartbeat_interval_ms": 6000}}, "kafka.heartbeat_interval_ms"),
        ({"kafka": {"reconnect_backoff_ms": 500, "reconnect_backoff_max_ms": 100}},
         "kafka.reconnect_backoff_max_ms"),
        ({"store": {"half_life_docs": 1e5, "half_life_seconds": 3600}},
         "store.half_life_seconds"),
        ({"store": {"window_docs": 1000}}, "store.windows"),
        ({"store": {"window_docs": 1000, "windows": 4, "half_life_seconds": 10}},
         "store.half_life_seconds"),
        ({"model": {"num_topics": 50}, "vocab": {"capacity": 50}}, "model.num_topics"),
        ({"metrics": {"port": 8080}}, "metrics.port"),
        ({"store": {"chunk_size": 100, "shard_size": 250}}, "store.shard_size"),
        ({"model": {"method": "tsvd", "anchor_method": "ddp"}}, "model.anchor_method"),
        ({"model": {"method": "anchorfree", "anchor_method": "rp"}}, "model.anchor_method"),
        ({"model": {"method": "tsvd", "num_topics": 20, "tsvd_documents": 20}},
         "model.tsvd_documents"),
        ({"model": {"anchor_method": "rp", "random_state": 2**62}}, "model.random_state"),
        ({"kafka": {"max_batch_bytes": 4096}, "message": {"max_bytes": 8192}},
         "kafka.max_batch_bytes"),
    ],
)
def test_inconsistent_settings(data, key):
    msg = error_of(data)
    assert msg.startswith(key + ":"), msg
    assert "allowed:" in msg


def test_forgetting_settings_map_to_the_store():
    assert parse_config({}).store.forgetting_kwargs() is None
    store = parse_config({"store": {"half_life_seconds": 3600}}).store
    assert store.forgetting_kwargs() == {"half_life": 3600.0, "window": None, "n_windows": 1,
                                         "unit": "seconds"}
    store = parse_config({"store": {"window_docs": 1000, "windows": 4,
                                    "half_life_docs": 500}}).store
    assert store.forgetting_kwargs() == {"half_life": 500.0, "window": 1000.0, "n_windows": 4,
                                         "unit": "documents"}
    forgetting = Forgetting(**store.forgetting_kwargs())
    assert forgetting.n_windows == 4


def test_plaintext_sasl_plain_is_refused_unless_allowed():
    creds = {"sasl_mechanism": "PLAIN", "sasl_plain_username": "u",
             "sasl_plain_password": "hunter2"}
    msg = error_of({"kafka": {"security_protocol": "SASL_PLAINTEXT", **creds}})
    assert "clear text" in msg and "allow_plaintext_sasl" in msg and "hunter2" not in msg
    cfg = parse_config({"kafka": {"security_protocol": "SASL_PLAINTEXT",
                                  "allow_plaintext_sasl": True, **creds}})
    assert cfg.kafka.sasl_plain_password.reveal() == "hunter2"
    # SCRAM never sends the password itself, so it is fine without TLS.
    parse_config({"kafka": {"security_protocol": "SASL_PLAINTEXT", **creds,
                            "sasl_mechanism": "SCRAM-SHA-256"}})


def test_secrets_never_show():
    cfg = parse_config(
        {"kafka": {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
                   "sasl_plain_username": "anchor", "sasl_plain_password": "hunter2"},
         "http": {"bearer_token": "tok-3141"}})
    for text in (repr(cfg), str(cfg), repr(cfg.kafka), str(cfg.to_dict()), f"{cfg.http}"):
        assert "hunter2" not in text and "tok-3141" not in text
    assert cfg.to_dict()["kafka"]["sasl_plain_password"] == "***"
    assert cfg.to_dict(redact=False)["http"]["bearer_token"] == "tok-3141"
    assert repr(Secret("x")) == "***" and Secret("x") == Secret("x") != Secret("y")
    msg = error_of({"http": {"bearer_token": ["hunter2"]}})
    assert "hunter2" not in msg and msg.startswith("http.bearer_token: got <a list>")


def test_ssl_files_must_exist(tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("pem")
    cfg = parse_config({"kafka": {"security_protocol": "SSL", "ssl_cafile": str(ca)}})
    assert cfg.kafka.ssl_cafile == str(ca)
    msg = error_of({"kafka": {"ssl_certfile": str(tmp_path / "missing.pem")}})
    assert msg.startswith("kafka.ssl_certfile: got") and "no file at" in msg


def test_file_problems(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml", env={})
    bad = tmp_path / "bad.yaml"
    bad.write_text("kafka: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad, env={})
    dup = tmp_path / "dup.yaml"
    dup.write_text("model:\n  num_topics: 5\n  num_topics: 6\n")
    with pytest.raises(ConfigError, match="duplicate key 'num_topics' at line 3"):
        load_config(dup, env={})
    top = tmp_path / "top.yaml"
    top.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="mapping of sections"):
        load_config(top, env={})
    section = tmp_path / "section.yaml"
    section.write_text("model: 5\n")
    with pytest.raises(ConfigError, match="model: got 5; allowed: a mapping"):
        load_config(section, env={})
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing set\nmodel:\n")
    assert load_config(empty, env={}) == Config()


def test_model_settings_match_the_estimator():
    from daemon.settings import ModelConfig

    assert ModelConfig(anchor_method="qr").anchor_method == "qr"
    for method in COUNT_ANCHORS:
        assert ModelConfig(anchor_method=method).anchor_method == method
    for method in pipeline.RECOVER_METHODS:
        assert ModelConfig(recover_method=method).recover_method == method
    kwargs = ModelConfig(num_topics=7).model_kwargs()
    settings = pipeline.ModelSettings(**kwargs)
    assert settings.n_topics == 7


def test_supertopics_must_be_fewer_than_topics():
    with pytest.raises(ConfigError, match=r"model.supertopics: got 20 .*num_topics=20"):
        parse_config({"model": {"num_topics": 20, "supertopics": 20}})
    assert parse_config({"model": {"num_topics": 20, "supertopics": 4}}).model.supertopics == 4


def test_float32_rectification_refuses_a_tolerance_below_its_rounding():
    with pytest.raises(ConfigError, match=r"model.rectify_tol: got 1e-08 .*float32"):
        parse_config({"model": {"rectify_tol": 1e-8}})
    m = parse_config({"model": {"rectify_tol": 1e-8, "rectify_dtype": "float64"}}).model
    assert m.model_kwargs()["rectify_tol"] == 1e-8
    assert parse_config({"model": {"rectify_anderson": 0}}).model.rectify_anderson == 0


def test_warm_rectification_bounds_reach_the_model():
    m = parse_config({"model": {"rectify_warm_change": 0.02, "rectify_warm_limit": 5}}).model
    assert m.model_kwargs()["rectify_warm_change"] == 0.02
    assert m.model_kwargs()["rectify_warm_limit"] == 5
    assert parse_config({}).model.model_kwargs()["rectify_warm_limit"] is None
    with pytest.raises(ConfigError, match=r"model.rectify_warm_change: got 1.5"):
        parse_config({"model": {"rectify_warm_change": 1.5}})
    with pytest.raises(ConfigError, match=r"model.rectify_warm_limit: got -1"):
        parse_config({"model": {"rectify_warm_limit": -1}})


def test_methods_and_the_document_statistics_they_need():
    from daemon.settings import ModelConfig

    for method in METHODS:
        assert ModelConfig(method=method).method == method
    for anchors in DOCUMENT_ANCHORS:
        assert ModelConfig(anchor_method=anchors).anchor_method == anchors
    msg = error_of({"model": {"method": "tsvd", "anchor_method": "ddp"}})
    assert "got 'ddp' with model.method='tsvd'" in msg and "'qr' or 'fast'" in msg

    def settings(**model):
        # What each method needs, without the refinement's windows (below).
        m = parse_config({"model": {"refine_window": None, **model}}).model
        return m.needs_documents, DocStatsSettings.for_method(
            **m.document_stats_kwargs())

    # refine_window auto keeps the windows auto refines in, unless nothing is refined.
    assert parse_config({}).model.document_stats_kwargs()["pair_window"] == 24
    assert parse_config({"model": {"refine": "none"}}).model.kept_window is None
    assert parse_config({"model": {"refine_window": 12}}).model.kept_window == 12

    assert settings() == (False, DocStatsSettings())
    assert settings(method="anchorfree") == (False, DocStatsSettings())
    assert settings(anchor_method="ddp", random_state=4) == (
        True, DocStatsSettings(split=True, seed=4))
    assert settings(anchor_method="rp", num_topics=8) == (
        True, DocStatsSettings(split=True, n_projections=400))
    assert settings(anchor_method="rp", rp_projections=30)[1].n_projections == 30
    assert settings(method="tsvd", tsvd_documents=500) == (
        True, DocStatsSettings(reservoir=500))


def test_readme_configuration_table_is_generated_from_the_keys():
    import json

    defaults = Config().to_dict()
    rows = [f"| `{s}.{k}` | `{json.dumps(defaults[s][k], ensure_ascii=False)}` | {doc} |"
            for s, keys in describe_keys().items() for k, doc in keys.items()]
    lines = (ROOT / "README.md").read_text().splitlines()
    start = lines.index("| key | default | meaning |") + 2
    end = start
    while end < len(lines) and lines[end].startswith("| `"):
        end += 1
    assert lines[start:end] == rows, (
        "README's configuration table differs from daemon/settings/sections.py's keys; regenerate it "
        "from describe_keys() (one row per key: name, JSON default, doc)")


def test_batch_bound_defaults_to_32_largest_messages():
    assert Config().max_batch_bytes == 32 * Config().message.max_bytes == 32 << 20
    assert parse_config({"message": {"max_bytes": 1000}}).max_batch_bytes == 32000
    cfg = parse_config({"kafka": {"max_batch_bytes": 5000}, "message": {"max_bytes": 5000}})
    assert cfg.max_batch_bytes == 5000


def test_the_partitioned_layout_takes_document_methods_and_refuses_forgetting_in_documents():
    for model in ({"method": "tsvd"}, {"anchor_method": "ddp"}, {"anchor_method": "rp"}):
        cfg = parse_config({"store": {"layout": "partitioned"}, "model": model}, env={})
        assert cfg.model.needs_documents
    cfg = parse_config({"store": {"layout": "partitioned", "half_life_seconds": 3600}}, env={})
    assert cfg.store.half_life_seconds == 3600
    for extra, key, shown in (({"half_life_docs": 1000}, "half_life_docs", "1000.0"),
                              ({"window_docs": 500, "windows": 3}, "window_docs", "500")):
        with pytest.raises(ConfigError, match=rf"store\.{key}: got {shown} with store\.layout "
                                              r"partitioned; allowed: null, because .* "
                                              r"store\.half_life_seconds is allowed"):
            parse_config({"store": {"layout": "partitioned", **extra}}, env={})


@pytest.mark.parametrize("store, snapshots", [("same", "same"), ("st", "st/snaps"),
                                               ("sn/store", "sn"), ("a/../same", "same")])
def test_the_store_and_the_snapshots_keep_apart(tmp_path, store, snapshots):
    msg = error_of({"store": {"path": str(tmp_path / store)},
                    "snapshots": {"path": str(tmp_path / snapshots)}})
    assert msg.startswith(f"snapshots.path: got {str(tmp_path / snapshots)!r} with store.path")
    assert "neither the same nor one inside the other" in msg
    # Apart, or a store on an object store: fine.
    parse_config({"store": {"path": str(tmp_path / "store")},
                  "snapshots": {"path": str(tmp_path / "store-snapshots")}}, env={})
    parse_config({"store": {"path": "memory://x"}, "snapshots": {"path": str(tmp_path)}},
                 env={})


def test_store_count_delay_takes_auto_or_documents_and_excludes_the_admission_correction():
    assert Config().store.count_delay == "auto"
    assert parse_config({"store": {"count_delay": 250}}, env={}).store.count_delay == 250
    for bad in (-1, 2.5, "later", True):
        msg = error_of({"store": {"count_delay": bad}})
        assert msg.startswith(f"store.count_delay: got {bad!r}; allowed: 'auto' or an "
                              "integer >= 0 (documents)"), msg
    # The admission correction assumes a word's documents before its admission were never
    # counted: a delay line counted those still waiting (auto included).
    for delay in ("auto", 1000):
        msg = error_of({"vocab": {"admission_min_share": 0.5}, "store": {"count_delay": delay}})
        assert msg.startswith(f"vocab.admission_min_share: got 0.5 with store.count_delay "
                              f"{delay!r}; allowed: 1 (no correction), or set "
                              "store.count_delay: 0"), msg
    cfg = parse_config({"vocab": {"admission_min_share": 0.5}, "store": {"count_delay": 0}},
                       env={})
    assert cfg.store.count_delay_documents() == 0
