"""``kill -USR1 <pid>``: every thread's stack on stderr, and the daemon runs on.

Where a daemon that seems stuck is stuck. The dump is taken by a thread of its own:

- SIGUSR1's C-level handler only writes the signal's number into a pipe
  (:func:`signal.set_wakeup_fd`, which CPython's handler does in whichever thread the signal
  lands on); the Python-level handler it needs is a no-op.
- The ``stack-dump`` thread reads the pipe, takes every thread's current frame with
  :func:`sys._current_frames` (one call, under the interpreter lock and the thread list's lock)
  and writes the stacks in one ``write``, the main thread last. It does not wait for the main
  thread to run Python code, so a main thread stuck in a C call is still shown where it is.

The layout is :mod:`faulthandler`'s, with each thread's name added. Neither of faulthandler's
two ways is used, because each crashed or stopped a daemon under load:
``faulthandler.register(SIGUSR1, all_threads=True)`` dumps from inside the C handler while the
other threads run on and change their frames, which CPython calls best-effort: SIGSEGV after 17
to 73 dumps sent 0.05 s apart in each of four runs (session 69). ``faulthandler.dump_traceback``
called from this thread walks the other threads' C structures without the thread list's lock:
once in a CI run (session 79, dump 55 of 150) it wrote one thread's header and no more dumps
came. :func:`sys._current_frames` hands out frame objects, which stay valid however their
threads go on (``tests/test_stackdump.py``'s stress test holds all of this).

Fatal signals (SIGSEGV, SIGFPE, SIGABRT, SIGBUS, SIGILL) still dump through faulthandler, which
is all a dying process can do.
"""

from __future__ import annotations

import faulthandler
import logging
import os
import signal
import sys
import threading
import traceback

log = logging.getLogger("anchorstream.run")

__all__ = ["format_stacks", "install_stack_dumps"]

MAX_DEPTH = 100  # faulthandler's: the innermost frames of a deeper stack, then "..."


def install_stack_dumps(stream=None) -> bool:
    """Dump every thread's stack to ``stream`` (stderr) on SIGUSR1; whether it was installed.

    Only the main thread can install signal handlers, and the wakeup pipe is the process's one:
    nothing is installed (False, logged) when called from another thread, when ``stream`` has
    no file descriptor (a test's captured stderr), or when something else owns the wakeup fd.
    Installed, a fatal signal also dumps every thread's stack there (:func:`faulthandler.enable`).
    """
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
    faulthandler.enable(fd, all_threads=True)
    threading.Thread(target=_dump_on_signal, args=(read_end, fd), name="stack-dump",
                     daemon=True).start()
    return True


def format_stacks(current: int | None = None) -> str:
    """Every thread's stack, innermost call first, in faulthandler's layout.

    The newest thread comes first and the main thread last (a reader that sees the main
    thread's outermost frame has the whole dump); ``current`` (a thread ident) is marked
    "Current thread"."""
    frames = sys._current_frames()
    names = {t.ident: t.name for t in threading.enumerate()}
    main = threading.main_thread().ident
    order = sorted(frames, key=lambda ident: ident == main)  # the thread list's order
    parts = []
    for ident in order:
        head = "Current thread" if ident == current else "Thread"
        name = f" {names[ident]!r}" if ident in names else ""
        parts.append(f"{head} 0x{ident:016x}{name} (most recent call first):\n")
        for depth, (frame, line) in enumerate(traceback.walk_stack(frames[ident])):
            if depth == MAX_DEPTH:
                parts.append("  ...\n")
                break
            code = frame.f_code
            parts.append(f'  File "{code.co_filename}", line {line} in {code.co_name}\n')
        parts.append("\n")
    return "".join(parts)


def _ignore(signum, frame) -> None:
    """SIGUSR1's Python-level handler: the dump is the stack-dump thread's."""


def _dump_on_signal(read_end: int, fd: int) -> None:
    """Read signal numbers from the wakeup pipe; dump every thread's stack for each SIGUSR1.

    Every handled signal's number arrives here (SIGTERM and SIGINT too); only SIGUSR1 dumps.
    Several SIGUSR1s read at once make one dump."""
    me = threading.get_ident()
    while True:
        data = os.read(read_end, 512)
        if not data:
            return
        if int(signal.SIGUSR1) in data:
            try:
                _write_all(fd, format_stacks(me).encode(errors="backslashreplace"))
            except (OSError, ValueError) as exc:  # stderr closed: nothing to write to
                log.warning("stack dump on SIGUSR1 failed: %s", exc)


def _write_all(fd: int, data: bytes) -> None:
    """``os.write`` until all of ``data`` is written (a pipe may take part of it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
