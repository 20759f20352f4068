"""Scopes: the namespaces memories are kept apart in.

A scope is ``global``, ``user:ID`` or ``session:ID`` (ID: 1 to 64 letters, digits and ``._@-``,
not ending with a dot). Each scope's memory is its own chain of states, pinned under its own
name (`pin_name`); nothing reads one scope while asked for another, so a session's memory is
never seen from another session unless that scope is named.

A scope is written in several places: its pin, the scope of each state's manifest, the name of
its memory packs (`pack_scope`), the store's usage table. `check_scope` is the one rule for all
of them, applied where a scope comes in: a scope it accepts can be pinned and packed, and one
holding a secret is refused (`memory.redaction.refuse_secret`) before anything is written.
"""

from __future__ import annotations

import functools
import re
from typing import Final

from cas.display import echoed
from cas.errors import UsageError
from cas.locate import usable_pack_name
from cas.visibility import PACK_PREFIX
from memory.redaction import refuse_secret

GLOBAL: Final = "global"
KINDS: Final = ("user", "session")
_ID = re.compile(r"[A-Za-z0-9._@-]{0,63}[A-Za-z0-9_@-]")
# The store's pins of memories: one per scope, `memory/<scope>`.
PIN_PREFIX: Final = "memory/"
RULE: Final = (
    "use 'global', 'user:ID' or 'session:ID' "
    "(ID: 1 to 64 letters, digits and ._@-, not ending with a dot)"
)


def _pack_scope(scope: str) -> str:
    return PACK_PREFIX + scope.replace(":", "-").replace("@", "_at_")


@functools.lru_cache(maxsize=256)
def check_scope(text: str) -> str:
    """``text`` when it names a scope; a `UsageError` saying what a scope looks like otherwise,
    a `SecretInName` when it holds a secret (checked first: the refusal never shows it)."""
    refuse_secret(
        "scope id",
        (text, PIN_PREFIX + text, _pack_scope(text)),
        "choose a user or session id without it",
    )
    if text == GLOBAL:
        return text
    kind, sep, ident = text.partition(":")
    if not (sep and kind in KINDS and _ID.fullmatch(ident)):
        raise UsageError(f"scope {echoed(text)} is not one: {RULE}")
    if not usable_pack_name(_pack_scope(text)):
        raise UsageError(
            f"scope {echoed(text)} is too long: its memory packs are named "
            f"{PACK_PREFIX}KIND-ID with each @ written _at_, at most 200 characters"
        )
    return text


def pin_name(scope: str) -> str:
    """The pin that holds the newest state of ``scope``'s memory."""
    return PIN_PREFIX + check_scope(scope)


def pack_scope(scope: str) -> str:
    """The pack scope of ``scope``'s memory packs: ``mem.global``, ``mem.user-ID``; an ``@`` in
    an ID becomes ``_at_`` (a pack name holds letters, digits and ``._-`` only)."""
    return _pack_scope(check_scope(scope))


def scope_of_pin(name: str) -> str | None:
    """The scope a pin holds the memory of; None for any other pin."""
    if not name.startswith(PIN_PREFIX):
        return None
    try:
        return check_scope(name[len(PIN_PREFIX) :])
    except UsageError:
        return None
