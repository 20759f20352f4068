"""Java: exported means public or protected, or a member of an interface or annotation type
(public unless it says otherwise); enum constants are as public as their enum."""

from __future__ import annotations

import re

from packer.summaries.treesitter import Definition, Hooks, Source

_OVERRIDE = re.compile(r"@Override\s*")


def _modifiers(d: Definition, src: Source) -> set[str]:
    for child in d.node.children:
        if child.type == "modifiers":
            return set(src.node_text(child, 400).split())
    return set()


def exported(d: Definition, src: Source) -> bool:
    if d.node.type == "enum_constant":
        return True
    words = _modifiers(d, src)
    if "private" in words:
        return False
    if d.parent is not None and d.parent.tag == "interface":
        return True
    return bool(words & {"public", "protected"})


def display(d: Definition, shown: str, src: Source) -> str:
    return _OVERRIDE.sub("", shown)  # says nothing about the API the line shows


HOOKS = Hooks(exported=exported, display=display)
