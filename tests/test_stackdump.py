"""``kill -USR1``: every thread's stack, and the process runs on (daemon/stackdump.py).

The stress test is the one that matters: ``faulthandler.register(SIGUSR1, all_threads=True)``,
the daemon's handler before session 69, killed a daemon under load with SIGSEGV after 17 to 73
dumps in each of four runs of this loop (by hand), so 150 dumps make a test that fails."""

from __future__ import annotations

import io
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time

from kafka_broker import produce, unique_name
from test_daemon import (DEADLINE, REPO, DaemonProcess, corpus, stack_dump, wait_for_docs,
                         write_config)

from daemon.stackdump import MAX_DEPTH, format_stacks, install_stack_dumps

DUMPS = 150


def test_nothing_is_installed_without_a_file_descriptor_or_off_the_main_thread():
    assert install_stack_dumps(io.StringIO()) is False
    result = []
    t = threading.Thread(target=lambda: result.append(install_stack_dumps(sys.stderr)))
    t.start()
    t.join()
    assert result == [False]
    assert signal.getsignal(signal.SIGUSR1) is signal.SIG_DFL


def _wait_in_a_named_function(ready: threading.Event, release: threading.Event) -> None:
    ready.set()
    release.wait(DEADLINE)


def _recurse(depth: int, ready: threading.Event, release: threading.Event) -> None:
    if depth:
        return _recurse(depth - 1, ready, release)
    ready.set()
    release.wait(DEADLINE)


def test_every_thread_is_dumped_by_name_the_main_thread_last():
    ready, release, deep_ready = threading.Event(), threading.Event(), threading.Event()
    waiter = threading.Thread(target=_wait_in_a_named_function, args=(ready, release),
                              name="waiter")
    deep = threading.Thread(target=_recurse, args=(2 * MAX_DEPTH, deep_ready, release),
                            name="deep")
    waiter.start()
    deep.start()
    try:
        assert ready.wait(DEADLINE) and deep_ready.wait(DEADLINE)
        dump = format_stacks(threading.get_ident())
    finally:
        release.set()
        waiter.join(DEADLINE)
        deep.join(DEADLINE)
    threads = re.split(r"\n\n(?=(?:Current thread|Thread) 0x)", dump.strip())
    heads = [t.splitlines()[0] for t in threads]
    main = threading.main_thread()
    assert f"0x{main.ident:016x} 'MainThread'" in heads[-1], heads
    (mine,) = [t for t in threads if t.startswith("Current thread")]
    assert f"0x{threading.get_ident():016x}" in mine and "in test_every_thread_is_dumped" in mine
    (waiting,) = [t for t in threads if f"0x{waiter.ident:016x} 'waiter'" in t.splitlines()[0]]
    frames = waiting.splitlines()[1:]
    assert "in wait" in frames[0] and "in _wait_in_a_named_function" in "\n".join(frames)
    assert frames[-1].endswith("in _bootstrap")  # the outermost call last
    (deepest,) = [t for t in threads if "'deep'" in t.splitlines()[0]]
    lines = deepest.splitlines()[1:]
    assert len(lines) == MAX_DEPTH + 1 and lines[-1] == "  ..." and "in _recurse" in lines[-2]
    assert all(re.fullmatch(r'  File ".*", line \d+ in \S+', line) for line in lines[:-1])


SPIN = textwrap.dedent("""
    import sys
    import numba
    from daemon.stackdump import MAX_DEPTH, format_stacks, install_stack_dumps

    @numba.njit(nogil=True, cache=False)
    def spin_in_compiled_code(n):
        x = 1
        for i in range(n):
            x = (x * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFF
        return x

    spin_in_compiled_code(10)
    assert install_stack_dumps()
    print("spinning", flush=True)
    spin_in_compiled_code(10**13)  # hours: the test kills it
""")


def test_a_main_thread_busy_in_compiled_code_is_dumped_where_it_is(tmp_path):
    """The dump does not wait for the main thread to run Python code again."""
    log = tmp_path / "spin.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-c", SPIN], stdout=out, stderr=out,
                                cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    try:
        end = time.monotonic() + DEADLINE
        while b"spinning" not in log.read_bytes():
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < end, log.read_text()
            time.sleep(0.1)
        start = log.stat().st_size
        proc.send_signal(signal.SIGUSR1)
        while True:
            dump = log.read_bytes()[start:].decode(errors="replace")
            if "<module>" in dump:
                break
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < end, "no dump while the main thread spins:\n" + dump
            time.sleep(0.1)
        # The dumping thread is the "Current thread"; the main thread is another, at the call.
        threads = re.split(r"\n(?=(?:Current thread|Thread) 0x)", dump.strip())
        current = [t for t in threads if t.startswith("Current thread")]
        main = [t for t in threads if "<module>" in t]
        assert len(current) == 1 and "_dump_on_signal" in current[0], dump
        assert len(main) == 1 and main[0].startswith("Thread 0x"), dump
        assert 'File "<string>", line 16 in <module>' in main[0], dump
    finally:
        proc.kill()
        proc.wait(30)


CRASH = textwrap.dedent("""
    import faulthandler, threading
    from daemon.stackdump import install_stack_dumps

    assert install_stack_dumps()
    threading.Thread(target=threading.Event().wait, name="idle", daemon=True).start()
    faulthandler._sigsegv()
""")


def test_a_crash_in_compiled_code_writes_every_threads_stack():
    """Installed, a fatal signal dumps every thread's stack to the same stream."""
    proc = subprocess.run([sys.executable, "-c", CRASH], capture_output=True, text=True,
                          cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
                          timeout=DEADLINE)
    assert proc.returncode == -signal.SIGSEGV, proc.stderr
    assert "Fatal Python error: Segmentation fault" in proc.stderr, proc.stderr
    assert 'File "<string>", line 7 in <module>' in proc.stderr, proc.stderr
    assert "in _dump_on_signal" in proc.stderr, proc.stderr  # another thread's stack too


def test_a_daemon_under_load_survives_many_dumps(tmp_path, kafka_broker):
    """Every dump is complete and the daemon consumes on and stops cleanly."""
    topic = unique_name("usr1")
    kafka_broker.create_topics({topic: 2})
    daemon = DaemonProcess(tmp_path, write_config(tmp_path, kafka_broker.bootstrap_servers,
                                                  topic))
    stop = threading.Event()
    produced = []

    def load():
        while not stop.is_set():
            batch = corpus(300, len(produced))
            produce(kafka_broker.bootstrap_servers, topic, batch)
            produced.append(len(batch))

    producer = threading.Thread(target=load, daemon=True)
    producer.start()
    try:
        for i in range(DUMPS):
            dump = stack_dump(daemon.proc, daemon.log_path)
            assert "most recent call first" in dump and "daemon/cli/run.py" in dump, (
                f"dump {i}: {dump[-2000:]}\n" + daemon.log())
        stop.set()
        producer.join(DEADLINE)
        assert not producer.is_alive() and produced
        wait_for_docs(daemon, sum(produced))  # nothing lost while it was dumped
        assert daemon.terminate() == 0, daemon.log()
    finally:
        stop.set()
        daemon.close()
