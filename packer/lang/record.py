"""The shape of what cas knows of one language: a `Language` record and the parts it is made of.

A record is data. Where a stage needs code for a language (a lexicon reader, an outline's
export rule, a way to resolve imports), the record names it, and the stage keeps the code in a
table of its own under that name: `packer.lexicon` its readers (`Reader`), `packer.surface` its
module systems (`ModuleSystem`), `packer.summaries` its outliners and tree-sitter hooks
(`Outlining.summarizer`). So the table of languages (`packer.lang.registry`) imports nothing
of the stages, every stage may import it, and a language that reads like one already known
needs no code at all.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

# What a file of the language is to a pack: code (the reference graph rates it), a document
# (prose that names code: its lexicon keeps the names and paths it mentions), configuration, or
# text the packer shows but does not read.
Kind = Literal["code", "document", "config", "text"]
KINDS: Final[tuple[Kind, ...]] = ("code", "document", "config", "text")

# The lexicon's readers (`packer.lexicon`), by name.
Reader = Literal[
    "python", "go", "javascript", "rust", "java", "c", "cpp", "ruby", "generic", "shell",
    "document",
]  # fmt: skip
READERS: Final[tuple[Reader, ...]] = (
    *("python", "go", "javascript", "rust", "java", "c", "cpp", "ruby", "generic", "shell"),
    "document",
)

# How a language's files name each other (`packer.surface.Layout.resolve`): Python's dotted
# modules and packages, JavaScript's relative paths and package name, Go's module path and
# package folders, Rust's crate paths and `mod`, C's `#include`, dotted package names that end
# in a file (Java, Kotlin, Scala), a namespace (C#), a path relative to the file or a tail of
# one (Ruby, PHP, Lua, shell), the paths a document mentions.
ModuleSystem = Literal[
    "python", "javascript", "go", "rust", "include", "dotted", "namespace", "relative",
    "document",
]  # fmt: skip
MODULE_SYSTEMS: Final[tuple[ModuleSystem, ...]] = (
    *("python", "javascript", "go", "rust", "include", "dotted", "namespace", "relative"),
    "document",
)

# Names are ASCII identifiers; a declaration's pattern captures one after its keyword.
IDENT: Final = rb"([A-Za-z_][A-Za-z0-9_]*)"

# What may stand between a declaration's keyword and its name, and the forms of names: each a
# regular expression, named, in a fixed order. The lexicon's scan in C (`cas/_words.c`,
# `declarations`) matches each by its place in these tables, as the expression does.
Gap = Literal["blanks", "any_blanks", "star", "receiver"]
GAPS: Final[dict[Gap, bytes]] = {
    "blanks": rb"[ \t]+",
    "any_blanks": rb"[ \t]*",  # `macro_rules!name`
    "star": rb"(?:[ \t]*\*[ \t]*|[ \t]+)",  # a generator's star: `function* name`
    "receiver": rb"[ \t]*\([^)\n]*\)[ \t]*",  # a Go method's receiver: `func (r *T) Name`
}
NameForm = Literal["ident", "js", "dotted"]
NAMES: Final[dict[NameForm, bytes]] = {
    "ident": IDENT,
    "js": rb"([A-Za-z_$][A-Za-z0-9_$]*)",  # a JavaScript name may hold a dollar sign
    "dotted": rb"(?:[A-Za-z_]\w*[.:])*([A-Za-z_]\w*)",  # Lua's `function M.sub:name`: name
}


def word_set(text: str) -> frozenset[bytes]:
    """The words of ``text`` (separated by white space) as a set of bytes."""
    return frozenset(w.encode() for w in text.split())


@dataclass(frozen=True)
class Decl:
    """A declaration keyword: ``keyword``, then a ``gap``, then a name of ``name``'s form;
    ``pattern`` is the three as one expression (it starts with the keyword: fast to find) that
    captures the name. ``top``: only at the start of a line (not indented)."""

    keyword: bytes
    gap: Gap = "blanks"
    name: NameForm = "ident"
    top: bool = False
    minor: bool = False  # declares a member of a type (a Go method) or a variable

    @property
    def pattern(self) -> re.Pattern[bytes]:
        return _pattern(self.keyword, self.gap, self.name)


@functools.cache
def _pattern(keyword: bytes, gap: Gap, name: NameForm) -> re.Pattern[bytes]:
    return re.compile(re.escape(keyword) + GAPS[gap] + NAMES[name])


def decl(
    keyword: bytes,
    *,
    top: bool = False,
    name: NameForm = "ident",
    gap: Gap = "blanks",
    minor: bool = False,
) -> Decl:
    return Decl(keyword, gap, name, top, minor)


def decls(keywords: str, *, top: bool = False, minor: bool = False) -> tuple[Decl, ...]:
    return tuple(decl(k.encode(), top=top, minor=minor) for k in keywords.split())


def _always(words: list[bytes], name: bytes) -> bool:
    return True


@dataclass(frozen=True)
class Declarations:
    """What the lexicon's declaration scan needs of a language: its reserved words (never a
    declared name), its declaration keywords, the modifier words that may stand before one on
    its line, its import and package patterns, and its rule of what is exported."""

    keywords: frozenset[bytes]
    decls: tuple[Decl, ...] = ()
    modifiers: frozenset[bytes] = frozenset()
    imports: tuple[re.Pattern[bytes], ...] = ()
    package: re.Pattern[bytes] | None = None
    # Exported by the language's rule, from the modifier words before the keyword and the name.
    exported: Callable[[list[bytes], bytes], bool] = _always
    # Whether an indented declaration with no modifier before it counts (a method in a class
    # body, an item in an impl); where it is always a local (`const x` in a JavaScript
    # function), saying no here skips it before any work.
    bare_indented: bool = True


@dataclass(frozen=True, slots=True)
class Lexing:
    """How `packer.lexicon` reads a language: with which reader, what is never a reference
    (reserved words and builtins so common that a use says nothing), and the declarations."""

    reader: Reader
    not_refs: frozenset[bytes]
    declarations: Declarations = Declarations(frozenset())
    docstrings: bool = False  # triple-quoted strings are prose, like comments (Python)


@dataclass(frozen=True, slots=True)
class Modules:
    """How a language's imports resolve to files (`packer.surface`)."""

    system: ModuleSystem
    extensions: tuple[str, ...] = ()  # what a dotted or relative specifier's file ends with
    separator: str = "/"  # what separates the parts of a specifier ("." in Lua, "\\" in PHP)


