"""The words of a file: the names it defines (and exports), the names it uses, what it imports.

`lex` reads every text file of a repository once, in the ingest workers, so it must be fast:
where `cas._words` was built, the comments are cut out, the declarations found (one pass for all
of a language's keywords, driven by its record) and the identifiers counted in C, and the
fingerprints of the defined names taken in one call per file; elsewhere the same in Python
(`_python_declarations`, `_python_words`: the references the C is tested against). The rest
is a few regular-expression passes whose patterns start with a literal (a keyword). No parse: a
definition is a declaration keyword whose line holds nothing before it but the language's
modifiers (``export``, ``pub``, ``public static``...), so a keyword in a comment or a string is
rarely mistaken for one, and a rare mistake only adds a name. The
rating (`packer.rating`) links each file that uses a name to the files that define it; the precise
structure of the files a pack shows comes from their outlines (`packer.outline`), not from here.

Names are ASCII identifiers (``[A-Za-z_][A-Za-z0-9_]*``); a reference is a word of at least
three characters that is not one of the language's keywords. What each language calls exported:
Python: a top-level name without a leading underscore, or exactly the names in ``__all__`` (an
``__init__.py`` also exports what it imports); Go: a capitalized name; TypeScript/JavaScript:
``export``; Rust: ``pub`` (and ``#[macro_export]``); Java, C#, Swift: ``public``; Kotlin, Scala,
PHP: not private; C/C++: any non-static declaration in a header; Ruby: anything not after a bare
``private``. Documents (Markdown, reStructuredText, a README) only refer: to the identifiers in
their code (spans, fences and indented blocks) and to the paths they mention.

Each language's record (`packer.lang`) names its reader here (`_READERS`) and holds what the
reader is given: the words that are never references, the declaration keywords, modifiers,
import and package patterns and export rule of the declaration scan.

A `Lexicon` is cached by content digest (`encode`/`decode`); `LEXICON_VERSION` names the rules.
"""

from __future__ import annotations

import bisect
import functools
import posixpath
import re
import sys
import zlib
from array import array
from collections import Counter
from collections.abc import Callable, Collection, Iterator
from typing import Final, NamedTuple

import msgpack

from cas.words import native_module
from packer.lang import LANGUAGES as RECORDS
from packer.lang import is_readme, language_for, named
from packer.lang.record import GAPS, IDENT, NAMES, Declarations, Lexing, Reader, word_set
from packer.lang.registry import JS_IDENT

LEXICON_VERSION: Final = "4"  # 3, 4: Go names used through their package bound to it
# Only this much of a file is read: a source file larger than this is generated or data, and its
# first MiB names what it defines as well as the rest would.
MAX_BYTES: Final = 1 << 20
# References kept per file, the most frequent first: a file that uses thousands of distinct
# names (a generated table, a minified bundle) links to everything and says nothing.
MAX_REFS: Final = 2000
MAX_DEFINES: Final = 4000
MAX_IMPORTS: Final = 500
MIN_REF: Final = 3


def fingerprint(name: str | bytes) -> int:
    """The 64-bit fingerprint a lexicon keeps for a referenced name: CRC-32 and Adler-32 of its
    bytes, two checksums every zlib computes alike. Two names share one with a chance of about
    one in 2**60: then one file's reference counts for both, on every machine the same."""
    data = name.encode("utf-8") if isinstance(name, str) else name
    return int((zlib.crc32(data) << 32) | zlib.adler32(data))


def _le(values: array[int]) -> bytes:
    if sys.byteorder == "big":
        values.byteswap()
    return bytes(values.tobytes())


def _from_le(typecode: str, data: bytes) -> array[int]:
    values = array(typecode, data)
    if sys.byteorder == "big":
        values.byteswap()
    return values


# What a lexicon records about each name it defines, one byte per name (`Lexicon.info`).
EXPORTED: Final = 1  # public by the language's rules
MINOR: Final = 2  # declared only as a member of a type or as a variable
UNDERSCORE: Final = 4  # starts with an underscore
SHAPE_SHIFT: Final = 3  # bits 3-4: the name's shape, see `shape`
ATTRIBUTE: Final = 32  # declared only as an attribute of instances (`self.name = ...`)
PLAIN, STRUCTURED, SPECIFIC = 0, 1, 2


def shape(name: str | bytes) -> int:
    """How surely a use of ``name`` means one thing: SPECIFIC for a long name with structure
    (``get_current_context``, ``AddCommand``: an underscore inside, an uppercase letter or a
    digit, and 8 characters or more), STRUCTURED for a shorter one (``Command``, ``URL``),
    PLAIN for a lowercase word of any length (``run``, ``filename``)."""
    data = name.encode("ascii", "replace") if isinstance(name, str) else name
    structured = not data.islower() or b"_" in data.strip(b"_") or _DIGIT.search(data) is not None
    if structured and len(data) >= 8:
        return SPECIFIC
    return STRUCTURED if structured else PLAIN


_DIGIT = re.compile(rb"[0-9]")
# A shape as the bits it takes in a name's info byte.
_SHAPE_BITS: Final = bytes((v << SHAPE_SHIFT) & 255 for v in range(256))


def _fingerprints(joined: bytes, names: list[bytes]) -> tuple[bytes, bytes]:
    """The fingerprints (little-endian uint64) and shapes (a byte each) of ``names``, which
    ``joined`` holds separated by newlines: in C where built."""
    native = native_module()
    if native is not None:
        found: tuple[bytes, bytes] = native.fingerprints(joined)
        return found
    crc, adler = zlib.crc32, zlib.adler32
    return _le(array("Q", [(crc(n) << 32) | adler(n) for n in names])), bytes(map(shape, names))


