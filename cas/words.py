"""The terms of a text that the search index keeps, found in one pass: native where built.

A body's terms are what a search can ask for. Each is kept as a 64-bit key (`key`: FNV-1a over
its UTF-8 bytes) with the set of windows of the body that hold it (a 32-bit mask):

* every word, lowercased: a run of ASCII letters, digits and ``_`` (``with_context``,
  ``newrouter``, ``404``); a run holding non-ASCII bytes is read as UTF-8, composed (NFC) and
  split into words of any script (`WORD`), each lowercased by Python's rules (``Größe`` ->
  ``größe``), with the words inside a compound one (``größeWert`` -> ``größe``, ``wert``);
* the words inside a compound ASCII word (`split_name`: ``with_context`` -> ``with``,
  ``context``; ``HTTPServerError`` -> ``http``, ``server``, ``error``), so ``router`` finds
  ``NewRouter``;
* dotted names: two to `MAX_CHAIN` identifiers joined by ``.`` or ``::`` with nothing between
  (``os.path.join`` gives ``os.path``, ``path.join``, ``os.path.join``), so a query's dotted name
  is one lookup;
* definitions: ``\\x01name`` where a line defines ``name`` at its top level (a declaration
  keyword before it, ``def``, ``class``, ``func``, ``fn``, ``interface``...; or ``name = ...`` at
  the start of a line), ``\\x02name`` where an indented line does.

Windows: a body of L lines is cut into windows of ``max(WINDOW, ceil(L / 32))`` lines, so no body
has more than 32 and the mask holds them all. Only the first `MAX_INDEXED` bytes of a body are
read: a larger body is a log or a dump, and its start says what it is.

`index_terms` is the one entry point. ``cas._words`` (C, built with the package where a compiler
is present) computes the same result as the Python here, much faster; the tests compare both on
random texts, so a machine without the extension gets the same index, only slower.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from array import array
from functools import lru_cache
from typing import Any, Final, NamedTuple

WINDOW: Final = 40  # the fewest lines a window has
MAX_WINDOWS: Final = 32  # bits of a mask
MAX_CHAIN: Final = 4  # the longest dotted name kept whole
MAX_INDEXED: Final = 4 << 20  # bytes of a body read for its terms
TOP_DEF: Final = b"\x01"
NESTED_DEF: Final = b"\x02"
DEF_KEYWORDS: Final = frozenset(
    b"def class func fn function type interface struct trait enum const let var module impl "
    b"macro_rules object record protocol extension defmacro".split()
)

_FNV_OFFSET: Final = 0xCBF29CE484222325
_FNV_PRIME: Final = 0x100000001B3
_MASK64: Final = (1 << 64) - 1

_TOKEN = re.compile(rb"[A-Za-z0-9_\x80-\xff]+")
_IDENT_START = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_WORD_PIECES = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
# A word in any script: a letter or ``_``, then letters, digits, ``_`` and the combining
# diacritics U+0300-U+036F (which stay inside a word: ``Größe``, ``Привет``, ``検索エンジン``).
WORD = re.compile(r"[^\W\d][\w\u0300-\u036f]*")


def key(term: bytes) -> int:
    """The 64-bit key of a term: FNV-1a of its bytes."""
    h = _FNV_OFFSET
    for byte in term:
        h = ((h ^ byte) * _FNV_PRIME) & _MASK64
    return h


@lru_cache(maxsize=1 << 16)
def split_name(name: str) -> tuple[str, ...]:
    """The lowercase words of an identifier: ``with_context`` -> (with, context),
    ``HTTPServerError`` -> (http, server, error), ``parse2`` -> (parse, 2); in any script
    (``größeWert`` -> (größe, wert); a script without case, ``検索エンジン``, is one word)."""
    out: list[str] = []
    for piece in name.split("_"):
        if piece.isascii():
            out.extend(w.lower() for w in _WORD_PIECES.findall(piece))
        else:
            out.extend(piece[a:b].lower() for a, b in _pieces_of(piece))
    return tuple(out)


def _pieces_of(piece: str) -> list[tuple[int, int]]:
    """Where the words of a non-ASCII identifier are, by the rule ASCII ones follow: each
    character stands for its class (an upper-case letter A, any other letter a, a digit 0,
    anything else -; a combining mark goes with its letter), and the same pattern cuts that
    string."""
    shape = "".join(
        "A"
        if ch.isupper()
        else "a"
        if ch.isalpha() or unicodedata.category(ch).startswith("M")
        else "0"
        if ch.isdigit()
        else "-"
        for ch in piece
    )
    return [m.span() for m in _WORD_PIECES.finditer(shape)]


def unicode_words(token: bytes) -> list[bytes]:
    """The terms of a run of word bytes holding non-ASCII ones, as UTF-8: its words (`WORD`,
    after NFC), lowercased, and the words inside each compound one (`split_name`)."""
    text = unicodedata.normalize("NFC", token.decode("utf-8", errors="replace"))
    out: list[bytes] = []
    for word in WORD.findall(text):
        out.append(word.lower().encode("utf-8"))
        pieces = split_name(word)
        if len(pieces) > 1:
            out.extend(p.encode("utf-8") for p in pieces)
    return out


def width(lines: int) -> int:
    """Lines per window of a body of ``lines`` lines."""
    return max(WINDOW, -(-lines // MAX_WINDOWS))


def line_count(data: bytes) -> int:
    """Lines of a text as an editor numbers them (a final newline ends the last line)."""
    if not data:
        return 0
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def prepared(data: bytes) -> bytes:
    """The bytes whose terms are indexed: the first `MAX_INDEXED`, without a UTF-8 BOM."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return data[:MAX_INDEXED]


