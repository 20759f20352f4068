"""MEDIUM-tier summaries: what a file declares and what it is for, without bodies.

An LLM agent reads a summary in place of the file, so a summary spends its tokens on names,
signatures and one-line purposes. Python is read with `ast`, Markdown with a small line scanner,
other languages with tree-sitter grammars; anything else, or anything that fails to parse, gets the
first lines of the file. Output is deterministic for a given (path, text, max_lines) and
`summarize` never raises: a summary is always better than a failed pack.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

from packer.languages import language_for

# Summaries are cached by content digest plus this version: bump it whenever the output changes.
SUMMARY_VERSION = "1"

_FALLBACK_LINES = 20
_FALLBACK_WIDTH = 160
_LINE_WIDTH = 200
_DOC_WIDTH = 120
_DEFAULT_WIDTH = 30
_CONST_WIDTH = 60
_MODULE_DOC_WIDTH = 300
_SENTENCE_WIDTH = 200
# Deeper declarations (a class in a class in a namespace...) add little and could recurse without
# bound on hostile input.
_MAX_DEPTH = 6


def summarize(path: str, text: str, *, max_lines: int = 200) -> str:
    """A short, deterministic summary of ``text`` (the content of ``path``), ending in one newline.

    Starts with a one-line header, holds at most ``max_lines`` lines, and never raises. The result
    depends on ``path`` only through its language, so files with the same content and language
    share one summary (callers cache it by content digest and language).
    """
    try:
        return _summarize(path, text, max_lines)
    except Exception:  # a summary must never fail a pack; the header alone still says something
        return "# summary\n"


def _summarize(path: str, text: str, max_lines: int) -> str:
    text = _valid_text(text)
    lang = language_for(path)
    if lang == "c" and _CPP_HINT.search(text[:_CPP_SNIFF]):
        lang = "cpp"  # a C++ header named .h: the C grammar would read little of it
    body: list[str] | None = None
    try:
        if lang == "python":
            body = _python(text)
        elif lang == "markdown":
            body = _markdown(text)
        elif lang is not None and lang in _GRAMMARS:
            body = _tree_sitter(lang, text)
    except Exception:  # any parser failure on odd input falls back to the file's first lines
        body = None
    if not body:
        body = _fallback(text)
    n = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    header = f"# summary ({lang or 'text'}, {n} line{'' if n == 1 else 's'})"
    lines = [_clean(line) for line in [header, *body]]
    lines = [line for line in lines if line.strip()]
    limit = max(max_lines, 2)
    if len(lines) > limit:
        dropped = len(lines) - (limit - 1)
        lines = [*lines[: limit - 1], f"... (truncated, {dropped} more lines)"]
    return "\n".join(lines) + "\n"


_CPP_SNIFF = 200_000
_CPP_HINT = re.compile(
    r"^[ \t]*(?:namespace[ \t]+\w|template[ \t]*<|class[ \t]+\w+[^;\n]*\{|"
    r"(?:public|private|protected)[ \t]*:|#include[ \t]*<[a-z_]+>[ \t]*$)|std::",
    re.MULTILINE,
)


def _valid_text(text: str) -> str:
    """``text`` with lone surrogates replaced, so the summary always encodes as UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


_LINE_BREAKS = re.compile("[\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def _clean(line: str) -> str:
    """One output line: no characters that any reader would take as a line break."""
    return _LINE_BREAKS.sub(" ", line).rstrip()


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3].rstrip() + "..."


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _fallback(text: str) -> list[str]:
    """The first non-empty lines, clipped, and how many lines were left out."""
    lines = text.split("\n")
    shown: list[str] = []
    last = -1
    for i, line in enumerate(lines):
        if line.strip():
            shown.append(_clip(line.rstrip(), _FALLBACK_WIDTH))
            last = i
            if len(shown) == _FALLBACK_LINES:
                break
    rest = sum(1 for line in lines[last + 1 :] if line.strip())
    if rest:
        shown.append(f"... ({rest} more lines)")
    return shown


# --- Python -------------------------------------------------------------------------------------

_UPPER = re.compile(r"[A-Z][A-Z0-9_]*")


