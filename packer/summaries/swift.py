"""Swift: exported means `public` or `open` (Swift's default is visible to its module only)."""

from __future__ import annotations

from packer.summaries.treesitter import Definition, Hooks, Source


def exported(d: Definition, src: Source) -> bool:
    for child in d.node.children:
        if child.type == "modifiers":
            return bool({"public", "open"} & set(src.node_text(child, 300).split()))
    return d.parent is not None and d.parent.tag == "interface"


HOOKS = Hooks(exported=exported)
