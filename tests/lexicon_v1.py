"""The lexicon's readers as they were before issue 22 made them fast, frozen: the reference
the readers of `packer.lexicon` must give the same bytes as (tests/test_lexicon.py).

This is the code of `packer.lexicon` at LEXICON_VERSION 1 as it stood before the speed work
(per-match Python, one regular-expression pass per declaration keyword, identifiers counted in
Python), kept verbatim but for what it shares with the module: the `Lexicon` it returns, the
flags and limits, and the language records it reads (`packer.lang`). It is slow and meant to
be: it is what the fast code is proven against, on random bodies and on the real corpora. When
the lexicon's rules change on purpose (LEXICON_VERSION bumped), this file goes with the old
version, and the golden digests of tests/test_lexicon.py are computed anew. Version 2 only cut
license headers out of the prose (`packer.lexicon.without_license`), which this reader calls.
"""

from __future__ import annotations

import posixpath
import re
import zlib
from array import array
from collections import Counter
from collections.abc import Callable, Collection, Iterator
from typing import Final

from packer.lang import is_readme, language_for, named
from packer.lang.record import Declarations, Lexing, Reader, word_set
from packer.lang.record import decl as _decl
from packer.lang.registry import JS_IDENT
from packer.lexicon import (
    ATTRIBUTE,
    EXPORTED,
    MAX_BYTES,
    MAX_DEFINES,
    MAX_IMPORTS,
    MAX_REFS,
    MIN_REF,
    MINOR,
    PLAIN,
    SHAPE_SHIFT,
    SPECIFIC,
    STRUCTURED,
    UNDERSCORE,
    Lexicon,
    _le,
    without_license,
)


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


