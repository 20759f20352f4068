"""Python outlines, read with `ast`.

The head says what the module is for (the first sentence of its docstring) and what it exports
(`__all__`, and the names it re-exports from other modules, grouped by module). Every class,
function, method, class attribute and module-level assignment is a symbol: a signature with
parameters, annotations and short defaults, the first sentence of its docstring, a constant with
its value. Bodies are never shown. The imports line is a symbol of its own, so fitting can drop it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Final

from packer.outline import Outline, Symbol
from packer.summaries.text import VALUE_WIDTH, clip, first_prose_sentence, fit_entries, one_line

INDENT: Final = "    "
_MAX_DEPTH: Final = 6  # deeper classes add little and could recurse without bound
_ANNOTATION_WIDTH: Final = 80
_RETURN_WIDTH: Final = 120
_DEFAULT_WIDTH: Final = 30
_DECORATOR_WIDTH: Final = 100
_BASES_WIDTH: Final = 160
_UPPER = re.compile(r"_*[A-Z][A-Z0-9_]*")
# Standard modules whose names a package imports as tools. A fixed list, not the running Python's
# `sys.stdlib_module_names`, so the outline is the same under every Python version.
_STDLIB: Final = frozenset(
    {"__future__", "abc", "collections", "contextlib", "dataclasses", "enum", "functools"}
    | {"itertools", "logging", "os", "pathlib", "re", "sys", "types", "typing"}
    | {"typing_extensions", "warnings"}
)
# Sphinx cross-references in docstrings (":class:`~click.Option`") read as their target.
_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`~?([^`<>]{1,200})`")


def outline(text: str, source_lines: int) -> Outline | None:
    """The outline of a Python module, or None if it does not parse or declares nothing (a
    script's first lines say more than an empty outline)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    reader = _Reader(_public_names(tree), _Source(text))
    reader.module(tree)
    if not any(s.kind != "import" for s in reader.symbols) and not reader.exports:
        return None
    head: list[str] = []
    doc = _docstring_line(tree, "")
    if doc:
        head.append(doc)
    head.extend(reader.export_lines())
    return Outline("python", source_lines, tuple(head), tuple(reader.symbols))


@dataclass
class _All:
    """What ``__all__`` says: the names it lists as literals, and whether parts of it are
    computed (``__all__ = other_all + [...]``), so that unlisted names may still be in it."""

    names: list[str] = field(default_factory=list)
    computed: bool = False


def _public_names(tree: ast.Module) -> _All | None:
    found: _All | None = None
    for node in _module_statements(tree.body):
        target: ast.expr | None = None
        value: ast.expr | None = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            target, value = node.target, node.value
        elif (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute)
            and node.value.func.attr in ("extend", "append")
        ):
            target = node.value.func.value
            value = ast.List(elts=list(node.value.args), ctx=ast.Load())
        if not (isinstance(target, ast.Name) and target.id == "__all__") or value is None:
            continue
        if found is None or isinstance(node, ast.Assign | ast.AnnAssign):
            found = _All()  # a plain assignment starts over
        _collect_all(value, found)
    return found


def _collect_all(node: ast.expr, into: _All) -> None:
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        for elt in node.elts:
            if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                if elt.value not in into.names:
                    into.names.append(elt.value)
            else:
                into.computed = True
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        _collect_all(node.left, into)
        _collect_all(node.right, into)
    else:
        into.computed = True


def _module_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """``body`` with the statements of its if/try blocks spliced in (definitions made under a
    version check or an ImportError fallback are definitions all the same), leaving out
    ``if __name__ == "__main__":`` and ``if TYPE_CHECKING:`` blocks."""
    out: list[ast.stmt] = []
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, ast.If):
            if _is_main_check(node.test) or _is_type_checking(node.test):
                continue
            stack.extend(reversed([*node.body, *node.orelse]))
        elif isinstance(node, ast.Try):
            inner = [*node.body, *(s for h in node.handlers for s in h.body)]
            stack.extend(reversed([*inner, *node.orelse, *node.finalbody]))
    return out


