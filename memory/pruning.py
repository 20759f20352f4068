"""`cas mem prune`: what the retention rules drop from a memory, as one new state.

Two rules, applied at a day the caller gives (``--now``), never a clock or a file time:

* the daily logs past the retention (`memory.ages.past_retention`: older than ``keep_days``);
* the entities gone stale (`memory.usage.stale`: facts last used more than ``entity_days`` ago
  and used at most ``entity_uses`` times); such a fact is deleted the way ``cas mem fact
  delete`` deletes one, so its file keeps every value it had in its history.

Everything dropped is one journal line of the new state, saying what and why, and the state
before is its parent: ``cas mem rollback`` brings it all back. A dry run only says what would go.
The counts of the facts pruned are dropped after the state is committed, so a fact set again
starts afresh.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cas.digest import Digest
from cas.store import Store
from memory import entries, usage
from memory.ages import past_retention, prune_line
from memory.state import Change, State, commit, head, read_file
from memory.usage import Stale
from packer.config import MemoryConfig

__all__ = ["Pruned", "prune"]


@dataclass(frozen=True, slots=True)
class Pruned:
    scope: str
    now: str
    keep_days: int
    removed: tuple[tuple[str, int], ...]  # daily logs: (path, age in days), oldest first
    facts: tuple[Stale, ...]  # facts dropped by the entity rule, by key
    entity_days: int
    entity_uses: int
    state: Digest | None  # the memory's state after (unchanged on a dry run or nothing to do)
    dry_run: bool

    def lines(self) -> list[str]:
        """One line per thing dropped, as the journal has it."""
        return _lines(self.removed, self.facts, self.keep_days, self.entity_days, self.entity_uses)


def _lines(
    logs: Sequence[tuple[str, int]],
    facts: Sequence[Stale],
    keep_days: int,
    entity_days: int,
    entity_uses: int,
) -> list[str]:
    out = [prune_line(p, age, keep_days) for p, age in logs]
    return out + [s.line(entity_days, entity_uses) for s in facts]


def _plan(
    store: Store, state: State, now: str, config: MemoryConfig
) -> tuple[list[tuple[str, int]], list[Stale]]:
    return past_retention(state, now, config), usage.stale(store, state, now, config)


def prune(
    store: Store, scope: str, now: str, config: MemoryConfig, *, dry_run: bool = False
) -> Pruned:
    """Drop from ``scope`` the daily logs past the retention and the stale facts at ``now``:
    one new state, one journal line per thing dropped. ``dry_run``: only say which."""
    entries.check_date(now)

    def result(state: State, logs: list[tuple[str, int]], facts: list[Stale], dry: bool) -> Pruned:
        return Pruned(
            state.scope,
            now,
            config.keep_days,
            tuple(logs),
            tuple(facts),
            config.entity_days,
            config.entity_uses,
            state.digest,
            dry,
        )

    if dry_run:
        state = head(store, scope)
        return result(state, *_plan(store, state, now, config), True)
    plan: list[tuple[list[tuple[str, int]], list[Stale]]] = []

    def make(state: State) -> Change | None:
        logs, facts = _plan(store, state, now, config)
        plan[:] = [(logs, facts)]
        if not logs and not facts:
            return None
        files: dict[str, bytes | None] = dict.fromkeys((p for p, _age in logs), None)
        for s in facts:
            path = f"{entries.FACTS}{s.key}.md"  # a path the state holds
            old = entries.parse_fact(s.key, read_file(store, state, path) or b"")
            files[path] = entries.set_fact(old, s.key, None, now).render()
        lines = _lines(logs, facts, config.keep_days, config.entity_days, config.entity_uses)
        return Change(files, tuple(lines))

    state = commit(store, scope, make, date=now)
    logs, facts = plan[0] if plan else ([], [])
    if facts:
        usage.forget(store, state.scope, [usage.FACT + s.key for s in facts])
    return result(state, logs, facts, False)
