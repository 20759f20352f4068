"""How names from outside (file paths, pack and remote names, reasons that quote them) are shown.

A file name may hold any character but ``/`` and NUL: a newline can forge a line of a report or
a heading of a render, ESC and CR can rewrite a terminal, bidirectional controls can make a name
read backwards, and bytes that are not UTF-8 cannot be printed at all. `shown` gives a form that
is safe on one line and unambiguous, the way git quotes paths: a name with nothing to escape is
shown as it is; any other is put in double quotes, with a backslash escape for each character
that needs one (``\\n``, ``\\x1b``, ``\\u202e``) and for ``\\`` and ``"`` themselves. ``\\xNN``
stands for one byte (a C0 control, DEL, or a byte that is not UTF-8, which Python carries as a
lone surrogate); ``\\uXXXX`` for a code point. JSON output keeps the real string instead, with
the same characters escaped the JSON way (`json_safe`).

An error that echoes what it was given (a query, a scope, a name, a path) shows at most
`ECHO_LIMIT` characters of it and says how many it left out (`echoed`), so a megabyte of input
never makes a megabyte of error line.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

# Categories escaped: controls (C0, DEL, C1), format characters (bidi controls, zero-width
# characters), line and paragraph separators, and surrogates (undecodable bytes).
_ESCAPED_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_SHORT: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\", '"': '\\"'}
_NOT_ASCII_PRINTABLE = re.compile("[^\x00-\x7e]")


def needs_escape(ch: str) -> bool:
    return unicodedata.category(ch) in _ESCAPED_CATEGORIES


def _escape_char(ch: str) -> str:
    short = _SHORT.get(ch)
    if short is not None:
        return short
    code = ord(ch)
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _plain(text: str) -> bool:
    # isprintable() is False for every category escaped here (and a few more, such as a
    # no-break space): a True answer, the usual one, spares the look at each character
    return text.isprintable() or not any(needs_escape(ch) for ch in text)


def shown(name: str) -> str:
    """``name`` as it is if nothing in it needs escaping, else quoted and escaped."""
    if not name.startswith('"') and _plain(name):
        return name
    body = "".join(_escape_char(ch) if ch in _SHORT or needs_escape(ch) else ch for ch in name)
    return f'"{body}"'


def one_line(text: str) -> str:
    """A free-form line (an error message, a note, a report line built elsewhere) with every
    character `shown` would escape written as its escape, without quotes: it stays one line
    and cannot act on a terminal. Names inside it should have gone through `shown` already."""
    if _plain(text):
        return text
    return "".join(_escape_char(ch) if needs_escape(ch) else ch for ch in text)


ECHO_LIMIT: Final = 200


def more_characters(more: int) -> str:
    """What follows the part of a value that was shown: ``... (1,048,566 more characters)``
    (nothing when nothing was left out)."""
    return f"... ({more:,} more character{'s' if more != 1 else ''})" if more > 0 else ""


def echoed(value: str, *, quoted: bool = True, limit: int = ECHO_LIMIT) -> str:
    """An outside value as an error line echoes it: its first ``limit`` characters, in single
    quotes with Python's escapes (``quoted``) or as `shown` writes a name, followed by how many
    characters were left out: ``'the the th'... (1,048,566 more characters)``."""
    head = value[:limit]
    return (repr(head) if quoted else shown(head)) + more_characters(len(value) - len(head))


_LONG_QUOTE: Final = re.compile(f"'([^'\\n]{{{ECHO_LIMIT + 1},}})'")


def echoes_cut(message: str) -> str:
    """A message built elsewhere (click's, which quotes the value it refuses) with every quoted
    value longer than `ECHO_LIMIT` cut as `echoed` cuts one."""

    def cut(match: re.Match[str]) -> str:
        body = match.group(1)
        return f"'{body[:ECHO_LIMIT]}'" + more_characters(len(body) - ECHO_LIMIT)

    return _LONG_QUOTE.sub(cut, message)


def _json_escape(match: re.Match[str]) -> str:
    ch = match.group()
    if not needs_escape(ch):
        return ch
    code = ord(ch)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # JSON writes a code point above the BMP as a surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_safe(text: str) -> str:
    """A JSON document's text with characters a terminal could act on (C1 controls, bidi and
    other format characters, line separators, lone surrogates) written as ``\\uXXXX`` escapes:
    the same JSON value, printable on any terminal and encodable as UTF-8."""
    return _NOT_ASCII_PRINTABLE.sub(_json_escape, text)


def human_bytes(n: float) -> str:
    """A byte count as people read it: ``512 B``, ``1.5 KiB``, ``3.2 GiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")
