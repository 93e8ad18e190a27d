"""Pyflakes' checks over every Python file of the repository (``ruff``, configured in
pyproject.toml): undefined and unused names, imports shadowed or redefined, syntax errors.

Each is a mistake a test reaches only on the line's own path, often an error path, and some
(an annotation naming a class never imported) no test reaches at all.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_pyflakes_finds_nothing():
    # ruff reads [tool.ruff] from pyproject.toml and skips what .gitignore names (the venvs,
    # benchmarks/.cache).
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache",
                           "--output-format", "concise", "."],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert "No module named ruff" not in done.stderr, (
        "ruff is one of the test extras: pip install -e '.[dev]' (or `make test`)")
    assert done.returncode == 0, done.stdout + done.stderr