def _is_main_check(test: ast.expr) -> bool:
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
    )


def _is_type_checking(test: ast.expr) -> bool:
    name = test.attr if isinstance(test, ast.Attribute) else getattr(test, "id", "")
    return name == "TYPE_CHECKING"


def _public(name: str) -> bool:
    """Public by Python's convention: no leading underscore, or a special name such as
    ``__init__``, whose signature is part of what a class offers."""
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


class _Reader:
    def __init__(self, public: _All | None, source: _Source) -> None:
        self.all = public
        self.source = source
        self.symbols: list[Symbol] = []
        self.imports: dict[str, None] = {}
        self.import_line = 0
        # Re-exported names by source module, in order of first appearance.
        self.exports: dict[str, list[str]] = {}
        self.exported_names: set[str] = set()

    # --- the module -----------------------------------------------------------------------

    def module(self, tree: ast.Module) -> None:
        statements = _module_statements(tree.body)
        aggregator = not any(
            isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) for n in statements
        )
        import_at = -1
        for node in statements:
            if isinstance(node, ast.Import | ast.ImportFrom):
                if import_at < 0:
                    import_at = len(self.symbols)
                self._import(node, aggregator)
                continue
            try:
                self.statement(node, -1, 0, parent_exported=True)
            except (RecursionError, ValueError):
                continue  # a statement too deep to print: leave it out, keep the rest
        # Modules whose names the head already shows as re-exports need no second mention.
        modules = [m for m in self.imports if m not in self.exports]
        if modules:
            line = "imports: " + ", ".join(modules)
            symbol = Symbol("imports", "import", (line,), -1, False, self.import_line)
            self._insert(max(import_at, 0), symbol)

    def _insert(self, at: int, symbol: Symbol) -> None:
        """Put a top-level ``symbol`` at index ``at``, shifting the parents after it."""
        moved = [
            Symbol(
                s.name,
                s.kind,
                s.lines,
                s.parent + 1 if s.parent >= at else s.parent,
                s.exported,
                s.line,
            )
            for s in self.symbols[at:]
        ]
        self.symbols[at:] = [symbol, *moved]

    def _import(self, node: ast.Import | ast.ImportFrom, aggregator: bool) -> None:
        if not self.import_line:
            self.import_line = node.lineno
        if isinstance(node, ast.Import):
            for alias in node.names:
                self.imports.setdefault(alias.name, None)
            return
        if node.module == "__future__":
            return
        module = "." * node.level + (node.module or "")
        if node.module:
            self.imports.setdefault(module, None)
        for alias in node.names:
            if not node.module:
                self.imports.setdefault(module + alias.name, None)
            bound = alias.asname or alias.name
            # Names a module takes from the standard library (`TYPE_CHECKING`, `Any`) are tools,
            # not its API, unless it says otherwise (`__all__`, `name as name`).
            own = node.level > 0 or (node.module or "").split(".")[0] not in _STDLIB
            if alias.name == "*" or (
                alias.name != "__all__" and self._reexports(alias, own, aggregator)
            ):
                shown = (
                    alias.name if alias.asname in (None, alias.name) else f"{alias.name} as {bound}"
                )
                self.exports.setdefault(module, []).append(shown)
                self.exported_names.add(bound)

    def _reexports(self, alias: ast.alias, own: bool, aggregator: bool) -> bool:
        """Whether a from-import makes ``alias`` part of this module's public names: listed in
        ``__all__`` (or, when part of ``__all__`` is computed, imported from the package's own
        modules), imported in the explicit ``name as name`` form, or imported from the package's
        own modules by a module that defines nothing itself (an ``__init__`` gathering its API).
        ``own`` says the import is relative or from outside the standard library."""
        bound = alias.asname or alias.name
        explicit = alias.asname == alias.name
        if self.all is not None:
            if bound in self.all.names:
                return True
            return self.all.computed and _public(bound) and (own or explicit)
        return explicit or (aggregator and own and not bound.startswith("_"))

    def export_lines(self) -> list[str]:
        lines = [
            f"from {module} import {', '.join(names)}" for module, names in self.exports.items()
        ]
        # `__all__` is shown unless the re-export lines already name all of it.
        if self.all is not None and not set(self.all.names) <= self.exported_names:
            lines.append("__all__: " + ", ".join(self.all.names))
        return lines

    def exported(self, name: str, parent: int, parent_exported: bool) -> bool:
        if not _public(name) or not parent_exported:
            return False
        if parent >= 0 or self.all is None:
            return True
        return name in self.all.names or self.all.computed

    # --- statements -----------------------------------------------------------------------

    def statement(self, node: ast.stmt, parent: int, depth: int, parent_exported: bool) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            self.function(node, parent, depth, parent_exported)
        elif isinstance(node, ast.ClassDef):
            self.klass(node, parent, depth, parent_exported)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            self.assignment(node, parent, depth, parent_exported)
        elif type(node).__name__ == "TypeAlias":  # `type X = ...` (3.12); ast names it so
            name = getattr(getattr(node, "name", None), "id", "")
            if name:
                line = INDENT * depth + clip(self.source.text(node), 200)
                exported = self.exported(name, parent, parent_exported)
                self.symbols.append(Symbol(name, "type", (line,), parent, exported, node.lineno))

    def function(
        self,
        node: ast.FunctionDef | ast.AsyncFunctionDef,
        parent: int,
        depth: int,
        parent_exported: bool,
    ) -> None:
        pad = INDENT * depth
        lines = _decorators(node, pad, self.source)
        keyword = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
        params = _arguments(node.args, self.source)
        signature = f"{keyword} {node.name}{_type_params(node, self.source)}({params})"
        if node.returns is not None:
            signature += f" -> {clip(self.source.text(node.returns), _RETURN_WIDTH)}"
        doc = _docstring_line(node, pad + INDENT)
        if doc:
            lines += [f"{pad}{signature}:", doc]
        else:
            lines.append(f"{pad}{signature}: ...")
        kind = "method" if parent >= 0 and self.symbols[parent].kind == "class" else "function"
        exported = self.exported(node.name, parent, parent_exported)
        start = node.decorator_list[0].lineno if node.decorator_list else node.lineno
        self.symbols.append(Symbol(node.name, kind, tuple(lines), parent, exported, start))

    def klass(self, node: ast.ClassDef, parent: int, depth: int, parent_exported: bool) -> None:
        pad = INDENT * depth
        lines = _decorators(node, pad, self.source)
        bases = [self.source.text(b) for b in node.bases]
        bases += [
            f"{k.arg}={self.source.text(k.value)}" if k.arg else f"**{self.source.text(k.value)}"
            for k in node.keywords
        ]
        head = f"class {node.name}{_type_params(node, self.source)}"
        if bases:
            head += "(" + clip(", ".join(bases), _BASES_WIDTH) + ")"
        lines.append(f"{pad}{head}:")
        doc = _docstring_line(node, pad + INDENT)
        if doc:
            lines.append(doc)
        exported = self.exported(node.name, parent, parent_exported)
        start = node.decorator_list[0].lineno if node.decorator_list else node.lineno
        index = len(self.symbols)
        self.symbols.append(Symbol(node.name, "class", tuple(lines), parent, exported, start))
        if depth + 1 >= _MAX_DEPTH:
            return
        for child in _module_statements(node.body):
            if isinstance(child, ast.If | ast.Try):
                continue  # its statements were spliced in after it
            self.statement(child, index, depth + 1, exported)

    def assignment(
        self, node: ast.Assign | ast.AnnAssign, parent: int, depth: int, parent_exported: bool
    ) -> None:
        in_class = parent >= 0
        if isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            if not names or len(names) != len(node.targets) or "__all__" in names:
                return
            name = names[0]
            line = f"{' = '.join(names)} = {_value(node.value, self.source)}"
            upper = bool(_UPPER.fullmatch(name))
            kind = "constant" if in_class or upper else "variable"
            if _is_type_alias(node.value) and not upper:
                kind = "type"
        else:
            if not isinstance(node.target, ast.Name) or node.target.id == "__all__":
                return
            name = node.target.id
            annotation = clip(self.source.text(node.annotation), _ANNOTATION_WIDTH)
            line = f"{name}: {annotation}"
            if node.value is not None:
                line += f" = {_value(node.value, self.source)}"
            if in_class:
                kind = "field"  # dataclass, NamedTuple and TypedDict fields, annotated attributes
            elif annotation.endswith("TypeAlias"):
                kind = "type"
            else:
                kind = "constant" if _UPPER.fullmatch(name) else "variable"
        exported = self.exported(name, parent, parent_exported)
        self.symbols.append(
            Symbol(name, kind, (INDENT * depth + line,), parent, exported, node.lineno)
        )


