"""deploy/ is consistent with the daemon: its files parse, and every metric they use exists.

The metric names come from the daemon as operators run it: ``python -m daemon run`` against
the session's real broker (:mod:`kafka_broker`), started and driven with the helpers of
``tests/test_daemon.py``, scraped over HTTP once it has checkpointed and published a snapshot
(so its histograms and labelled series exist), and parsed with ``prometheus_client.parser``.
A metric the daemon defines but does not bind (a scrape-time gauge nobody feeds) is therefore
missing, as it would be in production. Docker and Kubernetes are not available here, so the
compose file and the manifests are checked as data: structure, probes, mounts that point at
files which exist, configs that the daemon's own loader accepts.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from kafka_broker import produce, unique_name
from prometheus_client.parser import text_string_to_metric_families
from test_daemon import DaemonProcess, corpus, http, wait_for_docs, write_config

from daemon.settings import parse_config

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"
METRIC = re.compile(r"\banchorstream_[A-Za-z0-9_]+")
# Names a query may use that the daemon does not export: Prometheus' own series.
NOT_OURS = {"up"}


def load_yaml(name: str):
    return yaml.safe_load((DEPLOY / name).read_text(encoding="utf-8"))


def dashboard() -> dict:
    return json.loads((DEPLOY / "grafana/dashboards/anchorstream.json").read_text("utf-8"))


def dashboard_exprs(dash: dict) -> list[str]:
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    exprs += [a["expr"] for a in dash["annotations"]["list"] if "expr" in a]
    for var in dash["templating"]["list"]:
        if var["type"] == "query":
            exprs.append(var["query"]["query"] if isinstance(var["query"], dict) else var["query"])
    return exprs


def alert_rules() -> list[dict]:
    return [r for g in load_yaml("prometheus/alerts.yml")["groups"] for r in g["rules"]]


@pytest.fixture(scope="module")
def scrape(kafka_broker, tmp_path_factory) -> str:
    """A running daemon's /metrics (text format) after its first published snapshot."""
    tmp = tmp_path_factory.mktemp("daemon")
    topic, dead = unique_name("docs"), unique_name("dead")
    kafka_broker.create_topics({topic: 2, dead: 1})
    boot = kafka_broker.bootstrap_servers
    # Enough documents for a model over the planted topics, and one bad message (rejected,
    # sent to the dead-letter topic).
    produce(boot, topic, corpus(600, seed=11) + [b"{not json"])
    daemon = DaemonProcess(tmp, write_config(tmp, boot, topic, kafka={"dead_letter_topic": dead}))
    try:
        wait_for_docs(daemon, 600)  # checkpointed, refreshed and published
        status, _, raw = http(daemon.url + "/metrics")
        assert status == 200, raw
        assert daemon.terminate() == 0, daemon.log()
    finally:
        daemon.close()
    return raw.decode("utf-8")


@pytest.fixture(scope="module")
def exported(scrape) -> set[str]:
    """Every series name the daemon's /metrics exposes."""
    names: set[str] = set()
    # The series a family of each type produces (the parser strips _total from counters).
    suffixes = {"counter": ("_total", "_created"), "histogram": ("_bucket", "_sum", "_count",
                                                                 "_created"),
                "summary": ("_sum", "_count", "_created"), "info": ("_info",)}
    for family in text_string_to_metric_families(scrape):
        names.add(family.name)  # a histogram by its family name, as the docs call it
        names.update(family.name + s for s in suffixes.get(family.type, ("",)))
        names.update(sample.name for sample in family.samples)
    return names


def referenced(exprs) -> set[str]:
    return {m for e in exprs for m in METRIC.findall(e)}


# ----------------------------------------------------------------------------------------------
# Grafana


