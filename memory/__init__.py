"""Agent memory kept in the store: daily logs, curated memory, facts, scopes, history.

Each state of a scope's memory is a manifest (`memory.state`); what goes into one is cleaned of
secrets first, as it is laid out (`memory.entries`, `memory.redaction`); scopes keep memories
apart (`memory.scopes`); `memory.ops` holds what the commands and the MCP server do with them.

The Python API (`memory.manager`): ``MemoryManager`` keeps one scope's memory (facts with their
history, daily logs, the curated memory, search, statistics); ``MemoryScope`` names the scope.
They are loaded when first asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory.manager import MemoryManager, MemoryScope, MemoryStats

__all__ = ["MemoryManager", "MemoryScope", "MemoryStats"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from memory import manager

        return getattr(manager, name)
    raise AttributeError(f"module 'memory' has no attribute {name!r}")
