"""Statistics that are sums over documents merge field by field."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["field_sums"]


def field_sums(a, b, names: Sequence[str]) -> list:
    """``[a.name + b.name for name in names]``: the fields of the statistic of the union of two
    disjoint document sets, in the order of ``names``."""
    return [getattr(a, n) + getattr(b, n) for n in names]