def _is_type_alias(value: ast.expr) -> bool:
    """``X = Union[int, str]``, ``X = int | None``, ``X = t.Callable[..., Y]``: a type alias
    written as an assignment, by the look of its value."""
    if isinstance(value, ast.Subscript):
        base = value.value
        name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
        return name in {"Union", "Optional", "Callable", "Literal", "Annotated", "Type", "type"}
    return False


def _decorators(
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, pad: str, source: _Source
) -> list[str]:
    return [f"{pad}@{clip(source.text(d), _DECORATOR_WIDTH)}" for d in node.decorator_list]


def _docstring_line(
    node: ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef, pad: str
) -> str:
    """The first sentence of ``node``'s docstring as a docstring line, or "" if it has none."""
    doc = ast.get_docstring(node, clean=True)
    sentence = first_prose_sentence(_ROLE.sub(r"\1", doc).split("\n")) if doc else ""
    if not sentence:
        return ""
    return f'{pad}"""{sentence.replace(chr(34) * 3, chr(39) * 3)}"""'


def _arguments(args: ast.arguments, source: _Source) -> str:
    parts: list[str] = []
    positional = [*args.posonlyargs, *args.args]
    first_default = len(positional) - len(args.defaults)
    for i, arg in enumerate(positional):
        default = args.defaults[i - first_default] if i >= first_default else None
        parts.append(_argument(arg, default, source))
        if args.posonlyargs and i == len(args.posonlyargs) - 1:
            parts.append("/")
    if args.vararg is not None:
        parts.append("*" + _argument(args.vararg, None, source))
    elif args.kwonlyargs:
        parts.append("*")
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=False):
        parts.append(_argument(arg, kw_default, source))
    if args.kwarg is not None:
        parts.append("**" + _argument(args.kwarg, None, source))
    return ", ".join(parts)


