"""Slow twin of the duplicate filter's kernels (``anchorstream/_kernels/duplicates.py``): the
memory as a Python list in arrival order and a set, so a kernel whose hash set loses a key
(a wrong backward shift) or keeps a forgotten one disagrees."""

from __future__ import annotations


def naive_filter(memory: int, history: list[int], keys) -> tuple[list[bool], list[int]]:
    """``(keep, history)``: ``history`` holds every key that entered the memory, in order;
    the memory is its last ``memory`` entries."""
    history = list(history)
    keep = []
    for key in keys:
        held = set(history[-memory:]) if memory else set()
        new = int(key) not in held
        keep.append(new)
        if new:
            history.append(int(key))
    return keep, history