def test_dashboard_parses_and_covers_the_operator_questions():
    dash = dashboard()
    assert dash["uid"] == "anchorstream" and dash["panels"]
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    cells = {}
    for p in dash["panels"]:
        assert {"x", "y", "w", "h"} <= p["gridPos"].keys()
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24, p["title"]
        for cell in ((x, y) for x in range(g["x"], g["x"] + g["w"])
                     for y in range(g["y"], g["y"] + g["h"])):
            assert cell not in cells, f"{p['title']!r} overlaps {cells[cell]!r}"
            cells[cell] = p["title"]
        for t in p.get("targets", []):
            assert t["expr"].strip(), p["title"]
    names = referenced(dashboard_exprs(dash))
    # ingest rate, lag per partition, rejected messages, checkpoint and refresh durations by
    # stage, snapshot age, vocabulary size, topic churn; memory and disk
    for needed in ("anchorstream_messages_consumed_total", "anchorstream_consumer_lag_messages",
                   "anchorstream_messages_rejected_total",
                   "anchorstream_checkpoint_duration_seconds_bucket",
                   "anchorstream_checkpoint_stage_seconds_bucket",
                   "anchorstream_refresh_duration_seconds_bucket",
                   "anchorstream_snapshot_age_seconds", "anchorstream_vocabulary_size_words",
                   "anchorstream_topic_churn", "anchorstream_accumulator_bytes",
                   "anchorstream_filesystem_free_bytes", "anchorstream_filesystem_size_bytes"):
        assert needed in names, needed
    exprs = dashboard_exprs(dash)
    assert any("by (topic, partition)" in e for e in exprs)
    for histogram in ("checkpoint_stage_seconds", "refresh_duration_seconds"):
        assert any("by (le, stage)" in e and histogram in e for e in exprs), histogram


def test_grafana_provisioning_points_at_the_dashboard_and_prometheus():
    ds = load_yaml("grafana/provisioning/datasources/prometheus.yml")["datasources"][0]
    assert ds["type"] == "prometheus" and ds["url"] == "http://prometheus:9090"
    provider = load_yaml("grafana/provisioning/dashboards/anchorstream.yml")["providers"][0]
    compose = load_yaml("docker-compose.yml")["services"]["grafana"]
    assert f"./grafana/dashboards:{provider['options']['path']}:ro" in compose["volumes"]
    var = next(v for v in dashboard()["templating"]["list"] if v["type"] == "datasource")
    assert var["query"] == ds["type"]


# ----------------------------------------------------------------------------------------------
# Prometheus


def test_alert_rules_parse_and_cover_the_failure_modes():
    rules = alert_rules()
    names = {r["alert"] for r in rules}
    assert len(names) == len(rules)
    for wanted in ("AnchorstreamConsumerLagGrowing", "AnchorstreamNoRecentSnapshot",
                   "AnchorstreamRefreshFailing", "AnchorstreamRejectedRatioHigh",
                   "AnchorstreamDiskSpaceLow", "AnchorstreamStoreDiskFillingUp"):
        assert wanted in names
    # Disk alerts watch the volume's free space, not a size fixed in the rules.
    by_name = {r["alert"]: r for r in rules}
    for name in ("AnchorstreamDiskSpaceLow", "AnchorstreamStoreDiskFillingUp"):
        expr = by_name[name]["expr"]
        assert "anchorstream_filesystem_free_bytes / anchorstream_filesystem_size_bytes" in expr
        assert "1024" not in expr, name
    for r in rules:
        assert r["expr"].strip() and r["labels"]["severity"] in ("warning", "critical"), r
        assert r["annotations"]["summary"] and r["annotations"]["description"], r
        if "for" in r:
            assert re.fullmatch(r"\d+[smh]", r["for"]), r
        assert r["expr"].count("(") == r["expr"].count(")"), r["alert"]
        assert METRIC.search(r["expr"]) or set(re.findall(r"[a-z_]+", r["expr"])) & NOT_OURS


