"""``kill -USR1 <pid>``: every thread's stack on stderr, and the daemon runs on.

Where a daemon that seems stuck is stuck. The dump is taken by a thread of its own, holding the
GIL, so no thread's frames change while they are read:

- SIGUSR1's C-level handler only writes the signal's number into a pipe
  (:func:`signal.set_wakeup_fd`, which CPython's handler does in whichever thread the signal
  lands on); the Python-level handler it needs is a no-op.
- The ``stack-dump`` thread reads the pipe and calls :func:`faulthandler.dump_traceback` for all
  threads. It does not wait for the main thread to run Python code, so a main thread stuck in a
  C call is still shown where it is stuck.

``faulthandler.register(SIGUSR1, all_threads=True)`` is simpler, but it dumps from inside the C
handler while the other threads run on and change their frames, which CPython calls best-effort.
Under load it killed the daemon in each of four runs (session 69): SIGSEGV after 17 to 73 dumps
sent 0.05 s apart while documents were consumed and refreshes ran, once after an incomplete dump
(``tests/test_stackdump.py``'s stress test, run by hand against it).
"""

from __future__ import annotations

import faulthandler
import logging
import os
import signal
import sys
import threading

log = logging.getLogger("anchorstream.run")

__all__ = ["install_stack_dumps"]


def install_stack_dumps(stream=None) -> bool:
    """Dump every thread's stack to ``stream`` (stderr) on SIGUSR1; whether it was installed.

    Only the main thread can install signal handlers, and the wakeup pipe is the process's one:
    nothing is installed (False, logged) when called from another thread, when ``stream`` has
    no file descriptor (a test's captured stderr), or when something else owns the wakeup fd."""
    stream = sys.stderr if stream is None else stream
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        log.debug("no stack dump on SIGUSR1: stderr has no file descriptor")
        return False
    if threading.current_thread() is not threading.main_thread():
        log.debug("no stack dump on SIGUSR1: not installed from the main thread")
        return False
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)  # the C handler must never block on a full pipe
    previous = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    if previous != -1:  # another owner (an event loop): leave its pipe in place
        signal.set_wakeup_fd(previous)
        os.close(read_end)
        os.close(write_end)
        log.debug("no stack dump on SIGUSR1: the signal wakeup fd is in use")
        return False
    signal.signal(signal.SIGUSR1, _ignore)
    threading.Thread(target=_dump_on_signal, args=(read_end, fd), name="stack-dump",
                     daemon=True).start()
    return True


def _ignore(signum, frame) -> None:
    """SIGUSR1's Python-level handler: the dump is the stack-dump thread's."""


def _dump_on_signal(read_end: int, fd: int) -> None:
    """Read signal numbers from the wakeup pipe; dump every thread's stack for each SIGUSR1.

    Every handled signal's number arrives here (SIGTERM and SIGINT too); only SIGUSR1 dumps.
    Several SIGUSR1s read at once make one dump."""
    while True:
        data = os.read(read_end, 512)
        if not data:
            return
        if int(signal.SIGUSR1) in data:
            try:
                faulthandler.dump_traceback(fd, all_threads=True)
            except (OSError, ValueError) as exc:  # stderr closed: nothing to write to
                log.warning("stack dump on SIGUSR1 failed: %s", exc)
