"""``anchorstream demo`` end to end: embedded broker, bundled sample, printed snapshots, clean exit.

A real subprocess (``python -m daemon demo``) in a temporary working directory: it starts the
embedded Tansu broker, replays the first documents of the bundled sample, and must print at least
one snapshot with its topics and, for the later ones, which topics rose and fell, then stop by
itself (``--limit``/``--duration``), leaving no broker behind (checked by its pid) and exiting 0.
A second test stops it with SIGTERM, as Ctrl-C or a supervisor would, once it has printed a
later snapshot with the topics that rose and fell (it waits for that line while the whole
sample streams in, rather than counting on the first refresh to start before a short replay
ends: on a busy machine the consumer can join after it). Small settings (5 topics, 500-word
vocabulary, 20 rectification iterations) keep each well under a minute on a shared two-core
machine.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from daemon.cli.demo import SAMPLE, demo_config

REPO = Path(__file__).resolve().parents[1]
# Upper bound only for a hung process; the test asserts nothing about time.
DEADLINE = 300

SMALL = ["--topics", "5", "--vocab", "500", "--rectify-iter", "20", "--refresh-docs", "300",
         "--refresh-seconds", "1", "--rate", "1000", "--port", "0"]


@contextlib.contextmanager
def _demo(tmp_path: Path, *args: str):
    """``python -m daemon demo`` (stdout piped, stderr to a file); killed if it outlives the
    test or DEADLINE, and so is its broker once :func:`_broker_pid` found it."""
    # TMPDIR: the broker's log file, which a killed demo leaves, lands in tmp_path.
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1", "TMPDIR": str(tmp_path)}
    with open(tmp_path / "demo.stderr", "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "daemon", "demo", *SMALL, *args],
            cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=err, text=True)
    proc.broker = None
    # Bounds every blocking read below: a hung demo is killed, its output ends, the test fails.
    watchdog = threading.Timer(DEADLINE, proc.kill)
    watchdog.start()
    try:
        yield proc
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        if proc.broker is not None and _alive(proc.broker):  # never leave one behind
            os.kill(proc.broker, signal.SIGKILL)


def _rest(proc: subprocess.Popen, tmp_path: Path) -> tuple[str, str]:
    """The rest of stdout (to the end) and all of stderr, once the demo exited.

    Read through ``proc.stdout``, not ``communicate()``: that reads the pipe's descriptor and
    would lose what :func:`_read_until`'s buffered reader already took from it.
    """
    out = proc.stdout.read()
    proc.wait(DEADLINE)
    return out, (tmp_path / "demo.stderr").read_text(errors="replace")


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
    """The broker's pid from the banner, checked against its command line (port and all)."""
    m = re.search(r"embedded Kafka at 127\.0\.0\.1:(\d+) \(pid (\d+)\)", stdout)
    if not m:
        return None
    port, pid = m.group(1), int(m.group(2))
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    if b"broker" in cmd and any(c.endswith(f":{port}".encode()) for c in cmd):
        return pid
    return None


def _read_until(proc: subprocess.Popen, marker: str | re.Pattern) -> str:
    """stdout up to and including the first line that starts with ``marker``, or that a
    pattern matches (or to its end)."""
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if (line.lstrip().startswith(marker) if isinstance(marker, str)
                else marker.search(line)):
            break
    return "".join(seen)


def _run_to_end(tmp_path: Path, *args: str) -> tuple[subprocess.Popen, str, str]:
    """The demo run to its end: the process, all of stdout and all of stderr (the broker's
    pid noted on the way, so that the cleanup can check it is gone)."""
    with _demo(tmp_path, *args) as proc:
        head = _read_until(proc, "broker:")
        proc.broker = _broker_pid(head)
        out, err = _rest(proc, tmp_path)
    return proc, head + out, err