def _declarations(
    data: bytes, spec: Declarations
) -> Iterator[tuple[bytes, list[bytes], bool, int, bool]]:
    """(name, modifier words, indented, position, minor) of each declaration ``spec`` knows;
    ``minor``: the declaration is a variable or says it belongs to a type (a Go method)."""
    for decl in spec.decls:
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
            yield name, words, indented, start, decl.minor


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
        # Names used qualified by what imports them (Go's `stack.New`): (specifier, name) -> uses.
        self.qualified: dict[tuple[bytes, bytes], int] = {}
        self.refs_text: bytes | None = None  # the text whose names are references, if not all
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
        return self.done(
            _python_words(code, keywords, prose, {local for _, _, local in self.bound})
        )

    def done(self, refs: tuple[bytes, bytes, dict[bytes, int]]) -> Lexicon:
        defined = sorted(self.defines)[:MAX_DEFINES]
        attributes = self.attributes - self.minor - self.toplevel
        minor = (self.minor | attributes) - self.toplevel
        crc, adler = zlib.crc32, zlib.adler32
        fps = array("Q", [(crc(n) << 32) | adler(n) for n in defined])
        info = bytes(
            (EXPORTED if n in self.exported else 0)
            | (MINOR if n in minor else 0)
            | (UNDERSCORE if n[:1] == b"_" else 0)
            | (ATTRIBUTE if n in attributes else 0)
            | (shape(n) << SHAPE_SHIFT)
            for n in defined
        )
        return Lexicon(
            self.lang,
            b"\n".join(defined).decode("ascii"),
            _le(fps),
            info,
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
    for name, words, indented, _pos, minor in _declarations(data, spec):
        b.define(name, spec.exported(words, name), minor or indented)
    for pattern in spec.imports:
        for m in pattern.finditer(data):
            b.imported(m.group(1))
    found = spec.package.search(data) if spec.package is not None else None
    if found is not None:
        b.package = found.group(1).decode("ascii", "replace")


# --- Python -----------------------------------------------------------------------------------

_PY_DEF = _decl(b"def")
_PY_CLASS = _decl(b"class")
_PY_ASSIGN = re.compile(rb"\n([A-Za-z_]\w*)[ \t]*(?::[^\n=]+)?=(?!=)")
_PY_IMPORT = re.compile(rb"import[ \t]+(\([^)]*\)|[^\n;#]*)")
_PY_FROM = re.compile(rb"from[ \t]+(\.*[\w.]*)[ \t]+$")
_PY_ALL = re.compile(rb"__all__[ \t]*(?::[^=\n]*)?\+?=[ \t]*[\[(]([^\])]*)[\])]")
_PY_ALL_ADD = re.compile(rb"__all__\.(?:append|extend)\(([^)]*)\)")
_PY_ATTRIBUTE = re.compile(rb"self\.([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=)")
_PY_NAME = re.compile(rb"[A-Za-z_]\w*")
_QUOTED = re.compile(rb"""['"]([A-Za-z_]\w*)['"]""")
_STATEMENT = re.compile(rb"\n[^ \t\n#@)\]}]")


def _python(data: bytes, b: _Builder, path: str, spec: Declarations) -> None:
    is_init = posixpath.basename(path) in ("__init__.py", "__init__.pyi")
    found: list[tuple[int, int, bytes, bool]] = []  # (position, indent, name, is_class)
    for decl, is_class in ((_PY_DEF, False), (_PY_CLASS, True)):
        for m in decl.pattern.finditer(data):
            start = m.start()
            prefix = _line_prefix(data, start)
            if prefix.strip(b" \t") and prefix.split() != [b"async"]:
                continue
            found.append((start, len(prefix) - len(prefix.lstrip()), m.group(1), is_class))
    found.sort()
    # Enclosing blocks, innermost last: (indent, is_class, private).
    stack: list[tuple[int, bool, bool]] = []
    previous = 0
    for pos, indent, name, is_class in found:
        # A top-level statement since the previous declaration closes every block: a def
        # indented under a top-level `if` or `try` after a function is not that function's.
        if stack and indent and _STATEMENT.search(data, previous, pos) is not None:
            stack.clear()
        previous = pos
        while stack and stack[-1][0] >= indent:
            stack.pop()
        dunder = name.startswith(b"__") and name.endswith(b"__")
        private = name.startswith(b"_") and not dunder
        if stack:
            if not stack[-1][1]:  # nested in a function: a local helper, not the file's
                stack.append((indent, False, True))
                continue
            private = private or stack[-1][2]
        if not dunder:
            b.define(name, not private, bool(stack))
        stack.append((indent, is_class, private))
    for m in _PY_ASSIGN.finditer(data):
        name = m.group(1)
        if not (name.startswith(b"__") and name.endswith(b"__")):
            b.define(name, not name.startswith(b"_"), True)
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
_GO_IMPORT_LINE = re.compile(rb'(?:^|[\n(;])[ \t]*(?:([A-Za-z_]\w*|\.)[ \t]+)?"([^"\n]+)"')
_GO_VERSION = re.compile(rb"v[0-9]+")


def _go_local_name(path: bytes) -> bytes:
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
            if re.fullmatch(rb"[A-Za-z][A-Za-z0-9_]*|_[A-Za-z0-9_]+", name):
                by_local.setdefault(name, specifier)
    if by_local:
        qualified = re.compile(
            rb"(?<![.\w])(" + b"|".join(re.escape(k) for k in sorted(by_local)) + rb")\.([A-Z]\w*+)"
        )
        for (local, name), uses in Counter(qualified.findall(data)).items():
            key = (by_local[local], name)
            b.qualified[key] = b.qualified.get(key, 0) + uses
        b.refs_text = qualified.sub(rb"\1.", data)


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
    for name, words, indented, pos, _minor in _declarations(data, spec):
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
    for name, words, indented, pos, _minor in _declarations(data, spec):
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
_SPAN = re.compile(rb"`+([^`\n]+)`+")
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
    return _python_words(text, not_refs)


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


_HASH_COMMENT = re.compile(rb"(#[^\n]*)")
_SLASH_COMMENT = re.compile(rb"(//[^\n]*|/\*[\s\S]*?\*/)")


def _prose(data: bytes, reading: Lexing, comment: str) -> tuple[bytes, bytes]:
    """(the code of ``data``, its comments and docstrings). Prose mentions plain words
    (`name`, `function`) that would link a file to every definition so named; its names
    (`Command`) still count. Declarations are read from the code only, so an example in a
    docstring declares nothing. Cut by a few fast passes, not a parse: a marker inside a
    string literal (`"#fff"`, `"http://"`) cuts there, which only moves words between the
    two."""
    data = without_license(data, comment)  # LEXICON_VERSION 2: the one rule changed since
    prose: list[bytes] = []
    if reading.docstrings and b'"""' in data:
        parts = data.split(b'"""')
        prose += parts[1::2]
        data = b'""'.join(parts[0::2])
    pattern = _HASH_COMMENT if comment == "#" else _SLASH_COMMENT
    parts = pattern.split(data)  # code, comment, code, ...: one pass for both
    if len(parts) > 1:
        prose += parts[1::2]
        data = b" ".join(parts[0::2])
    return data, b"\n".join(prose)
