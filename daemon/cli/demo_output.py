"""``anchorstream demo``'s output: a snapshot's topics as text, with what changed since the last.

Plain lines when piped; on a terminal colours (unless ``NO_COLOR``) and top words cut to the
terminal width (:class:`Style`).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field

__all__ = ["MOVE_PP", "Seen", "Style", "format_snapshot", "format_trends", "remember"]

#: A prevalence change of at least this many percentage points counts as rising or falling.
MOVE_PP = 0.5



class Style:
    """ANSI colours on a terminal (unless NO_COLOR), nothing when piped."""

    def __init__(self, stream):
        tty = hasattr(stream, "isatty") and stream.isatty()
        self.color = tty and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
        encoding = (getattr(stream, "encoding", None) or "ascii").lower()
        self.unicode = encoding.replace("-", "") in ("utf8", "utf16", "utf32")
        self.width = shutil.get_terminal_size((100, 24)).columns if tty else None

    def _wrap(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color else text

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def up(self, text: str) -> str:
        return self._wrap("32", text)

    def down(self, text: str) -> str:
        return self._wrap("31", text)

    def born(self, text: str) -> str:
        return self._wrap("36", text)

    @property
    def rule(self) -> str:
        return "─" if self.unicode else "-"

    @property
    def arrows(self) -> tuple[str, str]:
        return ("▲", "▼") if self.unicode else ("+", "-")


@dataclass
class Seen:
    """What the previous printed snapshot said about each topic id."""

    prevalence: dict[int, float] = field(default_factory=dict)
    anchor: dict[int, str | None] = field(default_factory=dict)
    top: dict[int, list[str]] = field(default_factory=dict)


def _pp(delta: float) -> str:
    return f"{delta * 100:+.1f}"


def format_trends(trends, style: Style, anchors: dict[int, str | None], n: int = 3) -> str:
    """What is new and what rose over the trend window, as one line: ``GET /v1/trends``'s
    ``new`` and ``rising`` lists (:class:`anchorstream.model.trends.Trends`), ``n`` of each,
    with each topic's anchor and score (a z-score, docs/trends.md)."""
    def items(ts) -> str:
        return ", ".join(f"{t.id} {anchors.get(t.id) or '-'} (z {t.score:+.1f})" for t in ts[:n])

    window = f"last {len(trends.window)} snapshots"
    parts = []
    if trends.new:
        parts.append(style.born(f"new: {items(trends.new)}"))
    rising = [t for t in trends.rising if not t.new]
    if rising:
        parts.append(style.up(f"rising: {items(rising)}"))
    if not parts:
        return style.dim(f"trends ({window}): nothing new or rising")
    return f"trends ({window}): " + "   ".join(parts)