#: What a later snapshot says of the topics that moved: anchors and changes in points.
MOVES = re.compile(r"\b(rose|fell): (\d+ \S+ [+-]\d+\.\d(?:, \d+ \S+ [+-]\d+\.\d)*)")


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
    # --limit: it ends once the snapshot of the last replayed document is printed, however
    # long that takes (no --duration, which would cut a slow machine's demo short).
    with _demo(tmp_path, "--limit", "1500") as proc:
        head = _read_until(proc, "broker:")
        broker = proc.broker = _broker_pid(head)
        assert broker is not None and _alive(broker), head
        out, err = _rest(proc, tmp_path)
        out = head + out
    assert proc.returncode == 0, out + err
    assert "browser:  http://127.0.0.1:" in out
    assert "first snapshot after" in out, out + err
    rows = _topic_rows(out)
    assert len(rows) == 5, out
    for row in rows:
        fields = row.split()
        assert len(fields) >= 4, row  # id, share, anchor and at least one top word
    # The last snapshot printed covers the last replayed document.
    assert re.findall(r"^\W* snapshot \d+ · ([\d,]+) documents", out, flags=re.M)[-1] \
        == "1,500", out
    # Each snapshot ends with what is new and rising (the publisher's trends).
    assert re.search(r"^trends \(last \d+ snapshots\): ", out, flags=re.M), out
    assert "demo stopped" in out and "broker stopped" in out
    # The temporary state directory is removed and no broker is left running.
    state = re.search(r"state:\s+(\S+)", out).group(1)
    assert not Path(state).exists()
    assert not _alive(broker)
    assert "Traceback" not in err, err


def test_demo_replays_in_time_order_a_step_per_snapshot(tmp_path):
    """The replay waits for the refreshes: it stays at most 2 x --refresh-docs documents ahead
    of the newest snapshot, so each snapshot moves on by at most that many documents, whatever
    the machine's speed, and the dates the snapshots reach only move forward."""
    proc, out, err = _run_to_end(tmp_path, "--limit", "2400")
    assert proc.returncode == 0, out + err
    heads = re.findall(r"^\W* snapshot \d+ · ([\d,]+) documents .*· up to (\d{4}-\d\d-\d\d)",
                       out, flags=re.M)
    docs = [int(n.replace(",", "")) for n, _ in heads]
    dates = [d for _, d in heads]
    assert docs[-1] == 2400, out
    steps = [b - a for a, b in zip([0, *docs], docs, strict=False)]
    assert max(steps) <= 2 * 300, steps  # SMALL: --refresh-docs 300
    assert len(docs) >= 4, docs
    assert dates == sorted(dates), dates


def test_demo_shows_topics_rising_over_ten_snapshots(tmp_path):
    """A first run shows the stream evolving: on the bundled sample, 6,000 documents in steps of
    at most 2 x --refresh-docs give at least 10 snapshots (whatever the machine's speed), and
    the trends line under them names a rising (or new) topic at least once, with the demo's
    trend settings (window 5, score 2) stated in the banner. Measured over this run: rising in
    6 of 16 snapshots (docs/daemon.md, "The demo")."""
    proc, out, err = _run_to_end(tmp_path, "--limit", "6000")
    assert proc.returncode == 0, out + err
    assert re.search(r"trends:\s+rising at a score of 2 or more over the last 5 snapshots",
                     out), out
    assert "keeps its id at a similarity of 0.3" in out, out
    docs = re.findall(r"^\W* snapshot \d+ · ([\d,]+) documents", out, flags=re.M)
    assert len(docs) >= 10 and docs[-1] == "6,000", docs
    trends = re.findall(r"^trends \(last \d+ snapshots\): (.*)$", out, flags=re.M)
    # (A snapshot the printer reaches after a newer one was published has no trends line.)
    assert trends, out
    moving = [t for t in trends if re.search(r"\b(rising|new): \d+ \S+ \(z \+\d", t)]
    assert moving, "\n".join(trends)


def test_paced_holds_without_bursting_and_stops_while_held():
    import threading as th

    from daemon.kafka.producers import Paced

    allowed = [3]
    paced = Paced(range(6), rate=1000.0, hold=lambda n: n >= allowed[0], hold_poll=0.01)
    got = []
    for item in paced:
        got.append(item)
        if item == 2:
            th.Timer(0.2, lambda: allowed.__setitem__(0, 10)).start()
    assert got == list(range(6)) and paced.held_seconds > 0 and not paced.stopped

    stop = th.Event()
    paced = Paced(range(6), hold=lambda n: n >= 2, stop=stop, hold_poll=0.01)
    th.Timer(0.1, stop.set).start()
    assert list(paced) == [0, 1] and paced.stopped


