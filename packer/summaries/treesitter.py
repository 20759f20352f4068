"""One outline engine for every tree-sitter language, driven by a tag query per language.

What a language declares is data: ``queries/<language>.scm`` captures each definition as
``@definition.<kind>`` (class, interface, module, struct, function, method, field, constant,
variable, type, enum, export) with its ``@name``, the modules a file imports as ``@import`` and the
statements that re-export names as ``@reexport``. The engine then does the same for every
language:

* nesting comes from node ranges: a definition inside another is its member; one inside a
  function, a field or a constant is part of a body and is never shown;
* a definition's line is its source from the start of its line (so `export`, `pub`,
  `template <...>` and the like come along) up to its body, or up to its first member, on one
  line, as written: a container's line ends with the `{` its members follow (`pub struct
  Error {`), a function's block stands as `{ ... }`; a leaf (a field, a constant, an alias, a
  signature without a body) is shown whole, as written (the `;` or `,` that ends it in the
  source included), cut before any code body, clipped;
* its doc is the first sentence of the comment just above it (or above the wrapper it leads,
  with attributes and decorators in between), and the default it states (``@default 10000``),
  shown on the next line;
* the file's purpose is its first leading comment that is neither a license nor a tool
  directive nor a definition's doc.

A language module (``packer/summaries/<language>.py``) adds only what a query cannot say, as its
`Hooks`: which definitions are exported by that language's rules, a display fix, an order (Go:
exported first), a byte-preserving rewrite of source the grammar misreads (C export macros). The
grammar, the query and the comment marker come from the language's record (`packer.lang`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Final, cast

from packer.outline import Outline, Symbol
from packer.summaries.comments import doc_default, doc_sentence, is_license
from packer.summaries.text import (
    LINE_WIDTH,
    MAPPING_WIDTH,
    VALUE_WIDTH,
    clip,
    fit_entries,
    one_line,
)

MAX_DEPTH: Final = 6
_KINDS: Final = {
    "class": "class",
    "interface": "class",
    "module": "class",
    "struct": "class",
    "trait": "class",
    "impl": "class",
    "enum": "type",
    "type": "type",
    "function": "function",
    "method": "method",
    "field": "field",
    "constant": "constant",
    "variable": "variable",
    "export": "export",
}
# Kinds whose members are shown; anything inside another kind is code or a value.
_CONTAINERS: Final = frozenset({"class", "type"})
# Nodes that hold a body of code: a leaf's display stops before any of them.
_CODE: Final = frozenset(
    {
        "block",
        "statement_block",
        "compound_statement",
        "constructor_body",
        "function_body",
        "body_statement",
        "do_block",
        "arrow_expression_clause",
        "lambda_expression",
    }
)
# Nodes that hold members or code when the grammar gives no "body" field.
_BODIES: Final = _CODE | {
    "declaration_list",
    "field_declaration_list",
    "class_body",
    "interface_body",
    "enum_body",
    "enum_class_body",
    "enum_variant_list",
    "enumerator_list",
    "enum_member_declaration_list",
    "object_type",
    "protocol_body",
    "accessor_list",
    "annotation_type_body",
    "record_declaration_body",
}
_OPENERS: Final = ("{", "(", "[", "do", ":")
_SKIPPED_ABOVE: Final = frozenset(
    {"attribute_item", "decorator", "annotation", "marker_annotation", "attribute_list"}
)
_PREFIX_STOP: Final = frozenset(";{}()=")
_RAW_CAP: Final = LINE_WIDTH * 6  # source bytes read for one display line
# Comment lines read above a definition at most: a doc with its examples can run to hundreds of
# lines (its first sentence is at its top), and a longer run is not taken for a doc at all.
_MAX_RUN: Final = 1024


@dataclass
class Definition:
    """One captured definition, as the language hooks see it."""

    node: Any
    kind: str  # an outline kind
    tag: str  # the query's own kind ("interface", "struct", "enum"...)
    name: str
    parent: Definition | None = None
    depth: int = 0
    exported: bool = True
    index: int = -1  # in the outline's symbols
    children: list[Definition] = field(default_factory=list)


class Source:
    """A parsed file: its bytes, its tree's root, and a memo for language hooks that work out
    something once per file or per body (a file's export list, a class's access sections)."""

    def __init__(self, data: bytes, root: Any = None) -> None:
        self.data = data
        self.root = root
        self.memo: dict[Any, Any] = {}

    def text(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8", "replace")

    def node_text(self, node: Any, cap: int = 1 << 30) -> str:
        return self.text(node.start_byte, min(node.end_byte, node.start_byte + cap))


def _always(d: Definition, src: Source) -> bool:
    return True


@dataclass(frozen=True)
class Hooks:
    """What a language module adds to its query: its rule of what is exported, a fix to how a
    definition's line is shown, an order, a rewrite of the source before parsing."""

    exported: Callable[[Definition, Source], bool] = _always
    display: Callable[[Definition, str, Source], str] | None = None
    arrange: Callable[[list[Definition]], list[Definition]] | None = None
    prepare: Callable[[str], str] | None = None  # must keep every byte offset