class Lexicon(NamedTuple):
    """What one file defines, exports, refers to and imports.

    Names are kept as fingerprints (`fingerprint`) beside the text of the defined ones: the
    rating joins millions of references to the definitions of a whole repository with array
    operations, which text would force back into a loop per name. Definitions are sorted by
    name; references keep the order of their first use."""

    lang: str
    names: str = ""  # the names declared here, sorted, joined by newlines (see `defines`)
    fps: bytes = b""  # their fingerprints: little-endian uint64 each
    info: bytes = b""  # one byte each: EXPORTED | MINOR | UNDERSCORE | shape << SHAPE_SHIFT
    reexports: tuple[str, ...] = ()  # names exported without being defined here (re-exports)
    refs: bytes = b""  # fingerprints of the identifiers used: little-endian uint64 each
    counts: bytes = b""  # how often each is used: little-endian uint16 each (at most 65535)
    imports: tuple[str, ...] = ()  # module specifiers as written; paths a document mentions
    star: tuple[str, ...] = ()  # imports re-exported whole (`from x import *`, `export *`)
    package: str = ""  # the declared package (Go, Java, Kotlin, Scala), namespace (C#)
    # Names bound by an import that says where they come from (`from .core import Command`,
    # `import { a } from './x'`, `use crate::error::Error`): (specifier, name, uses). They are
    # not among `refs`: the rating links them to that module's definition, or to nothing when
    # the module is not the project's (`from typing import Set` means no class Set here).
    bound: tuple[tuple[str, str, int], ...] = ()

    @property
    def defines(self) -> tuple[str, ...]:
        """The names declared here (top level and types' members), sorted."""
        return tuple(self.names.split("\n")) if self.names else ()

    @property
    def defined(self) -> Defined:
        """The names alone, without the references (what outlives the rating)."""
        return Defined(self.names, len(self.info))

    def _flagged(self, flag: int) -> tuple[str, ...]:
        return tuple(n for n, i in zip(self.defines, self.info, strict=True) if i & flag)

    @property
    def exported(self) -> tuple[str, ...]:
        """The names made public here: exported definitions and re-exports, sorted."""
        return tuple(sorted({*self._flagged(EXPORTED), *self.reexports}))

    @property
    def minor(self) -> tuple[str, ...]:
        """Of `defines`, those declared only as members of a type or as variables: a plain
        word among them (``name``, ``method``) is more often any object's attribute or a local
        variable than a use of this declaration."""
        return self._flagged(MINOR)

    def fingerprints(self) -> array[int]:
        return _from_le("Q", self.refs)

    def ref_counts(self) -> array[int]:
        return _from_le("H", self.counts)

    def uses(self, name: str) -> int:
        """How often ``name`` is used here (0: not at all, or not kept)."""
        fp = fingerprint(name)
        for f, n in zip(self.fingerprints(), self.ref_counts(), strict=True):
            if f == fp:
                return int(n)
        return 0


class Defined(NamedTuple):
    """What a rating keeps of a file's lexicon (`Lexicon.defined`): the names it defines, joined
    by newlines, and how many. The references, most of a lexicon's size, are not needed once
    the graph is made, and a tree of 100,000 files holds tens of MiB of them."""

    names: str
    size: int  # how many

    @property
    def defines(self) -> tuple[str, ...]:
        """The names, sorted (as `Lexicon.defines`)."""
        return tuple(self.names.split("\n")) if self.names else ()


def encode(lexicon: Lexicon) -> bytes:
    data: bytes = msgpack.packb(
        [
            LEXICON_VERSION,
            lexicon.lang,
            lexicon.names,
            lexicon.fps,
            lexicon.info,
            list(lexicon.reexports),
            lexicon.refs,
            lexicon.counts,
            list(lexicon.imports),
            list(lexicon.star),
            lexicon.package,
            [list(b) for b in lexicon.bound],
        ],
        use_bin_type=True,
    )
    return data


def decode(data: bytes) -> Lexicon | None:
    """The lexicon `encode` wrote, or None for bytes that are not one of this version."""
    try:
        (
            version,
            lang,
            names,
            fps,
            info,
            reexports,
            refs,
            counts,
            imports,
            star,
            package,
            bound,
        ) = msgpack.unpackb(data, raw=False)
        if (
            version != LEXICON_VERSION
            # msgpack gives a bin as bytes, never a subclass (a pack decodes 20,000 of these)
            or not (type(fps) is type(info) is type(refs) is type(counts) is bytes)
            or not isinstance(names, str)
            or len(refs) != 4 * len(counts)
            or len(fps) != 8 * len(info)
            or len(info) != (names.count("\n") + 1 if names else 0)
        ):
            return None
        return Lexicon(
            str(lang),
            names,
            fps,
            info,
            tuple(map(str, reexports)),
            refs,
            counts,
            tuple(map(str, imports)),
            tuple(map(str, star)),
            str(package),
            tuple((str(a), str(b), int(c)) for a, b, c in bound),
        )
    except (ValueError, TypeError, msgpack.ExtraData):
        return None


# --- words ------------------------------------------------------------------------------------

# Every byte that cannot be part of an ASCII identifier becomes a space: `split` then yields the
# identifiers (and numbers) of the text, in C, at a few hundred MB/s.
_WORD_CHARS = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
_TO_WORDS: Final = bytes(c if c in _WORD_CHARS else 32 for c in range(256))


# Identifiers of at least MIN_REF characters that do not start with a digit, found in the short
# text of a file's distinct words joined by spaces (a regular expression there is cheaper than a
# Python test per word).
_NAME = re.compile(rb"\b[A-Za-z_][A-Za-z0-9_]{%d,}" % (MIN_REF - 1))


# A word of prose counts as a reference only when it is shaped like a name: an uppercase
# letter, an underscore or a digit in it (`Command`, `get_context`), not a plain word.
_SHAPED = re.compile(rb"\b(?=[a-z]*[A-Z_0-9])[A-Za-z_][A-Za-z0-9_]{%d,}\b" % (MIN_REF - 1))


def _words(
    data: bytes, keywords: frozenset[bytes], prose: bytes = b"", bound: Collection[bytes] = ()
) -> tuple[bytes, bytes, dict[bytes, int]]:
    """The fingerprints of the distinct references of ``data`` (code) and ``prose`` (its
    comments and docstrings) in order of first use, their counts (see `Lexicon`), and how often
    each name of ``bound`` (bound by an import) is used; those names are not references."""
    native = native_module()
    if native is None:
        return _python_words(data, keywords, prose, bound)
    wanted = sorted(set(bound))
    wanted_fps = _le(array("Q", [fingerprint(w) for w in wanted]))
    fps, counts, uses = native.refs(
        data, prose, MIN_REF, MAX_REFS, _keyword_fps(keywords), wanted_fps
    )
    return fps, counts, dict(zip(wanted, _from_le("I", uses), strict=True))


@functools.lru_cache(maxsize=64)
def _keyword_fps(keywords: frozenset[bytes]) -> bytes:
    """The sorted fingerprints of a language's words that are never references."""
    return _le(array("Q", sorted({fingerprint(w) for w in keywords})))


