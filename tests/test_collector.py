"""daemon/collector.py, each in a child process: frozen objects of the test process would never
be collected, and its thresholds are the whole suite's."""

from __future__ import annotations

import subprocess
import sys


def _child(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_freeze_long_lived_collects_then_freezes_what_the_process_holds():
    _child("import gc, weakref\n"
           "from daemon.collector import freeze_long_lived\n"
           "class Cycle:\n"
           "    def __init__(self): self.me = self\n"
           "c = Cycle(); dead = weakref.ref(c); del c\n"  # garbage already: collected, not frozen
           "kept = Cycle(); alive = weakref.ref(kept)\n"
           "n = freeze_long_lived()\n"
           "assert n == gc.get_freeze_count() > 1000, n\n"
           "assert dead() is None and alive() is kept\n"
           "assert not gc.get_objects(2)\n")


def test_for_batch_freezes_and_raises_only_the_young_threshold():
    _child("import gc\n"
           "from daemon.collector import BATCH_THRESHOLD, for_batch\n"
           "before = gc.get_threshold()\n"
           "for_batch()\n"
           "assert gc.get_freeze_count() > 1000\n"
           "assert gc.get_threshold() == (BATCH_THRESHOLD, *before[1:]), gc.get_threshold()\n")