@dataclass(frozen=True)
class Spec:
    """How one language is outlined: its grammar, its query, and its few hooks (from the
    language's record, `packer.lang.Language.outline`)."""

    lang: str  # the outline's language name
    grammar: str  # the tree-sitter-language-pack name
    query: str = ""  # queries/<query>.scm; the grammar's name when empty
    comment: str = "//"  # how its doc lines are marked
    hooks: Hooks = Hooks()


@functools.cache  # a compiled query is only read, by any number of cursors and threads
def _query(spec_query: str, grammar: str) -> Any:
    import tree_sitter
    import tree_sitter_language_pack

    text = resources.files("packer.summaries").joinpath(f"queries/{spec_query}.scm").read_text()
    return tree_sitter.Query(tree_sitter_language_pack.get_language(cast(Any, grammar)), text)


# A parser keeps state while it parses: one per thread, so outlines can be made in parallel.
_PARSERS = threading.local()


def _parser(grammar: str) -> Any:
    import tree_sitter_language_pack

    parsers: dict[str, Any] | None = getattr(_PARSERS, "by_grammar", None)
    if parsers is None:
        parsers = _PARSERS.by_grammar = {}
    parser = parsers.get(grammar)
    if parser is None:
        parser = parsers[grammar] = tree_sitter_language_pack.get_parser(cast(Any, grammar))
    return parser


def outline(spec: Spec, text: str, source_lines: int) -> Outline | None:
    """The outline of ``text`` in ``spec``'s language, or None when the grammar finds nothing
    (or little, in a file it mostly cannot parse)."""
    defs: list[Definition] = []
    try:
        return _outline(spec, text, source_lines, defs)
    finally:
        # A nested definition and its parent refer to each other, and each holds its node,
        # which holds the file's whole parse tree: left as cycles, the trees lived until a full
        # collection, which their size (memory tree-sitter allocates) does not bring about.
        # Packing gVisor's 1,655 Go files held 115 MiB of trees at once.
        for d in defs:
            d.parent = None
            d.children = []