def _argument(arg: ast.arg, default: ast.expr | None, source: _Source) -> str:
    text = arg.arg
    if arg.annotation is not None:
        text += f": {clip(source.text(arg.annotation), _ANNOTATION_WIDTH)}"
    if default is not None:
        shown = source.text(default) if source.small(default, _DEFAULT_WIDTH) else "..."
        if len(shown) > _DEFAULT_WIDTH:
            shown = "..."
        text += f" = {shown}" if arg.annotation is not None else f"={shown}"
    return text


def _type_params(node: ast.AST, source: _Source) -> str:
    params = getattr(node, "type_params", None)
    if not params:
        return ""
    return "[" + ", ".join(source.text(p) for p in params) + "]"


class _Source:
    """The module's own text for a node: a summary shows what the source says (its quotes, its
    numbers, its spacing within a line), never a re-rendering of the tree. Columns are UTF-8
    bytes, so positions are taken in the encoded text."""

    def __init__(self, text: str) -> None:
        self.data = text.encode("utf-8", "surrogatepass")
        self.starts = [0]
        for line in self.data.split(b"\n"):
            self.starts.append(self.starts[-1] + len(line) + 1)

    def _span(self, node: ast.AST) -> tuple[int, int] | None:
        line = getattr(node, "lineno", 0)
        end_line = getattr(node, "end_lineno", None) or line
        if line < 1 or end_line >= len(self.starts):
            return None
        start = self.starts[line - 1] + getattr(node, "col_offset", 0)
        end = self.starts[end_line - 1] + (getattr(node, "end_col_offset", None) or 0)
        return (start, end) if start <= end else None

    def small(self, node: ast.expr, width: int) -> bool:
        """Whether ``node``'s source is short enough (bytes, not characters: near enough),
        judged from its position alone: printing a large literal only to clip it would cost
        time linear in its size, for every constant of a data module."""
        span = self._span(node)
        return span is not None and span[1] - span[0] <= width * 3

    def text(self, node: ast.AST) -> str:
        """``node`` as written, on one line: a span over several lines is joined (no space
        after an opening bracket, neither a space nor a trailing comma before a closing one).
        A span that holds a comment, or whose position does not lead back to it, is printed
        from the tree instead."""
        span = self._span(node)
        written = self.data[span[0] : span[1]].decode("utf-8", "surrogatepass") if span else ""
        if not written or ("\n" in written and "#" in written):
            return one_line(ast.unparse(node))
        if "\n" not in written:
            return written.strip()
        out = ""
        for line in written.split("\n"):
            piece = line.strip().removesuffix("\\").strip()
            if not piece:
                continue
            if piece[0] in ")]}" and out.endswith(","):
                out = out[:-1]  # the trailing comma of a layout over lines
            joined = not out or out[-1] in "([{" or piece[0] in ")]}"
            out += piece if joined else " " + piece
        return out


