"""C and C++: exported means visible outside the file: not `static` at file scope, not in an
anonymous or `detail`/`internal` namespace, and in a C++ class under `public:` (a struct's
members until an access specifier says otherwise).

A file's exported surface is judged from its content alone (a header's declarations and a
source file's external functions alike), so the outline of the same bytes is the same whatever
the file is called. Export macros (`ZSTDLIB_API size_t f(...)`, `class JP_API Box`) and the
`extern "C" {` of a header's `#ifdef __cplusplus` guard make the grammars misread whole files;
they are blanked out before parsing, byte for byte, so every offset stays where it was.
"""

from __future__ import annotations

import re
from typing import Any

from packer.summaries.treesitter import Definition, Hooks, Source

# An ALL-CAPS word that by its name marks visibility or calling convention: ZSTDLIB_API,
# JP_API, LUA_API, CURL_EXTERN, XMLPUBFUN, JNIEXPORT, JNICALL, Q_DECL_EXPORT, MDB_INLINE...
_MACRO = re.compile(
    r"\b[A-Z][A-Z0-9_]*(?:API|EXPORT|EXPORTS|EXTERN|PUBFUN|DECL|CALL|VISIBLE|INLINE|"
    r"DEPRECATED|HIDDEN|LOCAL|PUBLIC|IMPORT)\b(?:\([^()\n]{0,200}\))?"
    r"(?=[ \t]+[A-Za-z_*&~])"  # it qualifies the declaration that follows
)
_EXTERN_C = re.compile(r'^[ \t]*extern[ \t]+"C"[ \t]*\{[ \t]*$', re.MULTILINE)
_CPLUSPLUS_CLOSE = re.compile(
    r"(^[ \t]*#[ \t]*if(?:def)?[^\n]*__cplusplus[^\n]*\n)([ \t]*\}[ \t]*(?://[^\n]*)?)$",
    re.MULTILINE,
)
_HIDDEN_NAMESPACES = frozenset({"detail", "details", "internal", "impl", "_detail"})


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group(0).encode("utf-8"))


def prepare(text: str) -> str:
    def blank_macros(line: str) -> str:
        return line if line.lstrip().startswith("#") else _MACRO.sub(_blank, line)

    if _MACRO.search(text):
        text = "\n".join(blank_macros(line) for line in text.split("\n"))
    text = _EXTERN_C.sub(_blank, text)
    return _CPLUSPLUS_CLOSE.sub(lambda m: m.group(1) + _blank_group(m.group(2)), text)


def _blank_group(text: str) -> str:
    return " " * len(text.encode("utf-8"))


def _access(d: Definition, src: Source) -> str:
    """The access of a member of a C++ class: the last access specifier before it in the class
    body, else the default of `class` (private) or `struct`/`union` (public)."""
    body: Any = d.node.parent
    if body is None:
        return "public"
    sections = src.memo.get(("access", body.id))
    if sections is None:
        sections = [
            (c.start_byte, src.node_text(c, 40).strip().rstrip(":").strip())
            for c in body.children
            if c.type == "access_specifier"
        ]
        src.memo[("access", body.id)] = sections
    access = "private" if d.parent is not None and d.parent.node.type == "class_specifier" else ""
    for start, word in sections:
        if start > d.node.start_byte:
            break
        access = word
    return access or "public"


def exported(d: Definition, src: Source) -> bool:
    node = d.node
    if node.type == "namespace_definition":
        name = node.child_by_field_name("name")
        return name is not None and src.node_text(name, 100) not in _HIDDEN_NAMESPACES
    if d.parent is not None and d.parent.node.type in (
        "class_specifier",
        "struct_specifier",
        "union_specifier",
    ):
        return _access(d, src) == "public"
    if d.parent is None or d.parent.node.type == "namespace_definition":
        for child in node.children:
            if child.type == "storage_class_specifier" and src.node_text(child, 20) == "static":
                return False
    return True


def display(d: Definition, shown: str, src: Source) -> str:
    # `typedef struct { ... } name;`: the name comes after the body the line leaves out.
    if d.node.type == "type_definition" and d.children and d.name not in shown:
        head = shown[:-2] if shown.endswith(" {") else shown
        return f"{head} {{...}} {d.name}"
    return shown


HOOKS = Hooks(exported=exported, display=display, prepare=prepare)

# A C++ header named .h: the C grammar would read little of it.
_CPP_SNIFF = 200_000
_CPP_HINT = re.compile(
    r"^[ \t]*(?:namespace[ \t]+\w|template[ \t]*<|class[ \t]+\w+[^;\n]*\{|"
    r"(?:public|private|protected)[ \t]*:|#include[ \t]*<[a-z_]+>[ \t]*$)|std::",
    re.MULTILINE,
)


def looks_like_cpp(text: str) -> bool:
    """Whether a C file (a header named .h) is C++, by the start of its text."""
    return _CPP_HINT.search(text[:_CPP_SNIFF]) is not None
