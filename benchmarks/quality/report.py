"""What every benchmark report carries: machine, versions, load, and its README section."""

from __future__ import annotations

import importlib.metadata
import os
import platform
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def machine() -> str:
    """CPU model, cores this process may use, memory and kernel."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kb / 2**20:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return f"{cpu}, {cores} cores{mem}, {platform.system()} {platform.release()}"


def versions(names=("anchorstream", "anchortopics", "gensim", "tomotopy", "numpy", "scipy",
                    "numba")) -> str:
    parts = [f"Python {platform.python_version()}"]
    for name in names:
        try:
            parts.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            parts.append(f"{name} not installed")
    return ", ".join(parts)


def load_average() -> float:
    return os.getloadavg()[0]


def write_section(text: str, tag: str, heading: str, readme: Path = README) -> None:
    """Replace the text between ``<!-- tag:begin -->`` and ``<!-- tag:end -->`` of the README
    (appended under ``heading`` when the markers are missing)."""
    begin, end = f"<!-- {tag}:begin -->", f"<!-- {tag}:end -->"
    section = f"{begin}\n{text}\n{end}"
    old = readme.read_text(encoding="utf-8") if readme.exists() else "# Benchmarks\n"
    if begin in old and end in old:
        head, rest = old.split(begin, 1)
        new = head + section + rest.split(end, 1)[1]
    else:
        new = old.rstrip("\n") + f"\n\n{heading}\n\n" + section + "\n"
    readme.write_text(new, encoding="utf-8")
