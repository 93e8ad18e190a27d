"""The ``anchorstream`` process entry (``daemon.cli.entry``): a ``fit`` ends its process
without the interpreter's teardown, yet with its output, exit code, exit handlers and
other threads' work all as a normal exit leaves them. Each test runs a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from anchorstream.snapshot import read_snapshot

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    path = tmp_path_factory.mktemp("entry") / "docs.jsonl"
    lines = []
    for d in range(400):
        half = WORDS[:5] if d % 2 else WORDS[5:]
        lines.append(json.dumps({"text": " ".join(half[(d + i) % 5] for i in range(8))}))
    path.write_text("\n".join(lines) + "\n")
    return path


def _run(script: str, cwd, env=None) -> subprocess.CompletedProcess:
    # A deadline for a stuck process, not a measure of speed.
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def _fit_argv(docs, out) -> list[str]:
    return ["anchorstream", "fit", "--input", str(docs), "--topics", "2", "--vocab-size", "10",
            "--min-df", "1", "--out", str(out)]


def test_a_fit_ends_its_process_with_its_output_and_exit_handlers(docs, tmp_path):
    out = tmp_path / "snap"
    marker = tmp_path / "handler-ran"
    proc = _run(f"""
        import atexit, pathlib, sys
        atexit.register(lambda: pathlib.Path({str(marker)!r}).write_text("yes"))
        from daemon.cli import entry
        sys.argv = {_fit_argv(docs, out)!r}
        print("before the fit", flush=False)  # buffered: the exit must flush it
        entry()
        print("never printed")
        """, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("before the fit")
    assert "never printed" not in proc.stdout
    assert f"wrote {out}" in proc.stderr
    assert marker.read_text() == "yes"
    assert read_snapshot(out).num_topics == 2


def test_a_failed_fit_exits_with_its_code_and_message(docs, tmp_path):
    out = tmp_path / "snap"
    out.mkdir()  # snapshots are immutable: an existing path is refused
    proc = _run(f"""
        import sys
        from daemon.cli import entry
        sys.argv = {_fit_argv(docs, out)!r}
        entry()
        """, tmp_path)
    assert proc.returncode == 1
    assert "anchorstream fit: error:" in proc.stderr and "already exists" in proc.stderr


def test_a_thread_still_running_gets_a_normal_exit(docs, tmp_path):
    """A non-daemon thread alive when the fit ends is waited for, as by a normal exit (were
    the process ended at once, the thread would never write; on a machine slow enough for it
    to finish first, the test still passes)."""
    out = tmp_path / "snap"
    done = tmp_path / "thread-done"
    proc = _run(f"""
        import pathlib, sys, threading, time
        from daemon.cli import entry
        go = threading.Event()
        def work():
            go.wait()  # released by the fit's end, below
            time.sleep(2)  # still running when the fit's process would end
            pathlib.Path({str(done)!r}).write_text("done")
        threading.Thread(target=work).start()
        import daemon.cli.fit as fit
        run = fit.run
        def run_then_release(args):
            code = run(args)
            go.set()
            return code
        fit.run = run_then_release
        sys.argv = {_fit_argv(docs, out)!r}
        entry()
        """, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert done.read_text() == "done"


def test_python_dash_m_daemon_is_the_same_command(docs, tmp_path):
    out = tmp_path / "snap"
    proc = subprocess.run([sys.executable, "-m", "daemon", *_fit_argv(docs, out)[1:]],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert read_snapshot(out).num_topics == 2
    bad = subprocess.run([sys.executable, "-m", "daemon", "fit", "--topics", "2"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2 and "--input" in bad.stderr


@pytest.mark.parametrize("chosen", [None, "1"])
def test_the_process_asks_numpy_for_no_huge_pages_unless_the_user_chose(docs, tmp_path, chosen):
    # The setting is read when NumPy is imported, which the command does after entry() has
    # begun: the state NumPy ended up with, read at the process's exit, says it came first.
    out, state = tmp_path / "snap", tmp_path / "state"
    env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    if chosen is not None:
        env["NUMPY_MADVISE_HUGEPAGE"] = chosen
    proc = _run(f"""
        import atexit, os, pathlib, sys
        assert "numpy" not in sys.modules

        def record():
            import numpy
            core = getattr(numpy, "_core", None) or numpy.core
            on = core.multiarray._get_madvise_hugepage()
            chosen = os.environ["NUMPY_MADVISE_HUGEPAGE"]
            pathlib.Path({str(state)!r}).write_text(f"{{chosen}} {{on}}")

        atexit.register(record)
        from daemon.cli import entry
        sys.argv = {_fit_argv(docs, out)!r}
        entry()
        """, tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    assert state.read_text() == ("0 False" if chosen is None else "1 True")


def test_a_fit_from_text_imports_no_store_library(docs, tmp_path):
    # `fit --input` reads text and writes a snapshot: importing zarr and Icechunk (the store's
    # libraries; zarr alone 0.25 s) would only slow every such process's start.
    out, seen = tmp_path / "snap", tmp_path / "modules"
    proc = _run(f"""
        import atexit, pathlib, sys
        atexit.register(lambda: pathlib.Path({str(seen)!r}).write_text(
            " ".join(m for m in ("zarr", "icechunk", "kafka") if m in sys.modules)))
        from daemon.cli import entry
        sys.argv = {_fit_argv(docs, out)!r}
        entry()
        """, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert read_snapshot(out).num_topics == 2 and seen.read_text() == ""


def test_a_one_shot_command_logs_as_it_prints(tmp_path):
    """A library's record in ``fit``'s output reads as the command's own lines do, without
    a service log's time and logger name (here the anchor threshold lowered for a corpus of
    60 documents, fewer than its 100)."""
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(
        json.dumps({"text": " ".join((WORDS[:5] if d % 2 else WORDS[5:])[(d + i) % 5]
                                     for i in range(8))}) + "\n" for d in range(60)))
    proc = subprocess.run([sys.executable, "-m", "daemon", "fit", "--input", str(docs),
                           "--topics", "2", "--min-df", "1", "--out", str(tmp_path / "snap"),
                           "--quiet"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    logged = [line for line in proc.stderr.splitlines() if "anchor_min_df" in line]
    assert logged and all(line.startswith("note: anchor_min_df 100 lowered") for line in logged)