def _outline(spec: Spec, text: str, source_lines: int, defs: list[Definition]) -> Outline | None:
    """`outline`, with every definition found put in ``defs``."""
    import tree_sitter

    if spec.hooks.prepare is not None:
        text = spec.hooks.prepare(text)
    data = text.encode("utf-8")
    root = _parser(spec.grammar).parse(data).root_node
    src = Source(data, root)
    query = _query(spec.query or spec.grammar, spec.grammar)
    # Per node, the definition of the first pattern (in the query file's order) that matched it.
    found: dict[tuple[int, int, str], tuple[int, Definition]] = {}
    ignored: set[tuple[int, int, str]] = set()
    imports: list[Any] = []
    reexports: list[Any] = []
    for pattern, captures in tree_sitter.QueryCursor(query).matches(root):
        for capture, nodes in captures.items():
            if capture == "import":
                imports.extend(nodes)
            elif capture == "reexport":
                reexports.extend(nodes)
            elif capture == "ignore":
                ignored.update(_key(node) for node in nodes)
            elif capture.startswith("definition."):
                tag = capture[len("definition.") :]
                names = captures.get("name")
                if tag not in _KINDS or not names:
                    continue
                key = _key(nodes[0])
                if key not in found or pattern < found[key][0]:
                    name = one_line(src.node_text(names[0], 200))
                    found[key] = (pattern, Definition(nodes[0], _KINDS[tag], tag, name))
    defs.extend(d for key, (_, d) in found.items() if key not in ignored)
    kept = _nest(sorted(defs, key=lambda d: (d.node.start_byte, -d.node.end_byte)))
    if not kept and not reexports:
        return None
    if root.has_error and _mostly_broken(root, len(kept), len(data), source_lines):
        return None
    for d in kept:
        d.exported = (d.parent is None or d.parent.exported) and spec.hooks.exported(d, src)
    ordered = spec.hooks.arrange(kept) if spec.hooks.arrange is not None else kept
    symbols = _symbols(spec, ordered, src)
    reexports.sort(key=lambda node: node.start_byte)
    # What the head shows as re-exported (`pub use`) is not listed again as imported.
    spans = [(node.start_byte, node.end_byte) for node in reexports]
    imports = [i for i in imports if not any(a <= i.start_byte < b for a, b in spans[:200])]
    if imports:
        imports.sort(key=lambda node: node.start_byte)
        found_names = (_import_name(src.node_text(node, 300)) for node in imports)
        modules = list(dict.fromkeys(n for n in found_names if n))
        line = clip("imports: " + ", ".join(modules), LINE_WIDTH * 2)
        first = imports[0].start_point[0] + 1
        symbols.insert(0, Symbol("imports", "import", (line,), -1, False, first))
        symbols = [
            s if i == 0 or s.parent < 0 else _reparent(s, s.parent + 1)
            for i, s in enumerate(symbols)
        ]
    head: list[str] = []
    purpose = _purpose(root, src, kept)
    if purpose:
        head.append(f"{spec.comment} {purpose}")
    head.extend(dict.fromkeys(_reexport_line(src, node) for node in reexports))
    return Outline(spec.lang, source_lines, tuple(head), tuple(symbols))


def _key(node: Any) -> tuple[int, int, str]:
    return (node.start_byte, node.end_byte, node.type)


def _reparent(s: Symbol, parent: int) -> Symbol:
    return Symbol(s.name, s.kind, s.lines, parent, s.exported, s.line)


def _import_name(text: str) -> str:
    return one_line(text).strip("\"'`<>; ")


def _reexport_line(src: Source, node: Any) -> str:
    return clip(one_line(src.node_text(node, LINE_WIDTH * 8)), LINE_WIDTH * 2)  # as written


def _nest(defs: list[Definition]) -> list[Definition]:
    """Each definition's parent from the ranges: the innermost one enclosing it. A definition
    inside something that is not a container (a function's body, a field's type, a constant's
    value) is dropped, and so is everything inside it."""
    kept: list[Definition] = []
    stack: list[tuple[Definition, bool]] = []  # (definition, shown)
    for d in defs:
        while stack and stack[-1][0].node.end_byte <= d.node.start_byte:
            stack.pop()
        shown = True
        if stack:
            parent, parent_shown = stack[-1]
            if not parent_shown or parent.kind not in _CONTAINERS or parent.depth + 1 >= MAX_DEPTH:
                shown = False
            else:
                d.parent = parent
                d.depth = parent.depth + 1
                parent.children.append(d)
                if d.kind == "function" and parent.kind == "class" and parent.tag != "module":
                    d.kind = "method"  # a function written in a class body (C++, Kotlin)
        if d.node.end_byte > d.node.start_byte:
            stack.append((d, shown))
        if shown:
            kept.append(d)
    return kept


def _mostly_broken(root: Any, found: int, size: int, source_lines: int) -> bool:
    """Whether a tree with errors is mostly errors, or holds very few definitions for its
    size: then the file's first lines say more than what the grammar made of it."""
    broken = sum(c.end_byte - c.start_byte for c in root.children if c.type == "ERROR")
    return broken * 2 > size or found * 200 < source_lines


