"""Age tiers and retention of daily logs: how old a log is decides how much of it a memory pack
shows, and when it is pruned.

A daily log's age is the whole days from its date (its path, `memory.entries.date_of`; never a
file time) to the day asked about (``now``, given by the caller). The rules, in order, the
first match deciding, like the packer's tier rules (`packer.tiers`; these match on age where
those match on paths):

=====================================  ========  ==================================
age (days)                             tier      a memory pack shows
=====================================  ========  ==================================
0 .. ``full_days`` (7)                 high      the log in full
.. ``summary_days`` (30)               medium    its summary (`memory.packs.summarize`)
.. ``keep_days`` (90)                  low       a pointer: one line naming it
older                                  None      nothing: it is past the retention
=====================================  ========  ==================================

The numbers are the ``[memory]`` table of the project's ``cas.toml`` (`packer.config`,
`MemoryConfig`). A log dated after ``now`` is not yet written as far as ``now`` is concerned:
it has no tier. `past_retention` names the logs `memory.pruning` removes.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from typing import Final

from memory import entries
from memory.state import State
from packer.config import MemoryConfig, load_config

__all__ = [
    "AgeRule",
    "age_days",
    "age_rules",
    "load_memory_config",
    "past_retention",
    "prune_line",
    "tier_of",
]

TIERS: Final = ("high", "medium", "low")


@dataclass(frozen=True, slots=True)
class AgeRule:
    """Logs at most ``max_days`` old (and not matched by an earlier rule) get ``tier``."""

    max_days: int
    tier: str
    reason: str


def age_rules(config: MemoryConfig) -> tuple[AgeRule, ...]:
    """The rules ``config`` sets, in match order."""
    return (
        AgeRule(config.full_days, "high", f"at most {config.full_days} days old: in full"),
        AgeRule(config.summary_days, "medium", f"at most {config.summary_days} days old: summary"),
        AgeRule(config.keep_days, "low", f"at most {config.keep_days} days old: pointer"),
    )


def load_memory_config(root: str | os.PathLike[str]) -> MemoryConfig:
    """The ``[memory]`` settings of the project at ``root`` (the defaults without any)."""
    return load_config(root).memory


def age_days(date: str, now: str) -> int:
    """Whole days from ``date`` to ``now`` (both ``YYYY-MM-DD``); negative for a later date."""
    then = dt.date.fromisoformat(entries.check_date(date))
    return (dt.date.fromisoformat(entries.check_date(now)) - then).days


def tier_of(age: int, config: MemoryConfig) -> str | None:
    """The tier of a log ``age`` days old: high, medium, low, or None (past the retention, or
    dated after the day asked about)."""
    if age < 0:
        return None
    for rule in age_rules(config):
        if age <= rule.max_days:
            return rule.tier
    return None


# --- retention ----------------------------------------------------------------------------------


def past_retention(state: State, now: str, config: MemoryConfig) -> list[tuple[str, int]]:
    """The daily logs of ``state`` older than ``keep_days`` at ``now``, oldest first."""
    out = []
    for path in state.files:
        date = entries.date_of(path)
        if date is not None:
            age = age_days(date, now)
            if age > config.keep_days:
                out.append((path, age))
    return sorted(out, key=lambda item: (-item[1], item[0]))


def prune_line(path: str, age: int, keep_days: int) -> str:
    return f"prune {path}: {age} days old, past the {keep_days}-day retention"