def _python_words(
    data: bytes, keywords: frozenset[bytes], prose: bytes = b"", bound: Collection[bytes] = ()
) -> tuple[bytes, bytes, dict[bytes, int]]:
    """`_words` in Python alone (where `cas._words` was not built): the same result, the
    reference the native version is tested against."""
    counted = Counter(data.translate(_TO_WORDS).split())
    if prose:
        # A name only mentioned in prose counts once; uses are counted in code.
        said = dict.fromkeys(prose.translate(_TO_WORDS).split())
        for w in _SHAPED.findall(b" ".join(said)):
            counted.setdefault(w, 1)
    names = [w for w in _NAME.findall(b" ".join(counted)) if w not in keywords and w not in bound]
    if len(names) > MAX_REFS:
        order = {w: i for i, w in enumerate(names)}
        names.sort(key=lambda w: (-counted[w], order[w]))
        del names[MAX_REFS:]
        names.sort(key=order.__getitem__)
    crc, adler = zlib.crc32, zlib.adler32
    fps = array("Q", [(crc(w) << 32) | adler(w) for w in names])
    uses = [counted[w] for w in names]
    if uses and max(uses) > 65535:
        uses = [min(u, 65535) for u in uses]
    return _le(fps), _le(array("H", uses)), {w: counted[w] for w in bound}


# --- the shared declaration scan --------------------------------------------------------------


# No declaration has more than this before its keyword on its line (indentation and modifiers).
# Bounding the look back keeps a minified file, one line of a megabyte, linear.
_MAX_PREFIX = 160
_TOO_LONG = b"\0 \0"  # stands for a longer prefix: a word no language takes as a modifier


def _line_prefix(data: bytes, pos: int) -> bytes:
    start = data.rfind(b"\n", max(0, pos - _MAX_PREFIX), pos)
    return _TOO_LONG if start < 0 else data[start + 1 : pos]


_PUB_RESTRICTED = re.compile(rb"pub\([^)]*\)")


# A declaration found: (its place in the language's `Declarations.decls`, the position of its
# keyword, its name, whether its line is indented, the modifier words before the keyword).
Found = tuple[int, int, bytes, bool, list[bytes]]

_GAP_CODES: Final = {gap: k for k, gap in enumerate(GAPS)}
_NAME_CODES: Final = {form: k for k, form in enumerate(NAMES)}
_SCAN_TABLES: dict[int, tuple[Declarations, tuple[object, ...]]] = {}


def _scan_table(spec: Declarations) -> tuple[object, ...]:
    """What `cas._words.declarations` is given for ``spec``: its declarations as (keyword, gap,
    name form, top), its modifiers, its reserved words and `bare_indented`; made once per
    record."""
    known = _SCAN_TABLES.get(id(spec))
    if known is not None and known[0] is spec:
        return known[1]
    table = (
        tuple((d.keyword, _GAP_CODES[d.gap], _NAME_CODES[d.name], d.top) for d in spec.decls),
        tuple(sorted(spec.modifiers)),
        spec.keywords,
        spec.bare_indented,
    )
    _SCAN_TABLES[id(spec)] = (spec, table)
    return table


def _declarations(data: bytes, spec: Declarations) -> list[Found]:
    """Each declaration ``spec`` knows (`Found`), declaration by declaration, each by position:
    in one pass in C where built, else `_python_declarations`."""
    native = native_module()
    if native is None:
        return list(_python_declarations(data, spec))
    found: list[Found] = native.declarations(data, *_scan_table(spec))
    return found


def _python_declarations(data: bytes, spec: Declarations) -> Iterator[Found]:
    """`_declarations` in Python alone, one regular-expression pass per declaration: the
    reference the C scan is tested against."""
    for index, decl in enumerate(spec.decls):
        for m in decl.pattern.finditer(data):
            start = m.start()
            before = data[start - 1]  # `data` starts with a newline: a keyword never at 0
            if before == 10:  # first on its line: the common case, decided at once
                words: list[bytes] = []
                indented = False
            elif before in (32, 9):
                prefix = _line_prefix(data, start)
                stripped = prefix.lstrip(b" \t")
                indented = len(stripped) < len(prefix)
                if indented and (decl.top or not (stripped or spec.bare_indented)):
                    continue
                if b"pub(" in stripped:  # pub(crate) and the like: not exported
                    stripped = _PUB_RESTRICTED.sub(b"restricted", stripped)
                words = stripped.split()
                if words and not all(w in spec.modifiers or w[:1] == b'"' for w in words):
                    continue
            else:  # glued to what precedes it: `myclass`, `.type`, `(function`
                continue
            name = m.group(1)
            if name in spec.keywords:
                continue
            yield index, start, name, indented, words


class _Builder:
    """Collects one file's names; `done` sorts and caps them into a `Lexicon`."""

    def __init__(self, lang: str) -> None:
        self.lang = lang
        self.defines: set[bytes] = set()
        self.exported: set[bytes] = set()
        self.minor: set[bytes] = set()  # declared as a member or a variable somewhere
        self.attributes: set[bytes] = set()  # declared as an instance attribute somewhere
        self.toplevel: set[bytes] = set()  # declared outside any type somewhere
        self.imports: set[str] = set()
        self.star: set[str] = set()
        self.bound: list[tuple[bytes, bytes, bytes]] = []  # (specifier, name, local name)
        # Names used qualified by what imports them (Go's `stack.New`), counted where found:
        # (specifier, name) -> uses.
        self.qualified: dict[tuple[bytes, bytes], int] = {}
        # The text whose names are references, when a reader has taken some out (None: all).
        self.refs_text: bytes | None = None
        self.package = ""

    def define(
        self, name: bytes, exported: bool, minor: bool = False, attribute: bool = False
    ) -> None:
        self.defines.add(name)
        (self.attributes if attribute else self.minor if minor else self.toplevel).add(name)
        if exported:
            self.exported.add(name)

    def imported(self, spec: bytes | str) -> None:
        text = spec.decode("utf-8", "replace") if isinstance(spec, bytes) else spec
        text = text.strip()
        if text and len(self.imports) < MAX_IMPORTS:
            self.imports.add(text)

    def words(self, data: bytes, keywords: frozenset[bytes], prose: bytes = b"") -> Lexicon:
        """The lexicon, with the references of ``data`` and ``prose``."""
        code = data if self.refs_text is None else self.refs_text
        return self.done(_words(code, keywords, prose, {local for _, _, local in self.bound}))

    def done(self, refs: tuple[bytes, bytes, dict[bytes, int]]) -> Lexicon:
        defined = sorted(self.defines)[:MAX_DEFINES]
        joined = b"\n".join(defined)
        attributes = self.attributes - self.minor - self.toplevel
        minor = (self.minor | attributes) - self.toplevel
        fps, shapes = _fingerprints(joined, defined)
        info = bytearray(shapes.translate(_SHAPE_BITS))
        # The names that start with an underscore are one run of the sorted names (``_`` sorts
        # after the capitals and before the small letters).
        for i in range(bisect.bisect_left(defined, b"_"), bisect.bisect_left(defined, b"`")):
            info[i] |= UNDERSCORE
        place = {n: i for i, n in enumerate(defined)}
        for flag, names in ((EXPORTED, self.exported), (MINOR, minor), (ATTRIBUTE, attributes)):
            for n in names:
                i = place.get(n, -1)
                if i >= 0:
                    info[i] |= flag
        return Lexicon(
            self.lang,
            joined.decode("ascii"),
            fps,
            bytes(info),
            tuple(sorted(n.decode("ascii") for n in self.exported - self.defines)),
            refs[0],
            refs[1],
            tuple(sorted(self.imports)),
            tuple(sorted(self.star)),
            self.package,
            tuple(
                sorted(
                    {
                        (
                            spec.decode("utf-8", "replace"),
                            name.decode("ascii"),
                            refs[2].get(local, 0),
                        )
                        for spec, name, local in self.bound
                        if _PY_NAME.fullmatch(name)
                    }
                    | {
                        (spec.decode("utf-8", "replace"), name.decode("ascii"), uses)
                        for (spec, name), uses in self.qualified.items()
                    }
                )
            ),
        )


