r"""Exact, offline token counts with the tokenizers agents really use.

`TokenCounter(name).count(text)` equals ``len(encoding.encode_ordinary(text))`` for the whole text
in one call: special-token text such as ``<|endoftext|>`` counts as ordinary text. The library
(bpe-openai) refuses a single call over 1,000,000 characters or 200,000 tokens, so a long text is
counted in pieces of about `PIECE_CHARS` characters, and the pieces sum to the single-call count.

Why the sum is exact
--------------------
Both encodings first split the text into pre-tokens with a regex, then run BPE on each pre-token
on its own; the count is the sum over pre-tokens. Cutting the text at position ``i`` leaves the
count unchanged when (a) no pre-token of the whole text spans ``i`` and (b) the pre-tokens before
``i`` come out the same when the text ends at ``i``. The regex has no look-behind, so scanning
the tail from a pre-token boundary reproduces the whole text's pre-tokens there. (b) can fail
only through what looks past ``i``: ``\s+$`` and the ``\s+(?!\S)`` look-ahead, both about
whitespace, so it holds whenever the character before ``i`` is not whitespace. The cuts used:

1. After ``\n`` when the next character is neither whitespace nor ``/``. No pre-token holds
   ``\n`` followed by such a character: a letter pre-token's optional lead character excludes
   ``\r\n``; a punctuation pre-token may trail ``[\r\n]`` (o200k: ``[\r\n/]``, hence the
   ``/``); whitespace pre-tokens hold only whitespace. For (b): the whitespace run ending in that
   ``\n`` is matched whole by ``\s*[\r\n]+`` with or without the text after it.
2. Before a space whose previous character is not whitespace. A space can only open a pre-token
   (the optional lead of a letter or punctuation pre-token) or sit in an all-whitespace one.
3. Between two printable ASCII characters (not space) where a digit meets a non-digit, either
   way round (``\p{N}{1,3}`` is the only pre-token holding a digit, and it holds only digits), or
   where a letter is followed by punctuation other than ``'`` (no pre-token holds a letter
   followed by punctuation, but for o200k's contraction endings such as ``'s``).

Whitespace is judged by Python's ``\s`` (`str.isspace`), a superset of the Unicode White_Space
the tokenizer's ``\s`` means, so every test errs on the safe side. Of the cuts in a piece's
window, the latest in the window's second half is taken, preferring line starts. With none in the
window, the piece may grow up to `MAX_CALL_CHARS` to reach one. Only a text with no exact cut in
that many characters (one enormous run of letters, punctuation or whitespace, which no real file
holds) is cut inside a pre-token. Such a cut can change the BPE merges next to it, so the count
can then be off, by a few tokens per cut in practice (measured: at most 1.5 per cut on long runs
of a repeated character or pattern, either way); BPE offers no general bound.
Text denser than 2 tokens per character (emoji) can pass the 200,000-token limit in 100k
characters; such a piece is recounted in smaller pieces, with the same exact cuts.

Lone surrogates are replaced on the whole text first, as the library does, so a cut cannot
separate a surrogate pair it would have joined.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import Any

from cas.display import echoed
from cas.errors import UsageError

__all__ = ["MAX_CALL_CHARS", "PIECE_CHARS", "SUPPORTED_ENCODINGS", "TokenCounter", "split_text"]

SUPPORTED_ENCODINGS = ("o200k_base", "cl100k_base")
PIECE_CHARS = 100_000
# The library refuses 1,000,000 characters in one call; stay clear of it.
MAX_CALL_CHARS = 900_000

# The module doc's cut rules 1-3 in order of preference, each with the cut's offset from the
# match start. Each match consumes one character, so `finditer` misses no cut, and rules 1 and 2
# start with a literal, which `re` scans for fast (rule 2 checks the character before the space
# with a look-behind placed after it for that reason). Look-ahead stops at `endpos`, so searching
# [lo - 1, hi + 1) finds every cut in [lo, hi].
_CUT_RULES: tuple[tuple[re.Pattern[str], int], ...] = (
    (re.compile(r"\n(?=[^\s/])"), 1),
    (re.compile(r" (?<=\S )"), 0),
    (re.compile(r"[0-9](?=[!-/:-~])|[!-/:-~](?=[0-9])|[A-Za-z](?=[!-&(-/:-@\[-`{-~])"), 1),
)

_backends: dict[str, Any] = {}
_backends_lock = threading.Lock()


def _backend(name: str) -> Any:
    """The library's native tokenizer for ``name``, built once per process.

    The native tokenizer is used directly: the library's Python layer decodes the rank tables
    of every encoding it knows into Python dicts when it is imported (over a second and about a
    hundred MiB), only to keep them beside the native tokenizer that does the work. Its native
    ``encode``/``count`` are what ``encode_ordinary`` calls (special-token text counted as
    ordinary text); the tests check the counts against ``encode_ordinary``.
    """
    with _backends_lock:
        tok = _backends.get(name)
        if tok is None:
            from cas.residency import release_clean_pages

            module = _native_module()
            tok = module.tokenizer_for_encoding(name)
            _backends[name] = tok
            # The tables it carries were read into the tokenizer: their pages need not stay.
            library = getattr(module, "__file__", None)
            if library:
                release_clean_pages(library)
        return tok


def _native_module() -> Any:
    """The library's compiled module, loaded without running the package's ``__init__``, which
    decodes the rank tables of every encoding it knows in Python (1.5 s, ~100 MiB) for its own
    pure-Python layer. The compiled module carries its own tables."""
    import importlib.machinery
    import importlib.util
    import sys

    name = "bpe_openai._bindings"
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    package = importlib.util.find_spec("bpe_openai")
    if package is None or not package.submodule_search_locations:
        raise UsageError("the bpe-openai package is not installed: pip install bpe-openai")
    for folder in package.submodule_search_locations:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = f"{folder}/_bindings{suffix}"
            try:
                spec = importlib.util.spec_from_file_location(name, path)
                if spec is None or spec.loader is None:
                    continue
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
            except (ImportError, OSError):
                continue
            sys.modules[name] = module
            return module
    from bpe_openai import _bindings  # the ordinary way, whatever it costs

    return _bindings


def _sanitize(text: str) -> str:
    # The library's own repair, applied once to the whole text: a UTF-16 round trip turns lone
    # surrogates into U+FFFD and joins an adjacent high/low pair into one character.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _last_cut(text: str, lo: int, hi: int) -> int | None:
    """The last exact cut in [lo, hi], by rule preference."""
    for rule, offset in _CUT_RULES:
        last = None
        for m in rule.finditer(text, max(lo - 1, 0), hi + 1):
            if lo <= m.start() + offset <= hi:
                last = m.start() + offset
        if last is not None:
            return last
    return None


def _first_cut(text: str, lo: int, hi: int) -> int | None:
    """The first exact cut in [lo, hi], whatever its rule."""
    found = []
    for rule, offset in _CUT_RULES:
        for m in rule.finditer(text, max(lo - 1, 0), hi + 1):
            if m.start() + offset >= lo:
                if m.start() + offset <= hi:
                    found.append(m.start() + offset)
                break
    return min(found, default=None)


def split_text(
    text: str, piece_chars: int = PIECE_CHARS, reach_chars: int = MAX_CALL_CHARS
) -> Iterator[str]:
    """Split `text` into pieces whose token counts sum to the whole text's (see module doc).

    A piece is at most `piece_chars` long when an exact cut exists in its window, else at most
    `reach_chars`; only failing that is it cut inside a pre-token, at `piece_chars`.
    """
    if piece_chars < 1:
        raise ValueError("piece_chars must be positive")
    reach_chars = max(reach_chars, piece_chars)
    start = 0
    end = len(text)
    barren = 0  # no exact cut lies in (start, barren]: a failed search is not repeated
    while end - start > piece_chars:
        hi = start + piece_chars
        cut = None
        if hi > barren:
            half = max(start + piece_chars // 2, barren + 1, start + 1)
            cut = _last_cut(text, half, hi)
            if cut is None:
                cut = _last_cut(text, max(start + 1, barren + 1), half - 1)
        if cut is None:
            if end - start <= reach_chars:
                break
            cut = _first_cut(text, max(hi, barren) + 1, start + reach_chars)
            if cut is None:
                barren = start + reach_chars
                cut = hi
        yield text[start:cut]
        start = cut
    if start < end:
        yield text[start:]


class TokenCounter:
    """Counts tokens of one encoding; safe to share between threads."""

    def __init__(self, encoding: str = "o200k_base", *, piece_chars: int = PIECE_CHARS) -> None:
        if encoding not in SUPPORTED_ENCODINGS:
            raise UsageError(
                f"unknown tokenizer {echoed(encoding)}; use one of {', '.join(SUPPORTED_ENCODINGS)}"
            )
        if piece_chars < 1:
            raise ValueError("piece_chars must be positive")
        self.name = encoding
        self._piece_chars = piece_chars
        self._tok: Any = None  # the native tokenizer, once counted with

    def __repr__(self) -> str:
        return f"TokenCounter({self.name!r})"

    def __getstate__(self) -> dict[str, Any]:
        # The native tokenizer stays in its process: a copy builds its own when it counts.
        return {**self.__dict__, "_tok": None}

    def count(self, text: str) -> int:
        """The number of tokens in `text`, as one `encode_ordinary` call would count them."""
        if not text:
            return 0
        if not text.isascii():  # known without reading it; ASCII has nothing to repair
            text = _sanitize(text)
        tok = self._tok
        if tok is not None and len(text) <= self._piece_chars:
            # A pack counts tens of thousands of short lines: the one call, nothing around it.
            return int(tok.count(text))
        return self._count(text, self._piece_chars, MAX_CALL_CHARS)

    def _count(self, text: str, piece_chars: int, reach_chars: int) -> int:
        # Built on first use, not in __init__: a pack whose inputs are unchanged never counts.
        tok = self._tok = _backend(self.name)
        if len(text) <= piece_chars:
            return int(tok.count(text))
        return sum(int(tok.count(piece)) for piece in split_text(text, piece_chars, reach_chars))