@dataclass(frozen=True, slots=True)
class Outlining:
    """How `packer.summaries` outlines a language."""

    # The outliner of packer.summaries by name; for a tree-sitter language, the hooks (export
    # rule, display fixes) by name, none when "".
    summarizer: str = ""
    grammar: str = ""  # the tree-sitter-language-pack grammar; "" when not read with tree-sitter
    query: str = ""  # its tag query: packer/summaries/queries/<query>.scm
    # A language this one's files are outlined as when their text looks like it (a C++ header
    # named .h, reStructuredText named .txt); its name must be a key of the summaries' sniffers.
    sniff: str = ""
    plain: str = ""  # the name an outline of its first lines goes by ("" for its own)


@dataclass(frozen=True, slots=True)
class Language:
    """Everything a stage decides by a file's language, for one language."""

    name: str  # what outlines, lexicons and caches call it
    kind: Kind
    extensions: tuple[str, ...] = ()  # lowercase, with their dot: a file's last one decides
    filenames: tuple[str, ...] = ()  # whole names, lowercase (``makefile``, ``readme``)
    # (extension, the info string of its code fence in a render): the extensions listed here
    # are fenced with a name, the others bare. Names never had one: a fence goes by extension.
    fences: tuple[tuple[str, str], ...] = ()
    # Names link files of one family only (`packer.rating`): a Python `TypeError` is not a
    # JavaScript one. "" for a language whose files define nothing (a document refers to
    # every family).
    family: str = ""
    comment: str = "//"  # its line comments: "#", or "//" (with /* */ blocks)
    lexicon: Lexing | None = None  # None: no lexicon
    readme: str = ""  # the language whose lexicon a README written in this one gets
    modules: Modules | None = None  # None: its imports lead nowhere
    outline: Outlining | None = None  # None: its outline is its first lines


def fenced(fence: str, *extensions: str) -> tuple[tuple[str, str], ...]:
    """``extensions`` each fenced as ``fence``, for `Language.fences`."""
    return tuple((e, fence) for e in extensions)