def format_snapshot(version: int, snapshot, seen: Seen | None, style: Style, *,
                    n_words: int | None = None, stream_at: str | None = None,
                    trends=None, replayed: int | None = None) -> str:
    """A snapshot's topics as text, with what changed since ``seen``.

    Parameters
    ----------
    version : int
        The publisher's version number.
    snapshot : anchorstream.snapshot.Snapshot
    seen : Seen or None
        The previous printed snapshot (None for the first).
    style : Style
    n_words : int, optional
        Top words per topic; default: fit the terminal width, 8 when not a terminal.
    stream_at : str, optional
        Where the replay is (shown in the header).
    trends : anchorstream.model.trends.Trends, optional
        The publisher's trends; printed (:func:`format_trends`) when computed at ``version``.
    replayed : int, optional
        The replayed documents the snapshot covers (its messages); where the model counted
        fewer (a repeated document is skipped), the header says how many it skipped.

    Returns
    -------
    str
        Header, one line per topic (most prevalent first), and a change summary.
    """
    topics = snapshot.topics
    extra = snapshot.extra or {}
    churn = extra.get("churn") or {}
    births = set(churn.get("births", []))
    split_of = {s["id"]: s["parent"] for s in churn.get("splits", [])}
    merged_into = {m["id"]: m["into"] for m in churn.get("merges", [])}
    up, down = style.arrows

    created = snapshot.created_at.astimezone().strftime("%H:%M:%S")
    shown = snapshot.num_docs if replayed is None else max(replayed, snapshot.num_docs)
    skipped = shown - snapshot.num_docs
    head = (f"snapshot {version} · {shown:,} documents"
            + (f" ({skipped:,} repeated, skipped)" if skipped else "")
            + f" · {snapshot.vocab_size:,} words · {created}")
    if stream_at:
        head += f" · up to {stream_at}"
    if not style.unicode:
        head = head.replace("·", "|")
    rule_len = max((style.width or 96) - len(head) - 4, 3)
    lines = ["", style.bold(f"{style.rule * 2} {head} {style.rule * rule_len}")]

    id_w = max(2, max(len(str(t["id"])) for t in topics))
    anchor_w = min(max(6, max(len(t["anchor"] or "-") for t in topics)), 18)
    lines.append(style.dim(f"{'id':>{id_w}}  {'share':>6}  {'change':<8}  "
                           f"{'anchor':<{anchor_w}}  top words"))
    prefix_w = id_w + 2 + 6 + 2 + 8 + 2 + anchor_w + 2
    rising, falling = [], []
    for t in sorted(topics, key=lambda t: -t["prevalence"]):
        tid, prev = t["id"], t["prevalence"]
        words = [w for w, _ in t["top_words"]]
        if n_words is not None:
            words = words[:n_words]
        elif style.width is None:
            words = words[:8]
        else:
            # As many words as fit on one terminal line.
            room, kept = style.width - prefix_w - 1, []
            for w in words:
                if sum(len(x) + 1 for x in kept) + len(w) > room:
                    break
                kept.append(w)
            words = kept or words[:1]
        if seen is None:
            change = ""
            change_txt = ""
        elif tid in births or tid not in seen.prevalence:
            parent = split_of.get(tid)
            change = "born" if parent is None else f"born<{parent}"
            change_txt = style.born(f"{change:<8}")
        else:
            delta = prev - seen.prevalence[tid]
            change = f"{_pp(delta)}"
            if delta >= MOVE_PP / 100:
                change_txt = style.up(f"{change + ' ' + up:<8}")
                rising.append((delta, tid, t["anchor"]))
            elif delta <= -MOVE_PP / 100:
                change_txt = style.down(f"{change + ' ' + down:<8}")
                falling.append((delta, tid, t["anchor"]))
            else:
                change_txt = style.dim(f"{change:<8}")
        if not change_txt:
            change_txt = " " * 8
        anchor = (t["anchor"] or "-")[:anchor_w]
        lines.append(f"{tid:>{id_w}}  {prev:6.1%}  {change_txt}  {anchor:<{anchor_w}}  "
                     f"{' '.join(words)}")

    if seen is None:
        lines.append(style.dim(f"first snapshot: {len(topics)} topics; share = prevalence, "
                               "change = percentage points since the previous snapshot"))
        return "\n".join(lines)
    current = {t["id"] for t in topics}
    born = sorted(current - set(seen.prevalence)) if not births else sorted(births)
    died = sorted(set(churn.get("deaths", [])) | (set(seen.prevalence) - current))
    parts = []
    if born:
        parts.append(style.born("born: " + ", ".join(
            f"{b}" + (f" (split from {split_of[b]})" if b in split_of else "")
            for b in born)))
    if died:
        parts.append(style.down("died: " + ", ".join(
            f"{d} [{seen.anchor.get(d) or '-'}]"
            + (f" (merged into {merged_into[d]})" if d in merged_into else "")
            for d in died)))
    if rising:
        parts.append(style.up("rose: " + ", ".join(
            f"{tid} {a or '-'} {_pp(d)}" for d, tid, a in sorted(rising, reverse=True)[:3])))
    if falling:
        parts.append(style.down("fell: " + ", ".join(
            f"{tid} {a or '-'} {_pp(d)}" for d, tid, a in sorted(falling)[:3])))
    if not parts:
        parts.append(style.dim(f"no topic moved by {MOVE_PP} points or more"))
    lines.append("   ".join(parts))
    if trends is not None and trends.version == version:
        lines.append(format_trends(trends, style, {t["id"]: t["anchor"] for t in topics}))
    return "\n".join(lines)


def remember(snapshot) -> Seen:
    seen = Seen()
    for t in snapshot.topics:
        seen.prevalence[t["id"]] = float(t["prevalence"])
        seen.anchor[t["id"]] = t["anchor"]
        seen.top[t["id"]] = [w for w, _ in t["top_words"][:5]]
    return seen