def _symbols(spec: Spec, defs: list[Definition], src: Source) -> list[Symbol]:
    symbols: list[Symbol] = []
    for d in defs:
        d.index = len(symbols)
        pad = "  " * d.depth
        mapping = _mapping(d, src)
        shown = _display(d, src) if mapping is None else mapping
        if spec.hooks.display is not None:
            shown = spec.hooks.display(d, shown, src)
        lines = [pad + clip(shown, LINE_WIDTH if mapping is None else MAPPING_WIDTH + LINE_WIDTH)]
        doc = _doc(d.node, src)
        if doc:
            lines.append(f"{pad}  {spec.comment} {doc}")
        parent = d.parent.index if d.parent is not None else -1
        line = d.node.start_point[0] + 1
        symbols.append(Symbol(d.name, d.kind, tuple(lines), parent, d.exported, line))
    return symbols


# --- display lines ------------------------------------------------------------------------------


def _display(d: Definition, src: Source) -> str:
    node = d.node
    start = _display_start(node, src)
    body = None
    # Members written inside it (a Go method declared after its type is listed under the type
    # but is no part of its text).
    inner = [c for c in d.children if c.node.start_byte < node.end_byte]
    if inner:
        end = _members_start(node, inner[0].node, src)
    elif d.kind in ("function", "method", "class"):
        body = _body(node)
        end = body.start_byte if body is not None else _code_start(node)
    else:
        end = _code_start(node)
    capped = end - start > _RAW_CAP
    whole = not capped and end >= node.end_byte
    end = min(end, start + _RAW_CAP)
    text = one_line(_text_without_comments(node, start, end, src))
    if whole:
        # Shown whole (a field, a constant, a signature without a body): as written, with the
        # `;` or `,` that ends it in the source (`count?: number;`), not tidied of it.
        return text.rstrip() + _terminator(text, node, src)
    opener = src.data[end : end + 1]
    if not capped and opener == b"{" and (inner or body is not None):
        # Up to its block, as written (`pub struct Error {`, a where clause's last `,`); a
        # function's block stands for its code: `{ ... }`.
        return text.rstrip() + (" {" if inner else " { ... }")
    return tidy(text)


def _terminator(text: str, node: Any, src: Source) -> str:
    """The `;` or `,` that follows ``node`` on its line (a member's separator the grammar leaves
    to the enclosing list), when ``text`` does not already end with it; else ""."""
    data = src.data
    at = int(node.end_byte)
    while at < len(data) and data[at] in b" \t":
        at += 1
    mark = data[at : at + 1]
    if mark in (b";", b",") and not text.rstrip().endswith(mark.decode()):
        return mark.decode()
    return ""


def _mapping(d: Definition, src: Source) -> str | None:
    """A constant or variable whose value is an object literal (a configuration's defaults,
    `const defaults = {...}`), as its head and its entries: each ``key: value`` whose value is
    short, a function value as its parameters (``key: (text) => ...``), a method as
    ``name(...)``, as many as `fit_entries` allows, the rest as ``...``. None for any other."""
    if d.kind not in ("constant", "variable") or d.children:
        return None
    value = _object_value(d.node)
    if value is None:
        return None
    start = _display_start(d.node, src)
    head = tidy(one_line(_text_without_comments(d.node, start, value.start_byte, src)))
    entries: list[str] = []
    for child in value.named_children:
        if "comment" in child.type:
            continue
        entries.append(_entry(child, src))
    if not entries:
        return None
    shown, cut = fit_entries(entries)
    more = ", ..." if cut else ""
    return f"{head} = {{{', '.join(entries[i] for i in shown)}{more}}}"


def _object_value(node: Any) -> Any:
    """The object literal a declaration assigns, looking through its declarator."""
    for candidate in (node, *node.named_children):
        value = candidate.child_by_field_name("value")
        if value is not None and value.type == "object":
            return value
    return None


