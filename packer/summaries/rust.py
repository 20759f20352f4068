"""Rust: exported means `pub` (not `pub(crate)` or `pub(super)`); a trait's items are as public
as the trait; an inherent `impl` block is exported unless it is for a type the file defines
without `pub`; a trait implementation (`impl Display for Error`) and its items are not (the
trait documents them: they are plumbing, shown after what the crate itself offers);
`macro_rules!` is exported by `#[macro_export]`."""

from __future__ import annotations

from typing import Any

from packer.summaries.treesitter import Definition, Hooks, Source


def _pub(node: Any, src: Source) -> bool:
    for child in node.children:
        if child.type == "visibility_modifier":
            return src.node_text(child, 20).strip() == "pub"
    return False


_WRAPPED = frozenset({"generic_type", "reference_type", "scoped_type_identifier"})


def _type_name(impl: Any, src: Source) -> str:
    """The name of the type an `impl` block is for (`Deserializer` in `impl<R> Deserializer<R>`,
    `Value` in `impl Serialize for &Value`)."""
    node = impl.child_by_field_name("type")
    while node is not None and node.type in (
        "generic_type",
        "reference_type",
        "scoped_type_identifier",
    ):
        inner = node.child_by_field_name("type") or node.child_by_field_name("name")
        if inner is None:
            break
        node = inner
    return src.node_text(node, 100) if node is not None else ""


def _private_types(src: Source) -> frozenset[str]:
    """The types this file defines without `pub`: an implementation for one of them is not
    part of what the crate offers."""
    names = src.memo.get("private")
    if names is None:
        found = set()
        for node in src.root.children if src.root is not None else ():
            if node.type in ("struct_item", "enum_item", "union_item", "type_item"):
                name = node.child_by_field_name("name")
                if name is not None and not _pub(node, src):
                    found.add(src.node_text(name, 100))
        names = src.memo["private"] = frozenset(found)
    return frozenset(names)


def exported(d: Definition, src: Source) -> bool:
    node = d.node
    if node.type == "enum_variant":
        return True
    if node.type == "impl_item":
        if node.child_by_field_name("trait") is not None:
            return False  # `impl Display for Error`: plumbing, the trait documents it
        return _type_name(node, src) not in _private_types(src)
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
        # What implements a trait is the trait's to document: its associated types and methods
        # (`type Error = Error`, `fn next_element_seed`) are plumbing, however public.
        return False
    return _pub(d.node, src)


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
