"""C#: exported means public or protected, or a member of an interface (public unless it says
otherwise); namespaces and enum members are as public as what holds them. An auto-property is
shown whole (`int Count { get; set; }`), a property with accessor bodies up to them."""

from __future__ import annotations

from packer.summaries.treesitter import Definition, Hooks, Source, tidy


def exported(d: Definition, src: Source) -> bool:
    if d.node.type in ("namespace_declaration", "enum_member_declaration"):
        return True
    words = {src.node_text(c, 40) for c in d.node.children if c.type == "modifier"}
    if "private" in words:
        return False
    if d.parent is not None and d.parent.tag == "interface":
        return True
    return bool(words & {"public", "protected"})


def display(d: Definition, shown: str, src: Source) -> str:
    if d.node.type not in ("property_declaration", "indexer_declaration", "event_declaration"):
        return shown
    accessors = d.node.child_by_field_name("accessors")
    if accessors is None:
        accessors = next((c for c in d.node.children if c.type == "accessor_list"), None)
    if accessors is None:
        return shown
    if any(c.child_by_field_name("body") is not None for c in accessors.named_children):
        head = src.text(d.node.start_byte, accessors.start_byte)
        return tidy(" ".join(head.split()))
    return shown


HOOKS = Hooks(exported=exported, display=display)
