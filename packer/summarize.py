"""A file's summary as text, for callers that want one string rather than an outline.

The summary is the file's outline (`packer.summaries.outline`) rendered with every symbol, or,
when that is longer than ``max_lines``, with the symbols that matter most without a rating:
exported before unexported, outer before inner, earlier before later, each with the symbols
that enclose it. Symbols are left out whole, never cut off at the tail, and the last line says
how many. Fitting against ratings (`packer.outline.render` with a chosen set) supersedes this.
"""

from __future__ import annotations

from packer.outline import Outline, render
from packer.summaries import SUMMARY_VERSION, outline

__all__ = ["SUMMARY_VERSION", "fit_lines", "summarize"]


def summarize(path: str, text: str, *, max_lines: int = 200) -> str:
    """A deterministic summary of ``text`` (the content of ``path``) in at most ``max_lines``
    lines (2 at least), ending in one newline. Never raises; depends on ``path`` only through
    its language."""
    try:
        o = outline(path, text)
        limit = max(max_lines, 2)
        keep = fit_lines(o, limit)
        if keep is not None and len(o.head) + 2 > limit:
            o = Outline(o.lang, o.source_lines, o.head[: limit - 2], o.symbols)
        return render(o, keep)
    except Exception:  # a summary must never fail a pack; the header alone still says something
        return "# summary\n"


def fit_lines(o: Outline, max_lines: int) -> list[int] | None:
    """The symbols to keep so that the render of ``o`` has at most ``max_lines`` lines, or None
    when every symbol fits."""
    sizes = [sum(1 for line in s.lines if line.strip()) for s in o.symbols]
    fixed = 1 + sum(1 for line in o.head if line.strip())
    if fixed + sum(sizes) <= max_lines:
        return None
    budget = max_lines - fixed - 1  # the last line says how many symbols were left out
    depth = [len(o.ancestors(i)) for i in range(len(o.symbols))]
    order = sorted(range(len(o.symbols)), key=lambda i: (not o.symbols[i].exported, depth[i], i))
    shown: set[int] = set()
    used = 0
    for i in order:
        if i in shown:
            continue
        added = [j for j in (*o.ancestors(i), i) if j not in shown]
        cost = sum(sizes[j] for j in added)
        if used + cost <= budget:
            shown.update(added)
            used += cost
    return sorted(shown)