def _python(text: str) -> list[str] | None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    out: list[str] = []
    doc = ast.get_docstring(tree, clean=True)
    if doc:
        paragraph = _one_line(doc.strip().split("\n\n", 1)[0])
        out.append('"""' + _clip(paragraph, _MODULE_DOC_WIDTH).replace('"""', "'''") + '"""')
    imports = _python_imports(tree)
    if imports:
        out.append(_clip("imports: " + ", ".join(imports), _LINE_WIDTH))
    declared = [line for node in tree.body for line in _python_statement(node, 0, in_class=False)]
    if not declared:
        return None  # a script or a registry of calls: its first lines say more
    return out + declared


def _python_imports(tree: ast.Module) -> list[str]:
    """Imported modules in order of first appearance, including under top-level if/try."""
    nodes: list[ast.stmt] = []
    for node in tree.body:
        nodes.append(node)
        if isinstance(node, ast.If | ast.Try):
            nodes.extend(node.body)
            nodes.extend(node.orelse)
            if isinstance(node, ast.Try):
                for handler in node.handlers:
                    nodes.extend(handler.body)
    seen: dict[str, None] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                seen.setdefault(alias.name, None)
        elif isinstance(node, ast.ImportFrom):
            if node.module == "__future__":
                continue
            dots = "." * node.level
            if node.module:
                seen.setdefault(dots + node.module, None)
            else:
                for alias in node.names:
                    seen.setdefault(dots + alias.name, None)
    return list(seen)


def _python_statement(node: ast.stmt, depth: int, *, in_class: bool) -> list[str]:
    pad = "    " * depth
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return _python_function(node, pad)
    if isinstance(node, ast.ClassDef):
        return _python_class(node, depth)
    if isinstance(node, ast.Assign):
        names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        if names and len(names) == len(node.targets) and all(_UPPER.fullmatch(n) for n in names):
            value = _clip(_unparse(node.value), _CONST_WIDTH)
            return [f"{pad}{' = '.join(names)} = {value}"]
        return []
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        name = node.target.id
        # In a class body an annotation declares a field (dataclass, NamedTuple, TypedDict).
        if not in_class and not _UPPER.fullmatch(name):
            return []
        line = f"{pad}{name}: {_clip(_unparse(node.annotation), _LINE_WIDTH)}"
        if node.value is not None:
            line += f" = {_clip(_unparse(node.value), _CONST_WIDTH)}"
        return [line]
    type_alias = getattr(ast, "TypeAlias", None)
    if type_alias is not None and isinstance(node, type_alias):
        return [f"{pad}{_clip(_unparse(node), _LINE_WIDTH)}"]
    return []


def _python_function(node: ast.FunctionDef | ast.AsyncFunctionDef, pad: str) -> list[str]:
    out = [f"{pad}@{_clip(_unparse(d), 100)}" for d in node.decorator_list]
    kw = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    sig = f"{kw} {node.name}{_type_params(node)}({_python_args(node.args)})"
    if node.returns is not None:
        sig += f" -> {_clip(_unparse(node.returns), 120)}"
    doc = _first_doc_line(node)
    if doc:
        out.append(f"{pad}{sig}:")
        out.append(f'{pad}    """{doc}"""')
    else:
        out.append(f"{pad}{sig}: ...")
    return out


def _python_class(node: ast.ClassDef, depth: int) -> list[str]:
    pad = "    " * depth
    out = [f"{pad}@{_clip(_unparse(d), 100)}" for d in node.decorator_list]
    bases = [_unparse(b) for b in node.bases]
    bases += [
        f"{k.arg}={_unparse(k.value)}" if k.arg else f"**{_unparse(k.value)}" for k in node.keywords
    ]
    head = f"class {node.name}{_type_params(node)}"
    if bases:
        head += "(" + _clip(", ".join(bases), 120) + ")"
    members: list[str] = []
    doc = _first_doc_line(node)
    if doc:
        members.append(f'{pad}    """{doc}"""')
    if depth + 1 < _MAX_DEPTH:
        enum_like = any("Enum" in b or "Flag" in b for b in bases)
        for child in node.body:
            if isinstance(child, ast.Assign) and enum_like:
                names = [t.id for t in child.targets if isinstance(t, ast.Name)]
                if names:
                    value = _clip(_unparse(child.value), _CONST_WIDTH)
                    members.append(f"{pad}    {' = '.join(names)} = {value}")
                continue
            members.extend(_python_statement(child, depth + 1, in_class=True))
    if members:
        return [*out, f"{pad}{head}:", *members]
    return [*out, f"{pad}{head}: ..."]