def _generic(data: bytes, b: _Builder, spec: Declarations) -> None:
    decls = spec.decls
    for index, _pos, name, indented, words in _declarations(data, spec):
        b.define(name, spec.exported(words, name), decls[index].minor or indented)
    for pattern in spec.imports:
        for m in pattern.finditer(data):
            b.imported(m.group(1))
    found = spec.package.search(data) if spec.package is not None else None
    if found is not None:
        b.package = found.group(1).decode("ascii", "replace")


# --- Python -----------------------------------------------------------------------------------

_PY_DEF = re.compile(rb"def[ \t]+" + IDENT)
_PY_CLASS = re.compile(rb"class[ \t]+" + IDENT)
_PY_ASSIGN = re.compile(rb"\n([A-Za-z_]\w*)[ \t]*(?::[^\n=]+)?=(?!=)")
_PY_IMPORT = re.compile(rb"import[ \t]+(\([^)]*\)|[^\n;#]*)")
_PY_FROM = re.compile(rb"from[ \t]+(\.*[\w.]*)[ \t]+$")
_PY_ALL = re.compile(rb"__all__[ \t]*(?::[^=\n]*)?\+?=[ \t]*[\[(]([^\])]*)[\])]")
_PY_ALL_ADD = re.compile(rb"__all__\.(?:append|extend)\(([^)]*)\)")
# Possessive: what follows each run never starts with what the run takes, so giving some back
# never leads to a match; without them each `self.name(` was retried once per letter of name.
_PY_ATTRIBUTE = re.compile(rb"self\.([A-Za-z_]\w*+)[ \t]*+(?::[^=\n]*+)?=(?!=)")
_PY_NAME = re.compile(rb"[A-Za-z_]\w*")
_QUOTED = re.compile(rb"""['"]([A-Za-z_]\w*)['"]""")
_STATEMENT = re.compile(rb"\n[^ \t\n#@)\]}]")


def _python_headers(data: bytes) -> list[tuple[int, int, bytes, bool]]:
    """(position, indentation, name, is a class) of each def and class, by position, whose
    line holds nothing before it but blanks or ``async``."""
    found = []
    for pattern, is_class in ((_PY_DEF, False), (_PY_CLASS, True)):
        for m in pattern.finditer(data):
            start = m.start()
            line = data.rfind(b"\n", start - _MAX_PREFIX if start > _MAX_PREFIX else 0, start)
            if line < 0:  # a longer prefix: not a declaration
                continue
            prefix = data[line + 1 : start]
            if not prefix.strip(b" \t"):
                found.append((start, len(prefix), m.group(1), is_class))
            elif prefix.split() == [b"async"]:
                found.append((start, len(prefix) - len(prefix.lstrip()), m.group(1), is_class))
    found.sort()
    return found


def _python_names(data: bytes) -> tuple[list[tuple[int, int, bytes, bool]], list[bytes]]:
    """`_python_headers`, and the names `_PY_ASSIGN` finds: in one pass in C where built."""
    native = native_module()
    if native is None:
        return _python_headers(data), _PY_ASSIGN.findall(data)
    found: tuple[list[tuple[int, int, bytes, bool]], list[bytes]] = native.python_names(data)
    return found


def _python_defs(data: bytes, b: _Builder) -> list[bytes]:
    """Define the defs and classes of ``data`` in ``b`` (see `_python_blocks`); returns the
    names `_PY_ASSIGN` finds. In one pass in C where built."""
    native = native_module()
    if native is None:
        headers, assigned = _python_names(data)
        _python_blocks(data, headers, b)
        return assigned
    defs: tuple[list[bytes], list[bytes], list[bytes], list[bytes], list[bytes]]
    defs = native.python_defs(data)
    top, top_private, member, member_private, found = defs
    b.defines.update(top, top_private, member, member_private)
    b.toplevel.update(top, top_private)
    b.minor.update(member, member_private)
    b.exported.update(top, member)
    return found


def _python_blocks(data: bytes, headers: list[tuple[int, int, bytes, bool]], b: _Builder) -> None:
    """Each def and class of ``headers`` not nested in a function and not a dunder, defined
    at the top level or as a member, exported unless it or its class is private."""
    # Enclosing blocks, innermost last: (indent, is_class, private).
    stack: list[tuple[int, bool, bool]] = []
    previous = 0
    defines, exported, minor, toplevel = b.defines, b.exported, b.minor, b.toplevel
    for pos, indent, name, is_class in headers:
        # A top-level statement since the previous declaration closes every block: a def
        # indented under a top-level `if` or `try` after a function is not that function's.
        if stack and indent and _STATEMENT.search(data, previous, pos) is not None:
            stack.clear()
        previous = pos
        while stack and stack[-1][0] >= indent:
            stack.pop()
        dunder = name[:2] == b"__" and name[-2:] == b"__"
        private = name[:1] == b"_" and not dunder
        if stack:
            if not stack[-1][1]:  # nested in a function: a local helper, not the file's
                stack.append((indent, False, True))
                continue
            private = private or stack[-1][2]
        if not dunder:
            defines.add(name)
            (minor if stack else toplevel).add(name)
            if not private:
                exported.add(name)
        stack.append((indent, is_class, private))


