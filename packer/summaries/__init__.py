"""Summaries as outlines: one summarizer per language, one entry point.

``outline(path, text)`` reads a file once into an `Outline` (see `packer.outline`): the head a
summary always shows and every symbol it may show. Python is read with `ast`
(`packer.summaries.python`); Markdown, reStructuredText, TOML, YAML and JSON with small
scanners of their own; the languages of ``packer.summaries.treesitter``'s table with tree-sitter
and a tag query each; anything else, or anything a summarizer cannot read, as its first lines.

The outline depends on the path only through its language (`packer.languages.language_for`),
so callers cache it by content digest, language and `SUMMARY_VERSION`. It never raises, is
deterministic, takes time linear in the text, holds no line break inside a line and encodes as
UTF-8 whatever the text held (lone surrogates included).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

from packer.languages import language_for
from packer.outline import Outline, Symbol
from packer.summaries import (
    cfamily,
    config_json,
    config_toml,
    config_yaml,
    csharp,
    go,
    java,
    kotlin,
    markdown,
    php,
    python,
    rst,
    ruby,
    rust,
    swift,
    treesitter,
    typescript,
)
from packer.summaries.text import clean, plain_symbols, valid

# Outlines are cached by content digest, language and this version: bump it whenever an
# outline of the same text changes.
SUMMARY_VERSION: Final = "2"

_Summarizer = Callable[[str, int], Outline | None]


def _tree_sitter(spec: treesitter.Spec) -> _Summarizer:
    return lambda text, lines: treesitter.outline(spec, text, lines)


_SUMMARIZERS: Final[dict[str, _Summarizer]] = {
    "python": python.outline,
    "markdown": markdown.outline,
    "rst": rst.outline,
    "toml": config_toml.outline,
    "yaml": config_yaml.outline,
    "json": config_json.outline,
    "typescript": _tree_sitter(typescript.SPEC_TS),
    "tsx": _tree_sitter(typescript.SPEC_TSX),
    "javascript": _tree_sitter(typescript.SPEC_JS),
    "go": _tree_sitter(go.SPEC),
    "rust": _tree_sitter(rust.SPEC),
    "java": _tree_sitter(java.SPEC),
    "c": _tree_sitter(cfamily.SPEC_C),
    "cpp": _tree_sitter(cfamily.SPEC_CPP),
    "csharp": _tree_sitter(csharp.SPEC),
    "ruby": _tree_sitter(ruby.SPEC),
    "php": _tree_sitter(php.SPEC),
    "kotlin": _tree_sitter(kotlin.SPEC),
    "swift": _tree_sitter(swift.SPEC),
}

# A C++ header named .h: the C grammar would read little of it.
_CPP_SNIFF: Final = 200_000
_CPP_HINT = re.compile(
    r"^[ \t]*(?:namespace[ \t]+\w|template[ \t]*<|class[ \t]+\w+[^;\n]*\{|"
    r"(?:public|private|protected)[ \t]*:|#include[ \t]*<[a-z_]+>[ \t]*$)|std::",
    re.MULTILINE,
)


def outline(path: str, text: str) -> Outline:
    """The outline of ``text``, the content of ``path``. Never raises."""
    lang = language_for(path) or "text"
    lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    try:
        text = valid(text)
        return _checked(_outline(lang, text, lines))
    except Exception:  # a summary must never fail a pack: the first lines still say something
        try:
            return Outline(lang, lines, (), tuple(plain_symbols(text)))
        except Exception:
            return Outline(lang, lines)


def _outline(lang: str, text: str, lines: int) -> Outline:
    if lang == "c" and _CPP_HINT.search(text[:_CPP_SNIFF]):
        lang = "cpp"
    if lang == "text" and rst.looks_like_rst(text):
        lang = "rst"  # Sphinx projects often write their docs as .txt
    summarizer = _SUMMARIZERS.get(lang)
    found: Outline | None = None
    if summarizer is not None:
        try:
            found = summarizer(text, lines)
        except (RecursionError, MemoryError, ValueError, UnicodeError):
            found = None  # odd input a parser gave up on: the first lines instead
    if found is None:
        shown = "text" if lang == "rst" else lang
        return Outline(shown, lines, (), tuple(plain_symbols(text)))
    return found


def _checked(o: Outline) -> Outline:
    """``o`` with every line made a single clean line and every parent pointing backwards."""
    symbols = tuple(
        Symbol(
            clean(s.name),
            s.kind,
            tuple(clean(line) for line in s.lines),
            s.parent if 0 <= s.parent < i else -1,
            s.exported,
            s.line,
        )
        for i, s in enumerate(o.symbols)
    )
    head = tuple(clean(line) for line in o.head)
    return Outline(clean(o.lang), o.source_lines, head, symbols)


__all__ = ["SUMMARY_VERSION", "outline"]