class Terms(NamedTuple):
    """A body's terms: ``keys`` (in no particular order, each once), ``masks`` the windows of
    each, ``lines`` the body's line count (of the bytes read) and ``width`` the lines per
    window."""

    keys: array[int]  # "Q"
    masks: array[int]  # "I"
    lines: int
    width: int

    def pairs(self) -> dict[int, int]:
        """Key -> windows."""
        return dict(zip(self.keys, self.masks, strict=True))


def index_terms(data: bytes) -> Terms:
    """The terms of a body (see the module docstring)."""
    data = prepared(data)
    native = native_module()
    if native is not None:
        raw_keys, raw_masks, lines, wide, spans = native.terms(data, WINDOW, MAX_WINDOWS, MAX_CHAIN)
        keys = array("Q", raw_keys)
        masks = array("I", raw_masks)
        if sys.byteorder == "big":
            keys.byteswap()
            masks.byteswap()
        if not spans:
            return Terms(keys, masks, lines, wide)
        found = dict(zip(keys, masks, strict=True))
        # Runs holding non-ASCII bytes are split into Unicode words here, as Python does.
        for start, end, bit in spans:
            for word in unicode_words(data[start:end]):
                k = key(word)
                found[k] = found.get(k, 0) | bit
        return _terms(found, lines, wide)
    return python_terms(data)


def _terms(found: dict[int, int], lines: int, wide: int) -> Terms:
    return Terms(array("Q", found), array("I", found.values()), lines, wide)