def _python(data: bytes, b: _Builder, path: str, spec: Declarations) -> None:
    is_init = posixpath.basename(path) in ("__init__.py", "__init__.pyi")
    assigned = _python_defs(data, b)
    for name in set(assigned):
        if not (name[:2] == b"__" and name[-2:] == b"__"):
            b.define(name, name[:1] != b"_", True)
    # Instance attributes (`self.status_code = ...`): members of the class, so that
    # `response.status_code` elsewhere can mean this file.
    for name in set(_PY_ATTRIBUTE.findall(data)):
        if not name.startswith(b"__"):
            b.define(name, not name.startswith(b"_"), True, True)
    reexports: set[bytes] = set()
    for m in _PY_IMPORT.finditer(data):
        prefix = _line_prefix(data, m.start())
        body = m.group(1).strip(b"() \t")
        items = [i.split() for i in body.replace(b"\n", b" ").replace(b"\\", b" ").split(b",")]
        if not prefix.strip():
            for item in items:
                if item and item[0] != b"*":
                    b.imported(item[0])
            continue
        fm = _PY_FROM.match(prefix.lstrip())
        if fm is None:
            continue
        module = fm.group(1)
        if module == b"__future__":
            continue
        b.imported(module)
        for item in items:
            if not item:
                continue
            if item[0] == b"*":
                b.star.add(module.decode("ascii", "replace"))
                continue
            if module.strip(b".") == b"":  # `from . import x`: x is a module of the package
                b.imported(module + item[0])
            shown = item[-1] if len(item) == 3 and item[1] == b"as" else item[0]
            b.bound.append((module, item[0], shown))
            if not shown.startswith(b"_") and _PY_NAME.fullmatch(shown):
                reexports.add(shown)
    listed: set[bytes] = set()
    if b"__all__" in data:
        for pattern in (_PY_ALL, _PY_ALL_ADD):
            for m in pattern.finditer(data):
                listed.update(_QUOTED.findall(m.group(1)))
    if listed:
        # `__all__` is the file's public surface, whatever the names look like.
        b.exported = set(listed)
    elif is_init:
        b.exported |= reexports


# --- Go ---------------------------------------------------------------------------------------

_GO_BLOCK = re.compile(rb"\n(const|var|type)[ \t]*\(")
_GO_BLOCK_NAME = re.compile(rb"\n([ \t]+)([A-Za-z_]\w*)")
_GO_IMPORT = re.compile(rb"\nimport[ \t]*(?:(\([^)]*\))|[\w.]*[ \t]*(\"[^\"\n]*\"))")
_GO_STRING = re.compile(rb'"([^"\n]+)"')
# An import's line: its local name, if it gives one, and its path.
_GO_IMPORT_LINE = re.compile(rb'(?:^|[\n(;])[ \t]*(?:([A-Za-z_]\w*|\.)[ \t]+)?"([^"\n]+)"')
_GO_VERSION = re.compile(rb"v[0-9]+")
_GO_IDENT = re.compile(rb"[A-Za-z][A-Za-z0-9_]*|_[A-Za-z0-9_]+")


@functools.lru_cache(maxsize=4096)
def _go_local_name(path: bytes) -> bytes:
    """The name a Go import is used by when it gives none: its package's name, which is by
    convention the last part of its path (before a major version: `yaml.v3`, `.../v2`)."""
    parts = path.rstrip(b"/").split(b"/")
    last = parts[-1]
    if _GO_VERSION.fullmatch(last) and len(parts) > 1:
        last = parts[-2]
    last = last.split(b".")[0]
    if last.startswith(b"go-"):
        last = last[3:]
    return last.replace(b"-", b"_")


def _go(data: bytes, b: _Builder, path: str, spec: Declarations) -> None:
    _generic(data, b, spec)
    for m in _GO_BLOCK.finditer(data):
        end = data.find(b"\n)", m.end())
        block = data[m.end() - 1 : len(data) if end < 0 else end]
        found = _GO_BLOCK_NAME.findall(block)
        # The block's own lines, at its first line's indentation (not a struct's fields).
        for indent, name in found:
            if indent == found[0][0] and name not in spec.keywords:
                b.define(name, spec.exported([], name), m.group(1) != b"type")
    by_local: dict[bytes, bytes] = {}
    for m in _GO_IMPORT.finditer(data):
        for specifier in _GO_STRING.findall(m.group(1) or m.group(2)):
            b.imported(specifier)
        for local, specifier in _GO_IMPORT_LINE.findall(m.group(0)[len(b"\nimport") :]):
            name = local or _go_local_name(specifier)
            if _GO_IDENT.fullmatch(name):  # not `_` or `.`, nor a path's odd last part
                by_local.setdefault(name, specifier)
    # Another package's names are used through its local name (`tcpip.NICID`): each such use
    # is bound to the package it names, as an import binds a name in Python or JavaScript, so
    # that a name many packages define (`New`, `Options`) leads to the one meant, and is no
    # reference by name (`unsafe.Pointer` is not the `Pointer` method of some type here).
    if by_local:
        _go_qualified(data, b, by_local)


# What may not stand just before an import's name for ``name.Member`` to be its use.
_NOT_BEFORE_LOCAL: Final = frozenset(
    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_."
)
_GO_EXPORTED_NAME = re.compile(rb"[A-Z]\w*")


def _go_qualified(data: bytes, b: _Builder, by_local: dict[bytes, bytes]) -> None:
    """Each ``local.Name`` whose ``local`` is an import's name (and not itself a member, as in
    ``x.local.Name``) counted for that import, and the text of references without those names.
    Each import's name is looked for with `bytes.find`: a pattern trying every identifier
    before every dot cost more than the rest of the file's lexicon."""
    native = native_module()
    if native is not None:
        specs = list(by_local.values())
        found: tuple[list[tuple[int, bytes]], bytes | None] = native.qualified(
            data, tuple(by_local)
        )
        for (index, name), uses in Counter(found[0]).items():
            key = (specs[index], name)
            b.qualified[key] = b.qualified.get(key, 0) + uses
        if found[1] is not None:
            b.refs_text = found[1]
        return
    spans: list[tuple[int, int]] = []
    size = len(data)
    for local, spec in by_local.items():
        needle = local + b"."
        at = data.find(needle)
        while at >= 0:
            name_at = at + len(needle)
            if (
                name_at < size
                and 65 <= data[name_at] <= 90  # A-Z
                and (at == 0 or data[at - 1] not in _NOT_BEFORE_LOCAL)
            ):
                m = _GO_EXPORTED_NAME.match(data, name_at)
                assert m is not None
                key = (spec, m.group())
                b.qualified[key] = b.qualified.get(key, 0) + 1
                spans.append((name_at, m.end()))
                name_at = m.end()
            at = data.find(needle, name_at)
    if spans:
        spans.sort()
        pieces: list[bytes] = []
        pos = 0
        for start, end in spans:
            pieces.append(data[pos:start])
            pos = end
        pieces.append(data[pos:])
        b.refs_text = b"".join(pieces)


# --- TypeScript and JavaScript ----------------------------------------------------------------

