"""The window rule shared by the counts and the document statistics."""

from __future__ import annotations

__all__ = ["is_live"]


def is_live(window: int, current: int, ring: int) -> bool:
    """Whether ``window`` is still kept when ``current`` is the newest of ``ring`` windows."""
    return window > current - ring
