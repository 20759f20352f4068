"""How a body is cut into the passages search by meaning embeds: each passage a range of lines.

Two ways, chosen by the path's extension (`kind_of`), each with its own name in the vectors'
cache key (`packer.vectors`):

* ``md`` (Markdown): a heading starts a section; a list item at the left margin is a passage of
  its own with the lines indented under it (a memory's daily log is one entry a passage, its
  ``MEMORY.md`` one item a passage); the paragraphs of a section between them form one passage.
  A heading's text is read with the passage that follows it, so a section's first passage
  carries its title (not a date's: a daily log's day says nothing of its first entry). A block
  reference at the end of a line (`` ^id``, as Obsidian writes one and a memory's entries carry
  their ids) is not read: a name, not words.
* ``text`` (code and everything else): windows of about `WINDOW_WORDS` words (about 400 tokens
  of the model's), whole lines, each starting a quarter of a window before the last one ended,
  so a definition cut by a window's edge is whole in the next.

A passage longer than `WINDOW_WORDS` words is cut into windows the same way. Only the first
`MAX_TEXT` characters of a body are read, and at most `MAX_PASSAGES` passages kept: a body
larger than that is found by its beginning (and by the full-text index for the rest).
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

__all__ = ["CHUNKS_VERSION", "Passage", "kind_of", "passages"]

CHUNKS_VERSION: Final = 2  # in the vectors' cache key: a change here makes every vector again
WINDOW_WORDS: Final = 300
OVERLAP_WORDS: Final = 75
MAX_TEXT: Final = 1 << 20
MAX_PASSAGES: Final = 512
MARKDOWN: Final = frozenset({".md", ".markdown", ".mdx", ".mdown"})
_HEADING = re.compile(r"#{1,6}\s")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_ITEM = re.compile(r"(?:[-*+]|\d{1,9}[.)])\s")
_BLOCK_REF = re.compile(r" \^[A-Za-z0-9-]+$", re.M)


class Passage(NamedTuple):
    first: int  # lines, from 1, inclusive
    last: int
    text: str  # what is embedded


def kind_of(path: str) -> str:
    dot = path.rfind(".")
    return "md" if dot > path.rfind("/") and path[dot:].lower() in MARKDOWN else "text"


def passages(kind: str, text: str) -> list[Passage]:
    """The passages of ``text`` (a body's text) cut the ``kind`` way; passages with no word are
    left out."""
    lines = text[:MAX_TEXT].split("\n")
    blocks = _markdown_blocks(lines) if kind == "md" else [(0, len(lines), "")]
    out: list[Passage] = []
    for start, end, title in blocks:
        for n, (lo, hi) in enumerate(_windows(lines, start, end)):
            first, last = lo, hi
            while first < last - 1 and not lines[first].strip():
                first += 1  # a passage starts at its first line with text ...
            while last > first + 1 and not lines[last - 1].strip():
                last -= 1  # ... and ends at its last
            body = "\n".join(lines[first:last])
            if kind == "md":
                body = _BLOCK_REF.sub("", body)
            if not body.split():
                continue
            if title and n == 0:
                body = f"{title}\n{body}"
            out.append(Passage(first + 1, last, body))
            if len(out) >= MAX_PASSAGES:
                return out
    return out


def _markdown_blocks(lines: list[str]) -> list[tuple[int, int, str]]:
    """(start, end, heading) of each block of a Markdown text, lines ``start`` to ``end - 1``
    (from 0); the heading's line is its own block's title, not a passage."""
    out: list[tuple[int, int, str]] = []
    start, title = 0, ""
    fence = False

    def close(at: int) -> None:
        if at > start:
            out.append((start, at, title))

    for i, line in enumerate(lines):
        if line.startswith(("```", "~~~")):
            fence = not fence
            continue
        if fence:
            continue
        if _HEADING.match(line):
            close(i)
            start, title = i + 1, line.lstrip("#").strip()
            if _DATE.fullmatch(title):
                title = ""  # a daily log's day says nothing of its entries
        elif _ITEM.match(line):
            close(i)
            start = i
    close(len(lines))
    return out


def _windows(lines: list[str], start: int, end: int) -> list[tuple[int, int]]:
    """Lines ``start``..``end`` (0-based, end exclusive) as windows of about `WINDOW_WORDS`
    words, overlapping by about `OVERLAP_WORDS`."""
    counts = [len(lines[i].split()) for i in range(start, end)]
    if sum(counts) <= WINDOW_WORDS:
        return [(start, end)]
    out: list[tuple[int, int]] = []
    first = start
    while first < end:
        words = 0
        last = first
        while last < end and (words < WINDOW_WORDS or last == first):
            words += counts[last - start]
            last += 1
        out.append((first, last))
        if last >= end:
            break
        # the next window starts where the last OVERLAP_WORDS words of this one begin
        back, at = 0, last
        while at > first + 1 and back < OVERLAP_WORDS:
            at -= 1
            back += counts[at - start]
        first = max(at, first + 1)
    return out
