"""Go: exported means capitalized; exported declarations come first, unexported fields last.

A method is exported when its name and its receiver's type are both capitalized. A spec in a
group (`const ( A = 1 )`) is shown with its keyword. Within the file and within each struct and
interface, exported declarations are listed before unexported ones (in source order otherwise),
so a reader meets the package's API before its internals.
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
    """``defs`` with exported ones first at every level, members after their container."""
    out: list[Definition] = []
    _place([d for d in defs if d.parent is None], out)
    return out


def _place(level: list[Definition], out: list[Definition]) -> None:
    # A module-level function: a nested one that calls itself is a cycle (the function, its
    # closure cell) holding ``out``, and with it every definition's node and the file's parse
    # tree, until a full collection, which a pack holds off (`packer.build`).
    for d in sorted(level, key=lambda d: not d.exported):
        out.append(d)
        _place(d.children, out)


HOOKS = Hooks(exported=exported, display=display, arrange=arrange)