def _entry(node: Any, src: Source) -> str:
    """One entry of an object literal as shown, or "" when it is too long to show."""
    if node.type == "pair":
        key, value = node.child_by_field_name("key"), node.child_by_field_name("value")
        if key is None or value is None or key.end_byte - key.start_byte > 40:
            return ""
        name = src.node_text(key)
        if value.type in ("arrow_function", "function_expression", "function"):
            params = value.child_by_field_name("parameters") or value.child_by_field_name(
                "parameter"
            )
            text = f"{name}: {src.node_text(params, 100) if params is not None else '()'} => ..."
        elif value.end_byte - value.start_byte > VALUE_WIDTH * 3:
            return ""
        else:
            text = f"{name}: {one_line(src.node_text(value))}"
    elif node.type == "method_definition":
        key = node.child_by_field_name("name")
        text = f"{src.node_text(key, 40)}(...)" if key is not None else ""
    else:  # a shorthand property, a spread
        text = one_line(src.node_text(node, VALUE_WIDTH * 3))
    return text if len(text) <= VALUE_WIDTH else ""


def tidy(head: str) -> str:
    """A declaration's text without the punctuation that opens or ends its body."""
    head = head.rstrip(" ;,{([&|")
    if head.endswith(" =") and not head.endswith("=="):
        head = head[:-2]
    if head.endswith(" do"):
        head = head[:-3]
    return head.rstrip()


def _display_start(node: Any, src: Source) -> int:
    """Where a definition's line starts: at the start of its source line when what precedes it
    there is words (`export`, `pub`, `export default`, `template <T>`), not other code."""
    data = src.data
    line_start = data.rfind(b"\n", 0, node.start_byte) + 1
    prefix = data[line_start : node.start_byte]
    if len(prefix) > 200 or any(chr(b) in _PREFIX_STOP for b in prefix):
        return int(node.start_byte)
    return line_start + (len(prefix) - len(prefix.lstrip()))


def _members_start(node: Any, first: Any, src: Source) -> int:
    """Where a container's members start: its body's opening bracket, found as the outermost
    node between the container and its first member that opens with one."""
    path: list[Any] = []
    walk = first.parent
    while walk is not None and walk.id != node.id:
        path.append(walk)
        walk = walk.parent
    for candidate in reversed(path):  # outermost first
        if candidate.type in _BODIES:
            return int(candidate.start_byte)
        head = src.text(candidate.start_byte, candidate.start_byte + 2)
        if head.startswith(_OPENERS):
            return int(candidate.start_byte)
    line_start = src.data.rfind(b"\n", 0, first.start_byte) + 1
    # A body with no node of its own (a Go interface's methods): its bracket, so that what lies
    # between it and the first member (that member's doc comment) is not the container's line.
    brace = src.data.rfind(b"{", node.start_byte, line_start)
    if brace >= 0:
        return brace
    return max(int(node.start_byte), line_start)


def _body(node: Any) -> Any:
    body = node.child_by_field_name("body")
    if body is not None:
        return body
    for child in node.children:
        if child.type in _BODIES:
            return child
    # A declarator's function value (`const f = () => {...}`): the body is one level down.
    for name in ("value", "right", "declarator", "type"):
        inner = node.child_by_field_name(name)
        if inner is None:
            continue
        body = inner.child_by_field_name("body")
        if body is not None:
            return body
        for child in inner.children:
            if child.type in _BODIES:
                return child
    return None


def _code_start(node: Any) -> int:
    """Where the first code body inside a leaf starts (a field whose value is an arrow
    function, a variable holding a closure), or the leaf's end: only the first bytes are
    searched, as only they are shown."""
    limit = node.start_byte + _RAW_CAP
    cursor = node.walk()
    if not cursor.goto_first_child():
        return int(node.end_byte)
    while True:
        current = cursor.node
        if current.start_byte > limit:
            return int(limit)
        if current.type in _CODE:
            return int(current.start_byte)
        if current.end_byte > current.start_byte and cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent() or cursor.node.id == node.id:
                return int(node.end_byte)


def _text_without_comments(node: Any, start: int, end: int, src: Source) -> str:
    """The source from ``start`` to ``end`` without the comments among ``node``'s children."""
    pieces: list[str] = []
    pos = start
    for child in node.children:
        if child.start_byte >= end:
            break
        if "comment" in child.type and child.start_byte >= pos:
            pieces.append(src.text(pos, child.start_byte))
            pos = child.end_byte
    if pos < end:
        pieces.append(src.text(pos, end))
    return " ".join(pieces)


