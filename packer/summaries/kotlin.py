"""Kotlin: public unless `private` or `internal`."""

from __future__ import annotations

from packer.summaries.treesitter import Definition, Hooks, Source


def exported(d: Definition, src: Source) -> bool:
    for child in d.node.children:
        if child.type == "modifiers":
            return not {"private", "internal"} & set(src.node_text(child, 300).split())
    return True


HOOKS = Hooks(exported=exported)