def _python_args(args: ast.arguments) -> str:
    parts: list[str] = []
    positional = [*args.posonlyargs, *args.args]
    first_default = len(positional) - len(args.defaults)
    for i, arg in enumerate(positional):
        default = args.defaults[i - first_default] if i >= first_default else None
        parts.append(_python_arg(arg, default))
        if args.posonlyargs and i == len(args.posonlyargs) - 1:
            parts.append("/")
    if args.vararg is not None:
        parts.append("*" + _python_arg(args.vararg, None))
    elif args.kwonlyargs:
        parts.append("*")
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=False):
        parts.append(_python_arg(arg, kw_default))
    if args.kwarg is not None:
        parts.append("**" + _python_arg(args.kwarg, None))
    return ", ".join(parts)


def _python_arg(arg: ast.arg, default: ast.expr | None) -> str:
    text = arg.arg
    if arg.annotation is not None:
        text += f": {_clip(_unparse(arg.annotation), 80)}"
    if default is not None:
        shown = _unparse(default)
        if len(shown) > _DEFAULT_WIDTH:
            shown = "..."
        text += f" = {shown}" if arg.annotation is not None else f"={shown}"
    return text


def _type_params(node: ast.AST) -> str:
    params = getattr(node, "type_params", None)
    if not params:
        return ""
    return "[" + ", ".join(_unparse(p) for p in params) + "]"


