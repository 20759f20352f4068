"""Access tracking: when each entity of a memory was last used, and how often.

An entity is a fact of a scope (``facts/KEY.md``, named ``fact:KEY``): the named things an
agent keeps and reads back. A use is an agent reading it through the MCP server: the ``facts``
tool reading it, a ``recall`` hit in it, a ``load`` or ``read_file`` showing it. A person
looking (``cas mem fact get``, ``cas mem show``) is not a use.

Uses live in the store's ``usage`` key-value table, keyed by scope and entity, never in the
memory's state: reading must not make a new state of what was read, and counts from two servers
at once must both land (`cas.store.Store.kv_update` reads and writes each count in one
transaction). This module owns the record: ``[last day, count]`` in msgpack; a damaged one
counts as never used. The day of a use comes from the caller, as every date of the memory does.

`stale` says which facts the entity pruning rule drops at a day: those whose last use is more
than ``entity_days`` (7) days before it, unless they were used more than ``entity_uses`` (10)
times. A fact's last use is the later of its last use and the day it was last set, so a fact
just set is not stale before anyone had the chance to read it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Final

import msgpack

from cas.store import Store
from cas.visibility import SOURCE_PREFIX
from memory import entries
from memory.ages import age_days
from memory.scopes import check_scope
from memory.state import State, head, read_file
from packer.config import MemoryConfig

__all__ = [
    "Stale",
    "Use",
    "entity_of",
    "forget",
    "record_of",
    "stale",
    "table",
    "used",
    "used_paths",
    "used_shown",
    "uses",
]

FACT: Final = "fact:"
_SEP: Final = b"\x00"


@dataclass(frozen=True, slots=True)
class Use:
    entity: str
    last: str  # YYYY-MM-DD
    count: int


@dataclass(frozen=True, slots=True)
class Stale:
    """A fact the entity pruning rule drops."""

    key: str
    last: str  # the later of its last use and its last setting
    days: int  # from ``last`` to the day asked about
    count: int  # times used

    def line(self, entity_days: int, entity_uses: int) -> str:
        times = "once" if self.count == 1 else f"{self.count} times"
        return (
            f"prune fact {self.key}: last used {self.last} ({self.days} days ago), used {times}; "
            f"kept are facts used in the last {entity_days} days or more than {entity_uses} times"
        )


def entity_of(path: str) -> str | None:
    """The entity a memory file is, or None: ``facts/KEY.md`` is ``fact:KEY``."""
    if path.startswith(entries.FACTS) and path.endswith(".md"):
        key = path[len(entries.FACTS) : -3]
        if entries.valid_key(key):
            return FACT + key
    return None


def _prefix(scope: str) -> bytes:
    return check_scope(scope).encode() + _SEP


def used(store: Store, scope: str, entities: Iterable[str], day: str) -> None:
    """Count one use of each of ``entities`` of ``scope`` on ``day``."""
    prefix = _prefix(scope)
    entries.check_date(day)
    store.kv.update("usage", [prefix + e.encode() for e in dict.fromkeys(entities)], _one_more(day))


def _one_more(day: str) -> Callable[[bytes | None], bytes]:
    """A record with one use more: the last use is the latest day counted, whatever order the
    uses come in."""

    def update(raw: bytes | None) -> bytes:
        last, count = record_of(raw) if raw is not None else ("", 0)
        packed: bytes = msgpack.packb([max(last, day), count + 1])
        return packed

    return update


def record_of(raw: bytes) -> tuple[str, int]:
    """A usage record: (last day used, times used); a damaged one counts as never used."""
    try:
        loaded = msgpack.unpackb(raw)
    except (ValueError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError):
        return "", 0
    if (
        isinstance(loaded, list)
        and len(loaded) == 2
        and isinstance(loaded[0], str)
        and isinstance(loaded[1], int)
        and loaded[1] >= 0
    ):
        return loaded[0], loaded[1]
    return "", 0


def used_paths(store: Store, scope: str, paths: Iterable[str], day: str) -> None:
    """Count a use of each entity among the memory files ``paths``."""
    used(store, scope, [e for p in paths if (e := entity_of(p)) is not None], day)


def used_shown(store: Store, scopes: Collection[str], paths: Iterable[str], day: str) -> None:
    """Count a use of each entity among ``paths`` of a load or a search, where a memory's
    files sit under ``memory/SCOPE/`` (`cas.visibility.source_name`); only ``scopes`` count."""
    by_scope: dict[str, list[str]] = {}
    for path in paths:
        if path.startswith(SOURCE_PREFIX):
            scope, _, inner = path[len(SOURCE_PREFIX) :].partition("/")
            if scope in scopes:
                by_scope.setdefault(scope, []).append(inner)
    for scope, inner_paths in sorted(by_scope.items()):
        used_paths(store, scope, inner_paths, day)


def uses(store: Store, scope: str) -> dict[str, Use]:
    """Every entity of ``scope`` used at least once, by name."""
    prefix = _prefix(scope)
    out = {}
    for key, raw in store.kv.items("usage", prefix):
        last, count = record_of(raw)
        entity = key[len(prefix) :].decode("utf-8", "replace")
        out[entity] = Use(entity, last, count)
    return out


def forget(store: Store, scope: str, entities: Iterable[str]) -> int:
    """Drop the counts of ``entities`` (a pruned fact set again starts afresh)."""
    prefix = _prefix(scope)
    return store.kv.delete("usage", [prefix + e.encode() for e in entities])


def table(store: Store, scope: str) -> list[Use]:
    """Every fact of ``scope`` holding a value, and every entity counted, by name: the last use
    (the later of its last use and the day it was last set) and how many uses."""
    counted = uses(store, scope)
    state = head(store, scope)
    out: dict[str, Use] = dict(counted)
    for entity, fact in _facts(store, state):
        use = counted.get(entity)
        out[entity] = Use(entity, _last(fact, use), use.count if use else 0)
    return [out[name] for name in sorted(out)]


def _facts(store: Store, state: State) -> list[tuple[str, entries.Fact]]:
    """The facts of ``state`` that hold a value, by path."""
    found = []
    for path in sorted(state.files):
        entity = entity_of(path)
        if entity is None:
            continue
        fact = entries.parse_fact(entity[len(FACT) :], read_file(store, state, path) or b"")
        if fact.value is not None:
            found.append((entity, fact))
    return found


def _last(fact: entries.Fact, use: Use | None) -> str:
    return max([d for d, _ in fact.history[:1]] + ([use.last] if use else []), default="")


def stale(store: Store, state: State, now: str, config: MemoryConfig) -> list[Stale]:
    """The facts of ``state`` holding a value that the entity pruning rule drops at ``now``,
    by key."""
    counted = uses(store, state.scope)
    out = []
    for entity, fact in _facts(store, state):
        use = counted.get(entity)
        last = _last(fact, use)
        if not last:
            continue  # no date to judge it by: kept
        days = age_days(last, now)
        count = use.count if use else 0
        if days > config.entity_days and count <= config.entity_uses:
            out.append(Stale(fact.key, last, days, count))
    return out
