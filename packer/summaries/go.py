"""Go: exported means capitalized; exported declarations come first, unexported fields last.

A method is exported when its name and its receiver's type are both capitalized. A spec in a
group (`const ( A = 1 )`) is shown with its keyword. As godoc lists them, a method comes under
its receiver's type, and so does a function whose first result is that type (a constructor:
`func New(opts Options) *Stack`), when the type is declared in the file; the summary then shows
a type with its constructors and methods, and showing a method shows its type. Within the file
and within each type, exported declarations are listed before unexported ones (in source order
otherwise), so a reader meets the package's API before its internals.
"""

from __future__ import annotations

from packer.summaries.treesitter import Definition, Hooks, Source

_KEYWORDS = {
    "const_spec": "const",
    "var_spec": "var",
    "type_spec": "type",
    "type_alias": "type",
}


def _capitalized(name: str) -> bool:
    base = name.lstrip("*").rsplit(".", 1)[-1].split("[", 1)[0]
    return base[:1].isupper()


def exported(d: Definition, src: Source) -> bool:
    if not _capitalized(d.name):
        return False
    if d.node.type == "method_declaration":
        receiver = d.node.child_by_field_name("receiver")
        if receiver is not None:
            words = src.node_text(receiver, 200).strip("()").split()
            return bool(words) and _capitalized(words[-1])
    return True


def display(d: Definition, shown: str, src: Source) -> str:
    keyword = _KEYWORDS.get(d.node.type)
    if keyword and not shown.startswith(keyword + " "):
        return f"{keyword} {shown}"
    return shown


def arrange(defs: list[Definition]) -> list[Definition]:
    """``defs`` with exported ones first at every level, members after their container; a
    method, and a function that returns a type of the file, under that type (godoc's order)."""
    _attach(defs)
    out: list[Definition] = []
    _place([d for d in defs if d.parent is None], out)
    return out


def _base(text: bytes) -> str:
    """The type a receiver or result names: ``(s *Stack)`` -> ``Stack``, ``*List[T]`` ->
    ``List``, ``(*Stack, error)`` -> ``Stack``."""
    first = text.decode("utf-8", "replace").strip("() \t").split(",", 1)[0].split()
    return first[-1].lstrip("*").split("[", 1)[0] if first else ""


def _attach(defs: list[Definition]) -> None:
    """Each method under its receiver's type, and each function whose first result is a type of
    the file (a constructor: ``func New(opts Options) *Stack``) under that type, when the type
    is declared in the file at its top level. Their lines keep no indentation (depth 0)."""
    types = {d.name: d for d in defs if d.parent is None and d.kind in ("class", "type")}
    if not types:
        return
    for d in defs:
        if d.parent is not None:
            continue
        if d.node.type == "method_declaration":
            field = d.node.child_by_field_name("receiver")
        elif d.node.type == "function_declaration":
            field = d.node.child_by_field_name("result")
        else:
            continue
        owner = types.get(_base(field.text)) if field is not None and field.text else None
        if owner is not None and owner is not d:
            d.parent = owner
            owner.children.append(d)


def _place(level: list[Definition], out: list[Definition]) -> None:
    # A module-level function: a nested one that calls itself is a cycle (the function, its
    # closure cell) holding ``out``, and with it every definition's node and the file's parse
    # tree, until a full collection, which a pack holds off (`packer.build`).
    for d in sorted(level, key=lambda d: not d.exported):
        out.append(d)
        _place(d.children, out)


HOOKS = Hooks(exported=exported, display=display, arrange=arrange)
