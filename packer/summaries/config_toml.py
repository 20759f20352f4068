"""TOML outlines: every table is a section, every key a symbol with its (short) value.

`[project.scripts]` is shown with its entries, `[tool.ruff]` with its settings, so a reader
sees a project's entry points, dependencies and tool configuration without the whole file. A
scanner rather than a parser: it reads a file that does not parse too (a template, a file with
one mistake), in one pass, linear in the text.
"""

from __future__ import annotations

import re
from typing import Final

from packer.outline import Outline, Symbol
from packer.summaries.text import clip, one_line

MAX_SYMBOLS: Final = 2000  # a generated data file is not read key by key
VALUE_WIDTH: Final = 100
# Greedy, with no two neighbours that could match the same characters: linear on any line.
_HEADER = re.compile(r"[ \t]*(\[\[?)([^\[\]\n]+)\]\]?[ \t]*(?:#.*)?$")
_KEY_PART = r"(?:[A-Za-z0-9_-]+|\"[^\"\n]*\"|'[^'\n]*')"  # bare, "quoted" or 'literal'
_KEY = re.compile(rf"[ \t]*({_KEY_PART}(?:[ \t]*\.[ \t]*{_KEY_PART})*)[ \t]*=")
_TRAILING_COMMA = re.compile(r",\s*([\]}])")
_OPEN_SPACE = re.compile(r"([\[{])\s+")


def outline(text: str, source_lines: int) -> Outline | None:
    """The tables and keys of a TOML text, or None if it has none."""
    lines = text.split("\n")
    symbols: list[Symbol] = []
    table = -1
    i = 0
    while i < len(lines) and len(symbols) < MAX_SYMBOLS:
        line = lines[i]
        header = _HEADER.match(line)
        if header:
            name = one_line(header.group(2))
            brackets = header.group(1)
            shown = f"{brackets}{name}{']' * len(brackets)}"
            table = len(symbols)
            # A tool's own settings (`[tool.ruff]`) are not what the file tells of the project.
            public = not name.startswith("tool.")
            symbols.append(Symbol(name, "section", (shown,), -1, public, i + 1))
            i += 1
            continue
        key = _KEY.match(line)
        if key:
            value, i_next = _value(lines, i, key.end())
            name = one_line(key.group(1))
            pad = "  " if table >= 0 else ""
            shown = f"{pad}{name} = {clip(value, VALUE_WIDTH)}"
            public = table < 0 or symbols[table].exported
            symbols.append(Symbol(name, "key", (shown,), table, public, i + 1))
            i = i_next
            continue
        i += 1
    if not symbols:
        return None
    return Outline("toml", source_lines, (), tuple(symbols))


def _value(lines: list[str], i: int, col: int) -> tuple[str, int]:
    """The value that starts at ``lines[i][col:]`` on one line, comments left out, and the
    index of the line after it. Strings (multi-line ones too), arrays and inline tables may span
    lines; every character is looked at once, and only the first few hundred are kept."""
    kept: list[str] = []
    size = 0
    quote = ""
    depth = 0
    line = lines[i][col:]
    while True:
        end, quote, depth = _scan(line, quote, depth)
        if size <= VALUE_WIDTH * 2:
            piece = line[:end].strip()
            kept.append(piece)
            size += len(piece)
        i += 1
        if (not quote and depth <= 0) or i >= len(lines):
            break
        line = lines[i]
    value = " ".join(p for p in kept if p)
    if len(kept) > 1:  # an array or table written over lines, shown as if on one
        value = _OPEN_SPACE.sub(r"\1", _TRAILING_COMMA.sub(r"\1", value))
    return value, i


def _scan(line: str, quote: str, depth: int) -> tuple[int, str, int]:
    """Read one line of a value: where its comment starts (or its length), the string still
    open at its end (only a multi-line one can be) and the bracket depth."""
    j, n = 0, len(line)
    while j < n:
        c = line[j]
        if quote:
            if c == "\\" and quote[0] == '"':
                j += 2
            elif line.startswith(quote, j):
                j += len(quote)
                quote = ""
            else:
                j += 1
            continue
        if c in "\"'":
            quote = c * 3 if line.startswith(c * 3, j) else c
            j += len(quote)
            continue
        if c == "#":
            return j, quote, depth
        if c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
        j += 1
    return n, ("" if len(quote) == 1 else quote), depth