def _first_doc_line(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> str:
    doc = ast.get_docstring(node, clean=True)
    if not doc:
        return ""
    for line in doc.split("\n"):
        if line.strip():
            return _clip(line.strip(), _DOC_WIDTH).replace('"""', "'''")
    return ""


def _unparse(node: ast.AST) -> str:
    return _one_line(ast.unparse(node))


# --- Markdown -----------------------------------------------------------------------------------

_ATX = re.compile(r" {0,3}(#{1,6})(?=[ \t]|$)")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*")
_THEMATIC_BREAK = re.compile(r" {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_TABLE_DELIMITER = re.compile(r"\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)+\|?")
_LIST_MARKER = re.compile(r"(?:[-*+]|\d{1,9}[.)])[ \t]+(?:\[[ xX]\][ \t]+)?")
# Brackets and parentheses are excluded inside so each scan stops at the next one: linear time.
_IMAGE = re.compile(r"!\[[^\[\]\n]{0,300}\]\([^()\n]{0,500}\)")
_LINK = re.compile(r"\[([^\[\]\n]{0,300})\]\([^()\n]{0,500}\)")
_HTML_LINE = re.compile(r"</?[A-Za-z][^>]{0,500}>")
_SENTENCE_END = re.compile(r"[.!?](?=[ \t]|$)")
_ABBREVIATIONS = frozenset(
    {"e.g.", "i.e.", "etc.", "vs.", "cf.", "mr.", "mrs.", "dr.", "no.", "st."}
)


def _markdown(text: str) -> list[str]:
    out: list[str] = []
    lines = text.split("\n")
    i = _front_matter_end(lines)
    fence: str | None = None
    in_comment = False
    in_table = False
    want_sentence = True
    paragraph: list[str] = []
    in_list_item = False

    def flush() -> None:
        nonlocal want_sentence
        if want_sentence and paragraph:
            sentence = _first_sentence(" ".join(paragraph))
            if sentence:
                out.append("  " + sentence)
                want_sentence = False
        paragraph.clear()

    for raw in lines[i:]:
        line = raw.rstrip("\r")
        stripped = line.strip()
        if fence is not None:
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                fence = None
            continue
        if in_comment:
            if "-->" in line:
                in_comment = False
            continue
        opened = _FENCE.match(line)
        if opened and not (opened.group(1)[0] == "`" and "`" in line[opened.end() :]):
            flush()
            fence = opened.group(1)
            continue
        if stripped.startswith("<!--"):
            flush()
            in_comment = "-->" not in stripped[4:]
            continue
        heading = _ATX.match(line)
        if heading:
            flush()
            title = _atx_title(line[heading.end() :])
            out.append(heading.group(1) + (" " + title if title else ""))
            want_sentence = True
            in_table = False
            continue
        if not stripped:
            flush()
            in_table = False
            continue
        if paragraph and not in_table and not in_list_item and _SETEXT.fullmatch(line):
            level = "#" if stripped[0] == "=" else "##"
            title = _one_line(_inline(" ".join(paragraph)[: _LINE_WIDTH * 4]))
            paragraph.clear()
            out.append(level + " " + _clip(title, _LINE_WIDTH))
            want_sentence = True
            continue
        if _THEMATIC_BREAK.fullmatch(line):
            flush()
            continue
        if "|" in stripped and _TABLE_DELIMITER.fullmatch(stripped):
            paragraph.clear()  # the row above was the table's header, not prose
            in_table = True
            continue
        if in_table or stripped.startswith("|"):
            continue
        if _HTML_LINE.match(stripped) or (line.startswith("    ") and not paragraph):
            continue  # raw HTML or an indented code block
        is_item = _LIST_MARKER.match(stripped) is not None
        if paragraph and is_item:
            flush()  # each list item is its own block
        if not paragraph:
            in_list_item = is_item
        if sum(len(p) for p in paragraph) > _SENTENCE_WIDTH * 4:
            continue  # enough prose to find a first sentence in
        content = _inline(_strip_block_markers(stripped)[: _SENTENCE_WIDTH * 4]).strip()
        if content:
            paragraph.append(content)
    flush()
    if not any(line.startswith("#") for line in out):
        return []  # prose without headings: its first lines say more than one sentence
    return out


def _atx_title(rest: str) -> str:
    title = rest.strip()
    # A closing run of "#" is decoration when a space separates it from the title.
    bare = title.rstrip("#")
    if bare != title and (not bare or bare[-1] in " \t"):
        title = bare.rstrip()
    return _clip(_one_line(_inline(title[: _LINE_WIDTH * 4])), _LINE_WIDTH)


def _front_matter_end(lines: list[str]) -> int:
    if not lines or lines[0].strip() != "---":
        return 0
    for i in range(1, min(len(lines), 200)):
        if lines[i].strip() in ("---", "..."):
            return i + 1
    return 0


def _strip_block_markers(line: str) -> str:
    while line.startswith(">"):
        line = line[1:].lstrip()
    marker = _LIST_MARKER.match(line)
    return line[marker.end() :] if marker else line


def _inline(text: str) -> str:
    """Markdown inline markup reduced to the words a reader sees."""
    text = _IMAGE.sub("", text)
    return _LINK.sub(r"\1", text)


def _first_sentence(paragraph: str) -> str:
    paragraph = _one_line(paragraph)[: _SENTENCE_WIDTH * 3]
    for m in _SENTENCE_END.finditer(paragraph):
        word = paragraph[: m.end()].rsplit(" ", 1)[-1].lower()
        if word in _ABBREVIATIONS or len(word) <= 2:
            continue  # "e.g." or an initial, not the end of a sentence
        return _clip(paragraph[: m.end()], _SENTENCE_WIDTH)
    return _clip(paragraph, _SENTENCE_WIDTH)


# --- tree-sitter languages ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Grammar:
    """How to read declarations from one tree-sitter grammar.

    decls are shown up to their body; containers are shown likewise, then their members one level
    deeper; wholes are shown entire on one line (enums, aliases, fields); wrappers (export,
    template, `type (...)` groups) lend their leading words to the declarations inside; transparent
    nodes (preprocessor conditionals, `extern "C" {}`) are looked through.
    """

    pack_name: str
    decls: frozenset[str]
    containers: frozenset[str]
    wholes: frozenset[str]
    wrappers: frozenset[str] = frozenset()
    transparent: frozenset[str] = frozenset()
    comment: str = "//"


def _g(
    pack_name: str,
    decls: str,
    containers: str,
    wholes: str,
    wrappers: str = "",
    transparent: str = "",
    comment: str = "//",
) -> _Grammar:
    return _Grammar(
        pack_name,
        frozenset(decls.split()),
        frozenset(containers.split()),
        frozenset(wholes.split()),
        frozenset(wrappers.split()),
        frozenset(transparent.split()),
        comment,
    )


_JS_DECLS = (
    "function_declaration generator_function_declaration method_definition function_signature "
    "method_signature abstract_method_signature"
)
# A declarator or an assignment (`module.exports = class ...`) is a container when it holds a class.
_JS_CONTAINERS = (
    "class_declaration abstract_class_declaration class interface_declaration internal_module "
    "module variable_declarator assignment_expression"
)
_JS_WHOLES = (
    "type_alias_declaration enum_declaration public_field_definition field_definition "
    "property_signature index_signature call_signature construct_signature"
)
_JS_WRAPPERS = "export_statement lexical_declaration variable_declaration ambient_declaration"

_GRAMMARS: dict[str, _Grammar] = {
    "typescript": _g(
        "typescript", _JS_DECLS, _JS_CONTAINERS, _JS_WHOLES, _JS_WRAPPERS, "expression_statement"
    ),
    "tsx": _g("tsx", _JS_DECLS, _JS_CONTAINERS, _JS_WHOLES, _JS_WRAPPERS, "expression_statement"),
    "javascript": _g(
        "javascript", _JS_DECLS, _JS_CONTAINERS, _JS_WHOLES, _JS_WRAPPERS, "expression_statement"
    ),
    "go": _g(
        "go",
        "function_declaration method_declaration method_elem",
        "type_spec",
        "type_alias const_spec var_spec field_declaration",
        "type_declaration const_declaration var_declaration var_spec_list",
    ),
    "rust": _g(
        "rust",
        "function_item function_signature_item macro_definition",
        "struct_item union_item trait_item impl_item mod_item",
        "enum_item type_item const_item static_item field_declaration",
    ),
    "java": _g(
        "java",
        "method_declaration constructor_declaration compact_constructor_declaration",
        "class_declaration interface_declaration record_declaration annotation_type_declaration "
        "enum_declaration",
        "enum_constant field_declaration constant_declaration annotation_type_element_declaration",
        "",
        "enum_body_declarations",
    ),
    "c": _g(
        "c",
        "function_definition",
        "struct_specifier union_specifier",
        "declaration type_definition enum_specifier preproc_def preproc_function_def "
        "field_declaration",
        "",
        "preproc_ifdef preproc_if preproc_else preproc_elif preproc_elifdef linkage_specification "
        "declaration_list",
    ),
    "cpp": _g(
        "cpp",
        "function_definition",
        "struct_specifier union_specifier class_specifier namespace_definition",
        "declaration type_definition enum_specifier preproc_def preproc_function_def "
        "field_declaration alias_declaration access_specifier",
        "template_declaration",
        "preproc_ifdef preproc_if preproc_else preproc_elif preproc_elifdef linkage_specification "
        "declaration_list",
    ),
    "ruby": _g("ruby", "method singleton_method", "class module singleton_class", "", comment="#"),
    "csharp": _g(
        "csharp",
        "method_declaration constructor_declaration destructor_declaration operator_declaration "
        "property_declaration conversion_operator_declaration indexer_declaration",
        "namespace_declaration class_declaration interface_declaration struct_declaration "
        "record_declaration",
        "enum_declaration field_declaration delegate_declaration event_field_declaration "
        "file_scoped_namespace_declaration",
    ),
    "php": _g(
        "php",
        "function_definition method_declaration",
        "class_declaration interface_declaration trait_declaration enum_declaration",
        "property_declaration const_declaration namespace_definition",
    ),
    "kotlin": _g(
        "kotlin",
        "function_declaration secondary_constructor",
        "class_declaration object_declaration companion_object",
        "property_declaration type_alias",
    ),
    "swift": _g(
        "swift",
        "function_declaration init_declaration protocol_function_declaration",
        "class_declaration protocol_declaration extension_declaration",
        "property_declaration typealias_declaration",
    ),
}

# The node that holds a declaration's body when the grammar gives it no "body" field.
_BODY_TYPES = frozenset(
    {
        "block",
        "statement_block",
        "compound_statement",
        "declaration_list",
        "field_declaration_list",
        "class_body",
        "interface_body",
        "enum_body",
        "body_statement",
        "function_body",
        "enum_class_body",
        "protocol_body",
        "accessor_list",
        "arrow_expression_clause",
        "constructor_body",
        "enum_variant_list",
        "annotation_type_body",
    }
)
# Go's interface type has no separate body node: its members sit after its "{".
_OPENS_AT_BRACE = frozenset({"interface_type"})
# Values of a JS/TS declarator that make it a function or class worth listing when not exported.
_JS_CALLABLE = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function", "class"}
)
# Bodies that are code, not members: a container whose body is one of these lists nothing inside.
_FUNCTIONS = _JS_CALLABLE - {"class"}
_SKIPPED_BEFORE_COMMENT = frozenset(
    {"attribute_item", "decorator", "annotation", "marker_annotation", "attribute_list"}
)
_PUNCTUATION = frozenset({"(", ")", "{", "}", ";", ",", "[", "]"})
_COMMENT_MARKS = re.compile(r"^(?:/\*+!?|\*+/?|//[/!]?|#+|--)\s?")
_XML_TAG = re.compile(r"</?[A-Za-z][^>]{0,100}>")