def test_demo_stops_cleanly_on_sigterm(tmp_path):
    with _demo(tmp_path, "--state-dir", str(tmp_path / "state")) as proc:
        # Wait for the first snapshot, reading the output as it comes.
        out_so_far = _read_until(proc, "first snapshot:")
        broker = proc.broker = _broker_pid(out_so_far)
        assert "first snapshot:" in out_so_far, \
            out_so_far + (tmp_path / "demo.stderr").read_text(errors="replace")
        assert broker is not None and _alive(broker)
        # The whole sample streams in (20,000 documents): later snapshots end with what
        # changed, the topics that rose and fell, with their anchors and changes in points.
        # (Prevalences sum to 1, so a topic that rose by 0.5 points or more comes with others
        # that fell, though not necessarily by 0.5 points each: wait for at least one move.)
        out_so_far += _read_until(proc, MOVES)
        assert MOVES.search(out_so_far), \
            out_so_far + (tmp_path / "demo.stderr").read_text(errors="replace")
        assert len(re.findall(r"^\W* snapshot (\d+) ", out_so_far, flags=re.M)) >= 2
        proc.send_signal(signal.SIGTERM)
        out, err = _rest(proc, tmp_path)
    assert proc.returncode == 0, out_so_far + out + err
    assert "broker stopped" in out
    assert not _alive(broker)
    # --state-dir is kept, with the published snapshots in it.
    assert (tmp_path / "state" / "snapshots" / "LATEST").is_file()


def test_a_new_machine_is_told_why_the_first_snapshot_waits(tmp_path, monkeypatch):
    # An empty numba cache, as on a new machine: the banner says the first snapshot waits
    # for the kernels' compilation. (Looked for after the daemon started, the cache held the
    # kernels its start had compiled, and the line never showed.) Stopped at the banner.
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba-cache"))
    with _demo(tmp_path) as proc:
        out = _read_until(proc, re.compile(r"first run:|first snapshot"))
        proc.broker = _broker_pid(out)
        proc.send_signal(signal.SIGTERM)
        rest, err = _rest(proc, tmp_path)
    assert "first run: numba compiles the numerical kernels once" in out, out + rest + err
    assert proc.returncode == 0, out + rest + err


def test_demo_config_forces_embedded_broker_and_demo_paths(tmp_path):
    from daemon.settings import parse_config

    base = parse_config({
        "kafka": {"bootstrap_servers": ["kafka:9093"], "security_protocol": "SASL_SSL",
                  "sasl_mechanism": "PLAIN", "sasl_plain_username": "u",
                  "sasl_plain_password": "p"},
        "model": {"num_topics": 30},
        "vocab": {"capacity": 1000},
    }, env={})
    cfg = demo_config(base, state_dir=tmp_path, num_topics=7, port=0, vocab=3000,
                      rectify_iter=40, refresh_seconds=2, refresh_docs=200,
                      half_life_docs=4000, trend_window=5, trend_min_score=2, align=0.3)
    assert cfg.kafka.embedded
    assert cfg.kafka.security_protocol == "PLAINTEXT" and cfg.kafka.sasl_plain_password is None
    assert cfg.store.path == str(tmp_path / "store")
    assert cfg.snapshots.path == str(tmp_path / "snapshots")
    assert cfg.model.num_topics == 7
    assert cfg.vocab.capacity == 1000  # an upper bound, never raised
    assert cfg.model.rectify_max_iter == 40
    assert (cfg.refresh.interval_seconds, cfg.refresh.min_new_docs) == (2.0, 200)
    assert cfg.http.port == 0
    assert cfg.store.half_life_docs == 4000
    assert (cfg.trends.window, cfg.trends.min_score) == (5, 2.0)
    assert cfg.refresh.align_min_similarity == 0.3
    # Left out, the configuration's own values stay (the service's defaults here).
    plain = demo_config(base, state_dir=tmp_path)
    assert (plain.trends.window, plain.trends.min_score) == (10, 3.0)
    assert plain.refresh.align_min_similarity == 0.5


def test_bundled_sample_is_present():
    assert SAMPLE.is_file()
    assert (SAMPLE.parent / "SOURCE.md").is_file()


@pytest.mark.parametrize("bad", [["--rate", "0"], ["--limit", "0"], ["--duration", "-1"],
                                 ["--topics", "0"], ["--half-life", "-1"],
                                 ["--trend-window", "1"], ["--trend-min-score", "0"],
                                 ["--align", "1.5"]])
def test_demo_rejects_bad_arguments(tmp_path, bad):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    res = subprocess.run([sys.executable, "-m", "daemon", "demo", *bad], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 1
    assert "anchorstream demo: error:" in res.stderr