def _value(node: ast.expr, source: _Source) -> str:
    """A constant's value as a reader wants it: in full when short, else its shape."""
    if source.small(node, VALUE_WIDTH):
        shown = source.text(node)
        if len(shown) <= VALUE_WIDTH:
            return shown
    if isinstance(node, ast.Dict):
        return _dict_value(node, source)
    if isinstance(node, ast.DictComp):
        return "{...}"
    if isinstance(node, ast.Set | ast.SetComp):
        return "{...}"
    if isinstance(node, ast.List | ast.ListComp):
        return "[...]"
    if isinstance(node, ast.Tuple):
        return "(...)"
    if isinstance(node, ast.Call) and source.small(node.func, VALUE_WIDTH):
        return clip(source.text(node.func), VALUE_WIDTH) + "(...)"
    if source.small(node, VALUE_WIDTH * 2):
        return clip(source.text(node), VALUE_WIDTH)
    return "..."


def _dict_value(node: ast.Dict, source: _Source) -> str:
    """A mapping too long for one value, as its keys and values: a configuration dict's defaults
    are what a reader asks for: as many entries as `fit_entries` allows (the rest as ``...``); an
    entry too long alone is left out."""
    entries: list[str] = []
    for key, value in zip(node.keys, node.values, strict=True):
        if not source.small(value, VALUE_WIDTH) or (key is not None and not source.small(key, 40)):
            entries.append("")
            continue
        shown = source.text(value)
        text = f"{source.text(key)}: {shown}" if key is not None else f"**{shown}"
        entries.append(text if len(text) <= VALUE_WIDTH else "")
    fits, cut = fit_entries(entries)
    if not fits:
        return "{...}"
    more = ", ..." if cut else ""
    return "{" + ", ".join(entries[i] for i in fits) + more + "}"
