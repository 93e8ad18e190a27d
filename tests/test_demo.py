"""``anchorstream demo`` end to end: embedded broker, bundled sample, printed snapshots, clean exit.

A real subprocess (``python -m daemon demo``) in a temporary working directory: it starts the
embedded Tansu broker, replays the first documents of the bundled sample, and must print at least
one snapshot with its topics, then stop by itself (``--limit``/``--duration``), leaving no broker
behind and exiting 0. A second test stops it with SIGTERM, as Ctrl-C or a supervisor would.
Small settings (5 topics, 500-word vocabulary, 20 rectification iterations) keep it well under a
minute on a shared two-core machine.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from daemon.cmd_demo import SAMPLE, demo_config

REPO = Path(__file__).resolve().parents[1]
# Upper bound only for a hung process; the test asserts nothing about time.
DEADLINE = 90

SMALL = ["--topics", "5", "--vocab", "500", "--rectify-iter", "20", "--refresh-docs", "300",
         "--refresh-seconds", "1", "--rate", "1000", "--port", "0"]


def _demo(tmp_path: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "daemon", "demo", *SMALL, *args],
        cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is gone for our purposes.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _broker_pid(stdout: str) -> int | None:
    # The banner names the broker's port; the broker itself is found by its command line.
    m = re.search(r"embedded Kafka at 127\.0\.0\.1:(\d+)", stdout)
    if not m:
        return None
    port = m.group(1)
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"broker" in cmd and any(c.endswith(f":{port}".encode()) for c in cmd):
            return int(proc.name)
    return None


def _topic_rows(stdout: str) -> list[str]:
    """Rows under the first snapshot header: ``id  share  change  anchor  words``."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"^\W* snapshot \d+ ", line))
    rows = []
    for line in lines[start + 2:]:
        if not re.match(r"^\s*\d+\s+\d+\.\d%", line):
            break
        rows.append(line)
    return rows


def test_demo_prints_snapshots_and_exits_by_itself(tmp_path):
    proc = _demo(tmp_path, "--limit", "1500", "--duration", "50")
    try:
        out, err = proc.communicate(timeout=DEADLINE)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, out + err
    assert "browser:  http://127.0.0.1:" in out
    assert "first snapshot after" in out, out + err
    rows = _topic_rows(out)
    assert len(rows) == 5, out
    for row in rows:
        fields = row.split()
        assert len(fields) >= 4, row  # id, share, anchor and at least one top word
    assert "demo stopped" in out and "broker stopped" in out
    # The temporary state directory is removed and no broker is left running.
    state = re.search(r"state:\s+(\S+)", out).group(1)
    assert not Path(state).exists()
    assert "Traceback" not in err, err


def test_demo_stops_cleanly_on_sigterm(tmp_path):
    proc = _demo(tmp_path, "--state-dir", str(tmp_path / "state"))
    try:
        # Wait for the first snapshot, reading the output as it comes.
        seen = []
        end = time.monotonic() + DEADLINE
        for line in proc.stdout:
            seen.append(line)
            if line.startswith("first snapshot:"):
                break
            assert time.monotonic() < end, "".join(seen)
        out_so_far = "".join(seen)
        assert "first snapshot:" in out_so_far, out_so_far + proc.stderr.read()
        broker = _broker_pid(out_so_far)
        assert broker is not None and _alive(broker)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=DEADLINE)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, out_so_far + out + err
    assert "broker stopped" in out
    assert not _alive(broker)
    # --state-dir is kept, with the published snapshots in it.
    assert (tmp_path / "state" / "snapshots" / "LATEST").is_file()


def test_demo_config_forces_embedded_broker_and_demo_paths(tmp_path):
    from daemon.config import parse_config

    base = parse_config({
        "kafka": {"bootstrap_servers": ["kafka:9093"], "security_protocol": "SASL_SSL",
                  "sasl_mechanism": "PLAIN", "sasl_plain_username": "u",
                  "sasl_plain_password": "p"},
        "model": {"num_topics": 30},
        "vocab": {"capacity": 1000},
    }, env={})
    cfg = demo_config(base, state_dir=tmp_path, num_topics=7, port=0, vocab=3000,
                      rectify_iter=40, refresh_seconds=2, refresh_docs=200)
    assert cfg.kafka.embedded
    assert cfg.kafka.security_protocol == "PLAINTEXT" and cfg.kafka.sasl_plain_password is None
    assert cfg.store.path == str(tmp_path / "store")
    assert cfg.snapshots.path == str(tmp_path / "snapshots")
    assert cfg.model.num_topics == 7
    assert cfg.vocab.capacity == 1000  # an upper bound, never raised
    assert cfg.model.rectify_max_iter == 40
    assert (cfg.refresh.interval_seconds, cfg.refresh.min_new_docs) == (2.0, 200)
    assert cfg.http.port == 0


def test_bundled_sample_is_present():
    assert SAMPLE.is_file()
    assert (SAMPLE.parent / "SOURCE.md").is_file()


@pytest.mark.parametrize("bad", [["--rate", "0"], ["--limit", "0"], ["--duration", "-1"],
                                 ["--topics", "0"]])
def test_demo_rejects_bad_arguments(tmp_path, bad):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    res = subprocess.run([sys.executable, "-m", "daemon", "demo", *bad], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 1
    assert "anchorstream demo: error:" in res.stderr