# --- docs ---------------------------------------------------------------------------------------


def _doc(node: Any, src: Source) -> str:
    """The first sentence of the doc comment above ``node``, or above the wrapper it leads
    (an `export`, a `template`, a decorated definition, a Go `type` group's first spec)."""
    for _ in range(5):
        comment = _comment_above(node, src)
        if comment:
            text = comment_text(comment, src)
            return " ".join(filter(None, (doc_sentence(text), doc_default(text))))
        parent = node.parent
        if parent is None or parent.parent is None or parent.type in _BODIES:
            return ""
        if not _leads(parent, node):
            return ""
        node = parent
    return ""


def _leads(parent: Any, node: Any) -> bool:
    """Whether ``node`` is the first named child of ``parent`` (comments, attributes and
    decorators aside), so a comment above ``parent`` is about ``node``."""
    for child in parent.named_children:
        if "comment" in child.type or child.type in _SKIPPED_ABOVE:
            continue
        return bool(child.id == node.id)
    return False


def _comment_above(node: Any, src: Source) -> list[Any]:
    """The run of comments directly above ``node`` (attributes may stand between), top first."""
    prev = node.prev_sibling
    row = node.start_point[0]
    while prev is not None and prev.type in _SKIPPED_ABOVE and prev.end_point[0] >= row - 1:
        row = prev.start_point[0]
        prev = prev.prev_sibling
    if prev is None or "comment" not in prev.type or prev.end_point[0] < row - 1:
        return []
    if prev.end_point[0] == row and prev.end_point[1] > 0 and prev.start_point[0] == row:
        return []  # a comment on the same line before the node: not a doc
    run = [prev]
    if src.data.startswith(b"/*", prev.start_byte):
        return run  # a block comment is a whole doc; any comment above it is another one
    while True:
        before = run[-1].prev_sibling
        if before is None or "comment" not in before.type:
            break
        if before.end_point[0] < run[-1].start_point[0] - 1:
            break
        if len(run) >= _MAX_RUN:
            return []  # its start is too far up: no doc rather than a sentence from its middle
        run.append(before)
    # A comment that trails code on its first line belongs to that code.
    first = run[-1]
    before = first.prev_sibling
    if (
        before is not None
        and before.end_point[0] == first.start_point[0]
        and before.end_point[1] > 0  # not a node that ends with its line's newline (`#define`)
    ):
        run.pop()
    run.reverse()
    return run


def comment_text(run: list[Any], src: Source) -> str:
    return "\n".join(src.node_text(c, 4000).rstrip("\r\n") for c in run)


def _purpose(root: Any, src: Source, defs: list[Definition]) -> str:
    """The first sentence of the file's leading comment: a comment among the top-level nodes
    before the first definition that is no license, no tool directive and no definition's doc."""
    first_def = min((d.node.start_byte for d in defs if d.parent is None), default=1 << 62)
    children = root.children
    i = 0
    while i < len(children):
        child = children[i]
        if child.end_byte > first_def:
            return ""  # the first definition, or what holds it
        if "comment" not in child.type:
            i += 1
            continue
        run = [child]
        while (
            i + 1 < len(children)
            and "comment" in children[i + 1].type
            and children[i + 1].start_point[0] <= run[-1].end_point[0] + 1
        ):
            i += 1
            run.append(children[i])
        i += 1
        text = comment_text(run, src)
        if is_license(text):
            continue
        j = i
        while j < len(children) and children[j].type in _SKIPPED_ABOVE:
            j += 1  # attributes and decorators between a doc and its definition
        following = children[j] if j < len(children) else None
        if (
            following is not None
            and following.end_byte > first_def
            and following.start_point[0] <= run[-1].end_point[0] + 1
            and not text.lstrip().startswith("//!")
        ):
            return ""  # the first definition's doc, not the file's
        sentence = doc_sentence(text)
        if sentence:
            return sentence
    return ""