def test_prometheus_scrapes_the_daemon_and_loads_the_rules():
    prom = load_yaml("prometheus/prometheus.yml")
    job = next(j for j in prom["scrape_configs"] if j["job_name"] == "anchorstream")
    assert job["static_configs"][0]["targets"] == ["anchorstream:8080"]
    compose = load_yaml("docker-compose.yml")["services"]["prometheus"]
    mounted = {v.split(":")[1] for v in compose["volumes"] if v.startswith("./")}
    assert set(prom["rule_files"]) <= mounted
    # The alert on `up` must name the job that scrapes the daemon.
    assert any('job="anchorstream"' in r["expr"] for r in alert_rules())


def test_every_metric_used_in_deploy_is_exported(exported):
    used = referenced(dashboard_exprs(dashboard())) | referenced(r["expr"] for r in alert_rules())
    assert len(used) >= 15
    missing = sorted(used - exported)
    assert not missing, f"deploy/ uses metrics the daemon does not export: {missing}"
    # The operator's guide names them too.
    named = referenced([(DEPLOY / "README.md").read_text(encoding="utf-8")])
    missing = sorted(named - exported)
    assert not missing, f"deploy/README.md names metrics the daemon does not export: {missing}"


def test_the_daemon_feeds_the_memory_disk_and_checkpoint_panels(scrape):
    """Series that exist only if the daemon binds them, or the store reports them."""
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in text_string_to_metric_families(scrape) for s in f.samples}
    assert samples[("anchorstream_accumulator_bytes", ())] >= 0
    # store.count_delay auto (1000) holds back every one of the 600 documents not skipped as a
    # repeat, unless no message came for count_delay_idle_seconds and the daemon counted them.
    held = 600 - samples[("anchorstream_documents_duplicate_total", ())]
    assert samples[("anchorstream_documents_waiting", ())] in (held, 0)
    # The store and the snapshots share the test's file system: one series.
    free = samples[("anchorstream_filesystem_free_bytes", (("path", "store"),))]
    assert 0 < free <= samples[("anchorstream_filesystem_size_bytes", (("path", "store"),))]
    # Every checkpoint runs these stages (compact and gc only now and then).
    for stage in ("delta", "write", "commit"):
        key = ("anchorstream_checkpoint_stage_seconds_count", (("stage", stage),))
        assert samples.get(key, 0) >= 1, stage


# ----------------------------------------------------------------------------------------------
# docker compose, Dockerfile, Kubernetes


def test_compose_file_is_consistent():
    compose = load_yaml("docker-compose.yml")
    services = compose["services"]
    assert {"kafka", "kafka-init", "anchorstream", "prometheus", "grafana"} <= services.keys()
    kafka = services["kafka"]["environment"]
    assert kafka["KAFKA_PROCESS_ROLES"] == "broker,controller"  # KRaft, no ZooKeeper
    assert services["kafka"]["image"].startswith("apache/kafka:")
    build = services["anchorstream"]["build"]
    assert (DEPLOY / build["context"] / build["dockerfile"]).is_file()
    for name, svc in services.items():
        for vol in svc.get("volumes", []):
            source = vol.split(":")[0]
            if source.startswith("."):
                assert (DEPLOY / source).exists(), f"{name} mounts missing {source}"
            else:
                assert source in compose["volumes"], f"{name} uses undeclared volume {source}"
        for port in svc.get("ports", []):
            assert port.startswith("127.0.0.1:"), f"{name} publishes {port} beyond loopback"
    cfg = parse_config(load_yaml("config.yaml"), env={})
    assert cfg.kafka.bootstrap_servers == ("kafka:9092",)
    assert cfg.http.host == "0.0.0.0" and cfg.http.port == 8080
    mount = "./config.yaml:/etc/anchorstream/config.yaml:ro"
    assert mount in services["anchorstream"]["volumes"]


def test_dockerfile_runs_the_daemon_with_the_shipped_config():
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    assert 'ENTRYPOINT ["anchorstream"]' in text
    assert 'CMD ["run", "--config", "/etc/anchorstream/config.yaml"]' in text
    assert "COPY deploy/config.yaml /etc/anchorstream/config.yaml" in text
    assert "/healthz" in text and "EXPOSE 8080" in text


