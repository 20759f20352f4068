"""PHP: a member is exported unless private or protected; top-level declarations always."""

from __future__ import annotations

from packer.summaries.treesitter import Definition, Hooks, Source


def exported(d: Definition, src: Source) -> bool:
    for child in d.node.children:
        if child.type == "visibility_modifier":
            return src.node_text(child, 20) == "public"
    return True


HOOKS = Hooks(exported=exported)