def python_terms(data: bytes) -> Terms:
    """`index_terms` in Python alone, on bytes already `prepared` (the reference the native
    version is tested against)."""
    lines = line_count(data)
    wide = width(lines)
    found: dict[int, int] = {}

    def add(term: bytes, bit: int) -> None:
        k = key(term)
        found[k] = found.get(k, 0) | bit

    line = 0
    scanned = 0  # bytes before this have been counted into ``line``
    line_start = 0
    chain: list[bytes] = []  # the dotted name ending at the previous token, lowercased
    chain_end = -1
    for m in _TOKEN.finditer(data):
        start, end = m.span()
        newline = data.rfind(b"\n", scanned, start)
        if newline >= 0:
            line += data.count(b"\n", scanned, start)
            line_start = newline + 1
        scanned = start
        bit = 1 << (line // wide)
        token = m.group(0)
        if not token.isascii():
            for word in unicode_words(token):
                add(word, bit)
            chain, chain_end = [], -1
            continue
        lowered = token.lower()
        add(lowered, bit)
        if token[0] not in _IDENT_START:
            chain, chain_end = [], -1
            continue
        pieces = split_name(token.decode("ascii"))
        if len(pieces) > 1:
            for piece in pieces:
                add(piece.encode("ascii"), bit)
        joined = chain_end >= 0 and (
            (start - chain_end == 1 and data[chain_end] == 0x2E)
            or (start - chain_end == 2 and data[chain_end:start] == b"::")
        )
        chain = [*chain[-(MAX_CHAIN - 1) :], lowered] if joined else [lowered]
        for n in range(2, len(chain) + 1):
            add(b".".join(chain[-n:]), bit)
        chain_end = end
        definition = _definition(data, start, end, token, line_start)
        if definition is not None:
            add(definition, bit)
    return _terms(found, lines, wide)


def _definition(data: bytes, start: int, end: int, token: bytes, line_start: int) -> bytes | None:
    """The definition term an identifier at ``data[start:end]`` makes, if any (see the module
    docstring): the name after a declaration keyword, or the name assigned first on a line."""
    marker = NESTED_DEF if data[line_start : line_start + 1] in (b" ", b"\t") else TOP_DEF
    if token in DEF_KEYWORDS:
        # The keyword, blanks, an optional receiver in parentheses on the line, the name.
        at = end
        if token == b"macro_rules":
            if data[at : at + 1] != b"!":
                return None
            at += 1
        blanks = _skip_blanks(data, at)
        if blanks == at:
            return None
        at = blanks
        if data[at : at + 1] == b"(":
            close = data.find(b")", at)
            newline = data.find(b"\n", at)
            if close < 0 or 0 <= newline < close:
                return None
            at = _skip_blanks(data, close + 1)
        m = _TOKEN.match(data, at)
        if m is None or not m.group(0).isascii() or m.group(0)[0] not in _IDENT_START:
            return None
        return marker + m.group(0).lower()
    # ``name = ...`` or ``name: type = ...``, the name first on its line after blanks and an
    # optional ``export`` and ``pub``.
    if start not in _name_starts(data, line_start):
        return None
    at = _skip_blanks(data, end)
    if data[at : at + 1] == b":":
        newline = data.find(b"\n", at)
        at = data.find(b"=", at, len(data) if newline < 0 else newline)
        if at < 0:
            return None
    if data[at : at + 1] == b"=" and data[at + 1 : at + 2] not in (b"=", b""):
        return marker + token.lower()
    return None


def _name_starts(data: bytes, line_start: int) -> tuple[int, ...]:
    """Where an assigned name may start on the line at ``line_start``: after its blanks, after
    ``export`` and blanks, after ``pub`` and blanks, or after both."""
    first = _skip_blanks(data, line_start)
    out = [first]
    for at in (first, *_after_word(data, first, b"export")):
        out.extend(_after_word(data, at, b"pub"))
    out.extend(_after_word(data, first, b"export"))
    return tuple(out)


def _after_word(data: bytes, at: int, word: bytes) -> tuple[int, ...]:
    """The position after ``word`` and at least one blank at ``at``, if it is there."""
    end = at + len(word)
    if not data.startswith(word, at):
        return ()
    after = _skip_blanks(data, end)
    return (after,) if after > end else ()


def _skip_blanks(data: bytes, at: int) -> int:
    while at < len(data) and data[at] in (32, 9):
        at += 1
    return at


_NATIVE: list[Any] = []


def native_module() -> Any:
    """The C implementation, or None where it was not built."""
    if not _NATIVE:
        try:
            from cas import _words

            _NATIVE.append(_words)
        except ImportError:
            _NATIVE.append(None)
    return _NATIVE[0]
