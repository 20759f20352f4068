"""Rust: exported means `pub` (not `pub(crate)` or `pub(super)`); a trait's items and the
methods of a trait implementation are as public as the trait; `macro_rules!` is exported by
`#[macro_export]`."""

from __future__ import annotations

from packer.summaries.treesitter import Definition, Hooks, Source


def _pub(d: Definition, src: Source) -> bool:
    for child in d.node.children:
        if child.type == "visibility_modifier":
            return src.node_text(child, 20).strip() == "pub"
    return False


def exported(d: Definition, src: Source) -> bool:
    node = d.node
    if node.type in ("impl_item", "enum_variant"):
        return True
    if node.type == "macro_definition":
        prev = node.prev_named_sibling
        while prev is not None and prev.type == "attribute_item":
            if "macro_export" in src.node_text(prev, 200):
                return True
            prev = prev.prev_named_sibling
        return False
    if d.parent is not None and d.parent.node.type == "trait_item":
        return True
    if (
        d.parent is not None
        and d.parent.node.type == "impl_item"
        and d.parent.node.child_by_field_name("trait") is not None
    ):
        return True
    return _pub(d, src)


def display(d: Definition, shown: str, src: Source) -> str:
    """A macro is shown by the patterns it accepts, never by what it expands to."""
    if d.node.type != "macro_definition":
        return shown
    patterns = []
    for rule in d.node.named_children:
        left = rule.child_by_field_name("left") if rule.type == "macro_rule" else None
        if left is not None:
            patterns.append(" ".join(src.node_text(left, 300).split()))
    return f"macro_rules! {d.name} {{ {' | '.join(patterns)} }}" if patterns else shown


HOOKS = Hooks(exported=exported, display=display)
