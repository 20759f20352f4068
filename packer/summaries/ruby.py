"""Ruby: a method is exported unless it follows a bare `private` or `protected` in its class
body, is written `private def ...`, or is named by `private :name`; `private_constant` does the
same for constants. One-line methods (`def a; end`) are shown without their `end`."""

from __future__ import annotations

import re
from typing import Any

from packer.summaries.treesitter import Definition, Hooks, Source

_HIDING = frozenset({"private", "protected"})
_SYMBOL = re.compile(r":(\w+[?!=]?)")
_END = re.compile(r"\s*;?\s*end$")


def _hidden(body: Any, src: Source) -> tuple[list[tuple[int, bool]], set[str]]:
    """For one class body: where bare `private`/`public` sections start (byte, hidden), and the
    names hidden by `private :a, :b` and `private_constant :A`."""
    key = ("hidden", body.id)
    found = src.memo.get(key)
    if found is None:
        sections: list[tuple[int, bool]] = []
        names: set[str] = set()
        for child in body.named_children:
            if child.type == "identifier":
                word = src.node_text(child, 20)
                if word in _HIDING or word == "public":
                    sections.append((child.start_byte, word != "public"))
            elif child.type == "call":
                method = child.child_by_field_name("method")
                word = src.node_text(method, 40) if method is not None else ""
                if word in _HIDING or word in ("private_constant", "private_class_method"):
                    arguments = child.child_by_field_name("arguments")
                    if arguments is not None:
                        names.update(_SYMBOL.findall(src.node_text(arguments, 2000)))
        found = (sections, names)
        src.memo[key] = found
    return found


def exported(d: Definition, src: Source) -> bool:
    node = d.node
    parent = node.parent
    if parent is not None and parent.type == "argument_list":
        call = parent.parent
        method = call.child_by_field_name("method") if call is not None else None
        if method is not None and src.node_text(method, 20) in _HIDING:
            return False  # `private def name`
    if parent is None or d.parent is None:
        return True
    sections, names = _hidden(parent, src)
    if d.name in names:
        return False
    hidden = False
    for start, hides in sections:
        if start > node.start_byte:
            break
        hidden = hides
    return not (hidden and d.kind == "method")


def display(d: Definition, shown: str, src: Source) -> str:
    return _END.sub("", shown) if d.kind == "method" else shown


HOOKS = Hooks(exported=exported, display=display)