class _Source:
    """Source bytes plus the helpers that turn nodes back into short text."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def text(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8", "replace")

    def node_text(self, node: Any) -> str:
        return self.text(node.start_byte, node.end_byte)


def _tree_sitter(lang: str, text: str) -> list[str] | None:
    import tree_sitter_language_pack

    grammar = _GRAMMARS[lang]
    data = text.encode("utf-8")
    parser = tree_sitter_language_pack.get_parser(cast(Any, grammar.pack_name))
    root = parser.parse(data).root_node
    src = _Source(data)
    out = list(_ts_children(root, src, grammar, 0, ""))
    if not out:
        return None
    if root.has_error:
        # The grammar did not understand much of the file (mostly errors, or errors and only a
        # few declarations for its size): its first lines say more.
        broken = sum(c.end_byte - c.start_byte for c in root.children if c.type == "ERROR")
        if broken * 2 > len(data) or len(out) * 50 < text.count("\n"):
            return None
    return out


def _ts_children(parent: Any, src: _Source, g: _Grammar, depth: int, prefix: str) -> Iterator[str]:
    for child in parent.children:
        if child.is_named:
            yield from _ts_node(child, src, g, depth, prefix)


def _ts_node(node: Any, src: _Source, g: _Grammar, depth: int, prefix: str) -> Iterator[str]:
    kind = node.type
    if kind in g.transparent:
        yield from _ts_children(node, src, g, depth, prefix)
        return
    if kind in g.wrappers:
        yield from _ts_wrapper(node, src, g, depth, prefix)
        return
    if kind not in g.decls and kind not in g.containers and kind not in g.wholes:
        return
    if not _ts_keep(node, prefix):
        return
    pad = "  " * depth
    body = None if kind in g.wholes else _ts_body(node)
    if body is None:
        end = node.end_byte
    elif body.type in _OPENS_AT_BRACE:
        end = next((c.start_byte for c in body.children if c.type == "{"), body.start_byte)
    else:
        end = body.start_byte
    head = _tidy_head(_one_line(_head_text(node, end, src)))
    if kind == "access_specifier":
        head += ":"
    if prefix:
        head = f"{prefix} {head}"
    comment = _ts_comment(node, src)
    if not comment:
        outer = _outermost(node, g)
        if outer.id != node.id:
            comment = _ts_comment(outer, src)
    if comment:
        yield f"{pad}{g.comment} {comment}"
    yield pad + _clip(head, _LINE_WIDTH)
    if (
        kind in g.containers
        and body is not None
        and depth + 1 < _MAX_DEPTH
        and body.parent is not None
        and body.parent.type not in _FUNCTIONS
    ):
        yield from _ts_children(body, src, g, depth + 1, "")


def _ts_wrapper(node: Any, src: _Source, g: _Grammar, depth: int, prefix: str) -> Iterator[str]:
    """Declarations inside ``node``, each prefixed by the words that come before it."""
    words: list[str] = [prefix] if prefix else []
    found = False
    for child in node.children:
        kind = child.type
        is_decl = kind in g.decls or kind in g.containers or kind in g.wholes
        if is_decl or kind in g.wrappers or kind in g.transparent:
            for line in _ts_node(child, src, g, depth, " ".join(words)):
                found = True
                yield line
        elif kind not in _PUNCTUATION and "comment" not in kind:
            words.append(_one_line(src.node_text(child)))
    if not found and node.type == "export_statement":
        # `export default function () {...}`, `export { a as b }`: the statement up to any body.
        value = node.child_by_field_name("value")
        body = value.child_by_field_name("body") if value is not None else None
        end = body.start_byte if body is not None else node.end_byte
        head = _tidy_head(_one_line(src.text(node.start_byte, end)))
        yield "  " * depth + _clip(head, _LINE_WIDTH)


def _head_text(node: Any, end: int, src: _Source) -> str:
    """The text of ``node`` up to ``end``, without the comments among its own children."""
    pieces: list[str] = []
    pos = node.start_byte
    for child in node.children:
        if child.start_byte >= end:
            break
        if "comment" in child.type:
            pieces.append(src.text(pos, child.start_byte))
            pos = child.end_byte
    pieces.append(src.text(pos, end))
    return " ".join(pieces)


def _ts_keep(node: Any, prefix: str) -> bool:
    kind = node.type
    if kind == "preproc_def":
        return node.child_by_field_name("value") is not None  # not an include guard
    if kind == "variable_declarator":
        value = node.child_by_field_name("value")
        return "export" in prefix.split() or (value is not None and value.type in _JS_CALLABLE)
    if kind == "assignment_expression":
        value = node.child_by_field_name("right")
        return value is not None and value.type in _JS_CALLABLE
    if kind in ("const_spec", "var_spec"):
        name = node.child_by_field_name("name")
        return name is not None and name.text[:1].isupper()
    return True


def _ts_body(node: Any) -> Any:
    body = node.child_by_field_name("body")
    if body is not None:
        return body
    for child in node.children:
        if child.type in _BODY_TYPES:
            return child
    # A declarator's function value, or a Go type spec's struct: the body is one level down.
    inner = None
    for field in ("value", "right", "type"):
        inner = node.child_by_field_name(field)
        if inner is not None:
            break
    if inner is not None:
        body = inner.child_by_field_name("body")
        if body is not None and body.type == "class":
            body = body.child_by_field_name("body")  # an arrow function returning a class
        if body is not None:
            return body
        for child in inner.children:
            if child.type in _BODY_TYPES:
                return child
        if inner.type in _OPENS_AT_BRACE:
            return inner
    return None


def _tidy_head(head: str) -> str:
    head = head.rstrip(" ;,{")
    if head.endswith(" =") and not head.endswith("=="):
        head = head[:-2]
    return head


def _first_in_wrapper(node: Any, g: _Grammar) -> bool:
    """Whether ``node`` is the first declaration its wrapper holds (a group shares one comment)."""
    prev = node.prev_named_sibling
    while prev is not None and "comment" in prev.type:
        prev = prev.prev_named_sibling
    return prev is None or not (
        prev.type in g.decls or prev.type in g.containers or prev.type in g.wholes
    )


def _outermost(node: Any, g: _Grammar) -> Any:
    """The outermost wrapper that ``node`` leads (an export, a template): its doc comment sits
    above that wrapper."""
    while (
        node.parent is not None
        and (node.parent.type in g.wrappers or node.parent.type in g.transparent)
        and _first_in_wrapper(node, g)
    ):
        node = node.parent
    return node


def _ts_comment(node: Any, src: _Source) -> str:
    """The first line of the comment directly above ``node``, if any."""
    prev = node.prev_sibling
    while prev is not None and prev.type in _SKIPPED_BEFORE_COMMENT:
        prev = prev.prev_sibling
    if prev is None and node.parent is not None and node.parent.type in _BODY_TYPES:
        prev = node.parent.prev_sibling
    if prev is None or "comment" not in prev.type:
        return ""
    if prev.end_point[0] < node.start_point[0] - 1 and not _adjacent_through(prev, node):
        return ""
    # A run of line comments is one comment: its first line is the one that says what follows.
    run = [prev]
    while True:
        before = run[-1].prev_sibling
        if before is None or before.end_point[0] < run[-1].start_point[0] - 1:
            break
        if "comment" not in before.type:
            if before.end_point[0] == run[-1].start_point[0] and before.end_point[1] > 0:
                run.pop()  # it trails the code before it on the same line
            break
        run.append(before)
    if not run:
        return ""
    first = run[-1]
    for raw in src.node_text(first).split("\n"):
        line = raw.strip()
        while True:
            stripped = _COMMENT_MARKS.sub("", line).strip()
            if stripped == line:
                break
            line = stripped
        line = _XML_TAG.sub("", line).strip().rstrip("*/").strip()
        if line:
            return _clip(line, _DOC_WIDTH)
    return ""


def _adjacent_through(comment: Any, node: Any) -> bool:
    """Whether only attributes or decorators stand between ``comment`` and ``node``."""
    between = comment.next_sibling
    row = comment.end_point[0]
    while between is not None and between.start_byte < node.start_byte:
        if between.type not in _SKIPPED_BEFORE_COMMENT or between.start_point[0] > row + 1:
            return False
        row = between.end_point[0]
        between = between.next_sibling
    return bool(node.start_point[0] <= row + 1)