_JS_EXPORT_LIST = re.compile(rb"export[ \t]*(?:type[ \t]*)?\{([^}]*)\}")
_JS_EXPORT_STAR = re.compile(
    rb"""export[ \t]*\*[ \t]*(?:as[ \t]+\w+[ \t]*)?from[ \t]*['"]([^'"\n]+)['"]"""
)
_JS_EXPORT_DEFAULT = re.compile(rb"export[ \t]+default[ \t]+" + JS_IDENT)
_JS_NAMED_IMPORT = re.compile(
    rb"import[ \t]+(?:type[ \t]+)?(?:[\w$]+[ \t]*,[ \t]*)?\{([^}]*)\}[ \t]*"
    rb"from[ \t]*['\"]([^'\"\n]+)['\"]"
)
_JS_CJS = re.compile(rb"exports\.([A-Za-z_$][\w$]*)[ \t]*=")
_JS_METHOD = re.compile(
    rb"\n([ \t]+)((?:(?:public|private|protected|static|readonly|async|abstract|override|get|set)"
    rb"[ \t]+)*)#?([A-Za-z_$][\w$]*)[ \t]*(?:<[^>\n]*>)?\([^\n;]*\)[ \t]*(?::[^\n{;=]*)?\{"
)
_JS_NOT_METHODS = word_set("if for while switch catch function return with else constructor")


def _javascript(data: bytes, b: _Builder, path: str, spec: Declarations) -> None:
    classes: list[int] = []
    for _index, pos, name, indented, words in _declarations(data, spec):
        exported = b"export" in words
        if data.startswith(b"class", pos):
            classes.append(pos)
        # An indented declaration is local unless it is exported (from a namespace or module).
        if exported or not indented or b"declare" in words:
            b.define(
                name, exported, not exported and data.startswith((b"const", b"let", b"var"), pos)
            )
    for m in _JS_EXPORT_LIST.finditer(data):
        for item in m.group(1).split(b","):
            parts = item.split()
            if parts and parts[0] == b"type":
                parts = parts[1:]
            if parts:
                b.exported.add(parts[-1])
    for m in _JS_EXPORT_DEFAULT.finditer(data):
        if m.group(1) not in spec.keywords:
            b.exported.add(m.group(1))
    for m in _JS_CJS.finditer(data):
        b.define(m.group(1), True)
    for m in _JS_EXPORT_STAR.finditer(data):
        b.star.add(m.group(1).decode("utf-8", "replace"))
    for m in _JS_NAMED_IMPORT.finditer(data):
        for item in m.group(1).split(b","):
            parts = [p for p in item.split() if p != b"type"]
            if parts:
                b.bound.append((m.group(2), parts[0], parts[-1]))
    for pattern in spec.imports:
        for m in pattern.finditer(data):
            b.imported(m.group(1))
    # Methods, looked for in each class's body only: from its keyword to the next line that
    # closes a block at the start of a line (or to the next class).
    for k, start in enumerate(classes):
        end = data.find(b"\n}", start)
        end = len(data) if end < 0 else end
        if k + 1 < len(classes):
            end = min(end, classes[k + 1])
        for m in _JS_METHOD.finditer(data, start, end):
            name = m.group(3)
            if name in _JS_NOT_METHODS or name in spec.keywords:
                continue
            words = m.group(2).split()
            private = b"private" in words or b"protected" in words or name[:1] == b"_"
            b.define(name, not private, True)


# --- Rust -------------------------------------------------------------------------------------

_RUST_USE = re.compile(rb"use[ \t]+([^;]+);")
_RUST_MOD = re.compile(rb"mod[ \t]+([A-Za-z_]\w*)[ \t]*;")
_RUST_LEAF = re.compile(rb"(\w+)(?:[ \t]+as[ \t]+(\w+))?[ \t]*(?=[,}]|$)")


def _rust_macro_exported(data: bytes, pos: int) -> bool:
    """Whether the attributes (and doc comments) right above ``pos`` hold #[macro_export]."""
    end = data.rfind(b"\n", 0, pos)
    for _ in range(40):
        if end <= 0:
            return False
        start = data.rfind(b"\n", 0, end)
        line = data[start + 1 : end].strip()
        if line.startswith(b"#[macro_export"):
            return True
        if not line.startswith((b"#[", b"///", b"//!")):
            return False
        end = start
    return False


def _rust(data: bytes, b: _Builder, path: str, spec: Declarations) -> None:
    for _index, pos, name, indented, words in _declarations(data, spec):
        exported = b"pub" in words
        if not exported and data.startswith(b"macro_rules", pos):
            exported = _rust_macro_exported(data, pos)
        # An indented fn is an impl's or a trait's method (or an inline module's item).
        b.define(name, exported, indented and data.startswith(b"fn", pos))
    for m in _RUST_USE.finditer(data):
        prefix = _line_prefix(data, m.start())
        words = _PUB_RESTRICTED.sub(b"restricted", prefix).split()
        if words and not all(w in spec.modifiers or w == b"restricted" for w in words):
            continue
        used = b" ".join(m.group(1).split())
        b.imported(used)
        head = used.split(b"{", 1)[0]
        for leaf, alias in _RUST_LEAF.findall(used):
            if leaf not in (b"self", b"super", b"crate", b"*"):
                where = head + leaf if head.endswith(b"::") else head
                b.bound.append((where, leaf, alias or leaf))
        if b"pub" in words:
            if used.endswith(b"*"):
                b.star.add(used.decode("utf-8", "replace"))
            for leaf, alias in _RUST_LEAF.findall(used):
                name = alias or leaf
                if name not in (b"self", b"super", b"crate") and name not in spec.keywords:
                    b.exported.add(name)
    for m in _RUST_MOD.finditer(data):
        words = _PUB_RESTRICTED.sub(b"pub", _line_prefix(data, m.start())).split()
        if all(w == b"pub" for w in words):
            b.imported(b"mod " + m.group(1))


# --- Java and C# (types from the table, methods from their shape) ------------------------------

_METHOD = re.compile(rb"\n[ \t]+((?:@?[A-Za-z_][\w<>\[\],.?]*[ \t]+)+)([A-Za-z_]\w*)[ \t]*\(", re.M)
_NOT_TYPES = word_set("return new throw else case yield await goto delete typedef using")


def _methods(data: bytes, b: _Builder, spec: Declarations) -> None:
    for m in _METHOD.finditer(data):
        words = m.group(1).split()
        name = m.group(2)
        if name in spec.keywords or any(w in _NOT_TYPES for w in words):
            continue
        b.define(name, spec.exported(words, name), True)


def _java_like(data: bytes, b: _Builder, path: str, spec: Declarations) -> None:
    _generic(data, b, spec)
    _methods(data, b, spec)


