"""TypeScript and JavaScript: exported means written under `export`, named in an export list,
or assigned to `module.exports`/`exports`; a class member is exported unless private.

Object types and interfaces are containers: each field of `type Options = {...}` is a symbol
with its own doc, so a summary can keep the fields a reader asks about.
"""

from __future__ import annotations

from typing import Any

from packer.summaries.treesitter import Definition, Hooks, Source

# Nodes that stand between a top-level declaration and the program.
_WRAPPERS = frozenset(
    {
        "export_statement",
        "lexical_declaration",
        "variable_declaration",
        "ambient_declaration",
        "expression_statement",
        "variable_declarator",
    }
)


def _export_list(src: Source) -> set[str]:
    """Names a file exports by list (`export { a, b as c }`, `export default x`)."""
    names = src.memo.get("exports")
    if names is None:
        names = set()
        for node in src.root.children if src.root is not None else ():
            if node.type != "export_statement" or node.child_by_field_name("source") is not None:
                continue
            for child in node.named_children:
                if child.type == "export_clause":
                    for spec in child.named_children:
                        name = spec.child_by_field_name("name")
                        if name is not None:
                            names.add(src.node_text(name, 200))
                elif child.type == "identifier":
                    names.add(src.node_text(child, 200))
        src.memo["exports"] = names
    return set(names)


def exported(d: Definition, src: Source) -> bool:
    if d.parent is not None:
        for child in d.node.children:
            if child.type == "accessibility_modifier" and src.node_text(child) == "private":
                return False
        return not d.name.startswith("#")
    node: Any = d.node
    while node is not None and node.type != "program":
        if node.type == "export_statement":
            return True
        if node.type == "assignment_expression":
            left = src.node_text(node.child_by_field_name("left") or node, 200)
            return left.startswith(("module.exports", "exports.")) or ".prototype." in left
        node = node.parent if node.type in _WRAPPERS or node.id == d.node.id else None
    return d.name in _export_list(src)


HOOKS = Hooks(exported=exported)
