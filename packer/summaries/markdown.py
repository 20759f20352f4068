"""Markdown outlines: every heading is a section symbol, shown with its section's first sentence.

A small line scanner, linear in the text: it knows fenced and indented code, HTML comments and
blocks, tables, front matter, setext headings and list items well enough never to take code or
markup for a heading or a sentence. Sections nest by level, so a kept subsection is shown under
its parent headings. Prose before the first heading is the head.
"""

from __future__ import annotations

import re

from packer.outline import Outline, Symbol
from packer.summaries.text import (
    LINE_WIDTH,
    SENTENCE_WIDTH,
    clip,
    first_sentence,
    one_line,
    prose,
)

_ATX = re.compile(r" {0,3}(#{1,6})(?=[ \t]|$)")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*")
_THEMATIC_BREAK = re.compile(r" {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_TABLE_DELIMITER = re.compile(r"\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)+\|?")
_LIST_MARKER = re.compile(r"(?:[-*+]|\d{1,9}[.)])[ \t]+(?:\[[ xX]\][ \t]+)?")
# Brackets and parentheses are excluded inside so each scan stops at the next one: linear time.
_IMAGE = re.compile(r"!\[[^\[\]\n]{0,300}\]\([^()\n]{0,500}\)")
_LINK = re.compile(r"\[([^\[\]\n]{0,300})\]\([^()\n]{0,500}\)")
_HTML_LINE = re.compile(r"</?[A-Za-z][^>]{0,500}>")
_PROSE_CAP = SENTENCE_WIDTH * 4  # enough text to find a first sentence in


class _Outliner:
    def __init__(self) -> None:
        self.symbols: list[Symbol] = []
        self.head: list[str] = []
        self.levels: list[tuple[int, int]] = []  # (level, symbol index) of the open sections
        self.want_sentence = True
        self.paragraph: list[str] = []

    def heading(self, level: int, title: str, line: int) -> None:
        self.flush()
        while self.levels and self.levels[-1][0] >= level:
            self.levels.pop()
        parent = self.levels[-1][1] if self.levels else -1
        self.levels.append((level, len(self.symbols)))
        shown = "#" * level + (" " + title if title else "")
        self.symbols.append(Symbol(title, "section", (shown,), parent, True, line))
        self.want_sentence = True

    def flush(self) -> None:
        if self.want_sentence and self.paragraph:
            text = prose(" ".join(self.paragraph))  # inline HTML and badges are not prose
            sentence = first_sentence(text) if text else ""
            if sentence:
                if self.symbols:
                    last = self.symbols[-1]
                    self.symbols[-1] = Symbol(
                        last.name, last.kind, (*last.lines, "  " + sentence), last.parent,
                        last.exported, last.line,
                    )  # fmt: skip
                else:
                    self.head.append(sentence)
                self.want_sentence = False
        self.paragraph.clear()


def outline(text: str, source_lines: int) -> Outline | None:
    """The heading outline of a Markdown text, or None if it has no heading."""
    out = _Outliner()
    lines = text.split("\n")
    start = _front_matter_end(lines)
    fence: str | None = None
    in_comment = False
    in_table = False
    in_list_item = False
    for number, raw in enumerate(lines[start:], start + 1):
        line = raw.rstrip("\r")
        stripped = line.strip()
        if fence is not None:
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                fence = None
            continue
        if in_comment:
            if "-->" in line:
                in_comment = False
            continue
        opened = _FENCE.match(line)
        if opened and not (opened.group(1)[0] == "`" and "`" in line[opened.end() :]):
            out.flush()
            fence = opened.group(1)
            continue
        if stripped.startswith("<!--"):
            out.flush()
            in_comment = "-->" not in stripped[4:]
            continue
        heading = _ATX.match(line)
        if heading:
            out.heading(len(heading.group(1)), _atx_title(line[heading.end() :]), number)
            in_table = False
            continue
        if not stripped:
            out.flush()
            in_table = False
            continue
        if out.paragraph and not in_table and not in_list_item and _SETEXT.fullmatch(line):
            title = clip(one_line(_inline(" ".join(out.paragraph)[: LINE_WIDTH * 4])), LINE_WIDTH)
            out.paragraph.clear()
            out.heading(1 if stripped[0] == "=" else 2, title, number - 1)
            continue
        if _THEMATIC_BREAK.fullmatch(line):
            out.flush()
            continue
        if "|" in stripped and _TABLE_DELIMITER.fullmatch(stripped):
            out.paragraph.clear()  # the row above was the table's header, not prose
            in_table = True
            continue
        if in_table or stripped.startswith("|"):
            continue
        if _HTML_LINE.match(stripped) or (line.startswith("    ") and not out.paragraph):
            continue  # raw HTML or an indented code block
        is_item = _LIST_MARKER.match(stripped) is not None
        if out.paragraph and is_item:
            out.flush()  # each list item is its own block
        if not out.paragraph:
            in_list_item = is_item
        if sum(len(p) for p in out.paragraph) > _PROSE_CAP:
            continue
        content = _inline(_strip_block_markers(stripped)[:_PROSE_CAP]).strip()
        if content:
            out.paragraph.append(content)
    out.flush()
    if not out.symbols:
        return None  # prose without headings: its first lines say more than one sentence
    return Outline("markdown", source_lines, tuple(out.head[:1]), tuple(out.symbols))


def _atx_title(rest: str) -> str:
    title = rest.strip()
    # A closing run of "#" is decoration when a space separates it from the title.
    bare = title.rstrip("#")
    if bare != title and (not bare or bare[-1] in " \t"):
        title = bare.rstrip()
    return clip(one_line(_inline(title[: LINE_WIDTH * 4])), LINE_WIDTH)


def _front_matter_end(lines: list[str]) -> int:
    if not lines or lines[0].strip() != "---":
        return 0
    for i in range(1, min(len(lines), 200)):
        if lines[i].strip() in ("---", "..."):
            return i + 1
    return 0


def _strip_block_markers(line: str) -> str:
    while line.startswith(">"):
        line = line[1:].lstrip()
    marker = _LIST_MARKER.match(line)
    return line[marker.end() :] if marker else line


def _inline(text: str) -> str:
    """Markdown inline markup reduced to the words a reader sees."""
    text = _IMAGE.sub("", text)
    return _LINK.sub(r"\1", text)