def test_kubernetes_manifests():
    docs = {}
    for path in sorted((DEPLOY / "k8s").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            docs[(doc["kind"], doc.get("metadata", {}).get("name"))] = doc
    kust = docs[("Kustomization", None)]
    assert sorted(kust["resources"]) == sorted(
        p.name for p in (DEPLOY / "k8s").glob("*.yaml") if p.name != "kustomization.yaml")

    sts = docs[("StatefulSet", "anchorstream")]["spec"]
    assert sts["replicas"] == 1 and sts["serviceName"] in {n for k, n in docs if k == "Service"}
    claim = sts["volumeClaimTemplates"][0]
    assert claim["spec"]["resources"]["requests"]["storage"]
    pod = sts["template"]["spec"]
    (container,) = pod["containers"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert {"cpu", "memory"} <= container["resources"]["limits"].keys()
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts[claim["metadata"]["name"]] == "/var/lib/anchorstream"
    assert sts["selector"]["matchLabels"].items() <= sts["template"]["metadata"]["labels"].items()

    cm = docs[("ConfigMap", "anchorstream-config")]
    cfg = parse_config(yaml.safe_load(cm["data"]["config.yaml"]), env={})
    assert str(cfg.store.path).startswith(mounts[claim["metadata"]["name"]])
    assert str(cfg.snapshots.path).startswith(mounts[claim["metadata"]["name"]])
    assert container["args"] == ["run", "--config", f"{mounts['config']}/config.yaml"]
    assert cfg.http.port == container["ports"][0]["containerPort"]

    svc = docs[("Service", "anchorstream")]["spec"]
    assert svc["selector"].items() <= sts["template"]["metadata"]["labels"].items()


#: Peak bytes of a refresh per squared vocabulary word, for the larger of the two rectifiers
#: (the deployment is sized so that either fits): with ``rectify_method: ap`` the refresher
#: keeps ~30 V^2 of dense buffers (daemon/refresh.py: float64 counts and subset, float32
#: iterate and two states, 10% headroom) and peaked at 33.9 V^2 of numpy allocations
#: (tracemalloc, V = 2000, cold); the default low-rank one peaks near 12 V^2 once every pair
#: is stored (benchmarks/bench_refresh_memory.py).
REFRESH_PEAK_PER_V2 = 34
#: Interpreter, libraries and Kafka client (the daemon's resident size before any refresh).
BASELINE_BYTES = 0.5e9
UNITS = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "ki": 2**10, "mi": 2**20, "gi": 2**30}


def quantity(text: str) -> float:
    """Bytes of a Kubernetes quantity (``6Gi``) or a compose size (``6g``, binary there)."""
    number, unit = re.fullmatch(r"([\d.]+)([A-Za-z]*)", str(text)).groups()
    return float(number) * UNITS[unit.lower()]


def test_memory_limits_fit_the_vocabulary_capacity():
    """The limits leave a margin over a refresh's peak at the configured vocab.capacity."""
    docs = [d for path in sorted((DEPLOY / "k8s").glob("*.yaml"))
            for d in yaml.safe_load_all(path.read_text(encoding="utf-8"))]
    cm = next(d for d in docs if d["kind"] == "ConfigMap")
    (container,) = next(d for d in docs if d["kind"] == "StatefulSet")["spec"]["template"][
        "spec"]["containers"]
    compose = load_yaml("docker-compose.yml")["services"]["anchorstream"]
    limits = {
        "k8s": (parse_config(yaml.safe_load(cm["data"]["config.yaml"]), env={}),
                quantity(container["resources"]["limits"]["memory"])),
        # docker's "g" is GiB
        "compose": (parse_config(load_yaml("config.yaml"), env={}),
                    quantity(compose["deploy"]["resources"]["limits"]["memory"] + "i")),
    }
    for where, (cfg, limit) in limits.items():
        peak = (REFRESH_PEAK_PER_V2 * cfg.vocab.capacity ** 2
                + cfg.store.accumulator_budget_bytes + BASELINE_BYTES)
        assert peak <= 0.8 * limit, (where, cfg.vocab.capacity, peak / 1e9, limit / 1e9)
    # The request covers what stays resident between refreshes (the buffers are kept).
    cfg = limits["k8s"][0]
    held = 30 * cfg.vocab.capacity ** 2 + cfg.store.accumulator_budget_bytes + BASELINE_BYTES
    assert held <= quantity(container["resources"]["requests"]["memory"])


PROMTOOL = shutil.which("promtool")


@pytest.mark.skipif(PROMTOOL is None,
                    reason="promtool is not installed (apt-get install prometheus)")
def test_promql_is_valid_according_to_promtool(tmp_path):
    """Prometheus' own checker on the alert rules and on every dashboard query."""
    result = subprocess.run([PROMTOOL, "check", "rules", str(DEPLOY / "prometheus/alerts.yml")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    grafana_vars = {"$__rate_interval": "1m", "$__range": "1h", "$job": ".*"}
    rules = []
    for i, expr in enumerate(dashboard_exprs(dashboard())):
        for var, value in grafana_vars.items():
            expr = expr.replace(var, value)
        if expr.startswith("label_values("):  # a Grafana templating function, not PromQL
            continue
        rules.append({"record": f"dashboard:query{i}", "expr": expr})
    path = tmp_path / "dashboard_rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = subprocess.run([PROMTOOL, "check", "rules", str(path)], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_scaled_shape_is_consistent():
    """deploy/scaled: ingest replicas and one refresher on one partitioned store."""
    cfg = parse_config(load_yaml("scaled/config.yaml"), env={})
    assert cfg.store.layout == "partitioned" and str(cfg.store.path).startswith("s3://")
    assert cfg.http.port == 8080
    compose = load_yaml("scaled/docker-compose.yml")
    services = compose["services"]
    ingest = [n for n in services if n.startswith("ingest-")]
    assert len(ingest) == 3 and "minio" in services
    for name in ingest:
        assert services[name]["command"][-2:] == ["--role", "ingest"]
    assert services["refresher"]["command"][-2:] == ["--role", "refresh"]
    for name, svc in services.items():
        for vol in svc.get("volumes", []):
            source = vol.split(":")[0]
            if source.startswith("."):
                assert (DEPLOY / "scaled" / source).exists(), f"{name} mounts missing {source}"
            else:
                assert source in compose["volumes"], f"{name} uses undeclared volume {source}"
        for port in svc.get("ports", []):
            assert port.startswith("127.0.0.1:"), f"{name} publishes {port} beyond loopback"
    targets = load_yaml("scaled/prometheus.yml")["scrape_configs"][0]["static_configs"][0]
    assert sorted(targets["targets"]) == sorted(f"{n}:8080" for n in [*ingest, "refresher"])

    docs = {}
    for path in sorted((DEPLOY / "scaled" / "k8s").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            docs[(doc["kind"], doc.get("metadata", {}).get("name"))] = doc
    kust = docs[("Kustomization", None)]
    assert sorted(kust["resources"]) == sorted(
        p.name for p in (DEPLOY / "scaled" / "k8s").glob("*.yaml")
        if p.name != "kustomization.yaml")
    ingest_sts = docs[("StatefulSet", "anchorstream-ingest")]["spec"]
    refresher = docs[("StatefulSet", "anchorstream-refresher")]["spec"]
    assert ingest_sts["replicas"] >= 2 and refresher["replicas"] == 1
    for sts, role in ((ingest_sts, "ingest"), (refresher, "refresh")):
        (container,) = sts["template"]["spec"]["containers"]
        assert container["args"][-2:] == ["--role", role]
        assert {"cpu", "memory"} <= container["resources"]["limits"].keys()
    svc = docs[("Service", "anchorstream")]["spec"]
    assert svc["selector"].items() <= refresher["template"]["metadata"]["labels"].items()
