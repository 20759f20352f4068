"""reStructuredText outlines: section titles and the API a document describes.

Titles are found by their adornment (an underline, or an overline and underline, of one
punctuation character); levels follow the order in which adornment styles first appear, as
docutils reads them. Directives that describe an API (`.. function::`, `.. class::`,
`.. autoclass::`, any domain directive such as `.. py:method::`, and project directives with a
name-like argument such as `.. setting:: DEBUG`) are symbols under their section, nested when one
is indented in another. Each is shown with the first sentence of its description. Literal blocks,
comments and presentational directives (code, notes, images, tables) are skipped. One pass,
linear in the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from packer.outline import Outline, Symbol
from packer.summaries.text import LINE_WIDTH, clip, first_sentence, one_line

_ADORNMENT_CHARS: Final = "=-`:'\"~^_*+#<>.!$%&(),/;?@[\\]{|}"
_DIRECTIVE = re.compile(r"( *)\.\.[ \t]+([A-Za-z][\w:+.-]*)[ \t]*::(?:[ \t]+(.*))?$")
_EXPLICIT = re.compile(r" *\.\.(?:[ \t]|$)")
_FIELD = re.compile(r" *:[^:\s][^:]*:(?:[ \t]|$)")
_ROLE = re.compile(r":[\w:+.-]+:`[~!]?([^`<]{0,200}?)(?:\s*<[^`>]{0,300}>)?`")
_REFERENCE = re.compile(r"`([^`<]{1,200})`__?(?![\w`])")
_LINK = re.compile(r"`([^`<]{1,200}?)\s*<[^`>]{0,300}>`__?")
_LITERAL = re.compile(r"``([^`]{1,200})``")
_STRONG = re.compile(r"\*\*([^*]{1,200})\*\*")
_ESCAPE = re.compile(r"\\(.)")

_FUNCTIONS: Final = frozenset({"function", "autofunction", "decorator", "autodecorator"})
_METHODS: Final = frozenset({"method", "automethod", "classmethod", "staticmethod"})
_CLASSES: Final = frozenset({"class", "autoclass", "exception", "autoexception", "interface"})
_FIELDS: Final = frozenset({"attribute", "autoattribute", "property", "autoproperty"})
_CONSTANTS: Final = frozenset({"data", "autodata", "constant", "envvar", "setting", "confval"})
_MODULES: Final = frozenset({"module", "automodule"})
# Directives about presentation, not about an API: never symbols, whatever their argument.
# fmt: off
_PRESENTATION: Final = frozenset({
    "code-block", "code", "sourcecode", "highlight", "image", "figure", "literalinclude",
    "include", "raw", "admonition", "note", "warning", "tip", "hint", "seealso", "important",
    "caution", "danger", "error", "attention", "toctree", "contents", "index", "only",
    "csv-table", "list-table", "table", "rubric", "topic", "sidebar", "parsed-literal", "math",
    "container", "glossary", "versionadded", "versionchanged", "deprecated", "versionremoved",
    "tabularcolumns", "currentmodule", "default-role", "role", "meta", "title", "sectionauthor",
    "moduleauthor", "codeauthor", "highlightlang", "productionlist", "graphviz", "doctest",
    "testcode", "testoutput", "testsetup", "testcleanup", "console", "tab", "tabs", "code-tab",
    "ifconfig", "epigraph", "centered", "hlist", "line-block", "compound", "pull-quote",
    "highlights", "default-domain", "autosummary", "automodapi", "toc-tree", "plot", "replace",
    "unicode", "date", "sectnum", "header", "footer", "footnote", "citation", "target-notes",
    "class-attribute-only", "todo", "todolist", "spelling",
})
# fmt: on


def _kind(directive: str) -> str | None:
    base = directive.rsplit(":", 1)[-1].lower()
    if base in _FUNCTIONS:
        return "function"
    if base in _METHODS:
        return "method"
    if base in _CLASSES:
        return "class"
    if base in _FIELDS:
        return "field"
    if base in _CONSTANTS:
        return "constant"
    if base in _MODULES:
        return "section"
    if base in _PRESENTATION:
        return None
    return "key"


def _adornment(line: str) -> str | None:
    """The adornment character of ``line`` if it is a run of one punctuation character."""
    stripped = line.rstrip()
    if len(stripped) < 2 or stripped[0] not in _ADORNMENT_CHARS:
        return None
    return stripped[0] if stripped == stripped[0] * len(stripped) else None


def _inline(text: str) -> str:
    text = _ROLE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = _REFERENCE.sub(r"\1", text)
    text = _LITERAL.sub(r"`\1`", text)
    text = _STRONG.sub(r"\1", text)
    return _ESCAPE.sub(r"\1", text)


@dataclass
class _Open:
    """A symbol whose description is still being read."""

    index: int
    indent: int  # the directive's own indentation; its content is indented further
    depth: int  # directive nesting, for the display's indentation


class _Reader:
    def __init__(self) -> None:
        self.symbols: list[Symbol] = []
        self.head: list[str] = []
        self.styles: list[tuple[str, bool]] = []  # adornment styles in order of appearance
        self.sections: list[tuple[int, int]] = []  # (level, index) of the open sections
        self.directives: list[_Open] = []  # open directives, innermost last
        self.wanting: int | None = None  # the symbol whose first sentence comes next (-1: head)
        self.paragraph: list[str] = []

    def add_sentence(self, index: int, sentence: str, pad: str) -> None:
        if index < 0:
            self.head.append(sentence)
            return
        s = self.symbols[index]
        lines = (*s.lines, pad + sentence)
        self.symbols[index] = Symbol(s.name, s.kind, lines, s.parent, s.exported, s.line)

    def flush(self) -> None:
        if self.paragraph and self.wanting is not None:
            sentence = first_sentence(_inline(" ".join(self.paragraph)))
            if sentence:
                index = self.wanting
                pad = "  "
                if index >= 0 and not self.symbols[index].lines[0].startswith("#"):
                    first = self.symbols[index].lines[0]
                    pad = " " * (len(first) - len(first.lstrip()) + 3)  # under a directive
                self.add_sentence(index, clip(sentence, LINE_WIDTH), pad)
                self.wanting = None
        self.paragraph.clear()

    def section(self, char: str, over: bool, title: str, line: int) -> None:
        self.flush()
        style = (char, over)
        if style not in self.styles:
            self.styles.append(style)
        level = self.styles.index(style) + 1
        while self.sections and self.sections[-1][0] >= level:
            self.sections.pop()
        self.directives.clear()
        parent = self.sections[-1][1] if self.sections else -1
        title = clip(one_line(_inline(title)), LINE_WIDTH)
        index = len(self.symbols)
        shown = "#" * min(level, 6) + " " + title
        self.symbols.append(Symbol(title, "section", (shown,), parent, True, line))
        self.sections.append((level, index))
        self.wanting = index

    def directive(self, indent: int, name: str, argument: str, line: int) -> None:
        self.flush()
        while self.directives and self.directives[-1].indent >= indent:
            self.directives.pop()
        kind = _kind(name)
        if kind is None:
            return  # presentation: the section's sentence may still follow
        if not argument or not (argument[0].isalpha() or argument[0] in "_-"):
            self.wanting = None
            return
        if self.directives:
            parent, depth = self.directives[-1].index, self.directives[-1].depth + 1
        else:
            parent, depth = (self.sections[-1][1] if self.sections else -1), 0
        symbol_name = re.split(r"[\s(\[]", argument, maxsplit=1)[0].rsplit(".", 1)[-1] or argument
        shown = "  " * depth + clip(f".. {name}:: {one_line(argument)}", LINE_WIDTH)
        index = len(self.symbols)
        self.symbols.append(Symbol(symbol_name, kind, (shown,), parent, True, line))
        self.directives.append(_Open(index, indent, depth))
        self.wanting = index


def outline(text: str, source_lines: int) -> Outline | None:
    """The outline of a reStructuredText document, or None if it has no title or API
    directive."""
    reader = _Reader()
    lines = text.split("\n")
    n = len(lines)
    skip_indent: int | None = None  # inside a literal block or comment deeper than this
    i = 0
    while i < n:
        line = lines[i].rstrip("\r")
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" "))
        if skip_indent is not None:
            if not stripped or indent > skip_indent:
                i += 1
                continue
            skip_indent = None
        if not stripped:
            reader.flush()
            i += 1
            continue
        # Titles: an overline, a title and an underline; or a title and an underline.
        char = _adornment(line) if indent == 0 else None
        if char is not None and i + 2 < n:
            title = lines[i + 1].strip()
            if title and _adornment(lines[i + 2]) == char and not _adornment(lines[i + 1]):
                reader.section(char, True, title, i + 2)
                i += 3
                continue
        if indent == 0 and i + 1 < n and not reader.paragraph:
            under = _adornment(lines[i + 1])
            long_enough = under is not None and len(lines[i + 1].rstrip()) >= min(len(stripped), 3)
            if long_enough and under is not None and char is None:
                reader.section(under, False, stripped, i + 1)
                i += 2
                continue
        if char is not None and not reader.paragraph:
            reader.flush()  # a transition
            i += 1
            continue
        directive = _DIRECTIVE.match(line)
        if directive:
            reader.directive(indent, directive.group(2), (directive.group(3) or "").strip(), i + 1)
            if _kind(directive.group(2)) is None:
                skip_indent = indent  # code, images, tables, notes: not the section's prose
            i += 1
            continue
        if _EXPLICIT.match(line):
            reader.flush()
            skip_indent = indent  # a comment, a target, a footnote, a substitution
            i += 1
            continue
        if _FIELD.match(line) and reader.directives and not reader.paragraph:
            i += 1  # a directive's option (":noindex:", ":param x:")
            continue
        # Prose belongs to the innermost open directive whose content it is indented in.
        while reader.directives and indent <= reader.directives[-1].indent:
            reader.flush()
            reader.directives.pop()
        if len(reader.paragraph) < 40:
            reader.paragraph.append(stripped)
        if stripped.endswith("::"):
            reader.paragraph[-1] = (
                stripped[:-1] if not stripped[:-2].endswith(" ") else stripped[:-2]
            )
            reader.flush()
            skip_indent = indent  # the literal block that follows
        i += 1
    reader.flush()
    if not reader.symbols:
        return None
    return Outline("rst", source_lines, tuple(reader.head[:1]), tuple(reader.symbols))


def looks_like_rst(text: str) -> bool:
    """Whether a text file is reStructuredText: a directive, or a title adorned below (and
    perhaps above) with a run of one punctuation character, in its first lines."""
    lines = text[:20_000].split("\n")[:300]
    for i, line in enumerate(lines):
        if _DIRECTIVE.match(line):
            return True
        if i and lines[i - 1].strip() and not lines[i - 1].startswith(" "):
            char = _adornment(line)
            if char and char in "=-~^*#" and len(line.rstrip()) >= len(lines[i - 1].rstrip()):
                return True
    return False