# --- C and C++ --------------------------------------------------------------------------------

_HEADERS: Final = frozenset({".h", ".hh", ".hpp", ".hxx", ".h++", ".inl"})
_C_INCLUDE = re.compile(rb"#[ \t]*include[ \t]*([<\"][^>\"\n]+[>\"])")
_C_DEFINE = re.compile(rb"#[ \t]*define[ \t]+([A-Za-z_]\w*)")
_C_TAGGED = re.compile(
    rb"(?:struct|union|enum|class)[ \t]+(?:[A-Z_]+[ \t]+)?([A-Za-z_]\w*)[ \t]*"
    rb"(?:final[ \t]*)?(?=[{:;\n])"
)
_C_TAG_PREFIXES = (b"typedef", b"template", b"export")
_C_TYPEDEF = re.compile(rb"typedef\b")
_C_FUNCTION = re.compile(
    rb"\n((?:[A-Za-z_][\w:<>,\*&]*[ \t\*&]+)*)(~?[A-Za-z_]\w*(?:::~?[A-Za-z_]\w*)*)[ \t]*\("
)
_C_NAME_BEFORE_SEMI = re.compile(rb"([A-Za-z_]\w*)[ \t\]\[0-9]*;")
_C_FUNC_POINTER = re.compile(rb"\([ \t]*\*[ \t]*([A-Za-z_]\w*)[ \t]*\)")


def _typedef_name(data: bytes, start: int) -> bytes | None:
    i = start
    depth = 0
    end = min(len(data), start + 20000)
    while i < end:
        c = data[i]
        if c == 0x7B:  # {
            depth += 1
        elif c == 0x7D:  # }
            depth -= 1
        elif c == 0x3B and depth == 0:  # ;
            text = data[start : i + 1]
            tail = text[text.rfind(b"}") + 1 :] if b"}" in text else text
            if m := _C_FUNC_POINTER.search(tail):
                return m.group(1)
            if m := _C_NAME_BEFORE_SEMI.search(tail):
                return m.group(1)
            return None
        i += 1
    return None


def _is_header(path: str) -> bool:
    return posixpath.splitext(path)[1].lower() in _HEADERS


def _c(data: bytes, b: _Builder, path: str, spec: Declarations) -> None:
    header = _is_header(path)
    keywords = spec.keywords
    for m in _C_INCLUDE.finditer(data):
        b.imported(m.group(1))
    for m in _C_DEFINE.finditer(data):
        b.define(m.group(1), header)
    for m in _C_TAGGED.finditer(data):
        prefix = _line_prefix(data, m.start())
        words = prefix.split()
        if prefix[:1] in (b" ", b"\t") or (words and not words[0].startswith(_C_TAG_PREFIXES)):
            continue
        if m.group(1) not in keywords:
            b.define(m.group(1), header)
    for m in _C_TYPEDEF.finditer(data):
        if _line_prefix(data, m.start()).strip():
            continue
        name = _typedef_name(data, m.end())
        if name is not None and name not in keywords:
            b.define(name, header)
    for m in _C_FUNCTION.finditer(data):
        words = m.group(1).split()
        if words and (
            words[0] in _NOT_TYPES
            or words[0]
            in (b"if", b"while", b"for", b"switch", b"return", b"else", b"do", b"sizeof")
        ):
            continue
        name = m.group(2).rsplit(b"::", 1)[-1]
        if name in keywords or name.startswith(b"~"):
            continue
        b.define(name, header and b"static" not in words)


def _cpp(data: bytes, b: _Builder, path: str, spec: Declarations) -> None:
    """C's declarations, and in a header the members of its classes (all exported)."""
    _c(data, b, path, spec)
    if _is_header(path):
        _methods(data, b, Declarations(spec.keywords, exported=lambda words, name: True))


# --- Ruby -------------------------------------------------------------------------------------

_RUBY_SCOPE = re.compile(rb"\n([ \t]*)(class|module)[ \t]+(?!<<)([A-Z]\w*(?:::[A-Z]\w*)*)")
_RUBY_DEF = re.compile(rb"\n([ \t]*)def[ \t]+(self\.)?([A-Za-z_]\w*)")
_RUBY_VISIBILITY = re.compile(rb"\n([ \t]*)(private|protected|public)[ \t]*(?=\n)")
_RUBY_CONST = re.compile(rb"\n[ \t]*([A-Z][A-Z0-9_]*)[ \t]*=[^=~]")
_RUBY_ATTR = re.compile(rb"attr_(?:reader|writer|accessor)[ \t]+([^\n]+)")
_RUBY_SYMBOL = re.compile(rb":([A-Za-z_]\w*)")
_RUBY_REQUIRE = re.compile(rb"""require(_relative)?[ \t(]+['"]([^'"\n]+)['"]""")


def _ruby(data: bytes, b: _Builder, path: str, spec: Declarations) -> None:
    events: list[tuple[int, int, bytes, bytes]] = []  # (position, indent, what, name)
    for m in _RUBY_SCOPE.finditer(data):
        name = m.group(3).rsplit(b"::", 1)[-1]
        b.define(name, True)
        events.append((m.start(), len(m.group(1)), b"scope", name))
    for m in _RUBY_VISIBILITY.finditer(data):
        events.append((m.start(), len(m.group(1)), m.group(2), b""))
    for m in _RUBY_DEF.finditer(data):
        events.append(
            (
                m.start(),
                len(m.group(1)),
                b"def",
                m.group(3) if m.group(2) is None else b"self." + m.group(3),
            )
        )
    events.sort()
    # Visibility in force per indentation: a bare `private` hides the defs after it at its own
    # indentation until a class or module at a smaller indentation starts.
    hidden: dict[int, bool] = {}
    for _pos, indent, what, name in events:
        if what == b"scope":
            for level in [k for k in hidden if k > indent]:
                del hidden[level]
        elif what == b"def":
            singleton = name.startswith(b"self.")
            real = name[5:] if singleton else name
            if real not in spec.keywords:
                b.define(real, singleton or not hidden.get(indent, False), indent > 0)
        else:
            hidden[indent] = what != b"public"
    for m in _RUBY_CONST.finditer(data):
        b.define(m.group(1), True)
    for m in _RUBY_ATTR.finditer(data):
        for name in _RUBY_SYMBOL.findall(m.group(1)):
            b.define(name, True, True, True)
    for m in _RUBY_REQUIRE.finditer(data):
        required = m.group(2)
        b.imported((b"./" + required) if m.group(1) else required)


# --- documents --------------------------------------------------------------------------------

