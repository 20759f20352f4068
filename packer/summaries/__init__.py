"""Summaries as outlines: one summarizer per language, one entry point.

``outline(path, text)`` reads a file once into an `Outline` (see `packer.outline`): the head a
summary always shows and every symbol it may show. How a file is outlined is in its language's
record (`packer.lang.Language.outline`): Python is read with `ast` (`packer.summaries.python`);
Markdown, reStructuredText, TOML, YAML and JSON with small scanners of their own (`OUTLINERS`);
the languages whose record names a tree-sitter grammar with it, a tag query each and the
language module's `HOOKS`; anything else, or anything a summarizer cannot read, as its first
lines.

The outline depends on the path only through its language (`packer.lang.language_for`),
so callers cache it by content digest, language and `SUMMARY_VERSION`. It never raises, is
deterministic, takes time linear in the text, holds no line break inside a line and encodes as
UTF-8 whatever the text held (lone surrogates included).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from packer.lang import LANGUAGES, Language, language_for, named
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
SUMMARY_VERSION: Final = "9"

_Summarizer = Callable[[str, int], Outline | None]

# The outliners and the tree-sitter hooks a record's `Outlining.summarizer` names.
OUTLINERS: Final[dict[str, _Summarizer]] = {
    "python": python.outline,
    "markdown": markdown.outline,
    "rst": rst.outline,
    "toml": config_toml.outline,
    "yaml": config_yaml.outline,
    "json": config_json.outline,
}
HOOKS: Final[dict[str, treesitter.Hooks]] = {
    "": treesitter.Hooks(),
    "typescript": typescript.HOOKS,
    "go": go.HOOKS,
    "rust": rust.HOOKS,
    "java": java.HOOKS,
    "cfamily": cfamily.HOOKS,
    "csharp": csharp.HOOKS,
    "ruby": ruby.HOOKS,
    "php": php.HOOKS,
    "kotlin": kotlin.HOOKS,
    "swift": swift.HOOKS,
}
# Whether a text is in a language, for a record's `Outlining.sniff`, by that language's name.
SNIFFERS: Final[dict[str, Callable[[str], bool]]] = {
    "cpp": cfamily.looks_like_cpp,
    "rst": rst.looks_like_rst,
}


def _summarizer(language: Language) -> _Summarizer | None:
    """How ``language``'s files are outlined, from its record; None: by their first lines."""
    how = language.outline
    if how is None or not (how.grammar or how.summarizer):
        return None
    if not how.grammar:
        return OUTLINERS[how.summarizer]
    spec = treesitter.Spec(
        language.name, how.grammar, how.query, language.comment, HOOKS[how.summarizer]
    )
    return lambda text, lines: treesitter.outline(spec, text, lines)


_SUMMARIZERS: Final[dict[str, _Summarizer]] = {
    language.name: found for language in LANGUAGES if (found := _summarizer(language)) is not None
}


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
    record = named(lang)
    how = record.outline if record is not None else None
    if how is not None and how.sniff and SNIFFERS[how.sniff](text):
        lang = how.sniff
        record = named(lang)
        how = record.outline if record is not None else None
    summarizer = _SUMMARIZERS.get(lang)
    found: Outline | None = None
    if summarizer is not None:
        try:
            found = summarizer(text, lines)
        except (RecursionError, MemoryError, ValueError, UnicodeError):
            found = None  # odd input a parser gave up on: the first lines instead
    if found is None:
        shown = how.plain if how is not None and how.plain else lang
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


__all__ = ["HOOKS", "OUTLINERS", "SNIFFERS", "SUMMARY_VERSION", "outline"]
