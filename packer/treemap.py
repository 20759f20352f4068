"""A pack's entries as a tree of folders, and that tree laid out as a squarified treemap.

Everything here is integers: a folder's totals, each file's weight, and the layout, whose
rectangles tile the canvas exactly (every edge is placed by rounding a running sum, so
neighbours share their edges: no gap, no overlap), so one manifest gives one picture on every
machine (`packer.picture` embeds it in a page).

A file's tier, as the picture colours it: ``full`` (HIGH), ``summary`` (MEDIUM), ``omitted``
(LOW) or ``withheld`` (a secret: no digest, whatever its tier).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, NamedTuple

from cas.manifest import Entry

TIER_NAMES: Final = ("full", "summary", "omitted", "withheld")
_BY_TIER: Final = {"high": 0, "medium": 1, "low": 2}
WITHHELD: Final = 3


def tier_of(entry: Entry) -> int:
    """The index in `TIER_NAMES` of how the pack holds ``entry``."""
    return WITHHELD if entry.withheld else _BY_TIER[entry.tier]


class Rect(NamedTuple):
    x: int
    y: int
    w: int
    h: int

    @property
    def area(self) -> int:
        return self.w * self.h


@dataclass
class Folder:
    """A folder of the pack (``path`` "" is the project's root): its folders and files (indexes
    into the entries), and the files, tokens and bytes below it by tier."""

    path: str
    name: str
    depth: int
    folders: dict[str, Folder] = field(default_factory=dict)
    files: list[int] = field(default_factory=list)
    counts: list[int] = field(default_factory=lambda: [0] * len(TIER_NAMES))
    tokens: list[int] = field(default_factory=lambda: [0] * len(TIER_NAMES))
    sizes: list[int] = field(default_factory=lambda: [0] * len(TIER_NAMES))

    @property
    def total_tokens(self) -> int:
        return sum(self.tokens)

    @property
    def total_bytes(self) -> int:
        return sum(self.sizes)

    @property
    def total_files(self) -> int:
        return sum(self.counts)

    def add(self, tier: int, tokens: int, size: int) -> None:
        self.counts[tier] += 1
        self.tokens[tier] += tokens
        self.sizes[tier] += size


def folder_tree(entries: Sequence[Entry]) -> Folder:
    """The folders of ``entries`` (POSIX paths), each with its totals; entry ``i`` is file ``i``
    of the folder its path names."""
    root = Folder("", "", 0)
    for i, e in enumerate(entries):
        tier = tier_of(e)
        parts = e.path.split("/")
        node = root
        node.add(tier, e.tokens, e.size)
        for part in parts[:-1]:
            child = node.folders.get(part)
            if child is None:
                path = f"{node.path}/{part}" if node.path else part
                child = node.folders[part] = Folder(path, part, node.depth + 1)
            node = child
            node.add(tier, e.tokens, e.size)
        node.files.append(i)
    return root


# --- the layout ------------------------------------------------------------------------------


def _worse(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether the ratio a[0]/a[1] is greater than b[0]/b[1] (denominators positive)."""
    return a[0] * b[1] > b[0] * a[1]


def _worst(s: int, lo: int, hi: int, area: int, total: int, side: int) -> tuple[int, int]:
    """The worst aspect ratio of a row of weights summing to ``s`` (smallest ``lo``, largest
    ``hi``) laid along ``side`` of a rectangle of ``area`` that holds ``total`` weight: an item
    of weight r is s*area/(total*side) thick and r*side/s long."""
    thin = (s * s * area, total * side * side * lo)  # thickness over length of the smallest
    flat = (total * side * side * hi, s * s * area)  # length over thickness of the largest
    return thin if _worse(thin, flat) else flat


def squarify(weights: Sequence[int], rect: Rect) -> list[Rect]:
    """Rectangles for ``weights`` (positive, best largest first) tiling ``rect`` exactly, each
    about proportional to its weight and as near square as rows allow (Bruls, Huizing and van
    Wijk's squarified treemaps). Once the space left has no width or height, the rest get empty
    rectangles at its corner."""
    out: list[Rect] = []
    x, y, w, h = rect
    left = sum(weights)
    i, n = 0, len(weights)
    while i < n:
        if w <= 0 or h <= 0 or left <= 0:
            out.extend(Rect(x, y, 0, 0) for _ in range(n - i))
            break
        side, length = min(w, h), max(w, h)
        area = w * h
        j = i + 1
        s = lo = hi = weights[i]
        worst = _worst(s, lo, hi, area, left, side)
        while j < n:
            r = weights[j]
            grown = _worst(s + r, min(lo, r), max(hi, r), area, left, side)
            if _worse(grown, worst):
                break
            s, lo, hi, worst = s + r, min(lo, r), max(hi, r), grown
            j += 1
        thick = length if j == n else (s * length + left // 2) // left
        start, run = 0, 0
        for k in range(i, j):
            run += weights[k]
            end = (run * side + s // 2) // s
            if w >= h:  # a column at the left, its items stacked down
                out.append(Rect(x, y + start, thick, end - start))
            else:  # a row at the top, its items side by side
                out.append(Rect(x + start, y, end - start, thick))
            start = end
        if w >= h:
            x, w = x + thick, w - thick
        else:
            y, h = y + thick, h - thick
        left -= s
        i = j
    return out


@dataclass
class Treemap:
    """A layout: each entry's rectangle (by entry index) and each folder's, outermost first."""

    files: list[Rect]
    folders: list[tuple[Folder, Rect]]


def weight_by(measure: str, entries: Sequence[Entry]) -> Callable[[int], int]:
    """Entry ``i``'s weight in a layout by ``measure`` ("tokens" or "bytes"): at least 1, so
    every file has a place, an omitted file that costs the pack nothing included."""
    if measure == "tokens":
        return lambda i: max(entries[i].tokens, 1)
    if measure == "bytes":
        return lambda i: max(entries[i].size, 1)
    raise ValueError(f"no measure {measure!r}: tokens or bytes")


def layout(root: Folder, weight: Callable[[int], int], width: int, height: int) -> Treemap:
    """The treemap of the tree under ``root`` on a ``width`` by ``height`` canvas: each folder's
    rectangle holds its folders' and files' rectangles, largest first (ties by name), every
    file's area about proportional to its weight."""
    count = root.total_files
    files = [Rect(0, 0, 0, 0)] * count
    folders: list[tuple[Folder, Rect]] = []
    weights: dict[str, int] = {}

    def folder_weight(f: Folder) -> int:
        total = sum(weight(i) for i in f.files) + sum(map(folder_weight, f.folders.values()))
        weights[f.path] = total
        return total

    folder_weight(root)
    todo: list[tuple[Folder, Rect]] = [(root, Rect(0, 0, width, height))]
    while todo:
        node, rect = todo.pop()
        folders.append((node, rect))
        # largest first; at equal weights folders by name, then files in the manifest's order
        subs = sorted(
            node.folders.values(),
            key=lambda f: (-weights[f.path], f.name.encode("utf-8", "surrogateescape")),
        )
        items: list[tuple[int, int, int, Folder | int]] = [
            (weights[f.path], 0, rank, f) for rank, f in enumerate(subs)
        ]
        items += [(weight(i), 1, i, i) for i in node.files]
        items.sort(key=lambda t: (-t[0], t[1], t[2]))
        placed = squarify([t[0] for t in items], rect)
        inner: list[tuple[Folder, Rect]] = []
        for (_, _, _, item), r in zip(items, placed, strict=True):
            if isinstance(item, int):
                files[item] = r
            else:
                inner.append((item, r))
        todo.extend(reversed(inner))
    return Treemap(files, folders)