_FENCE = re.compile(rb"\n[ \t]*(```|~~~)[^\n]*\n(.*?)\n[ \t]*\1", re.S)
# (Starting with one literal backtick, the same as `+, lets the engine search for it fast.)
_SPAN = re.compile(rb"``*([^`\n]+)`+")
_INDENTED = re.compile(rb"\n(?: {4}|\t)[ \t]*([^\n]+)")
_LINK = re.compile(rb"\]\(([^)\s]+)\)")
_PATH = re.compile(
    rb"(?<![\w/:@.-])(?:[\w.-]+/)+[\w.-]*|(?<![\w/:@.-])[\w-]+\.(?:py|pyi|go|rs|ts|tsx|js|jsx|mjs|"
    rb"java|kt|c|h|cc|cpp|hpp|cs|rb|php|swift|scala|lua|sh|toml|yaml|yml|json|md|rst)\b"
)


def _document(
    data: bytes, b: _Builder, not_refs: frozenset[bytes]
) -> tuple[bytes, bytes, dict[bytes, int]]:
    """A document refers to the identifiers in its code and to the paths its code and links
    name; its prose is not code, so words there are not references."""
    code = [m.group(2) for m in _FENCE.finditer(data)]
    code += _SPAN.findall(data)
    code += _INDENTED.findall(data)
    text = b"\n".join(code)
    for mention in (*_PATH.findall(text), *_LINK.findall(data)):
        if b"://" not in mention and not mention.startswith((b"#", b"mailto:")):
            b.imported(mention.removeprefix(b"./"))
    return _words(text, not_refs)


# --- entry point ------------------------------------------------------------------------------


def _generic_reader(data: bytes, b: _Builder, path: str, spec: Declarations) -> None:
    _generic(data, b, spec)


_SHELL_FUNCTION = re.compile(rb"\n([A-Za-z_][\w-]*)[ \t]*\(\)")


def _shell(data: bytes, b: _Builder, path: str, spec: Declarations) -> None:
    """The generic scan, and functions declared as ``name()`` (a dash in a name reads as _)."""
    _generic(data, b, spec)
    for name in _SHELL_FUNCTION.findall(data):
        b.define(name.replace(b"-", b"_"), True)


# The readers a language's record (`packer.lang.record.Lexing.reader`) names; documents are
# read apart (`_document`), for the names and paths they mention.
_READERS: Final[dict[Reader, Callable[[bytes, _Builder, str, Declarations], None]]] = {
    "python": _python,
    "go": _go,
    "javascript": _javascript,
    "rust": _rust,
    "java": _java_like,
    "c": _c,
    "cpp": _cpp,
    "ruby": _ruby,
    "generic": _generic_reader,
    "shell": _shell,
}
# The languages `lex` reads.
LANGUAGES: Final = frozenset(r.name for r in RECORDS if r.lexicon is not None)


def lexicon_language(path: str, lang: str | None) -> str | None:
    """The language `lex` reads ``path`` as, or None when it gives no lexicon for it."""
    record = named(lang)
    if record is None:
        return None
    if record.lexicon is not None:
        return record.name
    if record.readme and is_readme(path):
        return record.readme
    return None


def cache_namespace(path: str, lang: str | None = None) -> str | None:
    """The cache namespace of ``path``'s lexicon (by language and rules), or None when `lex`
    gives no lexicon for it (``lang``: `packer.lang.language_for` of the path, when known)."""
    if lang is None:
        lang = language_for(path)
    if lexicon_language(path, lang) is None:
        return None
    return f"lex:{LEXICON_VERSION}:{lang}"


def lex(path: str, data: bytes, lang: str | None = None) -> Lexicon | None:
    """The lexicon of a text file, or None for a language it does not read (``lang`` defaults
    to `packer.lang.language_for`)."""
    if lang is None:
        lang = language_for(path)
    lang = lexicon_language(path, lang)
    record = named(lang)
    if lang is None or record is None or record.lexicon is None:
        return None
    reading = record.lexicon
    # A leading newline lets every line-start pattern (which begins with "\n" so that the
    # engine can search for it quickly) match on the first line too.
    data = b"\n" + data[:MAX_BYTES]
    b = _Builder(lang)
    if reading.reader == "document":
        return b.done(_document(data, b, reading.not_refs))
    data, prose = _prose(data, reading, record.comment)
    _READERS[reading.reader](data, b, path, reading.declarations)
    return b.words(data, reading.not_refs, prose)


# A file's first comment block: contiguous comment lines, or one block comment, before any code.
_HASH_HEAD = re.compile(rb"\A\s*#[^\n]*(?:\n[ \t]*#[^\n]*)*")
_SLASH_HEAD = re.compile(rb"\A\s*(?:/\*[\s\S]*?\*/|//[^\n]*(?:\n[ \t]*//[^\n]*)*)")
_LICENSE = re.compile(rb"copyright|licen[cs]e|spdx-", re.IGNORECASE)


def without_license(data: bytes, comment: str) -> bytes:
    """``data`` without its license header: its first comment block when that names a
    copyright or a license. Its words are the same above every file of a project
    ("Licensed under the Apache License, Version 2.0"), and `Version` or `License` counted as
    a reference would link each file to every definition so named."""
    head = (_HASH_HEAD if comment == "#" else _SLASH_HEAD).match(data)
    if head is None or _LICENSE.search(data, 0, head.end()) is None:
        return data
    return b"\n" + data[head.end() :]


_HASH_COMMENT = re.compile(rb"(#[^\n]*)")
_SLASH_COMMENT = re.compile(rb"(//[^\n]*|/\*[\s\S]*?\*/)")


def _prose(data: bytes, reading: Lexing, comment: str) -> tuple[bytes, bytes]:
    """(the code of ``data``, its comments and docstrings). Prose mentions plain words
    (`name`, `function`) that would link a file to every definition so named; its names
    (`Command`) still count. Declarations are read from the code only, so an example in a
    docstring declares nothing. Cut by a few fast passes, not a parse: a marker inside a
    string literal (`"#fff"`, `"http://"`) cuts there, which only moves words between the
    two."""
    data = without_license(data, comment)
    prose: list[bytes] = []
    if reading.docstrings and b'"""' in data:
        parts = data.split(b'"""')
        prose += parts[1::2]
        data = b'""'.join(parts[0::2])
    native = native_module()
    if native is not None:
        code, said, count = native.comments(data, comment != "#")
        if count:
            prose.append(said)
            data = code
        return data, b"\n".join(prose)
    pattern = _HASH_COMMENT if comment == "#" else _SLASH_COMMENT
    parts = pattern.split(data)  # code, comment, code, ...: one pass for both
    if len(parts) > 1:
        prose += parts[1::2]
        data = b" ".join(parts[0::2])
    return data, b"\n".join(prose)
