"""JSON outlines: the keys of the first three levels of objects, with their short values.

A package.json shows its name, entry points (`main`, `exports`, `bin`), scripts and
dependencies; a tsconfig.json its compiler options. Comments and trailing commas (JSONC, as in
tsconfig and VS Code settings) are tolerated. Arrays are shown inline when short, else by their
length. Key lines are not numbered: the parser does not say where a key sits.
"""

from __future__ import annotations

import json
from typing import Final

from packer.outline import Outline, Symbol
from packer.summaries.text import clip

MAX_SYMBOLS: Final = 2000
MAX_DEPTH: Final = 3
VALUE_WIDTH: Final = 100


def outline(text: str, source_lines: int) -> Outline | None:
    """The key outline of a JSON text, or None if it is not JSON (with comments) or holds no
    object."""
    data = _load(text)
    if data is None:
        return None
    symbols: list[Symbol] = []
    if isinstance(data, dict):
        _walk(data, -1, 0, symbols)
    elif isinstance(data, list):
        shown = f"[{len(data)} item{'' if len(data) == 1 else 's'}]"
        symbols.append(Symbol("[]", "section", (shown,), -1, True, 1))
        if data and isinstance(data[0], dict):
            _walk(data[0], 0, 1, symbols)  # the shape of the records, from the first one
    if not symbols:
        return None
    return Outline("json", source_lines, (), tuple(symbols))


def _walk(obj: dict[str, object], parent: int, depth: int, symbols: list[Symbol]) -> None:
    pad = "  " * depth
    for key, value in obj.items():
        if len(symbols) >= MAX_SYMBOLS:
            return
        name = json.dumps(key, ensure_ascii=False)
        if isinstance(value, dict) and value and depth + 1 < MAX_DEPTH:
            index = len(symbols)
            symbols.append(Symbol(key, "section", (f"{pad}{name}:",), parent, True, 0))
            _walk(value, index, depth + 1, symbols)
        else:
            shown = f"{pad}{name}: {_short(value)}"
            symbols.append(Symbol(key, "key", (shown,), parent, True, 0))


def _short(value: object) -> str:
    if isinstance(value, list | dict):
        if len(value) > VALUE_WIDTH // 2:
            return _count(value)
        text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
        return text if len(text) <= VALUE_WIDTH else _count(value)
    return clip(json.dumps(value, ensure_ascii=False), VALUE_WIDTH)


def _count(value: list[object] | dict[str, object]) -> str:
    n = len(value)
    if isinstance(value, dict):
        return f"{{{n} key{'' if n == 1 else 's'}}}"
    return f"[{n} item{'' if n == 1 else 's'}]"


def _load(text: str) -> object:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    try:
        return json.loads(_strip_jsonc(text))
    except (ValueError, RecursionError):
        return None


def _strip_jsonc(text: str) -> str:
    """``text`` without // and /* */ comments and trailing commas, strings untouched."""
    out: list[str] = []
    i, n = 0, len(text)
    start = 0
    pending_comma = -1  # index in ``out`` of a comma that a closing bracket may make trailing
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c == "/" and text.startswith("//", i):
            out.append(text[start:i])
            end = text.find("\n", i)
            i = start = n if end < 0 else end
            continue
        if c == "/" and text.startswith("/*", i):
            out.append(text[start:i])
            end = text.find("*/", i + 2)
            i = start = n if end < 0 else end + 2
            continue
        if c == ",":
            out.append(text[start:i])
            out.append(",")
            pending_comma = len(out) - 1
            i = start = i + 1
            continue
        if c in "]}" and pending_comma >= 0:
            out.append(text[start:i])
            if not "".join(out[pending_comma + 1 :]).strip():
                out[pending_comma] = ""
            pending_comma = -1
            start = i
        elif not c.isspace():
            pending_comma = -1
        i += 1
    out.append(text[start:])
    return "".join(out)
