"""Scopes: the namespaces memories are kept apart in.

A scope is ``global``, ``user:ID`` or ``session:ID`` (ID: 1 to 64 letters, digits and ``._@-``).
Each scope's memory is its own chain of states, pinned under its own name (`pin_name`); nothing
reads one scope while asked for another, so a session's memory is never seen from another
session unless that scope is named.
"""

from __future__ import annotations

import re
from typing import Final

from cas.display import echoed
from cas.errors import UsageError

GLOBAL: Final = "global"
KINDS: Final = ("user", "session")
_ID = re.compile(r"[A-Za-z0-9._@-]{1,64}")
# The store's pins of memories: one per scope, `memory/<scope>`.
PIN_PREFIX: Final = "memory/"


def check_scope(text: str) -> str:
    """``text`` when it names a scope; a `UsageError` saying what a scope looks like otherwise."""
    if text == GLOBAL:
        return text
    kind, sep, ident = text.partition(":")
    if sep and kind in KINDS and _ID.fullmatch(ident):
        return text
    raise UsageError(
        f"scope {echoed(text)} is not one: use 'global', 'user:ID' or 'session:ID' "
        "(ID: 1 to 64 letters, digits and ._@-)"
    )


def pin_name(scope: str) -> str:
    """The pin that holds the newest state of ``scope``'s memory."""
    return PIN_PREFIX + check_scope(scope)


def scope_of_pin(name: str) -> str | None:
    """The scope a pin holds the memory of; None for any other pin."""
    if not name.startswith(PIN_PREFIX):
        return None
    try:
        return check_scope(name[len(PIN_PREFIX) :])
    except UsageError:
        return None
