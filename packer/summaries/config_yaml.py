"""YAML outlines: the mapping keys of the first three levels, with their short values.

A key whose value is a nested block is a section; a key with a scalar is shown with it. Keys
inside sequence items (a workflow's steps, a list of records) and the content of block scalars
are not read: they are data, not the file's structure. A line scanner, linear in the text, that
reads templated and otherwise invalid YAML as well as valid.
"""

from __future__ import annotations

import re
from typing import Final

from packer.outline import Outline, Symbol
from packer.summaries.text import clip, one_line

MAX_SYMBOLS: Final = 2000
MAX_DEPTH: Final = 3
VALUE_WIDTH: Final = 100
_KEY = re.compile(
    r"(?P<indent> *)(?P<dash>(?:- +)*)"
    r"(?P<key>\"[^\"\n]{0,200}\"|'[^'\n]{0,200}'|[^\s#'\"\-?:,\[\]{}&*!|>%@`][^\n:#]{0,200}?"
    r"|-[^\s\n:#][^\n:#]{0,200}?)"
    r"[ \t]*:(?:[ \t]+(?P<value>.*))?$"
)
_BLOCK_SCALAR = re.compile(r"[|>][-+0-9]*(?:[ \t]+#.*)?")


def outline(text: str, source_lines: int) -> Outline | None:
    """The key outline of a YAML text, or None if it has no mapping key."""
    symbols: list[Symbol] = []
    # The open mappings: (indentation of their keys' lines, symbol index or -1, hidden).
    stack: list[tuple[int, int, bool]] = []
    skip_deeper: int | None = None  # inside a block scalar whose key sits at this indentation
    for number, raw in enumerate(text.split("\n"), 1):
        if len(symbols) >= MAX_SYMBOLS:
            break
        line = raw.rstrip("\r")
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" "))
        if skip_deeper is not None:
            if not stripped or indent > skip_deeper:
                continue
            skip_deeper = None
        if not stripped or stripped.startswith("#"):
            continue
        if (indent == 0 and stripped in ("---", "...")) or stripped.startswith("--- "):
            stack.clear()
            continue
        m = _KEY.match(line)
        dash = m.group("dash") if m else ""
        if m is None:
            if stripped.startswith("-"):
                # A sequence item without a key: what is nested under it is data.
                _close(stack, indent)
                stack.append((indent, -1, True))
            continue
        key_indent = indent + len(dash)
        _close(stack, indent)
        if dash:
            stack.append((indent, -1, True))  # a sequence item: its keys are data
        _close(stack, key_indent)
        hidden = any(h for _, _, h in stack) or len(stack) >= MAX_DEPTH
        value = (m.group("value") or "").rstrip()
        if _BLOCK_SCALAR.fullmatch(value):
            skip_deeper = key_indent
        parent = next((index for _, index, h in reversed(stack) if index >= 0 and not h), -1)
        index = -1
        if not hidden:
            key = one_line(m.group("key"))
            pad = "  " * len(stack)
            shown = f"{pad}{key}:" + (f" {clip(_scalar(value), VALUE_WIDTH)}" if value else "")
            kind = "key" if value and not _BLOCK_SCALAR.fullmatch(value) else "section"
            index = len(symbols)
            symbols.append(Symbol(key.strip("\"'"), kind, (shown,), parent, True, number))
        stack.append((key_indent, index, hidden))
    if not symbols:
        return None
    return Outline("yaml", source_lines, (), tuple(symbols))


def _close(stack: list[tuple[int, int, bool]], indent: int) -> None:
    """Close the mappings and items at or deeper than ``indent``: a line there is their
    sibling or an ancestor's."""
    while stack and stack[-1][0] >= indent:
        stack.pop()


def _scalar(value: str) -> str:
    """A value without its trailing comment (outside quotes)."""
    if value[:1] in "\"'":
        return value
    cut = value.find(" #")
    return value[:cut].rstrip() if cut >= 0 else value
